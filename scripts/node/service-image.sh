#!/usr/bin/env bash
# Packs ferrometal.local/nodeset-service:1, the image of the lab's NodeSetServices: the
# `nodeset-test-service` binary (tests/src/bin/, built by make build), which reads the inventory the operator mounts
# into a service's Job and prints, per host, what it would configure there (its pod's log), on
# the same distroless base as the operator (scripts/node/binary-image.sh). Cached in
# $CACHE/node/nodeset-service.tar, packed again only when the binary changes. Prints the archive.
#   service-image.sh          builds it (or finds it cached)
#   service-image.sh --name   prints the image's name
source "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NAME=ferrometal.local/nodeset-service:1
if [ "${1:-}" = --name ]; then
  echo "$NAME"
  exit 0
fi
# The binary `make build` made (the lab's make targets build first). Building it here with
# `-p ferrometal-tests` would unify features differently from the workspace build and make
# both rebuild the crate, every time.
BINARY="${CARGO_TARGET_DIR:-$ROOT/target}/debug/nodeset-test-service"
[ -x "$BINARY" ] || { log "no $BINARY: run make build first"; exit 1; }
"$ROOT/scripts/node/binary-image.sh" "$NAME" "$CACHE/node/nodeset-service.tar" "$BINARY"
