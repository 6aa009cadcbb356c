#!/usr/bin/env bash
# Builds the root file system of distroless's cc-debian12 from Debian's own packages (nothing can
# be pulled here), for the operator image (scripts/operator-image.sh):
#   distroless-base.sh OUT.tar
# debootstrap (variant minbase, bookworm, the machine's Debian mirror) into a scratch root, of
# which only the files of base-files, netbase, tzdata, libc6 and libgcc-s1 are kept, with the CA
# bundle ca-certificates generates (/etc/ssl/certs/ca-certificates.crt), glibc's ld.so.cache,
# and /etc/passwd and /etc/group naming root, nobody and nonroot (65532). No shell, no package
# manager. OUT.tar (a plain tar of the root, sorted, fixed times) is rebuilt only when this
# script changes (OUT.tar.recipe); about a minute. Needs root (debootstrap).
source "$(dirname "$0")/../lib.sh"
[ $# -eq 1 ] || { log "usage: $0 OUT.tar"; exit 2; }
BASE=$1
SUITE=bookworm
# distroless cc-debian12's packages, less those the binary does not load (libssl3: rustls;
# libstdc++6, libgomp1: Rust links neither). ca-certificates is installed for its bundle only.
KEEP="base-files netbase tzdata libc6 libgcc-s1"
mkdir -p "$(dirname "$BASE")"

want="$(sha256sum "$0" | cut -d' ' -f1) $SUITE $KEEP"
if [ -f "$BASE" ] && [ "$(cat "$BASE.recipe" 2>/dev/null)" = "$want" ]; then
  log "the cc-debian12 base cached in $BASE"
  exit 0
fi
apt_install debootstrap
start=$SECONDS
MIRROR=$(awk '/^URIs:/ && $2 ~ /\/debian$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d /var/tmp/ferrometal-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
full="$work/full" root="$work/root"
log "building the cc-debian12 base from Debian $SUITE ($MIRROR)"
debootstrap --variant=minbase --include=ca-certificates,libgcc-s1,netbase,tzdata "$SUITE" "$full" "$MIRROR" \
  >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
mkdir -p "$root"
# bookworm's merged /usr: /bin, /lib, /lib64, /sbin are links into /usr; kept as links so that
# the packages' paths (the loader at /lib64/ld-linux-x86-64.so.2) resolve.
for l in bin sbin lib lib32 lib64 libx32; do
  if [ -L "$full/$l" ]; then
    cp -a "$full/$l" "$root/$l"
    mkdir -p "$root/$(readlink "$full/$l")"
  fi
done
# The kept packages' own files (directories listed too, hence --no-recursion), less
# documentation; then what their maintainer scripts generated.
{
for p in $KEEP; do
  list="$full/var/lib/dpkg/info/$p.list"
  [ -f "$list" ] || list="$full/var/lib/dpkg/info/$p:amd64.list"
  [ -f "$list" ] || { log "no file list of $p"; exit 1; }
  grep -v -e '^/\.$' -e '^/usr/share/doc' -e '^/usr/share/man' -e '^/usr/share/lintian' -e '^/usr/share/locale' "$list"
done
printf '%s\n' /etc/ssl /etc/ssl/certs /etc/ssl/certs/ca-certificates.crt /etc/ld.so.cache /etc/ld.so.conf \
  /etc/ld.so.conf.d /etc/nsswitch.conf
} | sed 's|^/||' | sort -u | while read -r f; do
  if [ -e "$full/$f" ] || [ -L "$full/$f" ]; then echo "$f"; fi
done >"$work/files"
tar -C "$full" --no-recursion -cf - -T "$work/files" | tar -C "$root" --keep-directory-symlink -xf -
# distroless's users: nonroot (65532) is the one the image runs as.
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
  'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$root/etc/group"
mkdir -p "$root/tmp" "$root/root" "$root/home/nonroot" "$root/usr/local/bin"
chmod 1777 "$root/tmp"
chmod 0700 "$root/root" "$root/home/nonroot"
chown 65532:65532 "$root/home/nonroot"
chmod 0755 "$root"
for shell in bin/sh bin/bash usr/bin/dpkg usr/bin/apt; do
  [ ! -e "$root/$shell" ] || { log "the base holds $shell: not distroless"; exit 1; }
done
tar --sort=name --numeric-owner --mtime=@0 --format=gnu -C "$root" -cf "$BASE.partial" .
mv "$BASE.partial" "$BASE"
echo "$want" >"$BASE.recipe"
log "built the base in $((SECONDS - start)) s: $BASE ($(du -h "$BASE" | cut -f1))"
