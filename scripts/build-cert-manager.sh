#!/usr/bin/env bash
# Builds cert-manager's controller and cainjector from the Go module proxy and caches them, with
# cert-manager's CRDs, under $CACHE/cert-manager/$VERSION (rebuilt only when the recipe changes).
# The proxy serves cert-manager's main module but not its commands' modules (cmd/controller,
# cmd/webhook, cmd/cainjector: 404 for every version), so tests/go/cert-manager/main.go runs the
# main module's own controllers and tests/go/cert-manager/cainjector/main.go its injectors;
# design/testing.md says what that leaves out.
source "$(dirname "$0")/lib.sh"

VERSION=v1.21.2
SOURCE="$(cd "$(dirname "$0")/.." && pwd)/tests/go/cert-manager"

# The shared Go environment (lib.sh): the module and build caches build-kubernetes.sh fills.
go_env

REVISION=2
WANT=$(cat "$SOURCE/main.go" "$SOURCE/cainjector/main.go" | sha256sum | cut -d' ' -f1)
WANT=$(printf '%s ' "$VERSION" "$GOVERSION" "$WANT" "revision=$REVISION" | sha256sum | cut -d' ' -f1)
OUT="$CACHE/cert-manager/$VERSION"
if [ -x "$OUT/controller" ] && [ -x "$OUT/cainjector" ] && [ "$(cat "$OUT/recipe" 2>/dev/null)" = "$WANT" ]; then
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
log "building cert-manager's controller and cainjector $VERSION with $GOVERSION (minutes; logged to $DIR/build.log)"
start=$SECONDS
build() { nice -n 19 "$GO" build -p "${FERROMETAL_GO_JOBS:-1}" -trimpath -ldflags "-s -w" -o "$@"; }
{ "$GO" mod tidy && build "$OUT/controller.partial" . && build "$OUT/cainjector.partial" ./cainjector; } \
  >build.log 2>&1 || { tail -n 40 build.log; exit 1; }
rm -f "$OUT"/crds/*.yaml
cp "$src"/deploy/crds/*.yaml "$OUT/crds/"
chmod u+w "$OUT"/crds/*.yaml
mv "$OUT/controller.partial" "$OUT/controller"
mv "$OUT/cainjector.partial" "$OUT/cainjector"
echo "$WANT" >"$OUT/recipe"
log "built cert-manager's controller and cainjector $VERSION in $((SECONDS - start)) s: $OUT"
