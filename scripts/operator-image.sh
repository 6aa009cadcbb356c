#!/usr/bin/env bash
# Builds the operator image without a container engine, as an OCI archive that
# `ctr images import` (scripts/node.sh import) takes: the same layout as
# images/operator/Containerfile builds with podman or docker (images/README.md).
#
#   operator-image.sh [OUT.tar]     (default: $CACHE/node/operator.tar); prints OUT.tar
#
# 1. The release binary, by scripts/build-release.sh (the release profile, in CARGO_TARGET_DIR;
#    a no-op for cargo when nothing changed). FERROMETAL_PROFILE=dev packs the debug binary
#    instead, as the tests do (the one `make build` made: no second build of the workspace).
# 2. The image, by scripts/node/binary-image.sh: distroless's cc-debian12 made from Debian's
#    own packages (nothing can be pulled here), the binary at /usr/local/bin/ferrometal,
#    entrypoint ["/usr/local/bin/ferrometal"], cmd ["run"], user 65532:65532, named as
#    config/manager/manager.yaml references it (ghcr.io/ferrometal/ferrometal:<version>);
#    packed again only when the binary, the base or the scripts change.
# Needs root (debootstrap, chroot for the check that the binary runs in the image).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE="$CACHE/node"
OUT=${1:-$NODE/operator.tar}
mkdir -p "$NODE" "$(dirname "$OUT")"

NAME=$(sed -n 's/^ *image: *\(ghcr.io\/ferrometal\/ferrometal:.*\)$/\1/p' "$ROOT/config/manager/manager.yaml" | head -n1)
[ -n "$NAME" ] || { log "no ferrometal image in config/manager/manager.yaml"; exit 1; }

# 1. The binary.
DIST="$NODE/operator-dist"
FERROMETAL_PROFILE="${FERROMETAL_PROFILE:-release}" "$ROOT/scripts/build-release.sh" "$DIST" >&2

# 2. The image: the base (cached on its own recipe) and the binary.
"$ROOT/scripts/node/binary-image.sh" "$NAME" "$OUT" "$DIST/ferrometal" '["run"]'
