#!/bin/bash
# ferrometal's MariaDB entrypoint (images/mariadb/README.md): the part of the official image's
# contract the operator and its users rely on, written for this image (Debian's mariadb-server).
#
# - Arguments that start with `-` are the server's: `mariadbd` is put in front. Any other
#   command runs as it is (`bash -c ...` of the operator's init container and Jobs).
# - An empty data directory (/var/lib/mysql, or --datadir=) is initialised once, on a server
#   started with the pod's own arguments (so its --init-file applies) but no network:
#   MARIADB_ROOT_PASSWORD | _HASH | MARIADB_ALLOW_EMPTY_ROOT_PASSWORD | MARIADB_RANDOM_ROOT_PASSWORD,
#   MARIADB_ROOT_HOST (root's extra host, `%` unless `localhost`), MARIADB_DATABASE,
#   MARIADB_USER with MARIADB_PASSWORD | _HASH (all privileges on MARIADB_DATABASE), then
#   /docker-entrypoint-initdb.d (*.sh run or sourced, *.sql and *.sql.gz|xz|zst fed to root).
#   Each MARIADB_X may come from the file MARIADB_X_FILE names, or from MYSQL_X.
#   A directory that holds data is never touched: those variables only apply to a new one.
# - Started as root, it hands the data directory to mysql (999) and drops to it.
# Not implemented (the operator sets none): MARIADB_AUTO_UPGRADE, replication, time zone
# tables, MARIADB_MYSQL_LOCALHOST_USER, MARIADB_HEALTHCHECK_GRANTS.
set -eo pipefail
shopt -s nullglob

say() { printf '%s [%s] [Entrypoint]: %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S+00:00')" "$1" "$2" >&2; }
fail() { say ERROR "$*"; exit 1; }

# value NAME: MARIADB_NAME, else the file MARIADB_NAME_FILE names, else MYSQL_NAME (or its file).
value() {
  local name
  for name in "MARIADB_$1" "MYSQL_$1"; do
    local file="${name}_FILE"
    if [ -n "${!name:-}" ] && [ -n "${!file:-}" ]; then
      fail "both $name and $file are set; use one"
    fi
    if [ -n "${!name:-}" ]; then printf '%s' "${!name}"; return; fi
    if [ -n "${!file:-}" ]; then
      [ -r "${!file}" ] || fail "$file names ${!file}, which cannot be read"
      cat "${!file}"
      return
    fi
  done
}

# A string as an SQL literal (backslashes and quotes escaped; the server runs without
# NO_BACKSLASH_ESCAPES here).
literal() { local s=${1//\\/\\\\}; printf "'%s'" "${s//\'/\\\'}"; }
identifier() { printf '`%s`' "${1//\`/\`\`}"; }

if [ $# -eq 0 ] || [ "${1:0:1}" = - ]; then
  set -- mariadbd "$@"
fi
case "$1" in
  mariadbd | mysqld) ;;
  *) exec "$@" ;;
esac
for arg in "${@:2}"; do
  case "$arg" in
    -'?' | --help | -V | --version) exec "$@" ;;
  esac
done

datadir=/var/lib/mysql
socket=/run/mysqld/mysqld.sock
for arg in "${@:2}"; do
  case "$arg" in
    --datadir=*) datadir=${arg#--datadir=} ;;
    --socket=*) socket=${arg#--socket=} ;;
  esac
done

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$datadir" "$(dirname "$socket")"
  chown mysql:mysql "$datadir" "$(dirname "$socket")"
  # Files of root in a directory the server will own: hand them over, then drop privileges.
  find "$datadir" \! -user mysql -exec chown mysql:mysql '{}' +
  exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" "$@"
fi

if [ -d "$datadir/mysql" ]; then
  say Note "$datadir holds a database: starting MariaDB on it"
  exec "$@"
fi

# A new data directory.
root_password=$(value ROOT_PASSWORD)
root_hash=$(value ROOT_PASSWORD_HASH)
if [ -z "$root_password$root_hash" ] && [ -z "$(value ALLOW_EMPTY_ROOT_PASSWORD)" ]; then
  if [ -n "$(value RANDOM_ROOT_PASSWORD)" ]; then
    root_password=$(head -c 24 /dev/urandom | base64 | tr -d '\n/+=')
    say Note "GENERATED ROOT PASSWORD: $root_password"
  else
    fail "no root password: set MARIADB_ROOT_PASSWORD (or _HASH, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_RANDOM_ROOT_PASSWORD)"
  fi
fi
root_host=$(value ROOT_HOST)
root_host=${root_host:-%}
database=$(value DATABASE)
user=$(value USER)
password=$(value PASSWORD)
password_hash=$(value PASSWORD_HASH)
[ "$user" != root ] || fail "MARIADB_USER=root: root is made from MARIADB_ROOT_PASSWORD"
[ -z "$user" ] || [ -n "$password$password_hash" ] || fail "MARIADB_USER is set without MARIADB_PASSWORD"

say Note "initialising $datadir ($("$1" --version))"
# No test database; root with a password (not unix_socket), as the official image makes it.
# --force: the host name need not resolve (accounts of host names are dropped below anyway).
mariadb-install-db --datadir="$datadir" --force --skip-test-db --auth-root-authentication-method=normal \
  --skip-name-resolve --skip-log-bin >"$datadir/.install-db.log" 2>&1 || {
  cat "$datadir/.install-db.log" >&2
  fail "mariadb-install-db failed"
}
rm -f "$datadir/.install-db.log"

# The server with the pod's arguments (its --init-file too), on the socket only.
"$@" --skip-networking --socket="$socket" --skip-log-bin --wsrep-on=OFF &
server=$!
for _ in $(seq 300); do
  if mariadb-admin --protocol=socket --socket="$socket" --user=root ping >/dev/null 2>&1; then break; fi
  kill -0 "$server" 2>/dev/null || fail "the server exited while the data directory was initialised"
  sleep 0.2
done
sql() { mariadb --protocol=socket --socket="$socket" --user=root --database=mysql "$@"; }
sql -e 'SELECT 1' >/dev/null || fail "the server did not start on the socket in 60 s"

{
  echo "SET @@SESSION.SQL_LOG_BIN = 0;"
  # Only root@localhost stays of what mariadb-install-db made: no anonymous accounts, no root
  # of another host (root@127.0.0.1 and the like have no password yet), no mysql@localhost
  # (unix_socket; the official image leaves it out too).
  echo "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost') OR (User = 'mysql' AND Host = 'localhost');"
  echo "DELETE FROM mysql.proxies_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');"
  echo "FLUSH PRIVILEGES;"
  if [ -n "$root_hash" ]; then
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY PASSWORD $(literal "$root_hash");"
  elif [ -n "$root_password" ]; then
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(literal "$root_password");"
  fi
  if [ "$root_host" != localhost ]; then
    auth="IDENTIFIED BY $(literal "$root_password")"
    [ -z "$root_hash" ] || auth="IDENTIFIED BY PASSWORD $(literal "$root_hash")"
    echo "CREATE USER 'root'@$(literal "$root_host") $auth;"
    echo "GRANT ALL ON *.* TO 'root'@$(literal "$root_host") WITH GRANT OPTION;"
    echo "GRANT PROXY ON ''@'%' TO 'root'@$(literal "$root_host") WITH GRANT OPTION;"
  fi
  if [ -n "$database" ]; then
    echo "CREATE DATABASE IF NOT EXISTS $(identifier "$database");"
  fi
  if [ -n "$user" ]; then
    auth="IDENTIFIED BY $(literal "$password")"
    [ -z "$password_hash" ] || auth="IDENTIFIED BY PASSWORD $(literal "$password_hash")"
    echo "CREATE USER $(literal "$user")@'%' $auth;"
    if [ -n "$database" ]; then
      echo "GRANT ALL ON $(identifier "$database").* TO $(literal "$user")@'%';"
    fi
  fi
} | sql || fail "setting up the accounts and the database failed"

# From here on root has its password.
export MYSQL_PWD="$root_password"
for f in /docker-entrypoint-initdb.d/*; do
  case "$f" in
    *.sh)
      if [ -x "$f" ]; then say Note "running $f"; "$f"; else say Note "sourcing $f"; . "$f"; fi ;;
    *.sql) say Note "applying $f"; sql <"$f" ;;
    *.sql.gz) say Note "applying $f"; gzip -dc "$f" | sql ;;
    *.sql.xz) say Note "applying $f"; xz -dc "$f" | sql ;;
    *.sql.zst) say Note "applying $f"; zstd -dc "$f" | sql ;;
    *) say Note "ignoring $f" ;;
  esac
done

mariadb-admin --protocol=socket --socket="$socket" --user=root shutdown || fail "stopping the first server failed"
wait "$server" || fail "the first server did not stop cleanly"
unset MYSQL_PWD
say Note "$datadir initialised: starting MariaDB"
exec "$@"
