#!/usr/bin/env bash
# Installs what a real test node (scripts/node.sh) needs, idempotently:
# - Debian's containerd, runc, CNI plugins, iptables, conntrack (kube-proxy), gcc, libc6-dev and
#   debootstrap;
# - the pod sandbox image registry.k8s.io/pause:$PAUSE_TAG, built from Kubernetes' own
#   build/pause/linux/pause.c (no image can be pulled on our machines), and ferrometal's test
#   image ferrometal.local/probe:1 (scripts/node/probe.c), both as OCI archives for
#   `ctr images import`, cached in $CACHE/node/ and rebuilt only when their sources change;
# - the images from Debian's packages and PyPI (scripts/node/debian-images.sh: debian-python,
#   MariaDB 10.11 and 11.8, Ironic), cached there too (install.sh builds them earlier, beside
#   Kubernetes; here they are a recipe check).
# The Kubernetes source comes from the Go module cache scripts/build-kubernetes.sh fills.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

apt_install containerd runc containernetworking-plugins iptables conntrack gcc libc6-dev debootstrap

K8S_VERSION=v1.37.2
# build/pause/Makefile's TAG in that release: the sandbox image kubelet and containerd expect.
PAUSE_TAG=3.10.2
NODE="$CACHE/node"
mkdir -p "$NODE"
SRC="$CACHE/kubernetes/go/pkg/mod/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c"
if [ ! -f "$SRC" ]; then
  log "no $SRC: run scripts/build-kubernetes.sh first"
  exit 1
fi

# build_image NAME ARCHIVE SOURCE BINARY [CFLAGS...]: compiles SOURCE statically into
# $NODE/BINARY and packs it as image NAME in $NODE/ARCHIVE, unless the recipe is unchanged.
build_image() {
  local name=$1 archive=$2 src=$3 bin=$4 want
  shift 4
  want=$(cat "$src" "$HERE/node/oci-image.sh" | sha256sum | cut -d' ' -f1)
  want="$want $name $(gcc -dumpfullversion) $*"
  if [ -f "$NODE/$archive" ] && [ "$(cat "$NODE/$archive.recipe" 2>/dev/null)" = "$want" ]; then
    log "$name cached in $NODE/$archive"
    return 0
  fi
  local start=$SECONDS tmp
  tmp=$(mktemp -d)
  cp "$src" "$tmp/"
  gcc -Os -Wall -Werror -static "$@" -o "$NODE/$bin" "$tmp/$(basename "$src")"
  rm -rf "$tmp"
  "$HERE/node/oci-image.sh" "$name" "$NODE/$archive" "$NODE/$bin" >/dev/null
  echo "$want" >"$NODE/$archive.recipe"
  log "built $name in $((SECONDS - start)) s: $NODE/$archive"
}

build_image "registry.k8s.io/pause:$PAUSE_TAG" pause.tar "$SRC" pause "-DVERSION=v$PAUSE_TAG-ferrometal"
build_image ferrometal.local/probe:1 probe.tar "$HERE/node/probe.c" probe
echo "$PAUSE_TAG" >"$NODE/pause-tag"
"$HERE/node/debian-images.sh"
