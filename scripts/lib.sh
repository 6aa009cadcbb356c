# Shared helpers for ferrometal's install scripts. Sourced, never run.
set -euo pipefail

CACHE="${FERROMETAL_CACHE:-$HOME/.cache/ferrometal}"
mkdir -p "$CACHE"

log() { printf '[ferrometal] %s\n' "$*" >&2; }

# Run a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Install Debian packages that are not installed yet. `apt-get update` runs at
# most once per invocation, and only when something is missing.
APT_UPDATED=0
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  log "installing Debian packages: ${missing[*]}"
  # policy-rc.d may be absent on a fresh machine: keep services (mariadb) from
  # starting as system daemons; tests start their own private servers.
  local prc=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$prc" >/dev/null
    as_root chmod +x "$prc"
    created=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  [ "$created" -eq 1 ] && as_root rm -f "$prc"
  return 0
}
