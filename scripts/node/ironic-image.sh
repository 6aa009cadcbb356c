#!/usr/bin/env bash
# Builds ferrometal.local/ironic:<Ironic's version>, an Ironic image honouring the contract of
# metal3's ironic-image (images/ironic/README.md), for pods on a test node: Debian's packages,
# Ironic and its dependencies as wheels from PyPI at the versions scripts/requirements.txt and
# scripts/constraints.txt pin, and the entry points in images/ironic/rootfs. Cached in
# $CACHE/node/ironic.tar (scripts/node/debian-image.sh), rebuilt only when its recipe changes.
#   ironic-image.sh          builds it (or finds it cached); prints nothing
#   ironic-image.sh --name   prints the image's name
source "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IRONIC_VERSION=$(sed -n 's/^ironic==\(.*\)$/\1/p' "$ROOT/scripts/requirements.txt")
PYMYSQL_VERSION=$(sed -n 's/^PyMySQL==\(.*\)$/\1/p' "$ROOT/scripts/requirements.txt")
if [ -z "$IRONIC_VERSION" ] || [ -z "$PYMYSQL_VERSION" ]; then
  log "no ironic or PyMySQL pin in scripts/requirements.txt"
  exit 1
fi
NAME="ferrometal.local/ironic:$IRONIC_VERSION"
if [ "${1:-}" = --name ]; then
  echo "$NAME"
  exit 0
fi
# ironic-prometheus-exporter has no pin elsewhere: the release matching Ironic 39 (2026.1).
EXPORTER_VERSION=4.10.0
PACKAGES=python3,apache2-bin,media-types,dnsmasq-base,ipxe,ipmitool,curl,ca-certificates,iproute2
apt_install libcap2-bin
"$ROOT/scripts/node/debian-image.sh" --constraints "$ROOT/scripts/constraints.txt" \
  --files "$ROOT/images/ironic/rootfs" --setup "$ROOT/images/ironic/setup.sh" --file-caps \
  "$NAME" "$CACHE/node/ironic.tar" '["/bin/runironic"]' "$PACKAGES" \
  "ironic==$IRONIC_VERSION PyMySQL==$PYMYSQL_VERSION ironic-prometheus-exporter==$EXPORTER_VERSION"
