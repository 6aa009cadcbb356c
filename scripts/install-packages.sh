#!/usr/bin/env bash
# Debian packages every part of the test environment and the lab needs.
# Idempotent: only missing packages are installed.
# busybox: udhcpc and tftp, the machine's firmware in tests/tests/real/dhcp.rs.
# valgrind: callgrind counts the host controller's bookkeeping instructions (make bench).
source "$(dirname "$0")/lib.sh"

apt_install \
  etcd-server \
  mariadb-server mariadb-client \
  jq make \
  ipmitool \
  dnsmasq-base \
  busybox \
  genisoimage \
  valgrind \
  python3 python3-venv \
  ca-certificates curl
