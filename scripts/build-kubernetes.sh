#!/usr/bin/env bash
# Builds Kubernetes binaries from the Go module proxy and caches them per version in
# $CACHE/kubernetes/<version>/bin, rebuilt only when one is missing or the recipe changed:
#   build-kubernetes.sh          the newest release: kube-apiserver, kube-controller-manager,
#                                kube-scheduler, kubelet, kube-proxy, kubectl;
#                                $CACHE/kubernetes/current links to its folder
#   build-kubernetes.sh oldest   the oldest release ferrometal supports: its kube-apiserver alone,
#                                all the CRD, CEL and webhook tests run against it;
#                                $CACHE/kubernetes/oldest links to its folder
#
# Why from modules: no Kubernetes binaries or images can be downloaded on our machines, but the
# Go module proxy serves k8s.io/kubernetes and its staging modules (k8s.io/api, client-go, ...),
# each checked against the checksum database (sum.golang.org).
source "$(dirname "$0")/lib.sh"

case "${1:-newest}" in
  newest) VERSION=v1.37.2 LINK=current
          BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl) ;;
  # The oldest minor ferrometal supports (README: Kubernetes 1.30 and newer), its last patch.
  oldest) VERSION=v1.30.14 LINK=oldest BINARIES=(kube-apiserver) ;;
  *) log "usage: $0 [newest|oldest]"; exit 2 ;;
esac
MINOR=$(echo "$VERSION" | cut -d. -f2)

# The shared Go environment (lib.sh): the module and build caches build-kubernetes.sh fills.
go_env

# Upstream's flags (hack/lib/golang.sh: tags, -trimpath, -s -w) and version stamps
# (hack/lib/version.sh), so that --version and /version tell the release. providerless (a no-op
# since 1.31) leaves out the in-tree cloud providers, off by default since 1.29, which no test
# needs (the proxy does not even serve every k8s.io/legacy-cloud-providers release).
TAGS=selinux,notest,grpcnotrace,providerless
stamps() {
  local kv k v
  # No commit: the module proxy does not tell it, and an empty one beats "$Format:%H$".
  for kv in "gitVersion=$VERSION" gitMajor=1 "gitMinor=$MINOR" gitCommit= gitTreeState=clean "buildDate=$1"; do
    k=${kv%%=*} v=${kv#*=}
    printf -- "-X k8s.io/component-base/version.%s=%s -X k8s.io/client-go/pkg/version.%s=%s " "$k" "$v" "$k" "$v"
  done
}
# Bump REVISION when the build changes in a way the rest of the recipe does not show.
REVISION=1
RECIPE="$VERSION $GOVERSION CGO_ENABLED=$CGO_ENABLED -trimpath -tags=$TAGS $(stamps release-date)-s -w revision=$REVISION"
WANT=$(printf '%s' "$RECIPE" | sha256sum | cut -d" " -f1)

DIR="$CACHE/kubernetes/$VERSION"
BIN="$DIR/bin"
link() { ln -sfn "$VERSION" "$CACHE/kubernetes/$LINK"; }
have_all() {
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
  [ "$(cat "$DIR/.recipe" 2>/dev/null)" = "$WANT" ]
}
# The Kubernetes 1.20 that earlier recipes built from Debian's source package: nothing uses it.
rm -rf "$CACHE/kubernetes/bin" "$CACHE/kubernetes/src" "$CACHE/kubernetes/build" "$CACHE"/kubernetes/build-*.log
# The logs of the builds one per binary, before they were one build.
rm -f "$CACHE"/kubernetes/v*/build-*.log
if have_all; then link; log "kubernetes $VERSION cached in $BIN"; exit 0; fi

mkdir -p "$DIR/module"
log "fetching k8s.io/kubernetes $VERSION"
# From outside our module: only the release's own go.mod tells which Go it needs.
json=$(cd "$DIR" && "$GO" mod download -json "k8s.io/kubernetes@$VERSION")
field() { printf '%s\n' "$json" | sed -n "s/^\s*\"$1\": \"\(.*\)\",\?$/\1/p"; }
MOD=$(field GoMod)
INFO=$(field Info)
DATE=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$INFO" 2>/dev/null || true)
[ -f "$MOD" ] && [ -n "$DATE" ] || { log "no go.mod or date for k8s.io/kubernetes $VERSION: $json"; exit 1; }

need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$MOD")
if [ "$(printf '%s\n%s\n' "$need" "${GOVERSION#go}" | sort -V | head -n1)" != "$need" ]; then
  log "kubernetes $VERSION needs Go $need or newer; $GO is $GOVERSION (set FERROMETAL_GO)"
  exit 1
fi

# Binaries of another recipe go; the recipe is recorded before the first build, so the
# binaries of a finished build are kept and only the missing ones are built next time (an
# interrupted build keeps none of its own: Go's build cache keeps its compiled packages).
if [ "$(cat "$DIR/.recipe" 2>/dev/null)" != "$WANT" ]; then
  rm -rf "$BIN"
  echo "$WANT" >"$DIR/.recipe"
fi
mkdir -p "$BIN"
cd "$DIR/module"

# k8s.io/kubernetes is not meant to be a dependency: its go.mod points the staging modules at
# ./staging, which its module zip lacks. Our own main module requires it and points every
# staging module at its published v0.<minor>.<patch>; it takes Kubernetes' Go language and
# GODEBUG defaults, as upstream's builds do.
{
  echo "module ferrometal.local/kubernetes-build"
  echo
  grep -E '^(go|godebug) ' "$MOD"
  echo
  echo "require k8s.io/kubernetes $VERSION"
  echo
  echo "replace ("
  sed -n "s#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 v0${VERSION#v1}#p" "$MOD"
  echo ")"
} >go.mod
touch go.sum

# The release's own date rather than today's: the same recipe builds the same binaries.
LDFLAGS="all=$(stamps "$DATE")-s -w"
# The missing binaries in one `go build`: one action graph, in which Go links a binary while it
# compiles the packages of the next, where a build per binary made each link wait for the
# previous one.
missing=()
for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || missing+=("$b"); done
log "building ${missing[*]} $VERSION with $GOVERSION (minutes; logged to $DIR/build.log)"
start=$SECONDS
rm -rf "$BIN/.partial"
mkdir -p "$BIN/.partial"
"$GO" build -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" -o "$BIN/.partial/" "${missing[@]/#/k8s.io/kubernetes/cmd/}" \
  >"$DIR/build.log" 2>&1 || { tail -n 40 "$DIR/build.log"; exit 1; }
for b in "${missing[@]}"; do mv "$BIN/.partial/$b" "$BIN/$b"; done
rmdir "$BIN/.partial"
log "built ${missing[*]} in $((SECONDS - start)) s"
link
log "kubernetes $VERSION ready in $BIN (go cache: $(du -sh "$GODIR" | cut -f1))"
