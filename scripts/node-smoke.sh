#!/usr/bin/env bash
# Smoke test of a real node (scripts/node.sh) against a control plane started here:
#   node-smoke.sh [DIR]
# Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler (v1.37 from
# scripts/build-kubernetes.sh, Debian's etcd) on free loopback ports with openssl-made
# certificates, starts the node, runs the checks below, prints one line per check and
# 'N passed, N failed', then stops everything and removes DIR (default: a new folder under /tmp;
# FERROMETAL_KEEP=1 keeps it, with the logs). Exit status: 0 when every check passed.
#
# Checks: the Node is Ready; a pod on the pod network runs; a hostNetwork pod runs; kubectl logs
# and exec; a Job whose container exits 0 completes and one whose container exits 3 fails with
# exit code 3; a ClusterIP Service reaches its pods through kube-proxy, from a pod and from the
# host; a pod reaches another by its IP; pods cannot reach the kubelet; the isolation rules are in
# place (no traffic is sent off the machine to check them); a pod resolves
# <svc>.<ns>.svc.cluster.local and the short name (when CoreDNS is built); the namespace goes.
#
# Needs root and scripts/install-node.sh, scripts/build-kubernetes.sh (and, for DNS,
# scripts/build-coredns.sh) done before. Runs alone: one node per machine (see node.sh).
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN="$CACHE/kubernetes/current/bin"

DIR=${1:-$(mktemp -d /tmp/ferrometal-node-smoke.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
CP="$DIR/control-plane"
mkdir -p "$CP/pki" "$CP/logs" "$CP/run"

PIDS=()
cleanup() {
  local rc=$?
  set +e
  "$HERE/node.sh" stop "$DIR/node" 2>&1 | sed 's/^/  /' >&2
  local p i n
  # Last started first: the scheduler and controller manager, the apiserver, etcd.
  for ((n = ${#PIDS[@]} - 1; n >= 0; n--)); do
    p=${PIDS[n]}
    kill -TERM "$p" 2>/dev/null
    for i in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  if [ "${FERROMETAL_KEEP:-0}" = 1 ]; then log "kept $DIR"; else rm -rf "$DIR"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- certificates (openssl, X.509 v3, ECDSA P-256) ---
T0=$SECONDS
cd "$CP/pki"
ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ec_key ca.key
openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj "/CN=ferrometal-node-smoke-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
# sign NAME SUBJECT EXTENSIONS
sign() {
  ec_key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" \
    -out "$1.crt" 2>/dev/null
}
sign apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=ferrometal-admin" "extendedKeyUsage=clientAuth"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
openssl pkey -in sa.key -pubout -out sa.pub

ETCD_PORT=$(free_port) PEER_PORT=$(free_port) API_PORT=$(free_port)
SERVER="https://127.0.0.1:$API_PORT"
KUBECONFIG="$CP/admin.kubeconfig"
b64() { base64 -w0 <"$1"; }
cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: smoke
  cluster: {server: "$SERVER", certificate-authority-data: $(b64 ca.crt)}
users:
- name: admin
  user: {client-certificate-data: $(b64 admin.crt), client-key-data: $(b64 admin.key)}
contexts:
- name: smoke
  context: {cluster: smoke, user: admin}
current-context: smoke
EOF
export KUBECONFIG
cd "$DIR"

spawn() { # NAME CMD...
  local name=$1
  shift
  "$@" </dev/null >"$CP/logs/$name.log" 2>&1 &
  PIDS+=($!)
}
spawn etcd /usr/bin/etcd --name=smoke --data-dir="$CP/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$PEER_PORT" \
  --initial-cluster="smoke=http://127.0.0.1:$PEER_PORT" --logger=zap --log-level=warn
# The flags of our test harness (tests/src/control_plane.rs), nothing more: node.sh must work with
# its control plane as it is.
spawn kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --cert-dir="$CP/apiserver-certs" --tls-cert-file="$CP/pki/apiserver.crt" \
  --tls-private-key-file="$CP/pki/apiserver.key" --client-ca-file="$CP/pki/ca.crt" \
  --secure-port="$API_PORT" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
  --authorization-mode=RBAC --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$CP/pki/sa.pub" --service-account-signing-key-file="$CP/pki/sa.key" \
  --v=1
kubectl() { "$BIN/kubectl" "$@"; }
for i in $(seq 300); do
  [ "$(kubectl get --raw /readyz 2>/dev/null)" = ok ] && break
  sleep 0.2
done
[ "$(kubectl get --raw /readyz 2>/dev/null)" = ok ] || { tail -n 30 "$CP/logs/kube-apiserver.log"; exit 1; }
spawn kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
  --service-account-private-key-file="$CP/pki/sa.key" --root-ca-file="$CP/pki/ca.crt" \
  --use-service-account-credentials=false \
  --controllers=serviceaccount,serviceaccount-token,namespace,garbagecollector,deployment,replicaset,daemonset,statefulset,job,endpoint,endpointslice,root-ca-cert-publisher \
  --v=1
spawn kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG" --secure-port=0 --leader-elect=false --v=1
log "control plane up in $((SECONDS - T0)) s ($SERVER)"

# --- the node ---
PASSED=0 FAILED=0
verdict() { if "$@" >/dev/null 2>&1; then echo 0; else echo 1; fi; }
check() { # NAME OK(0/1) [DETAIL]
  if [ "$2" = 0 ]; then PASSED=$((PASSED + 1)); echo "PASS $1${3:+: $3}"; else FAILED=$((FAILED + 1)); echo "FAIL $1${3:+: $3}"; fi
}
T1=$SECONDS
if NODE=$("$HERE/node.sh" start "$DIR/node" "$KUBECONFIG"); then
  check "node Ready" 0 "$NODE in $((SECONDS - T1)) s"
else
  check "node Ready" 1
  FERROMETAL_KEEP=1
  exit 1
fi
DNS=0
[ -f "$DIR/node/run/coredns.pid" ] && DNS=1

# --- workloads ---
NS=smoke
kubectl create namespace "$NS" >/dev/null
for i in $(seq 100); do kubectl -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
IMAGE=ferrometal.local/probe:1

# pod NAME HOSTNETWORK ARGS...: a bare pod of the probe image.
pod() {
  local name=$1 hostnet=$2 args
  shift 2
  args=$(printf '"%s",' "$@")
  kubectl -n "$NS" apply -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$name", "labels": {"app": "$name"}},
 "spec": {"hostNetwork": $hostnet, "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
  "dnsPolicy": "$([ "$hostnet" = true ] && echo ClusterFirstWithHostNet || echo ClusterFirst)",
  "containers": [{"name": "main", "image": "$IMAGE", "imagePullPolicy": "Never", "args": [${args%,}]}]}}
EOF
}
# job NAME ARGS...: a Job of the probe image, no retries.
job() {
  local name=$1 args
  shift
  args=$(printf '"%s",' "$@")
  kubectl -n "$NS" apply -f - >/dev/null <<EOF
{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "$name"},
 "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
  "containers": [{"name": "main", "image": "$IMAGE", "imagePullPolicy": "Never", "args": [${args%,}]}]}}}}
EOF
}
# job_result NAME: waits for the Job to finish; prints Complete or Failed.
job_result() {
  local i c
  for i in $(seq 120); do
    c=$(kubectl -n "$NS" get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null)
    case " $c" in *" Complete "*) echo Complete; return ;; *" Failed "*) echo Failed; return ;; esac
    sleep 0.5
  done
  echo "unfinished"
}
job_logs() { kubectl -n "$NS" logs "job/$1" 2>&1 || true; }

T2=$SECONDS
pod web false serve 8080
if kubectl -n "$NS" wait --for=condition=Ready pod/web --timeout=120s >/dev/null 2>&1; then
  check "pod on the pod network Running" 0 "$(kubectl -n "$NS" get pod web -o jsonpath='{.status.podIP}') in $((SECONDS - T2)) s"
else
  check "pod on the pod network Running" 1 "$(kubectl -n "$NS" get pod web -o wide --no-headers 2>&1)"
  kubectl -n "$NS" describe pod web | tail -n 15
fi
T3=$SECONDS
pod hostnet true sleep 0
if kubectl -n "$NS" wait --for=condition=Ready pod/hostnet --timeout=120s >/dev/null 2>&1; then
  check "hostNetwork pod Running" 0 "$(kubectl -n "$NS" get pod hostnet -o jsonpath='{.status.podIP}') in $((SECONDS - T3)) s"
else
  check "hostNetwork pod Running" 1 "$(kubectl -n "$NS" get pod hostnet -o wide --no-headers 2>&1)"
fi

out=$(kubectl -n "$NS" logs web 2>&1 || true)
check "kubectl logs" "$(verdict [ "$out" = "serving on port 8080" ])" "$out"
out=$(kubectl -n "$NS" exec web -- /probe echo hello from exec 2>&1 || true)
check "kubectl exec" "$(verdict [ "$out" = "hello from exec" ])" "$out"

job succeeds exit 0 job succeeded
job fails exit 3 job failed
r="$(job_result succeeds): $(job_logs succeeds)"
check "Job exiting 0 completes" "$(verdict [ "$r" = "Complete: job succeeded" ])" "$r"
r=$(job_result fails)
code=$(kubectl -n "$NS" get pods -l job-name=fails -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null || true)
check "Job exiting 3 fails" "$(verdict [ "$r $code" = "Failed 3" ])" "$r, exit code $code"

kubectl -n "$NS" expose pod web --name web --port 80 --target-port 8080 >/dev/null
SVC_IP=$(kubectl -n "$NS" get service web -o jsonpath='{.spec.clusterIP}' || true)
for i in $(seq 50); do
  [ -n "$(kubectl -n "$NS" get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null)" ] && break
  sleep 0.2
done
sleep 2 # kube-proxy's next sync
job svc get "$SVC_IP" 80
r="$(job_result svc): $(job_logs svc)"
check "Service $SVC_IP:80 from a pod" "$(verdict [ "$r" = "Complete: web" ])" "$r"
out=$("$CACHE/node/probe" get "$SVC_IP" 80 2>&1 || true)
check "Service $SVC_IP:80 from the host" "$(verdict [ "$out" = web ])" "$out"
WEB_IP=$(kubectl -n "$NS" get pod web -o jsonpath='{.status.podIP}' || true)
job direct get "$WEB_IP" 8080
r="$(job_result direct): $(job_logs direct)"
check "pod to pod $WEB_IP:8080" "$(verdict [ "$r" = "Complete: web" ])" "$r"
# Local addresses only: the kubelet's port on the gateway must not answer pods.
GATEWAY=$(ip -4 -o addr show dev "$(cat "$DIR/node/bridge")" | awk '{print $4}' | cut -d/ -f1)
job kubelet get "$GATEWAY" 10250
r=$(job_result kubelet)
check "kubelet $GATEWAY:10250 closed to pods" "$(verdict [ "$r" = Failed ])" "$r: $(job_logs kubelet)"
# Nothing leaves the machine from the pod network: checked by the rules, not by sending anything
# out. Our chain comes first in mangle FORWARD; the only MASQUERADE is kube-proxy's, in
# KUBE-POSTROUTING, for the packets it marks (a pod reaching itself through a Service: local).
fwd=$(iptables -w -t mangle -S FORWARD | sed -n 2p)
masq=$(iptables-save -t nat | grep -- '-j MASQUERADE' | grep -vc -- '^-A KUBE-POSTROUTING ' || true)
check "isolation rules" "$(verdict [ "$fwd|$masq" = "-A FORWARD -j FERROMETAL-NODE-FWD|0" ])" "mangle FORWARD starts with '$fwd'; $masq MASQUERADE rules besides kube-proxy's"

if [ "$DNS" = 1 ]; then
  job dns resolve "web.$NS.svc.cluster.local"
  r="$(job_result dns): $(job_logs dns)"
  check "DNS web.$NS.svc.cluster.local" "$(verdict [ "$r" = "Complete: $SVC_IP" ])" "$r"
  job dns-short get web 80
  r="$(job_result dns-short): $(job_logs dns-short)"
  check "DNS short name web, then the Service" "$(verdict [ "$r" = "Complete: web" ])" "$r"
else
  echo "SKIP DNS: no CoreDNS (scripts/build-coredns.sh)"
fi

# For a look around before the end (FERROMETAL_SMOKE_HOLD=SECONDS; KUBECONFIG is $CP/admin.kubeconfig).
[ -z "${FERROMETAL_SMOKE_HOLD:-}" ] || { log "holding for $FERROMETAL_SMOKE_HOLD s: $DIR"; sleep "$FERROMETAL_SMOKE_HOLD"; }
T4=$SECONDS
check "namespace with pods deleted" "$(verdict kubectl delete namespace "$NS" --wait=true --timeout=120s)" "in $((SECONDS - T4)) s"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
