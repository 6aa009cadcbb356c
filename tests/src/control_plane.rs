//! A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager
//! and kube-scheduler of the release the tests run against ([`env::kubernetes_release`]: the
//! newest that builds here, or the oldest ferrometal supports), built from the Go module proxy.
//!
//! The apiserver authenticates clients by certificates from an rcgen CA, authorises with RBAC,
//! and binds 127.0.0.1 on free ports. The controller manager runs the controllers our tests
//! rely on: garbage collection, Deployments, ReplicaSets, DaemonSets, StatefulSets, Jobs,
//! namespaces, service accounts and the root CA ConfigMap. The scheduler binds pods to nodes;
//! no kubelet runs here unless a test starts one, and [`crate::pod_simulator`] stands in for it
//! on its own simulated node.

use crate::pki::{Authority, loopback};
use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use crate::{env, ports, wait};
use anyhow::{Context, bail};
use base64::Engine;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config};
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Which parts of the control plane to run.
#[derive(Clone, Debug)]
pub struct ControlPlaneConfig {
    /// Run kube-controller-manager and kube-scheduler (default). Without them, nothing creates
    /// pods for workloads, nothing is garbage-collected and only the pod simulator binds pods.
    /// The oldest release (`FERROMETAL_KUBERNETES=oldest`) is built as its kube-apiserver alone,
    /// so only a control plane without them runs against it.
    pub controller_manager: bool,
    /// Start a real node ([`crate::node::RealNode`]: containerd, kubelet, kube-proxy, CoreDNS)
    /// once the control plane is up. Off by default: one node runs per machine at a time, so
    /// the tests that need one run one after the other.
    pub node: bool,
}

impl Default for ControlPlaneConfig {
    fn default() -> Self {
        Self { controller_manager: true, node: false }
    }
}

/// A running control plane. Dropping it stops every process.
pub struct ControlPlane {
    client: Client,
    server: String,
    kubeconfig: PathBuf,
    ca_pem: String,
    /// etcd's client and peer ports and the apiserver's.
    ports: Vec<u16>,
    // Declared in stop order: fields drop top to bottom. The node goes first, while the
    // apiserver still answers its kubelet's last words.
    /// With a node: the apiserver's port on the pod network's gateway, behind the `kubernetes`
    /// Service ([`publish_to_pods`]).
    _pods_to_apiserver: Option<crate::node::PodForward>,
    node: Option<crate::node::RealNode>,
    scheduler: Option<ManagedProcess>,
    controller_manager: Option<ManagedProcess>,
    /// `None` while a test has it stopped ([`Self::stop_apiserver`]).
    apiserver: Option<ManagedProcess>,
    /// How to start the apiserver again, on the same port and etcd.
    apiserver_args: Vec<String>,
    etcd: ManagedProcess,
    _etcd_data: tempfile::TempDir,
    dir: WorkDir,
}

/// The field manager tests use for their own server-side applies.
pub const TEST_FIELD_MANAGER: &str = "ferrometal-tests";

impl ControlPlane {
    /// Starts etcd, kube-apiserver and kube-controller-manager.
    pub async fn start() -> crate::Result<Self> {
        Self::start_with(ControlPlaneConfig::default()).await
    }

    pub async fn start_with(config: ControlPlaneConfig) -> crate::Result<Self> {
        crate::init();
        if config.controller_manager && env::kubernetes_release()? == "oldest" {
            bail!(
                "the oldest Kubernetes release is built as kube-apiserver alone: start this control plane without the controller manager"
            );
        }
        let dir = WorkDir::new("control-plane")?;

        // etcd keeps its data in memory-backed storage when it can: the
        // tests need no durability, and fsyncs on a busy 2-core disk make
        // every write slow.
        let shm = Path::new("/dev/shm");
        let etcd_data = if shm.is_dir() { tempfile::tempdir_in(shm)? } else { tempfile::tempdir()? };
        let (etcd_port, peer_port) = (ports::free_port()?, ports::free_port()?);
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut cmd = Command::new(env::system_bin("etcd")?);
        cmd.arg("--name=test")
            .arg(format!("--data-dir={}", etcd_data.path().display()))
            .arg(format!("--listen-client-urls={etcd_url}"))
            .arg(format!("--advertise-client-urls={etcd_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .arg("--logger=zap")
            .arg("--log-level=warn");
        let mut etcd = ManagedProcess::spawn("etcd", cmd, &dir.path().join("etcd.log"))?;

        let pki = Pki::write(&dir)?;
        let api_port = ports::free_port()?;
        let server = format!("https://127.0.0.1:{api_port}");
        let apiserver_args: Vec<String> = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--cert-dir={}", dir.subdir("apiserver-certs")?.display()),
            format!("--tls-cert-file={}", pki.serving_cert.display()),
            format!("--tls-private-key-file={}", pki.serving_key.display()),
            format!("--client-ca-file={}", pki.ca.display()),
            format!("--secure-port={api_port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            // The apiserver would publish its address in the `kubernetes` Service's endpoints,
            // and refuses a loopback one for that (since 1.37): nothing in a test reaches the
            // apiserver through that Service.
            "--endpoint-reconciler-type=none".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--allow-privileged=true".into(),
            "--authorization-mode=RBAC".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", pki.service_account_pub.display()),
            format!("--service-account-signing-key-file={}", pki.service_account_key.display()),
            "--v=1".into(),
        ];
        let mut apiserver = spawn_apiserver(&apiserver_args, &dir)?;

        let kubeconfig = dir.write("admin.kubeconfig", pki.kubeconfig(&server))?;
        let client = client_from_kubeconfig(&kubeconfig).await?;

        wait_ready(&client, &mut etcd, &mut apiserver).await?;
        // /readyz answers before the apiserver has created its own namespaces.
        let namespaces: Api<Namespace> = Api::all(client.clone());
        wait::until("the default namespace", Duration::from_secs(30), Duration::from_millis(100), || {
            let namespaces = namespaces.clone();
            async move { namespaces.get_opt("default").await.ok().flatten() }
        })
        .await?;

        let controller_manager = if config.controller_manager {
            let mut controllers = "serviceaccount,serviceaccount-token,namespace,garbagecollector,deployment,replicaset,daemonset,statefulset,job,endpoint,endpointslice,root-ca-cert-publisher".to_string();
            if config.node {
                // A real node mounts real volumes: claims (a StatefulSet's) bind to the
                // PersistentVolumes a test makes.
                controllers.push_str(",persistentvolume-binder");
            }
            let mut cmd = Command::new(env::kube_bin("kube-controller-manager")?);
            cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
                .arg("--bind-address=127.0.0.1")
                .arg("--secure-port=0")
                .arg("--leader-elect=false")
                .arg(format!("--service-account-private-key-file={}", pki.service_account_key.display()))
                .arg(format!("--root-ca-file={}", pki.ca.display()))
                .arg("--use-service-account-credentials=false")
                // Exactly the controllers tests rely on. No node lifecycle
                // controller: it would mark the simulated node NotReady
                // (no kubelet heartbeats) and evict its pods.
                .arg(format!("--controllers={controllers}"))
                .arg("--v=1");
            let mut kcm =
                ManagedProcess::spawn("kube-controller-manager", cmd, &dir.path().join("kube-controller-manager.log"))?;
            wait_for_service_account(&client, "default", &mut kcm).await?;
            Some(kcm)
        } else {
            None
        };
        let scheduler = if config.controller_manager {
            let mut cmd = Command::new(env::kube_bin("kube-scheduler")?);
            cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
                .arg("--bind-address=127.0.0.1")
                .arg("--secure-port=0")
                .arg("--leader-elect=false")
                .arg("--v=1");
            Some(ManagedProcess::spawn("kube-scheduler", cmd, &dir.path().join("kube-scheduler.log"))?)
        } else {
            None
        };

        let (node, pods_to_apiserver) = match config.node {
            true => {
                let node = crate::node::RealNode::start(&kubeconfig).await?;
                let forward = publish_to_pods(&client, &node, api_port).await?;
                (Some(node), Some(forward))
            }
            false => (None, None),
        };
        Ok(Self {
            _pods_to_apiserver: pods_to_apiserver,
            client,
            server,
            kubeconfig,
            ca_pem: pki.ca_pem,
            ports: vec![etcd_port, peer_port, api_port],
            node,
            scheduler,
            controller_manager,
            apiserver: Some(apiserver),
            apiserver_args,
            etcd,
            _etcd_data: etcd_data,
            dir,
        })
    }

    /// The real node, when [`ControlPlaneConfig::node`] asked for one.
    pub fn node(&self) -> Option<&crate::node::RealNode> {
        self.node.as_ref()
    }

    /// A client with cluster-admin rights (group `system:masters`).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// A kubeconfig file for the same admin identity, for child processes
    /// such as the operator binary or kubectl.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kubeconfig file authenticating as the ServiceAccount `namespace/name` with a token
    /// from the TokenRequest API, for a process that must run with that
    /// identity's permissions only, never the admin's.
    pub async fn service_account_kubeconfig(&self, namespace: &str, name: &str) -> crate::Result<PathBuf> {
        let token = service_account_token(&self.client, namespace, name).await?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kubeconfig = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {namespace}-{name}
  user:
    token: {token}
contexts:
- name: test
  context:
    cluster: test
    user: {namespace}-{name}
    namespace: {namespace}
current-context: test
",
            server = self.server,
            ca = b64(&self.ca_pem),
        );
        self.dir.write(&format!("sa-{namespace}-{name}.kubeconfig"), kubeconfig)
    }

    /// The apiserver's URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The apiserver's address on loopback.
    pub fn server_addr(&self) -> crate::Result<std::net::SocketAddr> {
        let port = self.ports.last().copied().context("the apiserver has no port")?;
        Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// An admin client that reaches the apiserver through `addr` (a
    /// [`crate::proxy::TcpProxy`] in front of [`Self::server_addr`]) instead of
    /// directly. The apiserver's certificate names 127.0.0.1, so TLS checks pass.
    pub async fn client_through(&self, addr: std::net::SocketAddr) -> crate::Result<Client> {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)?;
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        config.cluster_url = format!("https://{addr}").parse()?;
        Ok(Client::try_from(config)?)
    }

    /// The process ids of etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
    pub fn pids(&self) -> Vec<u32> {
        self.processes().into_iter().map(|(_, pid)| pid).collect()
    }

    /// The running processes of the control plane by name, with their process ids.
    pub fn processes(&self) -> Vec<(&'static str, u32)> {
        [
            ("etcd", Some(&self.etcd)),
            ("kube-apiserver", self.apiserver.as_ref()),
            ("kube-controller-manager", self.controller_manager.as_ref()),
            ("kube-scheduler", self.scheduler.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, process)| Some((name, process?.pid())))
        .collect()
    }

    /// Every port the control plane listens on (etcd's client and peer ports, the
    /// apiserver's; the controller manager serves none).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The CA that signed the apiserver's serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The directory holding the control plane's configuration and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Fails if any control-plane process has died.
    pub fn ensure_running(&mut self) -> crate::Result<()> {
        self.etcd.ensure_running()?;
        if let Some(apiserver) = self.apiserver.as_mut() {
            apiserver.ensure_running()?;
        }
        if let Some(kcm) = self.controller_manager.as_mut() {
            kcm.ensure_running()?;
        }
        if let Some(scheduler) = self.scheduler.as_mut() {
            scheduler.ensure_running()?;
        }
        Ok(())
    }

    /// Stops kube-apiserver (SIGTERM, SIGKILL after 10 s) and keeps etcd and the controller
    /// manager running: every client sees refused connections until [`Self::start_apiserver`].
    pub async fn stop_apiserver(&mut self) -> crate::Result<()> {
        if let Some(mut apiserver) = self.apiserver.take() {
            apiserver.stop(Duration::from_secs(10)).await?;
        }
        Ok(())
    }

    /// Starts kube-apiserver again on the same port and etcd, and waits until it is ready.
    pub async fn start_apiserver(&mut self) -> crate::Result<()> {
        if self.apiserver.is_some() {
            return Ok(());
        }
        let mut apiserver = spawn_apiserver(&self.apiserver_args, &self.dir)?;
        wait_ready(&self.client, &mut self.etcd, &mut apiserver).await?;
        self.apiserver = Some(apiserver);
        Ok(())
    }

    /// Creates a namespace with a random suffix (see [`Self::create_namespace`]).
    pub async fn namespace(&mut self, prefix: &str) -> crate::Result<String> {
        let suffix: u32 = rand::rng().random();
        let name = format!("{prefix}-{suffix:08x}");
        self.create_namespace(&name).await?;
        Ok(name)
    }

    /// Creates the namespace `name` (if missing) and, when the controller manager runs, waits
    /// until its `default` service account exists (before that, the apiserver refuses pods in
    /// it).
    pub async fn create_namespace(&mut self, name: &str) -> crate::Result<()> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        if namespaces.get_opt(name).await?.is_none() {
            let ns = Namespace {
                metadata: ObjectMeta { name: Some(name.to_string()), ..Default::default() },
                ..Default::default()
            };
            namespaces
                .create(&PostParams::default(), &ns)
                .await
                .with_context(|| format!("creating namespace {name}"))?;
        }
        if let Some(kcm) = self.controller_manager.as_mut() {
            wait_for_service_account(&self.client, name, kcm).await?;
        }
        Ok(())
    }

    /// Installs CRDs with server-side apply, as `kubectl apply --server-side` does, and waits
    /// until each is Established. The apiserver compiles every CEL rule and estimates its cost
    /// here: a rule over unbounded input refuses the CRD.
    pub async fn install_crds(&self, crds: &[CustomResourceDefinition]) -> crate::Result<()> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let params = PatchParams::apply(TEST_FIELD_MANAGER).force();
        for crd in crds {
            let name = crd.metadata.name.clone().context("CRD without a name")?;
            api.patch(&name, &params, &Patch::Apply(crd)).await.with_context(|| format!("applying CRD {name}"))?;
        }
        for crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            tokio::time::timeout(
                Duration::from_secs(30),
                await_condition(api.clone(), &name, conditions::is_crd_established()),
            )
            .await
            .with_context(|| format!("CRD {name} did not become Established"))??;
        }
        Ok(())
    }
}

fn spawn_apiserver(args: &[String], dir: &WorkDir) -> crate::Result<ManagedProcess> {
    let mut cmd = Command::new(env::kube_bin("kube-apiserver")?);
    cmd.args(args);
    ManagedProcess::spawn("kube-apiserver", cmd, &dir.path().join("kube-apiserver.log"))
}

/// Waits until the apiserver's `/readyz` says ok, failing at once if it or etcd died.
async fn wait_ready(client: &Client, etcd: &mut ManagedProcess, apiserver: &mut ManagedProcess) -> crate::Result<()> {
    wait::until_ok("kube-apiserver /readyz", Duration::from_secs(90), Duration::from_millis(250), || {
        let client = client.clone();
        let ready = etcd.ensure_running().and_then(|()| apiserver.ensure_running());
        async move {
            ready?;
            let req = http::Request::get("/readyz").body(Vec::new())?;
            Ok(client.request_text(req).await.ok().filter(|body| body.trim() == "ok"))
        }
    })
    .await?;
    Ok(())
}

async fn wait_for_service_account(client: &Client, namespace: &str, kcm: &mut ManagedProcess) -> crate::Result<()> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    wait::until_ok(
        &format!("a token for service account {namespace}/default"),
        Duration::from_secs(60),
        Duration::from_millis(100),
        || {
            let accounts = accounts.clone();
            let alive = kcm.ensure_running();
            async move {
                alive?;
                Ok(accounts.get_opt("default").await.ok().flatten().map(|_| ()))
            }
        },
    )
    .await
}

/// A token of ServiceAccount `namespace/name` for a day, from the TokenRequest API (waiting
/// until the service account controller made the account).
async fn service_account_token(client: &Client, namespace: &str, name: &str) -> crate::Result<String> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    wait::until_ok(
        &format!("a token for service account {namespace}/{name}"),
        Duration::from_secs(60),
        Duration::from_millis(100),
        || {
            let accounts = accounts.clone();
            async move {
                if accounts.get_opt(name).await?.is_none() {
                    return Ok(None);
                }
                let request = TokenRequest {
                    spec: TokenRequestSpec { expiration_seconds: Some(86_400), ..Default::default() },
                    ..Default::default()
                };
                let issued = accounts.create_token_request(name, &PostParams::default(), &request).await?;
                Ok(issued.status.map(|s| s.token))
            }
        },
    )
    .await
}

/// Makes the apiserver reachable from pods the way a cluster does, through the `kubernetes`
/// Service (a pod's in-cluster configuration: `KUBERNETES_SERVICE_HOST`, 10.0.0.1:443). The
/// apiserver binds loopback only and publishes no endpoints (`--endpoint-reconciler-type=none`:
/// since 1.37 it refuses to publish a loopback address), so the harness forwards the
/// apiserver's port on the pod network's gateway to loopback and writes the Service's
/// EndpointSlice naming that address itself. Nothing beyond this machine's bridge can reach it.
async fn publish_to_pods(
    client: &Client,
    node: &crate::node::RealNode,
    api_port: u16,
) -> crate::Result<crate::node::PodForward> {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let forward = node.forward_from_pods(api_port)?;
    let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes",
                "endpointslice.kubernetes.io/managed-by": "ferrometal-tests"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [forward.addr().ip().to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}],
    }))?;
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    slices
        .patch("kubernetes", &PatchParams::apply(TEST_FIELD_MANAGER).force(), &Patch::Apply(&slice))
        .await
        .context("the kubernetes Service's EndpointSlice")?;
    Ok(forward)
}

/// Builds a kube client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> crate::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// The control plane's certificates and keys, written to its directory.
struct Pki {
    ca_pem: String,
    ca: PathBuf,
    serving_cert: PathBuf,
    serving_key: PathBuf,
    service_account_key: PathBuf,
    service_account_pub: PathBuf,
    admin_cert_pem: String,
    admin_key_pem: String,
}

impl Pki {
    fn write(dir: &WorkDir) -> crate::Result<Self> {
        let ca = Authority::new("ferrometal-test-ca")?;
        let serving = ca.server(
            &["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            &[loopback(), "10.0.0.1".parse()?],
        )?;
        let admin = ca.client("admin", Some("system:masters"))?;
        let (sa_key, sa_pub) = crate::pki::key_pair_pem()?;
        Ok(Self {
            ca: dir.write("ca.crt", ca.cert_pem())?,
            serving_cert: dir.write("apiserver.crt", &serving.cert_pem)?,
            serving_key: dir.write("apiserver.key", &serving.key_pem)?,
            service_account_key: dir.write("service-account.key", sa_key)?,
            // kube-apiserver 1.20 reads verification keys as public keys or
            // PKCS#1/SEC1 private keys, not PKCS#8.
            service_account_pub: dir.write("service-account.pub", sa_pub)?,
            ca_pem: ca.cert_pem().to_string(),
            admin_cert_pem: admin.cert_pem,
            admin_key_pem: admin.key_pem,
        })
    }

    fn kubeconfig(&self, server: &str) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: admin
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
contexts:
- name: test
  context:
    cluster: test
    user: admin
current-context: test
",
            ca = b64(&self.ca_pem),
            cert = b64(&self.admin_cert_pem),
            key = b64(&self.admin_key_pem),
        )
    }
}
