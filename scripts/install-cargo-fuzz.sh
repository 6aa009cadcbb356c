#!/usr/bin/env bash
# Installs cargo-fuzz, a pinned release from crates.io, into the cache (built once, a few
# minutes on 2 cores) and prints the path of its binary. `make fuzz` runs it; idempotent.
source "$(dirname "$0")/lib.sh"
CARGO_FUZZ_VERSION=0.13.2
root="$CACHE/tools/cargo-fuzz-$CARGO_FUZZ_VERSION"
bin="$root/bin/cargo-fuzz"
if [ ! -x "$bin" ]; then
  log "installing cargo-fuzz $CARGO_FUZZ_VERSION into $root"
  # A throwaway build directory: the caller's CARGO_TARGET_DIR holds the project's builds.
  env -u CARGO_TARGET_DIR cargo install --locked --quiet --root "$root" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
echo "$bin"
