#!/usr/bin/env bash
# Builds an OCI image from Debian's packages and PyPI wheels, for pods on a test node (nothing
# can be pulled here), cached: rebuilt only when its recipe changes.
#   debian-image.sh [OPTIONS] NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]
# PACKAGES: Debian packages (comma-separated) installed with their dependencies by debootstrap
# (variant minbase, bookworm unless --suite says otherwise, from the machine's own Debian
# mirror) into a fresh root file system; PIP_REQUIREMENTS: requirements (space-separated, pinned) installed from PyPI as wheels
# into /usr/local/lib/python3.11/dist-packages, where Debian's python3 finds them. Documentation,
# man pages, locales and apt's caches are left out. Packed by scripts/node/oci-image.sh
# --rootfs. OUT.tar.recipe records the recipe. Needs root (debootstrap).
# OPTIONS (each part of the recipe, by content):
#   --suite SUITE        the Debian release (bookworm; trixie for a newer package)
#   --constraints FILE   pip constraints for PIP_REQUIREMENTS (the versions the project pins)
#   --files DIR          copied over the root file system after the packages and wheels
#                        (owned by root, modes kept)
#   --setup SCRIPT       run as `SCRIPT ROOTFS NAME` last, before the clean-up (users,
#                        permissions, file capabilities, a version check); a failure fails it
#   --file-caps          keep files' capabilities (security.capability) in the image
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
usage() { log "usage: $0 [--suite SUITE] [--constraints FILE] [--files DIR] [--setup SCRIPT] [--file-caps] NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]"; exit 2; }
SUITE=bookworm CONSTRAINTS='' FILES='' SETUP='' CAPS=''
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) SUITE=${2:?}; shift 2 ;;
    --constraints) CONSTRAINTS=$(realpath "$2"); shift 2 ;;
    --files) FILES=$(realpath "$2"); shift 2 ;;
    --setup) SETUP=$(realpath "$2"); shift 2 ;;
    --file-caps) CAPS=--file-caps; shift ;;
    --*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 4 ] || usage
NAME=$1 OUT=$2 ENTRY=$3 PACKAGES=$4 PIP=${5:-}
MIRROR=$(awk '/^URIs:/ && $2 ~ /\/debian$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

want=$(cat "$0" "$HERE/oci-image.sh" | sha256sum | cut -d' ' -f1)
want="$want $NAME $SUITE $ENTRY $PACKAGES $PIP"
# The options' contents, only when given: an image without them keeps its recipe.
[ -z "$CONSTRAINTS" ] || want="$want constraints=$(sha256sum <"$CONSTRAINTS" | cut -d' ' -f1)"
if [ -n "$FILES" ]; then
  want="$want files=$(cd "$FILES" && find . -type f -printf '%p %m\n' | LC_ALL=C sort | while read -r f m; do
    echo "$f $m $(sha256sum <"$f")"
  done | sha256sum | cut -d' ' -f1)"
fi
[ -z "$SETUP" ] || want="$want setup=$(sha256sum <"$SETUP" | cut -d' ' -f1)"
[ -z "$CAPS" ] || want="$want $CAPS"
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
  constraints=()
  [ -z "$CONSTRAINTS" ] || constraints=(--constraint "$CONSTRAINTS")
  # Wheels only (no build step runs here), for the image's Python and C library (glibc 2.36),
  # whatever the host's are. pip's conflict check would look at this machine's packages, not
  # the image's: off.
  # shellcheck disable=SC2086 # PIP is a list of requirements
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-compile --only-binary=:all: \
    --no-warn-conflicts \
    --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 --platform any \
    --target "$rootfs/usr/local/lib/python3.11/dist-packages" "${constraints[@]}" $PIP
fi
if [ -n "$FILES" ]; then
  tar -C "$FILES" --owner=0 --group=0 --numeric-owner -cf - . | tar -C "$rootfs" --no-same-owner --keep-directory-symlink -xf -
fi
[ -z "$SETUP" ] || "$SETUP" "$rootfs" "$NAME"
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/var/log/* "$rootfs"/debootstrap
"$HERE/oci-image.sh" --rootfs "$rootfs" "$NAME" "$OUT" "$ENTRY" $CAPS >/dev/null
echo "$want" >"$OUT.recipe"
log "built $NAME in $((SECONDS - start)) s: $OUT ($(du -h "$OUT" | cut -f1))"
