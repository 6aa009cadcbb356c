#!/usr/bin/env bash
# Creates a Python virtualenv with Ironic, sushy-tools and PyMySQL in the cache, recreated
# only when its pins change:
#   python-venv.sh           $CACHE/venv: the newest Ironic we test (scripts/requirements.txt)
#   python-venv.sh oldest    $CACHE/venv-oldest: the oldest Ironic release the operator offers
#                            (scripts/requirements-oldest.txt), for the lifecycle subset that CI
#                            runs a second time with FERROMETAL_IRONIC=oldest
# Both use scripts/constraints.txt for everything but Ironic itself.
source "$(dirname "$0")/lib.sh"

here="$(cd "$(dirname "$0")" && pwd)"
CONSTRAINTS="$here/constraints.txt"
case "${1:-newest}" in
  newest) REQ="$here/requirements.txt"; VENV="$CACHE/venv" ;;
  oldest) REQ="$here/requirements-oldest.txt"; VENV="$CACHE/venv-oldest" ;;
  *) log "usage: $0 [newest|oldest]"; exit 2 ;;
esac
STAMP="$VENV/.ferrometal-requirements.sha256"
want=$(cat "$REQ" "$CONSTRAINTS" | sha256sum | cut -d" " -f1)

if [ -x "$VENV/bin/ironic" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  log "python virtualenv cached in $VENV"
  exit 0
fi

PY="${FERROMETAL_PYTHON:-python3}"
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "Ironic 39 needs Python 3.11+"' \
  || { log "Python 3.11 or newer is required (set FERROMETAL_PYTHON)"; exit 1; }

# The constraints pin the newest Ironic; the requirements file pins the one wanted, so the
# constraint on Ironic itself is left out (pip refuses two pins of one package).
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
pinned=$(sed -n 's/^\(ironic\)==.*/\1/p' "$REQ")
grep -v "^${pinned:-ironic}==" "$CONSTRAINTS" >"$constraints"

log "creating python virtualenv in $VENV"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check pip==26.3
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ" -c "$constraints"
"$VENV/bin/pip" check >/dev/null
echo "$want" >"$STAMP"
log "python virtualenv ready: $("$VENV/bin/pip" show ironic | grep ^Version), sushy-tools $("$VENV/bin/pip" show sushy-tools | awk '/^Version/{print $2}')"
