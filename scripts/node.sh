#!/usr/bin/env bash
# A real Kubernetes node on this machine, as plain processes (no systemd), for tests:
#
#   node.sh start DIR KUBECONFIG   containerd, kubelet, kube-proxy (iptables mode) and, when
#                                  scripts/build-coredns.sh has built it, CoreDNS as the cluster
#                                  DNS; waits until the Node is Ready and prints its name
#   node.sh stop DIR               stops them all and undoes what they did to the host: pods,
#                                  mounts, network namespaces, the bridge, iptables rules, sysctls.
#                                  DIR keeps the logs (DIR/logs) and can be removed afterwards.
#   node.sh status DIR             which of the processes run
#
# KUBECONFIG: a kubeconfig whose user the apiserver takes as cluster admin (system:masters): the
# kubelet, kube-proxy and CoreDNS all use it (a test node; no Node authorizer, no bootstrap).
# It names the apiserver and its CA; nothing else about the control plane is needed. For
# `kubectl logs/exec/port-forward` the apiserver dials the kubelet at the Node's address: its
# InternalIP is the pod bridge's gateway address (kubelet 1.37 refuses a loopback --node-ip:
# "nodeIP can't be loopback address"), its Hostname the node name; the kubelet listens on every
# address, answering only connections from this machine itself (an iptables rule), so either works
# when the node name resolves to this machine (the hostname does, the default). The kubelet serves
# a self-signed certificate: the apiserver must not set --kubelet-certificate-authority. The
# kubelet registers the Node tainted node.kubernetes.io/not-ready; start lifts the taint once the
# Node is Ready (kube-controller-manager's node-lifecycle-controller would, when it runs).
#
# Everything lives in DIR: containerd's config, root, state and socket (DIR/containerd), the
# kubelet's root (DIR/kubelet), CNI config and IPAM state (DIR/cni), logs (DIR/logs), pid files.
# Outside DIR: a bridge, the pods' network namespaces (/run/netns/cni-*), iptables chains (KUBE-*
# from kube-proxy and the kubelet, CNI-* from portmap, FERROMETAL-NODE from us), the symlinks the
# kubelet keeps in /var/log/containers, and some sysctls (saved in /run/ferrometal-node.sysctls,
# restored by stop).
#
# One node per machine at a time: kube-proxy owns the host's KUBE-* iptables chains. start refuses
# while another node runs (/run/ferrometal-node.owner names its DIR) and first cleans up after one
# whose processes died without a stop.
#
# Pod network: a bridge (FERROMETAL_NODE_BRIDGE, fmnode0) with the gateway address .1 of the pod
# subnet (FERROMETAL_POD_CIDR, 10.244.0.0/24); pods reach each other, the host (the gateway) and
# Services, and nothing else: no masquerading, and forwarding is allowed only from the bridge back
# into it. CoreDNS listens on the gateway address, port 53, and is the pods' clusterDNS
# (cluster.local). Pods cannot pull images: containerd holds only the images imported at start,
# registry.k8s.io/pause:<tag> (the sandbox) and ferrometal.local/probe:1 (scripts/node/probe.c:
# echo, exit CODE, sleep, serve, get, resolve); more with `node.sh import DIR ARCHIVE.tar`. Pods
# must say imagePullPolicy: Never or IfNotPresent.
#
# Settings (environment):
#   FERROMETAL_NODE_NAME      node name (default: this machine's hostname)
#   FERROMETAL_POD_CIDR       pod subnet, a /24 or larger (default 10.244.0.0/24)
#   FERROMETAL_NODE_BRIDGE    bridge name (default fmnode0)
#   FERROMETAL_KUBELET_PORT   kubelet's HTTPS port (default 10250)
#   FERROMETAL_NODE_DNS       1: run CoreDNS (fails if not built), 0: no cluster DNS,
#                             auto (default): run it if built
#   FERROMETAL_NODE_TIMEOUT   seconds start waits for the Node to be Ready (default 180)
#
# Needs root, scripts/install-node.sh (packages, images) and scripts/build-kubernetes.sh
# (kubelet, kube-proxy, kubectl).
source "$(dirname "$0")/lib.sh"

usage() { log "usage: $0 start DIR KUBECONFIG | stop DIR | status DIR | import DIR ARCHIVE.tar"; exit 2; }
[ $# -ge 2 ] || usage
CMD=$1
DIR=$(mkdir -p "$2" && cd "$2" && pwd)

BIN="$CACHE/kubernetes/current/bin"
NODE_CACHE="$CACHE/node"
NODE_NAME=${FERROMETAL_NODE_NAME:-$(hostname)}
POD_CIDR=${FERROMETAL_POD_CIDR:-10.244.0.0/24}
# The test control plane's --service-cluster-ip-range (tests/src/control_plane.rs).
SERVICE_CIDR=${FERROMETAL_SERVICE_CIDR:-10.0.0.0/24}
BRIDGE=${FERROMETAL_NODE_BRIDGE:-fmnode0}
KUBELET_PORT=${FERROMETAL_KUBELET_PORT:-10250}
DNS=${FERROMETAL_NODE_DNS:-auto}
TIMEOUT=${FERROMETAL_NODE_TIMEOUT:-180}
# The gateway: the subnet's first address.
NET=${POD_CIDR%/*}
PREFIX=${POD_CIDR#*/}
GATEWAY="${NET%.*}.$(( ${NET##*.} + 1 ))"
FWD_CHAIN=FERROMETAL-NODE-FWD IN_CHAIN=FERROMETAL-NODE-IN OUT_CHAIN=FERROMETAL-NODE-OUT
# Where runc puts the containers: /k8s.io/<id> in each cgroup hierarchy.
CGROUP=k8s.io
SOCK="$DIR/containerd/containerd.sock"
CTR=(ctr --address "$SOCK" --namespace k8s.io)
CTRT=(timeout 20 "${CTR[@]}") # for stop: a containerd that hangs must not hang it
# Kernel settings the kubelet (container_manager_linux.go), the CNI bridge plugin (isGateway) and
# kube-proxy change: saved at start, restored at stop.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys
  kernel/keys/root_maxbytes net/ipv4/ip_forward net/ipv4/conf/all/route_localnet
  net/bridge/bridge-nf-call-iptables)

pidfile() { echo "$DIR/run/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# spawn NAME CMD...: runs CMD in its own session, logging to DIR/logs/NAME.log.
spawn() {
  local name=$1
  shift
  setsid "$@" </dev/null >>"$DIR/logs/$name.log" 2>&1 &
  echo $! >"$(pidfile "$name")"
}

# halt NAME: TERM, then KILL after 10 s.
halt() {
  local name=$1 p i
  p=$(cat "$(pidfile "$name")" 2>/dev/null) || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { log "$name ($p) ignored TERM: killing it"; kill -KILL "$p" 2>/dev/null || true; sleep 0.2; }
  fi
  rm -f "$(pidfile "$name")"
}

# wait_for WHAT SECONDS CMD...: polls CMD every 0.2 s.
wait_for() {
  local what=$1 secs=$2 i
  shift 2
  for i in $(seq $((secs * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  log "timed out after $secs s waiting for $what"
  return 1
}

write_configs() {
  local pause_tag
  pause_tag=$(cat "$NODE_CACHE/pause-tag")
  mkdir -p "$DIR/containerd" "$DIR/cni/net.d" "$DIR/cni/ipam" "$DIR/kubelet" "$DIR/pod-logs" "$DIR/logs" "$DIR/run"
  # restrict_oom_score_adj: without CAP_SYS_RESOURCE in the bounding set (our machines), runc
  # cannot lower a process's oom_score_adj, and every sandbox fails with "can't get final child's
  # PID from pipe: EOF".
  cat >"$DIR/containerd/config.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:$pause_tag"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
EOF

  # ipMasq false and no default route out of the machine: see the FORWARD rules in start.
  cat >"$DIR/cni/net.d/10-ferrometal.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "ferrometal-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$DIR/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$GATEWAY"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF

  local dns=""
  [ "$RUN_DNS" = 1 ] && dns="clusterDNS: [\"$GATEWAY\"]"
  cat >"$DIR/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
$dns
clusterDomain: cluster.local
# No host resolver for pods: dnsPolicy Default gets an empty resolv.conf.
resolvConf: ""
podLogsDir: $DIR/pod-logs
# Our disks are often over 85 % full: evict only when they are (nearly) full, never collect images
# (they cannot be pulled back).
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%", imagefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
EOF

  cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: $NODE_NAME
bindAddress: $GATEWAY
healthzBindAddress: ""
metricsBindAddress: ""
clientConnection:
  kubeconfig: $KUBECONFIG_FILE
# NodePorts on the gateway address only: not on 127.0.0.1 (that needs route_localnet), not on
# the machine's own network.
nodePortAddresses: ["$GATEWAY/32"]
iptables:
  localhostNodePorts: false
  masqueradeAll: false
# Leave the host's conntrack settings alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
EOF

  cat >"$DIR/Corefile" <<EOF
.:53 {
    bind $GATEWAY
    errors
    health 127.0.0.1:$HEALTH_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $KUBECONFIG_FILE
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
    loadbalance
}
EOF
}

# The pod network's bridge, made here rather than by the CNI plugin on the first pod so that
# CoreDNS can bind the gateway address before any pod runs.
setup_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  # A MAC address of its own (locally administered, from the gateway address): otherwise the bridge
  # takes the lowest of its ports' and changes it as pods come and go, and the pods' ARP entries
  # for the gateway go stale: replies to the host are lost for a while.
  local o
  IFS=. read -ra o <<<"$GATEWAY"
  ip link set "$BRIDGE" address "$(printf '02:fe:%02x:%02x:%02x:%02x' "${o[@]}")"
  ip addr replace "$GATEWAY/$PREFIX" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Nothing leaves the pod network through this machine, nothing enters it from outside:
  # forwarding only from the bridge back into it (pod to Service to pod). In the mangle table,
  # whose FORWARD chain runs before the filter table's, where kube-proxy puts its own rules first
  # (some of them ACCEPT).
  local ipt=(iptables -w -t mangle)
  "${ipt[@]}" -N "$FWD_CHAIN" 2>/dev/null || "${ipt[@]}" -F "$FWD_CHAIN"
  "${ipt[@]}" -A "$FWD_CHAIN" -i "$BRIDGE" -o "$BRIDGE" -j RETURN
  "${ipt[@]}" -A "$FWD_CHAIN" -i "$BRIDGE" -j DROP
  "${ipt[@]}" -A "$FWD_CHAIN" -o "$BRIDGE" -j DROP
  "${ipt[@]}" -C FORWARD -j "$FWD_CHAIN" 2>/dev/null || "${ipt[@]}" -I FORWARD 1 -j "$FWD_CHAIN"
  # The kubelet listens on every address (the apiserver dials the Node's Hostname or InternalIP
  # address, whichever it prefers) but answers only this machine's own processes: not the pods,
  # not the network (its API lets anyone in: anonymous, AlwaysAllow).
  iptables -w -N "$IN_CHAIN" 2>/dev/null || iptables -w -F "$IN_CHAIN"
  iptables -w -A "$IN_CHAIN" -p tcp --dport "$KUBELET_PORT" ! -i lo -j REJECT --reject-with tcp-reset
  iptables -w -C INPUT -j "$IN_CHAIN" 2>/dev/null || iptables -w -I INPUT 1 -j "$IN_CHAIN"
  # A connection of this machine's to a ClusterIP that kube-proxy neither sent to a pod (DNAT)
  # nor refused (a Service without endpoints) is dropped, as on a cluster's node, where nothing
  # else answers such an address: the SYN is sent again a second later, through kube-proxy's
  # rules by then. Without this, this machine's egress proxy takes it through the default route
  # and answers with a certificate of its own: it did, in the instant kube-proxy rewrites its
  # filter and nat tables one after the other as a pod becomes ready (design/testing.md).
  # Appended after kube-proxy's own jumps, so its REJECT for a Service without endpoints stays.
  iptables -w -N "$OUT_CHAIN" 2>/dev/null || iptables -w -F "$OUT_CHAIN"
  iptables -w -A "$OUT_CHAIN" -d "$SERVICE_CIDR" -m conntrack ! --ctstate DNAT -j DROP
  iptables -w -C OUTPUT -j "$OUT_CHAIN" 2>/dev/null || iptables -w -A OUTPUT -j "$OUT_CHAIN"
}

# One node per machine: /run/ferrometal-node.owner names the folder of the node that runs, under a
# lock. A node whose processes are gone (its test died without stopping it) is cleaned up first.
# FERROMETAL_NODE_TAKEOVER=1 says the caller holds the test harness's machine lock
# (tests/src/node.rs), which every user of a node holds for the node's whole life: a node that
# still runs then belongs to a harness process that was killed before it could stop it, and is
# stopped too.
OWNER=/run/ferrometal-node.owner SYSCTLS_SAVED=/run/ferrometal-node.sysctls
claim() {
  exec 9>/run/ferrometal-node.lock
  flock -w 60 9 || { log "cannot lock /run/ferrometal-node.lock"; exit 1; }
  local other
  other=$(cat "$OWNER" 2>/dev/null || true)
  if [ -n "$other" ] && [ "$other" != "$DIR" ]; then
    local n p
    for n in containerd kubelet; do
      p=$(cat "$other/run/$n.pid" 2>/dev/null || true)
      if [ -n "$p" ] && kill -0 "$p" 2>/dev/null && [ "${FERROMETAL_NODE_TAKEOVER:-}" != 1 ]; then
        log "a node already runs in $other (one per machine: stop it first)"
        exit 1
      fi
    done
    if [ -d "$other" ]; then
      log "cleaning up after the node left in $other"
      "$0" stop "$other" || true
    fi
  fi
  echo "$DIR" >"$OWNER"
  exec 9>&-
}

start() {
  [ $# -eq 1 ] || usage
  KUBECONFIG_FILE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  [ -f "$KUBECONFIG_FILE" ] || { log "no kubeconfig $1"; exit 1; }
  for b in kubelet kube-proxy kubectl; do
    [ -x "$BIN/$b" ] || { log "no $BIN/$b: run scripts/build-kubernetes.sh"; exit 1; }
  done
  for f in pause.tar probe.tar pause-tag; do
    [ -f "$NODE_CACHE/$f" ] || { log "no $NODE_CACHE/$f: run scripts/install-node.sh"; exit 1; }
  done
  command -v containerd >/dev/null && command -v iptables >/dev/null || { log "run scripts/install-node.sh"; exit 1; }
  if running kubelet || running containerd; then log "a node already runs in $DIR"; exit 1; fi
  claim
  RUN_DNS=0
  case "$DNS" in
    1) [ -x "$NODE_CACHE/coredns" ] || { log "no $NODE_CACHE/coredns: run scripts/build-coredns.sh"; exit 1; }; RUN_DNS=1 ;;
    auto) [ -x "$NODE_CACHE/coredns" ] && RUN_DNS=1 ;;
  esac
  HEALTH_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local t0=$SECONDS

  write_configs
  echo "$KUBECONFIG_FILE" >"$DIR/kubeconfig-path"
  echo "$NODE_NAME" >"$DIR/node-name"
  echo "$BRIDGE" >"$DIR/bridge"
  # The host as the pods see it: where a test serves what pods must reach (RealNode::gateway).
  echo "$GATEWAY" >"$DIR/gateway"
  # Saved once, outside DIR: a second start after a failed one, or after a node whose DIR is gone,
  # must not save a node's values as the machine's.
  if [ ! -f "$SYSCTLS_SAVED" ]; then
    for s in "${SYSCTLS[@]}"; do
      if [ -f "/proc/sys/$s" ]; then echo "$s $(cat "/proc/sys/$s")"; fi
    done >"$SYSCTLS_SAVED.partial"
    mv "$SYSCTLS_SAVED.partial" "$SYSCTLS_SAVED"
  fi
  setup_network

  spawn containerd containerd --config "$DIR/containerd/config.toml"
  wait_for containerd 30 "${CTR[@]}" version || { tail -n 20 "$DIR/logs/containerd.log"; exit 1; }
  for f in pause.tar probe.tar; do
    "${CTR[@]}" images import --all-platforms=false "$NODE_CACHE/$f" >/dev/null
  done
  log "containerd up, images imported ($((SECONDS - t0)) s)"

  local since
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  spawn kubelet "$BIN/kubelet" --config "$DIR/kubelet/config.yaml" --kubeconfig "$KUBECONFIG_FILE" \
    --root-dir "$DIR/kubelet" --cert-dir "$DIR/kubelet/pki" --node-ip "$GATEWAY" \
    --hostname-override "$NODE_NAME" --v=1
  spawn kube-proxy "$BIN/kube-proxy" --config "$DIR/kube-proxy.yaml" --v=1
  if [ "$RUN_DNS" = 1 ]; then
    spawn coredns "$NODE_CACHE/coredns" -conf "$DIR/Corefile"
    echo "$HEALTH_PORT" >"$DIR/run/coredns.health-port"
  fi

  local kubectl=("$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" --request-timeout=10s)
  ready() {
    running kubelet || { log "kubelet exited:"; tail -n 30 "$DIR/logs/kubelet.log" >&2; exit 1; }
    # Ready, as told by this kubelet: a Node left by an earlier one may still say Ready.
    local got
    got=$("${kubectl[@]}" get node "$NODE_NAME" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null) || return 1
    [ "${got%% *}" = True ] && [[ ! "${got#* }" < "$since" ]]
  }
  local i
  for i in $(seq $((TIMEOUT * 2))); do
    ready && break
    sleep 0.5
  done
  ready || { log "node $NODE_NAME not Ready after $TIMEOUT s (logs in $DIR/logs)"; exit 1; }
  # The kubelet registers its Node with this taint; kube-controller-manager's
  # node-lifecycle-controller lifts it once the Node is Ready, when it runs at all. Lifted here
  # (once: a node that is not Ready later keeps its pods).
  if grep -qw node.kubernetes.io/not-ready <<<"$("${kubectl[@]}" get node "$NODE_NAME" -o jsonpath='{.spec.taints[*].key}')"; then
    "${kubectl[@]}" taint node "$NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null
  fi
  if [ "$RUN_DNS" = 1 ]; then
    wait_for "CoreDNS" 60 curl -sf "http://127.0.0.1:$HEALTH_PORT/health" || { tail -n 20 "$DIR/logs/coredns.log"; exit 1; }
  fi
  log "node $NODE_NAME Ready in $((SECONDS - t0)) s (dns: $([ "$RUN_DNS" = 1 ] && echo "$GATEWAY" || echo none))"
  echo "$NODE_NAME"
}

import() {
  [ $# -eq 1 ] || usage
  "${CTR[@]}" images import --all-platforms=false "$1"
}

# Undoes start, in order: no new pods (kubelet), then the pods' processes, sandboxes and network
# namespaces, then containerd, mounts, network and kernel settings. Safe to run twice, and after a
# start that failed half way.
stop() {
  [ $# -eq 0 ] || usage
  if [ -f "$DIR/bridge" ]; then BRIDGE=$(cat "$DIR/bridge"); fi
  mkdir -p "$DIR/logs"
  halt kube-proxy
  halt coredns
  halt kubelet

  local netns=() id
  if running containerd; then
    # Every container's network namespace (the sandboxes'), before the containers go.
    for id in $("${CTRT[@]}" containers ls -q 2>/dev/null); do
      netns+=($("${CTRT[@]}" containers info "$id" 2>/dev/null |
        sed -n 's#.*"path": "\(/var/run/netns/[^"]*\|/run/netns/[^"]*\)".*#\1#p' || true))
    done
    for id in $("${CTRT[@]}" tasks ls -q 2>/dev/null); do
      "${CTRT[@]}" tasks kill --all --signal SIGKILL "$id" >/dev/null 2>&1 || true
    done
    for id in $("${CTRT[@]}" tasks ls -q 2>/dev/null); do
      wait_for "task $id to die" 10 sh -c "! ${CTRT[*]} tasks ls 2>/dev/null | grep -q '^$id .*RUNNING'" || true
      "${CTRT[@]}" tasks delete --force "$id" >/dev/null 2>&1 || true
    done
    for id in $("${CTRT[@]}" containers ls -q 2>/dev/null); do
      "${CTRT[@]}" containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  halt containerd
  # Shims whose containerd is gone (a containerd that was killed): theirs is our socket.
  local p
  for p in $(pgrep -f "containerd-shim.*-address $SOCK( |$)" || true); do kill -KILL "$p" 2>/dev/null || true; done

  # Whatever still runs in our containers' cgroups (a containerd or shim that was killed leaves its
  # containers running): their network namespaces are noted, then they are killed. Our containers:
  # those runc (its root is ours) and containerd's shims (their state is ours) know of.
  local ids procs inodes=() pid i
  ids=$(ls "$DIR/containerd/runc/k8s.io" "$DIR/containerd/state/io.containerd.runtime.v2.task/k8s.io" 2>/dev/null || true)
  cgroups() { for id in $ids; do ls -d /sys/fs/cgroup/*/"$CGROUP/$id" 2>/dev/null || true; done; }
  procs_of() { for c in $(cgroups); do cat "$c/cgroup.procs" 2>/dev/null || true; done; }
  procs=$(procs_of | sort -u)
  if [ -n "$procs" ]; then
    log "killing $(wc -w <<<"$procs") leftover pod processes"
    for pid in $procs; do
      inodes+=($(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null || true))
      kill -KILL "$pid" 2>/dev/null || true
    done
    for i in $(seq 50); do
      [ -z "$(procs_of)" ] && break
      sleep 0.1
    done
  fi
  local ns
  for ns in /run/netns/*; do
    [ -e "$ns" ] || continue
    if grep -qx "\(/var\)\?$ns" <<<"$(printf '%s\n' "${netns[@]}")" ||
      grep -qx "$(stat -L -c %i "$ns" 2>/dev/null)" <<<"$(printf '%s\n' "${inodes[@]}")"; then
      ip netns delete "$(basename "$ns")" 2>/dev/null || true
    fi
  done
  # Mounts under DIR (volumes, sandbox /dev/shm, overlay rootfs), deepest first.
  local m
  for m in $(awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
  done
  # The cgroups runc made for our containers: /k8s.io/<container id> in each hierarchy (containerd's
  # CRI namespace; without cgroupsPerQOS the kubelet gives no cgroup parent), and /k8s.io itself
  # when that leaves it empty.
  for c in $(cgroups); do rmdir "$c" 2>/dev/null || true; done
  rmdir /sys/fs/cgroup/*/"$CGROUP" 2>/dev/null || true
  # The kubelet's links to our pod logs, libcni's cache of our network's results, and the
  # folders they and containerd's shims (sockets in /run/containerd/s) leave, when empty.
  # A shim's socket is /run/containerd/s/sha256(containerd's address/namespace/id) (containerd
  # 1.6's shim.SocketAddress); a killed shim leaves it behind.
  find /var/log/containers -maxdepth 1 -type l -lname "$DIR/*" -delete 2>/dev/null || true
  rm -f /var/lib/cni/results/ferrometal-node-* 2>/dev/null || true
  for id in $ids; do
    rm -f "/run/containerd/s/$(printf '%s' "$SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)" /var/lib/cni/results/*-"$id"-*
  done
  rmdir /var/log/containers /var/lib/cni/results /var/lib/cni /run/containerd/s /run/containerd/runc/k8s.io \
    /run/containerd/runc /run/containerd 2>/dev/null || true

  # The machine-wide part (bridge, iptables, sysctls) only when this node is the one that owns the
  # machine, or none does: not under another node that started since.
  local owner
  owner=$(cat "$OWNER" 2>/dev/null || true)
  if [ -n "$owner" ] && [ "$owner" != "$DIR" ]; then
    log "node in $DIR stopped; the bridge, iptables rules and sysctls belong to the node in $owner now"
    return 0
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
  clean_iptables
  if [ -f "$SYSCTLS_SAVED" ]; then
    local s v
    while read -r s v; do
      if [ -f "/proc/sys/$s" ] && [ "$(cat "/proc/sys/$s")" != "$v" ]; then echo "$v" >"/proc/sys/$s"; fi
    done <"$SYSCTLS_SAVED"
    rm -f "$SYSCTLS_SAVED"
  fi
  rm -f "$OWNER" /run/ferrometal-node.lock
  log "node in $DIR stopped"
}

# kube-proxy's own cleanup, then whatever KUBE-*, CNI-* (portmap) and our chain left, table by
# table, in both address families.
clean_iptables() {
  local OURS="KUBE-|CNI-|FERROMETAL-NODE-"
  [ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >>"$DIR/logs/kube-proxy-cleanup.log" 2>&1 || true
  local save restore table rules
  for fam in "" 6; do
    save=ip${fam}tables-save restore=ip${fam}tables-restore
    command -v "$save" >/dev/null || continue
    for table in filter nat mangle raw; do
      rules=$("$save" -t "$table" 2>/dev/null) || continue
      grep -qE "$OURS" <<<"$rules" || continue
      grep -vE "$OURS" <<<"$rules" | "$restore" -w || log "$restore failed for table $table"
    done
    if grep -qE "$OURS" <<<"$("$save" 2>/dev/null)"; then log "$save still shows rules of the node:"; "$save" | grep -E "$OURS" >&2; fi
  done
}

status() {
  local n
  for n in containerd kubelet kube-proxy coredns; do
    if running "$n"; then echo "$n running ($(cat "$(pidfile "$n")"))"; else echo "$n stopped"; fi
  done
}

shift 2
case "$CMD" in
  start) start "$@" ;;
  stop) stop "$@" ;;
  status) status "$@" ;;
  import) import "$@" ;;
  *) usage ;;
esac
