#!/usr/bin/env bash
# Installs everything the tests and the lab need, idempotently:
#   - Debian packages (etcd, MariaDB, ...)
#   - Kubernetes built from the Go module proxy with the Go in /usr/local/go, cached per version:
#     the newest release (control plane, kubelet, kube-proxy, kubectl) and the kube-apiserver
#     of the oldest release ferrometal supports (build-kubernetes.sh oldest)
#   - the Python virtualenvs with Ironic and sushy-tools, cached: the newest Ironic we test,
#     and the oldest release the operator offers (FERROMETAL_IRONIC=oldest)
#   - the real test node's packages and images (install-node.sh) and CoreDNS (build-coredns.sh)
#   - cert-manager's controller, cainjector and CRDs (build-cert-manager.sh)
#   - OLM's operators, opm, crane (the loopback registry) and OLM's CRDs (build-olm.sh)
# Heavy artifacts live under ${FERROMETAL_CACHE:-~/.cache/ferrometal}.
source "$(dirname "$0")/lib.sh"
here="$(dirname "$0")"
"$here/install-packages.sh"
# The test runner; a pinned release, compiled once (minutes) when the machine has none, beside
# every step below and at a lower priority than the Kubernetes builds.
NEXTEST_VERSION=0.9.143
nextest_log="$CACHE/nextest-install.log" nextest_pid=
if ! command -v cargo-nextest >/dev/null 2>&1 && ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest $NEXTEST_VERSION (logged to $nextest_log)"
  background nice -n 10 cargo install --locked cargo-nextest --version "$NEXTEST_VERSION" >"$nextest_log" 2>&1
  nextest_pid=$!
fi
# The node's Debian images (debootstrap and pip: mostly the network and the disk) are built
# beside Kubernetes (the compiler: the CPU), which saves a fresh machine several minutes. The
# packages they need come first, so that only install-node.sh, later, runs apt.
apt_install debootstrap libcap2-bin
mkdir -p "$CACHE"
images_log="$CACHE/debian-images.log"
background "$here/node/debian-images.sh" >"$images_log" 2>&1
images_pid=$!
"$here/build-kubernetes.sh"
"$here/build-kubernetes.sh" oldest
# cert-manager (for the CertManager tests) and then OLM (for the OLM install test) compile
# from Go modules while pip and apt fetch and unpack (the network and the disk) for the steps
# below; one after the other, each with its own log.
cert_manager_log="$CACHE/cert-manager-build.log"
olm_log="$CACHE/olm-build.log"
background bash -c '"$1" >"$2" 2>&1 || exit 1; "$3" >"$4" 2>&1 || exit 2' go-builds \
  "$here/build-cert-manager.sh" "$cert_manager_log" "$here/build-olm.sh" "$olm_log"
go_builds_pid=$!
"$here/python-venv.sh"
"$here/python-venv.sh" oldest
await_background "$images_pid" "$images_log" scripts/node/debian-images.sh
cat "$images_log" >&2
# The real test node: containerd and its other images, and CoreDNS (Go modules).
"$here/install-node.sh"
"$here/build-coredns.sh"
go_builds=0
wait "$go_builds_pid" || go_builds=$?
if [ "$go_builds" -ne 0 ]; then
  failed_log=$cert_manager_log failed=build-cert-manager.sh
  if [ "$go_builds" -eq 2 ]; then failed_log=$olm_log failed=build-olm.sh; fi
  tail -n 40 "$failed_log" >&2
  log "scripts/$failed failed (its log: $failed_log)"
  exit 1
fi
cat "$cert_manager_log" "$olm_log" >&2
if [ -n "$nextest_pid" ]; then await_background "$nextest_pid" "$nextest_log" "installing cargo-nextest"; fi
log "test environment ready (cache: $CACHE)"
