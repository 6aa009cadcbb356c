#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kubectl v1.20.2 from
# Debian bookworm's `kubernetes` source package and caches the binaries in
# $CACHE/kubernetes/bin. Nothing is rebuilt when the binaries are present.
#
# Why from source: no Kubernetes server binaries can be downloaded on our
# machines, but Debian's source package carries the full tree with vendor/.
source "$(dirname "$0")/lib.sh"

VERSION="1.20.5+really1.20.2-1.1+deb12u1"
# Bump when the build recipe (patches, flags) changes: cached binaries built
# by an older recipe are rebuilt.
RECIPE=2
UPSTREAM="1.20.5+really1.20.2"
OUT="$CACHE/kubernetes/bin"
BINARIES=(kube-apiserver kube-controller-manager kubectl)

have_all() {
  for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done
  [ "$(cat "$OUT/.recipe" 2>/dev/null)" = "$RECIPE" ]
}
if have_all; then log "kubernetes binaries cached in $OUT"; exit 0; fi

"$(dirname "$0")/install-packages.sh"
apt_install golang-github-modern-go-reflect2-dev

SRC="$CACHE/kubernetes/src"
mkdir -p "$SRC" "$OUT"

# deb-src entries for Debian bookworm (main, updates, security), signed by the
# archive keyring the base system trusts.
DEBSRC=/etc/apt/sources.list.d/ferrometal-src.sources
if [ ! -f "$DEBSRC" ]; then
  log "adding deb-src entries for bookworm"
  as_root tee "$DEBSRC" >/dev/null <<'SRCS'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRCS
  as_root apt-get update -qq
fi

DSC="$SRC/kubernetes_${VERSION}.dsc"
download() {
  log "downloading the kubernetes source package $VERSION"
  (cd "$SRC" && apt-get source --download-only "kubernetes=$VERSION" 2>&1 | grep -v '_apt' || true)
  [ -f "$DSC" ] || { log "source package download failed"; exit 1; }
}
# Check every file against the SHA-256 sums the .dsc lists. apt-get checks the
# .dsc's signature chain; this guards the cached copies on later runs too.
verify() {
  log "verifying source checksums against $DSC"
  awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f&&NF==3{print $1"  "$3}' "$DSC" >"$SRC/SHA256SUMS"
  [ -s "$SRC/SHA256SUMS" ] || { log "no Checksums-Sha256 in $DSC"; return 1; }
  (cd "$SRC" && sha256sum --quiet -c SHA256SUMS)
}
[ -f "$DSC" ] || download
if ! verify; then
  # A download cut short (or a damaged cache) is fetched again once, from scratch.
  log "the cached sources do not match their checksums; downloading them again"
  rm -rf "${SRC:?}"/*
  download
  verify || { log "the downloaded sources do not match the checksums in $DSC"; exit 1; }
fi

ORIG=$(ls "$SRC"/kubernetes_"${UPSTREAM}".orig.tar.* | head -n1)
BUILD="$CACHE/kubernetes/build"
rm -rf "$BUILD"
mkdir -p "$BUILD"
log "unpacking $(basename "$ORIG")"
tar -xf "$ORIG" -C "$BUILD" --strip-components=1

cd "$BUILD"
# Built with Go 1.19, v1.20.2's vendored reflect2 v1.0.1 makes kube-apiserver
# crash (SIGSEGV in json-iterator) on the first custom resource. Swap in
# Debian's reflect2 1.0.2.
swap_vendored() {
  local module=$1 version=$2
  log "patching vendored $module to $version"
  rm -rf "vendor/$module"
  cp -r "/usr/share/gocode/src/$module" "vendor/$module"
  find "vendor/$module" -name '*_test.go' -delete
  rm -rf "vendor/$module/tests" "vendor/$module/skip_tests"
  sed -i -E "s#^(\s*$module => $module) v[0-9.]+\$#\1 $version#" go.mod
  sed -i -E "s#^(\# $module( v[0-9.]+)? => $module) v[0-9.]+\$#\1 $version#" vendor/modules.txt
  grep -q "$module => $module $version" go.mod || { log "go.mod patch for $module failed"; exit 1; }
  [ "$(grep -c "=> $module $version" vendor/modules.txt)" -eq 2 ] || { log "modules.txt patch for $module failed"; exit 1; }
}
swap_vendored github.com/modern-go/reflect2 v1.0.2

# The OpenAPI type validators take a value for null when it equals its type's
# zero value by reflect.DeepEqual of reflect.Values. Built with Go 1.15, as
# upstream did, that held only for nil; with Go 1.19, empty strings decoded
# from JSON share the runtime's zero value, so every "" in a custom resource
# was refused as "must be of type string: null". Restore the upstream
# behaviour: only nil is null.
log "patching the OpenAPI type validators (empty strings are not null)"
for validator in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
  sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$validator"
  grep -q 'reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data))' "$validator" && { log "validator patch failed: $validator"; exit 1; }
done

export GOPATH="$BUILD/.go" CGO_ENABLED=0 HOME="$BUILD/.home" GOFLAGS=-mod=vendor GOCACHE="$BUILD/.gocache"
mkdir -p .go/src/k8s.io "$HOME"
ln -sfn ../../.. .go/src/k8s.io/kubernetes
cd .go/src/k8s.io/kubernetes
for b in "${BINARIES[@]}"; do
  log "building $b (several minutes)"
  make WHAT="cmd/$b" >"$CACHE/kubernetes/build-$b.log" 2>&1 || { tail -n 40 "$CACHE/kubernetes/build-$b.log"; exit 1; }
  install -m 0755 "_output/local/bin/linux/amd64/$b" "$OUT/$b"
done
echo "$RECIPE" >"$OUT/.recipe"
cd "$CACHE/kubernetes"
rm -rf "$BUILD"
log "kubernetes binaries ready in $OUT"
