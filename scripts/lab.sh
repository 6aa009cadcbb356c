#!/usr/bin/env bash
# The lab: `lab.sh run` (foreground; Ctrl-C stops everything), `lab.sh up`
# (start in the background, wait until every sample host is provisioned,
# return with the lab running), `lab.sh down` (stop it). `make lab`,
# `make lab-up` and `make lab-down` call these after building.
source "$(dirname "$0")/lib.sh"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${LAB_STATE_DIR:-$ROOT/.lab}"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/ferrometal-lab"
BMCS="${LAB_BMCS:-4}"
TIMEOUT="${LAB_TIMEOUT_SECS:-900}"
mkdir -p "$STATE"

# The images the lab's node runs: the Ironic (built by make install, found cached) and the
# NodeSetServices' (packed from the binary make build made).
images() {
  "$ROOT/scripts/node/ironic-image.sh"
  "$ROOT/scripts/node/service-image.sh" >/dev/null
}

running() {
  [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null
}

case "${1:-}" in
run)
  if running; then log "a lab is already running (make lab-down stops it)"; exit 1; fi
  images
  exec "$BIN" --state-dir "$STATE" --bmcs "$BMCS" --timeout-secs "$TIMEOUT"
  ;;
up)
  if running && [ -f "$STATE/ready" ]; then
    log "the lab is already running"
    cat "$STATE/summary.txt"
    exit 0
  fi
  if running; then "$0" down; fi
  images
  rm -f "$STATE/ready"
  log "starting the lab in the background (log: $STATE/lab.log)"
  setsid "$BIN" --state-dir "$STATE" --bmcs "$BMCS" --timeout-secs "$TIMEOUT" >"$STATE/lab.log" 2>&1 </dev/null &
  echo $! >"$STATE/pid"
  while [ ! -f "$STATE/ready" ]; do
    if ! running; then
      log "the lab failed to start; last lines of $STATE/lab.log:"
      tail -n 30 "$STATE/lab.log" >&2
      rm -f "$STATE/pid"
      exit 1
    fi
    sleep 1
  done
  cat "$STATE/summary.txt"
  ;;
down)
  if [ ! -f "$STATE/pid" ]; then log "no lab is running"; exit 0; fi
  pid="$(cat "$STATE/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    # A lab that did not stop in time is killed; every server it started dies with it
    # (each runs in its own process group with PR_SET_PDEATHSIG).
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/pid" "$STATE/ready"
  log "the lab is stopped"
  ;;
*)
  echo "usage: $0 run|up|down" >&2
  exit 2
  ;;
esac
