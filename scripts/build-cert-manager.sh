#!/usr/bin/env bash
# Builds cert-manager's controller, cainjector and webhook from the Go module proxy and caches
# them, with cert-manager's CRDs, under $CACHE/cert-manager/$VERSION (rebuilt only when the recipe
# changes). The proxy serves cert-manager's main module but not its commands' modules
# (cmd/controller, cmd/webhook, cmd/cainjector: 404 for every version), so
# tests/go/cert-manager/main.go runs the main module's own controllers,
# tests/go/cert-manager/cainjector/main.go its injectors, and tests/go/cert-manager/webhook/main.go
# its webhook server, built inside a copy of the main module because that server's packages are
# internal to it; design/testing.md says what that leaves out.
source "$(dirname "$0")/lib.sh"

VERSION=v1.21.2
SOURCE="$(cd "$(dirname "$0")/.." && pwd)/tests/go/cert-manager"

# The shared Go environment (lib.sh): the module and build caches build-kubernetes.sh fills.
go_env

REVISION=4
WANT=$(cat "$SOURCE/main.go" "$SOURCE/cainjector/main.go" "$SOURCE/webhook/main.go" | sha256sum | cut -d' ' -f1)
WANT=$(printf '%s ' "$VERSION" "$GOVERSION" "$WANT" "revision=$REVISION" | sha256sum | cut -d' ' -f1)
OUT="$CACHE/cert-manager/$VERSION"
if [ -x "$OUT/controller" ] && [ -x "$OUT/cainjector" ] && [ -x "$OUT/webhook" ] && [ "$(cat "$OUT/recipe" 2>/dev/null)" = "$WANT" ]; then
  log "cert-manager $VERSION cached in $OUT"
  exit 0
fi

DIR="$CACHE/cert-manager/build"
mkdir -p "$DIR" "$OUT/crds"
cd "$DIR"
json=$("$GO" mod download -json "github.com/cert-manager/cert-manager@$VERSION")
mod=$(printf '%s\n' "$json" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
src=$(printf '%s\n' "$json" | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
{
  echo "module ferrometal.local/cert-manager-controller"
  echo
  # cert-manager's own go line: a Go too old for it fails here, visibly.
  grep -E '^go ' "$mod"
  echo
  echo "require github.com/cert-manager/cert-manager $VERSION"
} >go.mod
mkdir -p cainjector
cp "$SOURCE/main.go" main.go
cp "$SOURCE/cainjector/main.go" cainjector/main.go
touch go.sum
# The webhook's server (internal/webhook) is internal to the main module: only a package inside
# that module may import it. So our main package is built inside a writable copy of the module
# (the module cache is read-only), with the module's own go.mod and go.sum, as cert-manager's
# build resolves it.
MODULE="$CACHE/cert-manager/module-$VERSION"
if [ -d "$MODULE" ]; then chmod -R u+w "$MODULE" && rm -rf "$MODULE"; fi
cp -r "$src" "$MODULE"
chmod -R u+w "$MODULE"
mkdir "$MODULE/cmd-ferrometal-webhook"
cp "$SOURCE/webhook/main.go" "$MODULE/cmd-ferrometal-webhook/main.go"
log "building cert-manager's controller, cainjector and webhook $VERSION with $GOVERSION (minutes; logged to $DIR/build.log)"
start=$SECONDS
# The version cert-manager's own build stamps (its user agents and version output carry it).
ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$VERSION"
build() { nice -n 19 "$GO" build -p "${FERROMETAL_GO_JOBS:-2}" -trimpath -ldflags "$ldflags" -o "$@"; }
{ "$GO" mod tidy && build "$OUT/controller.partial" . && build "$OUT/cainjector.partial" ./cainjector &&
  (cd "$MODULE" && build "$OUT/webhook.partial" ./cmd-ferrometal-webhook); } \
  >build.log 2>&1 || { tail -n 40 build.log; exit 1; }
rm -f "$OUT"/crds/*.yaml
cp "$src"/deploy/crds/*.yaml "$OUT/crds/"
chmod u+w "$OUT"/crds/*.yaml
mv "$OUT/controller.partial" "$OUT/controller"
mv "$OUT/cainjector.partial" "$OUT/cainjector"
mv "$OUT/webhook.partial" "$OUT/webhook"
echo "$WANT" >"$OUT/recipe"
log "built cert-manager's controller, cainjector and webhook $VERSION in $((SECONDS - start)) s: $OUT"
