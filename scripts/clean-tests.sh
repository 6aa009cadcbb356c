#!/usr/bin/env bash
# Removes the previous run's test folders (ROOT: FERROMETAL_TEST_DIR, or ferrometal-tests under
# TMPDIR), which keep the logs of failed tests until the next run.
#
# A run that was killed (a CI timeout, a lost machine) can leave a real node behind: its pods'
# overlay root filesystems, /dev/shm and projected volumes stay mounted under ROOT, and
# `rm -rf` stops at them ("Device or resource busy"). So every node folder is stopped first
# (scripts/node.sh stop: the node's processes, mounts, network namespaces, bridge, iptables rules
# and sysctls), then whatever is still mounted under ROOT is unmounted, deepest first.
source "$(dirname "$0")/lib.sh"

ROOT=${FERROMETAL_TEST_DIR:-${TMPDIR:-/tmp}/ferrometal-tests}
[ -d "$ROOT" ] || exit 0
ROOT=$(cd "$ROOT" && pwd)

# tests/src/node.rs runs a node in WorkDir "real-node", folder node/ (the lab's lives elsewhere).
for node in "$ROOT"/real-node-*/node; do
  [ -d "$node" ] || continue
  log "stopping the node a previous run left in $node"
  as_root "$(dirname "$0")/node.sh" stop "$node" || log "stopping $node failed; unmounting what it left"
done

for m in $(awk -v d="$ROOT/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r); do
  as_root umount "$m" 2>/dev/null || as_root umount -l "$m" || log "cannot unmount $m"
done
as_root rm -rf "$ROOT"
