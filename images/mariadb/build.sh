#!/usr/bin/env bash
# Builds ferrometal's MariaDB images from Debian's mariadb-server, cached in $CACHE/node (each
# rebuilt only when its recipe changes; scripts/install-node.sh runs this):
#   ferrometal.local/mariadb:10.11  bookworm's MariaDB 10.11  mariadb-10.11.tar
#   ferrometal.local/mariadb:11.8   trixie's MariaDB 11.8     mariadb-11.8.tar
# Two Debian releases give two real major series, so a version change between them is a real
# one (images/README.md). The entrypoint and the configuration are rootfs/; setup.sh makes
# mysql uid 999 and checks the series against the tag.
source "$(dirname "$0")/../../scripts/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NODE="$CACHE/node"
mkdir -p "$NODE"
ENTRY='["/usr/local/bin/docker-entrypoint.sh"]'
# util-linux's setpriv: the entrypoint drops from root to mysql with it (in minbase already).
for image in bookworm:10.11 trixie:11.8; do
  suite=${image%%:*} series=${image#*:}
  "$HERE/../../scripts/node/debian-image.sh" --suite "$suite" --files "$HERE/rootfs" --setup "$HERE/setup.sh" \
    "ferrometal.local/mariadb:$series" "$NODE/mariadb-$series.tar" "$ENTRY" mariadb-server
done
