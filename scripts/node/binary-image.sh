#!/usr/bin/env bash
# Packs one of our binaries onto distroless's cc-debian12 base (made from Debian's own packages
# by scripts/node/distroless-base.sh, cached as $CACHE/node/cc-debian12.rootfs.tar), as an OCI
# archive that `ctr images import` (scripts/node.sh import) takes:
#
#   binary-image.sh NAME OUT.tar BINARY [CMD_JSON]
#
# The binary lands at /usr/local/bin/<its name>, is the entrypoint, and the image runs as
# 65532:65532 (distroless's nonroot). CMD_JSON is the image's Cmd (default: none). The binary
# must load in the image itself (its glibc, its loader): it is run there with --version first.
# OUT.tar.recipe records the binary's hash, the base and these scripts: the image is packed
# again only when one of them changes. Prints OUT.tar. Needs root (debootstrap, chroot).
source "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 3 ] || { echo "usage: $0 NAME OUT.tar BINARY [CMD_JSON]" >&2; exit 2; }
NAME=$1 OUT=$2 BINARY=$3 CMD=${4:-}
BASE="$CACHE/node/cc-debian12.rootfs.tar"
mkdir -p "$(dirname "$OUT")"
"$ROOT/scripts/node/distroless-base.sh" "$BASE"

want="$(sha256sum "$BINARY" | cut -d' ' -f1) $(cat "$BASE.recipe") $(cat "$0" "$ROOT/scripts/node/oci-image.sh" | sha256sum | cut -d' ' -f1) $NAME $CMD"
if [ -f "$OUT" ] && [ "$(cat "$OUT.recipe" 2>/dev/null)" = "$want" ]; then
  log "$NAME cached in $OUT"
  echo "$OUT"
  exit 0
fi
start=$SECONDS
work=$(mktemp -d /var/tmp/ferrometal-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$BASE" --numeric-owner
name=$(basename "$BINARY")
install -m 0755 "$BINARY" "$work/usr/local/bin/$name"
got=$(chroot --userspec=65532:65532 "$work" "/usr/local/bin/$name" --version)
[ "$got" = "$("$BINARY" --version)" ] || { log "$name in the image says '$got'"; exit 1; }
OCI_CMD=$CMD OCI_USER=65532:65532 \
  "$ROOT/scripts/node/oci-image.sh" --rootfs "$work" "$NAME" "$OUT" "[\"/usr/local/bin/$name\"]" >/dev/null
echo "$want" >"$OUT.recipe"
log "built $NAME in $((SECONDS - start)) s: $OUT ($(du -h "$OUT" | cut -f1))"
echo "$OUT"
