#!/usr/bin/env bash
# The node's images built from Debian's packages and PyPI (debootstrap and pip: mostly waiting
# on the network and the disk), each cached beside its recipe:
# - ferrometal.local/debian-python:1, Debian's python3 with a wheel from PyPI, the image that
#   proves such images run on the node;
# - ferrometal.local/mariadb:10.11 and :11.8, Debian's MariaDB with an entrypoint of ours
#   (images/mariadb), for the managed database on the node;
# - ferrometal.local/ironic:<version> (scripts/node/ironic-image.sh, images/ironic/).
# scripts/install-node.sh runs it; scripts/install.sh runs it first beside the Kubernetes build
# (the compiler: the CPU). It needs nothing of Kubernetes, and runs apt only for packages
# install.sh installed before (debootstrap, libcap2-bin), so the two never contend for apt.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NODE="$CACHE/node"
mkdir -p "$NODE"
"$HERE/debian-image.sh" ferrometal.local/debian-python:1 "$NODE/debian-python.tar" '["/usr/bin/python3"]' \
  python3-minimal "six==1.16.0"
"$HERE/../../images/mariadb/build.sh"
"$HERE/ironic-image.sh"
