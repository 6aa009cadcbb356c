#!/usr/bin/env bash
# The host controller's per-reconcile bookkeeping, in instructions, at 1000 and 10,000 cached
# hosts (issue 27, item 3; operator/src/host/cost_bench.rs): callgrind counts only inside
# `one_round` (a Secret event's hosts, a slot asked for while half the hosts wait, a slot freed
# and taken, a host's edit entering the index) and, for reference, inside `one_scan` (the pass
# over every cached host each ask made before the index). Prints one table; asserts nothing.
#
#   FERROMETAL_COST_HOSTS="1000 10000" scripts/host-costs.sh
source "$(dirname "$0")/lib.sh"

CARGO="${CARGO:-cargo}"
counts=${FERROMETAL_COST_HOSTS:-"1000 10000"}
rounds=100 # cost_bench::ROUNDS
test_name=host::cost_bench::bookkeeping_rounds_at_the_cached_host_count_of_ferrometal_cost_hosts
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$CARGO" test --locked -p operator --lib --no-run --message-format=json >"$out/build.json"
binary=$(jq -r 'select(.reason == "compiler-artifact" and .target.name == "operator"
  and .profile.test == true and .executable != null) | .executable' "$out/build.json" | tail -n1)
if [ ! -x "$binary" ]; then
  log "host-costs: cargo built no operator test binary"
  exit 1
fi

# Instructions counted in the callgrind output $1 (only inside the toggled function).
instructions() {
  local total
  total=$({ callgrind_annotate "$1" 2>/dev/null || true; } | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  if [ -z "$total" ]; then
    log "host-costs: no instruction count in $1"
    exit 1
  fi
  echo "$total"
}

echo
echo "Host bookkeeping ($(date -u +%FT%TZ), $(git rev-parse --short HEAD), debug build, $rounds rounds each):"
printf '%-8s %22s %22s\n' hosts "instructions per round" "per scan (before)"
for hosts in $counts; do
  for part in one_round one_scan; do
    if ! FERROMETAL_COST_HOSTS=$hosts valgrind --tool=callgrind --collect-atstart=no \
      --toggle-collect="*cost_bench*${part}*" --callgrind-out-file="$out/$part.$hosts" \
      "$binary" "$test_name" --exact --ignored --nocapture >"$out/$part.$hosts.log" 2>&1; then
      log "host-costs: valgrind failed at $hosts hosts ($part):"
      tail -n 20 "$out/$part.$hosts.log" >&2
      exit 1
    fi
  done
  round=$(instructions "$out/one_round.$hosts")
  scan=$(instructions "$out/one_scan.$hosts")
  printf '%-8s %22s %22s\n' "$hosts" "$((round / rounds))" "$((scan / rounds))"
done
