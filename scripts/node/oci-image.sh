#!/usr/bin/env bash
# Packs static binaries into a one-layer OCI image archive that `ctr images import` takes:
#   oci-image.sh NAME OUT.tar ENTRYPOINT_BINARY [OTHER_FILE...]
# NAME is the full reference (registry.k8s.io/pause:3.10.2); every file lands in / under its own
# base name; the entrypoint is ["/<base name of ENTRYPOINT_BINARY>"]. The archive is the same
# bytes for the same files (sorted tar, fixed owners and times), so its digest is stable.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 NAME OUT.tar ENTRYPOINT_BINARY [OTHER_FILE...]" >&2; exit 2; }
NAME=$1 OUT=$2
shift 2
ENTRY=/$(basename "$1")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs" "$work/oci/blobs/sha256"
for f in "$@"; do install -m 0755 "$f" "$work/rootfs/$(basename "$f")"; done

blob() { # FILE -> moves it into blobs/sha256, prints its digest and size
  local d s
  d=$(sha256sum "$1" | cut -d' ' -f1)
  s=$(stat -c %s "$1")
  mv "$1" "$work/oci/blobs/sha256/$d"
  echo "$d $s"
}

chmod 0755 "$work/rootfs"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
  -C "$work/rootfs" -cf "$work/layer.tar" .
read -r layer layer_size < <(blob "$work/layer.tar")

printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"ferrometal scripts/node/oci-image.sh"}]}' \
  "$ENTRY" "$layer" >"$work/config.json"
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
