#!/usr/bin/env bash
# Builds the release binary of the operator, the one way the project does it: CI, the
# operator image (images/operator/Containerfile) and the tests all run this script.
#
#   scripts/build-release.sh [OUT_DIR]     (default: dist/)
#
# It builds `ferrometal` with the locked dependency versions, copies it to OUT_DIR, and
# checks that the copy starts and prints its version. FERROMETAL_PROFILE=dev builds the
# debug profile instead (the tests use it: same script, far shorter build).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/dist}"
PROFILE="${FERROMETAL_PROFILE:-release}"
CARGO="${CARGO:-cargo}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

case "$PROFILE" in
  release) built="$TARGET/release/ferrometal" ;;
  dev) built="$TARGET/debug/ferrometal" ;;
  *) echo "build-release.sh: FERROMETAL_PROFILE must be release or dev, not $PROFILE" >&2; exit 2 ;;
esac

cd "$ROOT"
"$CARGO" build --locked --profile "$PROFILE" -p operator --bin ferrometal
mkdir -p "$OUT"
rm -f "$OUT/ferrometal"
# A hard link when OUT is on the target's filesystem (the tests: no copy of a large debug
# binary per test), a copy otherwise.
ln "$built" "$OUT/ferrometal" 2>/dev/null || install -m 0755 "$built" "$OUT/ferrometal"
version="$("$OUT/ferrometal" --version)"
expected="ferrometal $(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n1)"
if [ "$version" != "$expected" ]; then
  echo "build-release.sh: the binary says '$version', expected '$expected'" >&2
  exit 1
fi
echo "$version: $OUT/ferrometal"
