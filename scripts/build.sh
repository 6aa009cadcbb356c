#!/usr/bin/env bash
# `make build`: scripts/install.sh and the workspace's compile side by side. The compile needs
# nothing install.sh installs (only the Rust toolchain), and on a fresh machine install.sh
# leaves a core idle for minutes at a time, while pip, apt and debootstrap fetch and unpack.
# The compile runs at a lower priority than the Kubernetes builds (the longest part of
# install.sh) and a higher one than cert-manager's, OLM's and CoreDNS's, which fill what is
# left. Its output follows install.sh's.
source "$(dirname "$0")/lib.sh"
here="$(dirname "$0")"
CARGO=${CARGO:-cargo}
build_log="$CACHE/workspace-build.log"
background nice -n 10 "$CARGO" build --workspace --all-targets --locked >"$build_log" 2>&1
build_pid=$!
"$here/install.sh"
await_background "$build_pid" "$build_log" "the workspace's compile"
cat "$build_log" >&2
