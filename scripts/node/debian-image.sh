#!/usr/bin/env bash
# Builds an OCI image from Debian's packages and PyPI wheels, for pods on a test node (nothing
# can be pulled here), cached: rebuilt only when its recipe changes.
#   debian-image.sh NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]
# PACKAGES: Debian packages (comma-separated) installed with their dependencies by debootstrap
# (variant minbase, bookworm, from the machine's own Debian mirror) into a fresh root file
# system; PIP_REQUIREMENTS: requirements (space-separated, pinned) installed from PyPI as wheels
# into /usr/local/lib/python3.11/dist-packages, where Debian's python3 finds them. Documentation,
# man pages, locales and apt's caches are left out. Packed by scripts/node/oci-image.sh
# --rootfs. OUT.tar.recipe records the recipe. Needs root (debootstrap).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 4 ] || { log "usage: $0 NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]"; exit 2; }
NAME=$1 OUT=$2 ENTRY=$3 PACKAGES=$4 PIP=${5:-}
SUITE=bookworm
MIRROR=$(awk '/^URIs:/ && $2 ~ /\/debian$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

want=$(cat "$0" "$HERE/oci-image.sh" | sha256sum | cut -d' ' -f1)
want="$want $NAME $SUITE $ENTRY $PACKAGES $PIP"
if [ -f "$OUT" ] && [ "$(cat "$OUT.recipe" 2>/dev/null)" = "$want" ]; then
  log "$NAME cached in $OUT"
  exit 0
fi
apt_install debootstrap
start=$SECONDS
work=$(mktemp -d /var/tmp/ferrometal-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
log "building $NAME from Debian $SUITE ($MIRROR): $PACKAGES"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
}
if [ -n "$PIP" ]; then
  # Wheels only (no build step runs here), for the image's Python, whatever the host's is.
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-compile --only-binary=:all: \
    --python-version 3.11 --implementation cp --platform manylinux2014_x86_64 --platform any \
    --target "$rootfs/usr/local/lib/python3.11/dist-packages" $PIP
fi
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/var/log/* "$rootfs"/debootstrap
"$HERE/oci-image.sh" --rootfs "$rootfs" "$NAME" "$OUT" "$ENTRY" >/dev/null
echo "$want" >"$OUT.recipe"
log "built $NAME in $((SECONDS - start)) s: $OUT ($(du -h "$OUT" | cut -f1))"
