#!/usr/bin/env bash
# The host controller's per-reconcile bookkeeping, in instructions, at 1000 and 10,000 cached
# hosts (issue 27, item 3; operator/src/host/cost_bench.rs): callgrind counts only inside
# `one_round` (a Secret event's hosts, a slot asked for while half the hosts wait, a slot freed
# and taken, a watch event) and, for reference, inside `one_scan` (the pass over every cached
# host each ask made before the index). Prints one table; asserts nothing.
#
#   FERROMETAL_COST_HOSTS="1000 10000" scripts/host-costs.sh
source "$(dirname "$0")/lib.sh"

counts=${FERROMETAL_COST_HOSTS:-"1000 10000"}
test_name=host::cost_bench::bookkeeping_rounds_at_the_cached_host_count_of_ferrometal_cost_hosts
binary=$(cargo test --locked -p operator --lib --no-run --message-format=json 2>/dev/null \
  | jq -r 'select(.reason == "compiler-artifact" and .target.name == "operator" and .profile.test == true) | .executable' \
  | grep -v null | tail -1)
[ -x "$binary" ] || { echo "host-costs: no operator test binary" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Instructions counted inside functions matching $1, in callgrind output $2.
instructions() {
  { callgrind_annotate "$2" 2>/dev/null || true; } | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

echo
echo "Host bookkeeping ($(date -u +%FT%TZ), $(git rev-parse --short HEAD), debug build, 100 rounds each):"
printf '%-8s %22s %22s\n' hosts "instructions per round" "per scan (before)"
for hosts in $counts; do
  for part in one_round one_scan; do
    FERROMETAL_COST_HOSTS=$hosts valgrind --tool=callgrind --collect-atstart=no \
      --toggle-collect="*cost_bench*${part}*" --callgrind-out-file="$out/$part.$hosts" \
      "$binary" "$test_name" --exact --ignored --nocapture >/dev/null 2>&1
  done
  round=$(instructions one_round "$out/one_round.$hosts")
  scan=$(instructions one_scan "$out/one_scan.$hosts")
  printf '%-8s %22s %22s\n' "$hosts" "$(( ${round:-0} / 100 ))" "$(( ${scan:-0} / 100 ))"
done
