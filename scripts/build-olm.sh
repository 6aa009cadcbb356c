#!/usr/bin/env bash
# Builds OLM (operator-lifecycle-manager's olm and catalog operators and its cpb), opm
# (operator-registry), crane (go-containerregistry: the loopback registry and image pushes) and
# grpc_health_probe from the Go module proxy, and caches them with OLM's CRDs and a static
# busybox (the `cp` OLM's bundle unpack Job runs) under $CACHE/olm/$VERSION; rebuilt only when
# the recipe changes.
#
# The proxy refuses the version lists of OLM and operator-registry (403 on @v/list), so
# `go install pkg@version` fails; one wrapper module requires every tool at its version instead,
# which also compiles the Kubernetes libraries they share once. OLM v0.38.0 requires
# operator-registry v1.61.0: opm is built at that version, so OLM and opm agree.
source "$(dirname "$0")/lib.sh"

VERSION=v0.38.0
REGISTRY_VERSION=v1.61.0
GGCR_VERSION=v0.22.1
PROBE_VERSION=v0.4.63

# The shared Go environment (lib.sh): the module and build caches build-kubernetes.sh fills.
go_env

REVISION=1
WANT=$(printf '%s ' "$VERSION" "$REGISTRY_VERSION" "$GGCR_VERSION" "$PROBE_VERSION" "$GOVERSION" \
  "revision=$REVISION" | sha256sum | cut -d' ' -f1)
OUT="$CACHE/olm/$VERSION"
BINARIES="olm catalog cpb opm crane grpc_health_probe cp"
cached() {
  for b in $BINARIES; do [ -x "$OUT/bin/$b" ] || return 1; done
  [ "$(cat "$OUT/recipe" 2>/dev/null)" = "$WANT" ]
}
if cached; then
  log "OLM $VERSION and its tools cached in $OUT"
  exit 0
fi

DIR="$CACHE/olm/build"
rm -rf "$OUT"
mkdir -p "$DIR" "$OUT/bin" "$OUT/crds"
cd "$DIR"

# OLM's unpack Job copies cpb with `/bin/cp` (upstream: busybox's). Debian's busybox-static,
# unpacked here only: installing it would replace the machine's busybox.
if [ ! -x "$DIR/busybox/bin/busybox" ]; then
  rm -rf busybox ./busybox-static_*.deb
  apt-get download busybox-static >/dev/null 2>&1 || { as_root apt-get update -qq && apt-get download busybox-static; }
  dpkg-deb -x ./busybox-static_*.deb busybox
  rm -f ./busybox-static_*.deb
fi
cp busybox/bin/busybox "$OUT/bin/cp.partial"

{
  echo "module ferrometal.local/olm-tools"
  echo
  echo "go 1.26"
  echo
  echo "require ("
  echo "	github.com/operator-framework/operator-lifecycle-manager $VERSION"
  echo "	github.com/operator-framework/operator-registry $REGISTRY_VERSION"
  echo "	github.com/google/go-containerregistry $GGCR_VERSION"
  echo "	github.com/grpc-ecosystem/grpc-health-probe $PROBE_VERSION"
  echo ")"
} >go.mod
touch go.sum
olm=github.com/operator-framework/operator-lifecycle-manager
log "building OLM $VERSION, opm $REGISTRY_VERSION, crane $GGCR_VERSION and grpc_health_probe $PROBE_VERSION with $GOVERSION (minutes; logged to $DIR/build.log)"
start=$SECONDS
# opm's upstream tags: json1 (sqlite's, unused without cgo: the file-based catalog commands
# need no sqlite) and containers_image_openpgp (signature checks without gpgme's C library).
nice -n 19 "$GO" build -p "${FERROMETAL_GO_JOBS:-2}" -trimpath -ldflags "-s -w" \
  -tags "json1 containers_image_openpgp" -o "$DIR/out/" \
  "$olm/cmd/olm" "$olm/cmd/catalog" "$olm/util/cpb" \
  github.com/operator-framework/operator-registry/cmd/opm \
  github.com/google/go-containerregistry/cmd/crane \
  github.com/grpc-ecosystem/grpc-health-probe >build.log 2>&1 || { tail -n 40 build.log; exit 1; }
src=$("$GO" list -m -f '{{.Dir}}' "$olm")
cp "$src"/deploy/chart/crds/*.yaml "$OUT/crds/"
chmod u+w "$OUT"/crds/*.yaml
for b in olm catalog cpb opm crane; do mv "out/$b" "$OUT/bin/$b"; done
mv out/grpc-health-probe "$OUT/bin/grpc_health_probe"
mv "$OUT/bin/cp.partial" "$OUT/bin/cp"
echo "$WANT" >"$OUT/recipe"
log "built OLM $VERSION and its tools in $((SECONDS - start)) s: $OUT"
