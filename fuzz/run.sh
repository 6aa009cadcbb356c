#!/usr/bin/env bash
# make fuzz: builds every fuzz target with coverage instrumentation (cargo fuzz, installed
# into the cache when missing), runs each for a bounded number of executions, and prints one
# table: target, executions, crashes, time. Exits non-zero when any target crashed; the
# crashing inputs are kept under fuzz/artifacts/<target>/.
#
#   FUZZ_RUNS=N            executions per target (default 1000000)
#   FUZZ_TARGETS="a b"     only these targets (default: every [[bin]] of fuzz/Cargo.toml)
#   MODEL_CASES=N          runs of the NodeSet planner's model-based test (default 100000;
#                          0 skips it), after the targets, as one more row
#   MODEL_E2E_STEPS=N      steps of the model's end-to-end short form (tests/tests/nodeset/model.rs,
#                          default 40, a fresh seed; 0 skips it), as one more row
#   FUZZ_SANITIZER=address build with AddressSanitizer (default none: the code under test is
#                          safe Rust; a sanitizer needs -Z flags, which the stable toolchain
#                          takes with RUSTC_BOOTSTRAP=1, set here when one is asked for)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cache="${FERROMETAL_CACHE:-$HOME/.cache/ferrometal}"
runs="${FUZZ_RUNS:-1000000}"
sanitizer="${FUZZ_SANITIZER:-none}"
cargo_fuzz="$("$root/scripts/install-cargo-fuzz.sh")"
# Instrumented builds beside the project's own, never mixed with them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}/fuzz"
if [ "$sanitizer" != none ]; then export RUSTC_BOOTSTRAP=1; fi
targets="${FUZZ_TARGETS:-$(sed -n 's/^name = "\(.*\)"$/\1/p' "$here/Cargo.toml" | grep -v '^ferrometal-fuzz$')}"

cd "$here"
echo "[fuzz] building $(echo $targets | wc -w) targets (sanitizer: $sanitizer)" >&2
# `cargo fuzz build` takes at most one target (none builds them all).
if [ -z "${FUZZ_TARGETS:-}" ]; then
  "$cargo_fuzz" build --sanitizer "$sanitizer" >&2
else
  for target in $targets; do "$cargo_fuzz" build --sanitizer "$sanitizer" "$target" >&2; done
fi
bin_dir="$CARGO_TARGET_DIR/$(rustc -vV | sed -n 's/^host: //p')/release"

logs="${TMPDIR:-/tmp}/ferrometal-fuzz"
rm -rf "$logs" && mkdir -p "$logs"
failed=0
rows=()
for target in $targets; do
  # The corpus grows across runs (in the cache); the committed seeds are read, never written.
  corpus="$cache/fuzz-corpus/$target"
  artifacts="$here/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [ -d "$here/seeds/$target" ] && seeds=("$here/seeds/$target")
  echo "[fuzz] $target: $runs executions" >&2
  start_ms=$(($(date +%s%N) / 1000000))
  status=0
  "$bin_dir/$target" -runs="$runs" -max_len=8192 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$logs/$target.log" 2>&1 || status=$?
  elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target.log" | tail -1)
  if [ "$status" -ne 0 ]; then
    failed=1
    crashes=$(find "$artifacts" -newermt "@$((start_ms / 1000))" -type f | wc -l)
    [ "$crashes" -gt 0 ] || crashes="1 (exit $status)"
    grep -m1 -E "panicked at|ERROR: libFuzzer" "$logs/$target.log" >&2 || true
    echo "[fuzz] $target crashed: input under $artifacts, log $logs/$target.log" >&2
  else
    crashes=0
  fi
  rows+=("$(printf '%-20s %12s %10s %7d.%01d s' "$target" "${executions:-?}" "$crashes" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100)))")
done

# One more row of the table: runs `$@` from the repository root (the project's own build
# directory), logging to $logs/NAME.log; on failure prints the log's line matching HINT.
#   model_row NAME COUNT HINT COMMAND...
model_row() {
  local name=$1 count=$2 hint=$3 start_ms elapsed_ms status=0 failures=0
  shift 3
  echo "[fuzz] $name: $count" >&2
  start_ms=$(($(date +%s%N) / 1000000))
  (cd "$root" && CARGO_TARGET_DIR="$(dirname "$CARGO_TARGET_DIR")" "$@") >"$logs/$name.log" 2>&1 || status=$?
  elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
  if [ "$status" -ne 0 ]; then
    failed=1
    failures="1 (see log)"
    grep -m1 -A3 "$hint" "$logs/$name.log" >&2 || true
  fi
  rows+=("$(printf '%-20s %12s %10s %7d.%01d s' "$name" "$count" "$failures" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100)))")
}

# The NodeSet planner's model-based test (operator/src/nodeset/model), at length: random runs
# of user and world actions, the promise's invariants checked after every step.
model_cases="${MODEL_CASES:-100000}"
if [ "$model_cases" -gt 0 ]; then
  model_row nodeset-model "$model_cases" "Test failed" env PROPTEST_CASES="$model_cases" \
    cargo test --locked -p operator --lib nodeset::model::no_machine
fi

# The model's short form, end to end (a real apiserver, operator and Ironic), at length.
e2e_steps="${MODEL_E2E_STEPS:-40}"
if [ "$e2e_steps" -gt 0 ]; then
  model_row nodeset-model-e2e "$e2e_steps" "FERROMETAL_MODEL_SEED" env FERROMETAL_MODEL_STEPS="$e2e_steps" \
    cargo nextest run --locked --profile ci -p ferrometal-tests --test nodeset -E 'test(/^model::/)' --no-capture
fi

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "fuzz: $(date -u '+%F %H:%M UTC'), commit $commit, $(nproc) cores ($cpu), $runs executions per target"
printf '%-20s %12s %10s %11s\n' target executions crashes time
printf '%s\n' "${rows[@]}"
exit "$failed"
