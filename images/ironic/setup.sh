#!/usr/bin/env bash
# Finishes the Ironic image's root file system (scripts/node/debian-image.sh --setup):
#   setup.sh ROOTFS
# - the user ironic-image runs as, 997:994 (the operator renders runAsUser/runAsGroup so);
# - the directories it writes, owned by it: /conf (configuration written at start),
#   /var/lib/ironic (Ironic's state and SQLite database), /shared for a pod without the volume;
# - no test suites of the Python packages;
# - Python's bytecode, compiled now with hashes that never go stale (the image's files all have
#   the time 0, and the user cannot write __pycache__ at run time);
# - dnsmasq's file capabilities, the ones the pod adds (a non-root process gets them only so).
set -euo pipefail
ROOTFS=$1
UID_=997 GID_=994
grep -q '^ironic:' "$ROOTFS/etc/group" || echo "ironic:x:$GID_:" >>"$ROOTFS/etc/group"
grep -q '^ironic:' "$ROOTFS/etc/passwd" ||
  echo "ironic:x:$UID_:$GID_:Ironic:/var/lib/ironic:/usr/sbin/nologin" >>"$ROOTFS/etc/passwd"
grep -q '^ironic:' "$ROOTFS/etc/shadow" || echo "ironic:!:19000::::::" >>"$ROOTFS/etc/shadow"
for dir in conf var/lib/ironic shared; do
  mkdir -p "$ROOTFS/$dir"
  chown "$UID_:$GID_" "$ROOTFS/$dir"
  chmod 0750 "$ROOTFS/$dir"
done
# pip --target's console scripts name the build machine's Python; usr/local/bin has ours.
rm -rf "$ROOTFS/usr/local/lib/python3.11/dist-packages/bin"
# The packages' own test suites (about 70 MB) never run here.
find "$ROOTFS/usr/local/lib/python3.11/dist-packages" -type d -name tests -prune -exec rm -rf {} +
# This machine's Python 3.11 writes the same bytecode format as the image's; -s/-p record the
# paths the image sees. A file that does not compile (a test of some package) stays source.
python3 -m compileall -q -f -j 2 --invalidation-mode unchecked-hash -s "$ROOTFS" -p / \
  "$ROOTFS/usr/local/lib/python3.11/dist-packages" "$ROOTFS/usr/lib/python3.11" >/dev/null || true
setcap cap_net_admin,cap_net_bind_service,cap_net_raw+ep "$ROOTFS/usr/sbin/dnsmasq"
