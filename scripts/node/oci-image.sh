#!/usr/bin/env bash
# Packs files into a one-layer OCI image archive that `ctr images import` takes:
#   oci-image.sh NAME OUT.tar ENTRYPOINT_BINARY [OTHER_FILE...]
#       every file lands in / under its own base name; the entrypoint is
#       ["/<base name of ENTRYPOINT_BINARY>"] (static binaries: pause, probe)
#   oci-image.sh --rootfs DIR NAME OUT.tar ENTRYPOINT_JSON [--file-caps]
#       DIR is the whole root file system; ENTRYPOINT_JSON the entrypoint as a JSON array
#       (a root file system from Debian's packages: scripts/node/debian-image.sh);
#       --file-caps keeps files' capabilities (security.capability, a POSIX tar then), which
#       a non-root process needs to get the capabilities its pod adds (dnsmasq's)
# NAME is the full reference (registry.k8s.io/pause:3.10.2). Optional, from the environment:
# OCI_CMD, the image's Cmd as a JSON array (the arguments a pod's `args` replace), and OCI_USER,
# its User (`uid:gid`, numeric); neither is set when empty. The archive is the same bytes for
# the same files (sorted tar, fixed owners for loose files, fixed times), so its digest is stable.
# Prints the manifest's digest.
set -euo pipefail
usage() { echo "usage: $0 NAME OUT.tar ENTRYPOINT_BINARY [FILE...] | --rootfs DIR NAME OUT.tar ENTRYPOINT_JSON [--file-caps]" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/oci/blobs/sha256"
owners=(--owner=0 --group=0 --numeric-owner)
format=(--format=gnu)
if [ "${1:-}" = --rootfs ]; then
  [ $# -eq 5 ] || { [ $# -eq 6 ] && [ "$6" = --file-caps ]; } || usage
  ROOTFS=$2 NAME=$3 OUT=$4 ENTRY=$5
  # A root file system keeps its owners (a package's files may belong to its own user).
  owners=(--numeric-owner)
  if [ "${6:-}" = --file-caps ]; then
    # Extended attributes need POSIX (pax) headers; the header names and times left out of
    # them keep the bytes the same from one build to the next.
    # shellcheck disable=SC2054 # the commas are tar's
    format=(--format=posix --xattrs --xattrs-include=security.capability
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)
  fi
else
  [ $# -ge 3 ] || usage
  NAME=$1 OUT=$2
  shift 2
  ENTRY="[\"/$(basename "$1")\"]"
  ROOTFS="$work/rootfs"
  mkdir -p "$ROOTFS"
  for f in "$@"; do install -m 0755 "$f" "$ROOTFS/$(basename "$f")"; done
  chmod 0755 "$ROOTFS"
fi

blob() { # FILE -> moves it into blobs/sha256, prints its digest and size
  local d s
  d=$(sha256sum "$1" | cut -d' ' -f1)
  s=$(stat -c %s "$1")
  mv "$1" "$work/oci/blobs/sha256/$d"
  echo "$d $s"
}

tar --sort=name "${owners[@]}" --mtime=@0 "${format[@]}" -C "$ROOTFS" -cf "$work/layer.tar" .
read -r layer layer_size < <(blob "$work/layer.tar")

extra=""
if [ -n "${OCI_CMD:-}" ]; then extra="$extra,\"Cmd\":$OCI_CMD"; fi
if [ -n "${OCI_USER:-}" ]; then extra="$extra,\"User\":\"$OCI_USER\""; fi
printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s%s,"WorkingDir":"/","Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"ferrometal scripts/node/oci-image.sh"}]}' \
  "$ENTRY" "$extra" "$layer" >"$work/config.json"
read -r config config_size < <(blob "$work/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
read -r manifest manifest_size < <(blob "$work/manifest.json")

# io.containerd.image.name names the image on import; ref.name is the OCI tag.
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest" "$manifest_size" "$NAME" "${NAME##*:}" >"$work/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"

mkdir -p "$(dirname "$OUT")"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/oci" -cf "$OUT.partial" .
mv "$OUT.partial" "$OUT"
echo "sha256:$manifest"
