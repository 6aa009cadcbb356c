# Shared helpers for ferrometal's install scripts. Sourced, never run.
set -euo pipefail

CACHE="${FERROMETAL_CACHE:-$HOME/.cache/ferrometal}"
mkdir -p "$CACHE"

log() { printf '[ferrometal] %s\n' "$*" >&2; }

# Work a script runs beside its own, which must not outlive it: each started in its own
# process group (`$!` names it), and every group still there killed whole when the script
# exits, whether it failed or was interrupted (a background job of a script ignores Ctrl-C).
# The traps are set by the first `background`, so a script that starts none keeps its own.
BACKGROUND=()
background() {
  if [ "${#BACKGROUND[@]}" -eq 0 ]; then
    trap stop_background EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
  fi
  setsid "$@" &
  BACKGROUND+=("$!")
}
# Waits for the background work `pid`; when it failed, the end of its log `file` and what
# failed (`what`), and the script fails.
await_background() {
  local pid=$1 file=$2 what=$3
  wait "$pid" && return 0
  tail -n 40 "$file" >&2
  log "$what failed (its log: $file)"
  exit 1
}
stop_background() {
  local pid
  for pid in "${BACKGROUND[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    log "need root for: $* (run as root, or install sudo)"
    return 1
  fi
}

# Install Debian packages that are not installed yet. `apt-get update` runs at
# most once per invocation, and only when something is missing.
APT_UPDATED=0
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  log "installing Debian packages: ${missing[*]}"
  # policy-rc.d may be absent on a fresh machine: keep services (mariadb) from
  # starting as system daemons; tests start their own private servers.
  local prc=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$prc" >/dev/null
    as_root chmod +x "$prc"
    created=1
  fi
  # env, not a prefix assignment: sudo's env_reset would drop DEBIAN_FRONTEND.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
  # Removed whether or not the install worked: left behind, it would keep every service
  # on the machine from starting.
  if [ "$created" -eq 1 ]; then as_root rm -f "$prc"; fi
  return "$rc"
}

# The Go environment of every build from the Go module proxy (Kubernetes, CoreDNS): one GOPATH
# whose module and build caches all of them share, fetched through the proxy and checked
# against the checksum database, never a newer toolchain behind our back (a release needing one
# fails visibly), no cgo (static binaries). Sets GO and GOVERSION. Debian's golang-go
# (/usr/bin/go, 1.19) is far too old; our machines have a current Go in /usr/local/go, and
# FERROMETAL_GO names another.
go_env() {
  GODIR="$CACHE/kubernetes/go"
  export GOPATH="$GODIR" GOMODCACHE="$GODIR/pkg/mod" GOCACHE="$GODIR/cache"
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" GOSUMDB="${GOSUMDB:-sum.golang.org}" \
    GONOSUMDB= GOPRIVATE= GOINSECURE= GOWORK=off
  [ "$GOSUMDB" != off ] || { log "GOSUMDB=off: the modules must be checked against the checksum database"; exit 1; }
  GO=${FERROMETAL_GO:-}
  if [ -z "$GO" ]; then
    if [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; else GO=$(command -v go || true); fi
  fi
  [ -n "$GO" ] && [ -x "$GO" ] || { log "no Go toolchain (install Go in /usr/local/go or set FERROMETAL_GO)"; exit 1; }
  GOVERSION=$("$GO" env GOVERSION)
}
