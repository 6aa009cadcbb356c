#!/usr/bin/bash
# The ramdisk-logs container: prints the logs ramdisks upload (Ironic stores them in
# /shared/log/ironic/deploy as tar.gz files), each line prefixed with its file, then deletes them.
set -uo pipefail
dir=/shared/log/ironic/deploy
mkdir -p "$dir"
# As PID 1 the shell ignores SIGTERM unless it says otherwise.
trap 'exit 0' TERM INT
while :; do
  for file in "$dir"/*.tar.gz; do
    [ -f "$file" ] || continue
    # A file still being written is left for the next round.
    [ -z "$(find "$file" -newermt '-5 seconds')" ] || continue
    name=${file##*/}
    echo "---- ramdisk logs ${name%.tar.gz}"
    tar -xOzf "$file" | sed "s/^/${name%.tar.gz}: /"
    rm -f "$file"
  done
  sleep 5 &
  wait $!
done
