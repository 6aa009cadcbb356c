#!/usr/bin/env bash
# Builds an OCI image from Debian's packages and PyPI wheels, for pods on a test node (nothing
# can be pulled here), cached: rebuilt only when its recipe changes.
#   debian-image.sh [--suite SUITE] [--files DIR] [--setup SCRIPT] NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]
# PACKAGES: Debian packages (comma-separated) installed with their dependencies by debootstrap
# (variant minbase, SUITE (bookworm unless --suite says otherwise), from the machine's own Debian
# mirror) into a fresh root file system; PIP_REQUIREMENTS: requirements (space-separated,
# pinned) installed from PyPI as wheels into /usr/local/lib/python3.11/dist-packages, where
# bookworm's python3 finds them. --files DIR: DIR's tree copied over the root file system,
# owned by root, modes kept (an entrypoint, a configuration file). --setup SCRIPT: run on this
# machine as `SCRIPT ROOTFS NAME` once the packages and files are in (fix a user's uid, empty a
# directory, check a version); a failure fails the build. Documentation, man pages, locales and
# apt's caches are left out. Packed by scripts/node/oci-image.sh --rootfs. OUT.tar.recipe
# records the recipe (every file of DIR and SCRIPT included). Needs root (debootstrap).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
usage() { log "usage: $0 [--suite SUITE] [--files DIR] [--setup SCRIPT] NAME OUT.tar ENTRYPOINT_JSON PACKAGES [PIP_REQUIREMENTS]"; exit 2; }
SUITE=bookworm FILES= SETUP=
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) SUITE=${2:?}; shift 2 ;;
    --files) FILES=$(cd "${2:?}" && pwd); shift 2 ;;
    --setup) SETUP=$(cd "$(dirname "${2:?}")" && pwd)/$(basename "$2"); shift 2 ;;
    --*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 4 ] || usage
NAME=$1 OUT=$2 ENTRY=$3 PACKAGES=$4 PIP=${5:-}
MIRROR=$(awk '/^URIs:/ && $2 ~ /\/debian$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

# The recipe: these scripts, the extra files (names, modes and contents) and the setup script.
extra() {
  if [ -n "$FILES" ]; then
    (cd "$FILES" && find . -type f -printf '%p %m\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r cat)
  fi
  if [ -n "$SETUP" ]; then cat "$SETUP"; fi
}
want=$( (cat "$0" "$HERE/oci-image.sh"; extra) | sha256sum | cut -d' ' -f1)
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
if [ -n "$FILES" ]; then
  tar -C "$FILES" --owner=0 --group=0 --numeric-owner -cf - . | tar -C "$rootfs" --no-same-owner --keep-directory-symlink -xf -
fi
if [ -n "$SETUP" ]; then
  "$SETUP" "$rootfs" "$NAME"
fi
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/var/log/* "$rootfs"/debootstrap
"$HERE/oci-image.sh" --rootfs "$rootfs" "$NAME" "$OUT" "$ENTRY" >/dev/null
echo "$want" >"$OUT.recipe"
log "built $NAME in $((SECONDS - start)) s: $OUT ($(du -h "$OUT" | cut -f1))"
