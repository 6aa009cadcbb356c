#!/usr/bin/env bash
# The last step of the MariaDB image's root file system (scripts/node/debian-image.sh --setup):
#   setup.sh ROOTFS NAME
# - mysql becomes uid and gid 999, the official image's (the operator's pods run as 999 from
#   the start, and their volumes' fsGroup is 999); Debian's postinst gave it a system uid;
# - the data directory is left empty (the package's postinst initialised one there) and owned
#   by mysql, like /run/mysqld (the socket and pid file) and /docker-entrypoint-initdb.d;
# - the server's series must be the one NAME's tag says (ferrometal.local/mariadb:10.11).
set -euo pipefail
ROOTFS=${1:?usage: setup.sh ROOTFS NAME} NAME=${2:?usage: setup.sh ROOTFS NAME}
UID_GID=999

field() { awk -F: -v n="$1" -v f="$3" '$1 == n {print $f}' "$ROOTFS/etc/$2"; }
old_uid=$(field mysql passwd 3) old_gid=$(field mysql group 3)
[ -n "$old_uid" ] && [ -n "$old_gid" ] || { echo "setup.sh: no mysql user in $ROOTFS" >&2; exit 1; }
taken_uid=$(awk -F: -v id=$UID_GID '$3 == id && $1 != "mysql" {print $1}' "$ROOTFS/etc/passwd")
taken_gid=$(awk -F: -v id=$UID_GID '$3 == id && $1 != "mysql" {print $1}' "$ROOTFS/etc/group")
[ -z "$taken_uid$taken_gid" ] || { echo "setup.sh: $UID_GID is taken by $taken_uid$taken_gid" >&2; exit 1; }
if [ "$old_uid" != $UID_GID ]; then
  find "$ROOTFS" -xdev -uid "$old_uid" -exec chown -h $UID_GID '{}' +
fi
if [ "$old_gid" != $UID_GID ]; then
  find "$ROOTFS" -xdev -gid "$old_gid" -exec chgrp -h $UID_GID '{}' +
fi
awk -F: -v OFS=: -v id=$UID_GID '$1 == "mysql" {$3 = id; $4 = id} {print}' "$ROOTFS/etc/passwd" >"$ROOTFS/etc/passwd.new"
awk -F: -v OFS=: -v id=$UID_GID '$1 == "mysql" {$3 = id} {print}' "$ROOTFS/etc/group" >"$ROOTFS/etc/group.new"
mv "$ROOTFS/etc/passwd.new" "$ROOTFS/etc/passwd"
mv "$ROOTFS/etc/group.new" "$ROOTFS/etc/group"
chmod 0644 "$ROOTFS/etc/passwd" "$ROOTFS/etc/group"

rm -rf "$ROOTFS/var/lib/mysql" "$ROOTFS/run/mysqld"
for dir in var/lib/mysql run/mysqld docker-entrypoint-initdb.d; do
  install -d -m 0755 -o $UID_GID -g $UID_GID "$ROOTFS/$dir"
done

want=${NAME##*:}
got=$(chroot "$ROOTFS" mariadbd --version | sed -n 's/.* Ver \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
[ "$got" = "$want" ] || { echo "setup.sh: $NAME holds MariaDB $got" >&2; exit 1; }
echo "setup.sh: $NAME: $(chroot "$ROOTFS" mariadbd --version)" >&2
