# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared by the image's entry points (/bin/run*): the contract metal3's ironic-image documents,
# read from the environment and the mounts the pod gives. Sourced, never run.
#
# Environment: IRONIC_LISTEN_PORT, IRONIC_ACCESS_PORT, HTTP_PORT, VMEDIA_TLS_PORT,
# LISTEN_ALL_INTERFACES, PROVISIONING_IP / PROVISIONING_INTERFACE / PROVISIONING_MACS,
# IRONIC_PRIVATE_PORT, IRONIC_REVERSE_PROXY_SETUP, IRONIC_HTPASSWD, IRONIC_USE_MARIADB,
# MARIADB_HOST, MARIADB_DATABASE, ... (each script says which it reads).
# Mounts: /certs/ironic/tls.{crt,key} (the API's certificate), /certs/vmedia/tls.{crt,key}
# (virtual media over TLS), /auth/ironic/htpasswd, /auth/ironic-rpc/{username,password},
# /auth/mariadb/{username,password}, /certs/ca/mariadb/{ca.crt,tls.crt}, /shared (shared
# between the pod's containers).
# Everything written goes to $CONF_DIR (/conf: owned by the image's user, an emptyDir in the
# read-only upgrade Jobs), /shared and /var/lib/ironic: the image runs as 997:994, never root.
set -euo pipefail

log() { printf '%s %s: %s\n' "$(date -u +%FT%TZ)" "${0##*/}" "$*" >&2; }

CONF_DIR=${CUSTOM_CONFIG_DIR:-/conf}
IRONIC_CONF_DIR="$CONF_DIR/ironic"
IRONIC_CONF="$IRONIC_CONF_DIR/ironic.conf"
SHARED=/shared
STATE_DIR=/var/lib/ironic

IRONIC_LISTEN_PORT=${IRONIC_LISTEN_PORT:-6385}
IRONIC_ACCESS_PORT=${IRONIC_ACCESS_PORT:-$IRONIC_LISTEN_PORT}
IRONIC_PRIVATE_PORT=${IRONIC_PRIVATE_PORT:-}
IRONIC_REVERSE_PROXY_SETUP=${IRONIC_REVERSE_PROXY_SETUP:-false}
IRONIC_JSON_RPC_PORT=${IRONIC_JSON_RPC_PORT:-8089}
HTTP_PORT=${HTTP_PORT:-80}
VMEDIA_TLS_PORT=${VMEDIA_TLS_PORT:-8083}
LISTEN_ALL_INTERFACES=${LISTEN_ALL_INTERFACES:-true}
# Backward compatibility: a "Conductor" deployment is one that exposes JSON RPC.
if [ "${IRONIC_DEPLOYMENT:-}" = Conductor ]; then IRONIC_EXPOSE_JSON_RPC=true; fi
IRONIC_EXPOSE_JSON_RPC=${IRONIC_EXPOSE_JSON_RPC:-false}

IRONIC_CERT_FILE=/certs/ironic/tls.crt
IRONIC_KEY_FILE=/certs/ironic/tls.key
VMEDIA_CERT_FILE=/certs/vmedia/tls.crt
VMEDIA_KEY_FILE=/certs/vmedia/tls.key
IRONIC_TLS_SETUP=false
if [ -f "$IRONIC_CERT_FILE" ] && [ -f "$IRONIC_KEY_FILE" ]; then IRONIC_TLS_SETUP=true; fi
VMEDIA_TLS_SETUP=false
if [ -f "$VMEDIA_CERT_FILE" ] && [ -f "$VMEDIA_KEY_FILE" ]; then VMEDIA_TLS_SETUP=true; fi
# httpd fronts the API only when it terminates TLS (its only reason to).
if [ "$IRONIC_TLS_SETUP" != true ]; then IRONIC_REVERSE_PROXY_SETUP=false; fi
IRONIC_SCHEME=http
if [ "$IRONIC_TLS_SETUP" = true ]; then IRONIC_SCHEME=https; fi

# The address of the provisioning network: PROVISIONING_IP (a prefix length is dropped), else
# the first global address of PROVISIONING_INTERFACE, else of the interface with one of
# PROVISIONING_MACS; waits for it to appear (keepalived may be adding it).
provisioning_ip() {
  local ip=${PROVISIONING_IP:-} iface=${PROVISIONING_INTERFACE:-} tries=0
  if [ -n "$ip" ]; then
    echo "${ip%%/*}"
    return
  fi
  while [ "$tries" -lt 60 ]; do
    if [ -z "$iface" ] && [ -n "${PROVISIONING_MACS:-}" ]; then
      local mac
      for mac in ${PROVISIONING_MACS//,/ }; do
        iface=$(ip -br link | awk -v m="${mac,,}" 'tolower($3) == m {print $1; exit}')
        iface=${iface%@*}
        [ -z "$iface" ] || break
      done
    fi
    if [ -n "$iface" ]; then
      ip=$(ip -o addr show dev "$iface" scope global 2>/dev/null | awk '{print $4; exit}')
      if [ -n "$ip" ]; then
        echo "${ip%%/*}"
        return
      fi
    fi
    tries=$((tries + 1))
    sleep 1
  done
  log "no provisioning address: set PROVISIONING_IP, PROVISIONING_INTERFACE or PROVISIONING_MACS"
  return 1
}

# An address as a URL's host: IPv6 in brackets.
url_host() {
  case "$1" in
    *:*) echo "[$1]" ;;
    *) echo "$1" ;;
  esac
}

# Every address of the family of $1: 0.0.0.0 or ::.
any_address() {
  case "$1" in
    *:*) echo '::' ;;
    *) echo 0.0.0.0 ;;
  esac
}

# The API's htpasswd: IRONIC_HTPASSWD, or the file a Secret mounts at /auth/ironic/htpasswd.
# Written to FILE (mode 0600); false when there is none.
write_htpasswd() {
  local file=$1 content=${IRONIC_HTPASSWD:-}
  if [ -z "$content" ] && [ -f /auth/ironic/htpasswd ]; then content=$(</auth/ironic/htpasswd); fi
  [ -n "$content" ] || return 1
  (umask 077 && printf '%s\n' "$content" >"$file")
}

# A key of a mounted Secret, first line only, or empty.
secret_value() {
  local value=''
  [ ! -f "$1" ] || IFS= read -r value <"$1" || true
  printf '%s' "$value"
}

# The database URL Ironic uses: MariaDB (credentials from /auth/mariadb, TLS when its CA is
# mounted) or SQLite in the container.
database_connection() {
  if [ "${IRONIC_USE_MARIADB:-false}" != true ]; then
    echo "sqlite:///$STATE_DIR/ironic.sqlite"
    return
  fi
  local user password ca='' query='charset=utf8'
  user=$(secret_value /auth/mariadb/username)
  password=$(secret_value /auth/mariadb/password)
  user=${user:-${MARIADB_USER:-ironic}}
  password=${password:-${MARIADB_PASSWORD:-}}
  for ca in /certs/ca/mariadb/ca.crt /certs/ca/mariadb/tls.crt ''; do
    [ -z "$ca" ] || [ ! -f "$ca" ] || break
  done
  # ssl_ca alone: SQLAlchemy turns it into PyMySQL's ssl={'ca': …}, which verifies the server
  # against that CA and its name. Any other ssl_* argument PyMySQL takes itself would make it
  # build its own ssl settings without the CA, and verify against the system's CAs instead.
  [ -z "$ca" ] || query="$query&ssl_ca=$ca"
  # The password is URL-quoted: it may hold any character.
  python3 -c 'import sys, urllib.parse as u
user, password, host, db, query = sys.argv[1:]
print(f"mysql+pymysql://{u.quote(user, safe=str())}:{u.quote(password, safe=str())}@{host}/{db}?{query}")' \
    "$user" "$password" "${MARIADB_HOST:-127.0.0.1}" "${MARIADB_DATABASE:-ironic}" "$query"
}
