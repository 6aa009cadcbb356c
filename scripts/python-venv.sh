#!/usr/bin/env bash
# Creates the Python virtualenv with Ironic, sushy-tools and PyMySQL, pinned by
# scripts/requirements.txt, in $CACHE/venv. Recreated only when the pins change.
source "$(dirname "$0")/lib.sh"

REQ="$(cd "$(dirname "$0")" && pwd)/requirements.txt"
VENV="$CACHE/venv"
STAMP="$VENV/.ferrometal-requirements.sha256"
want=$(cat "$REQ" "$(dirname "$REQ")/constraints.txt" | sha256sum | cut -d" " -f1)

if [ -x "$VENV/bin/ironic" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  log "python virtualenv cached in $VENV"
  exit 0
fi

PY="${FERROMETAL_PYTHON:-python3}"
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "Ironic 39 needs Python 3.11+"' \
  || { log "Python 3.11 or newer is required (set FERROMETAL_PYTHON)"; exit 1; }

log "creating python virtualenv in $VENV"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check pip==26.3
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ" -c "$(dirname "$REQ")/constraints.txt"
"$VENV/bin/pip" check >/dev/null
echo "$want" >"$STAMP"
log "python virtualenv ready: $("$VENV/bin/pip" show ironic | grep ^Version), sushy-tools $("$VENV/bin/pip" show sushy-tools | awk '/^Version/{print $2}')"
