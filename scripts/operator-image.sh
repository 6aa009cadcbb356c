#!/usr/bin/env bash
# Builds the operator image without a container engine, as an OCI archive that
# `ctr images import` (scripts/node.sh import) takes: the same layout as
# images/operator/Containerfile builds with podman or docker (images/README.md).
#
#   operator-image.sh [OUT.tar]     (default: $CACHE/node/operator.tar); prints OUT.tar
#
# 1. The base: distroless's cc-debian12 made from Debian's own packages (nothing can be pulled
#    here) by scripts/node/distroless-base.sh, cached as $CACHE/node/cc-debian12.rootfs.tar.
# 2. The release binary, by scripts/build-release.sh (the release profile, in CARGO_TARGET_DIR;
#    a no-op for cargo when nothing changed). FERROMETAL_PROFILE=dev packs the debug binary
#    instead, as the tests do (the one `make build` made: no second build of the workspace).
# 3. The image: the base plus the binary at /usr/local/bin/ferrometal, entrypoint
#    ["/usr/local/bin/ferrometal"], cmd ["run"], user 65532:65532, packed by
#    scripts/node/oci-image.sh and named as config/manager/manager.yaml references it
#    (ghcr.io/ferrometal/ferrometal:<version>). OUT.tar.recipe records the binary's hash:
#    the image is packed again only when the binary, the base or the scripts change.
# Needs root (debootstrap, chroot for the check that the binary runs in the image).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE="$CACHE/node"
OUT=${1:-$NODE/operator.tar}
BASE="$NODE/cc-debian12.rootfs.tar"
mkdir -p "$NODE" "$(dirname "$OUT")"

NAME=$(sed -n 's/^ *image: *\(ghcr.io\/ferrometal\/ferrometal:.*\)$/\1/p' "$ROOT/config/manager/manager.yaml" | head -n1)
[ -n "$NAME" ] || { log "no ferrometal image in config/manager/manager.yaml"; exit 1; }

# 1. The base (cached on its own recipe).
"$ROOT/scripts/node/distroless-base.sh" "$BASE"

# 2. The binary.
DIST="$NODE/operator-dist"
FERROMETAL_PROFILE="${FERROMETAL_PROFILE:-release}" "$ROOT/scripts/build-release.sh" "$DIST" >&2
binary="$DIST/ferrometal"

# 3. The image.
want="$(sha256sum "$binary" | cut -d' ' -f1) $(cat "$BASE.recipe") $(cat "$0" "$ROOT/scripts/node/oci-image.sh" | sha256sum | cut -d' ' -f1) $NAME"
if [ -f "$OUT" ] && [ "$(cat "$OUT.recipe" 2>/dev/null)" = "$want" ]; then
  log "$NAME cached in $OUT"
  echo "$OUT"
  exit 0
fi
start=$SECONDS
work=$(mktemp -d /var/tmp/ferrometal-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$BASE" --numeric-owner
install -m 0755 "$binary" "$work/usr/local/bin/ferrometal"
# The binary must load in the image itself (its glibc, its loader), not only on this machine.
got=$(chroot --userspec=65532:65532 "$work" /usr/local/bin/ferrometal --version)
[ "$got" = "$("$binary" --version)" ] || { log "the binary in the image says '$got'"; exit 1; }
OCI_CMD='["run"]' OCI_USER=65532:65532 \
  "$ROOT/scripts/node/oci-image.sh" --rootfs "$work" "$NAME" "$OUT" '["/usr/local/bin/ferrometal"]' >/dev/null
echo "$want" >"$OUT.recipe"
log "built $NAME in $((SECONDS - start)) s: $OUT ($(du -h "$OUT" | cut -f1))"
echo "$OUT"
