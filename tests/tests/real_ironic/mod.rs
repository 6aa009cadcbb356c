//! The operator's own Ironic on the real node (`scripts/node.sh`): a control plane with a
//! node, the CRDs, the Ironic image (`scripts/node/ironic-image.sh`) imported, a namespace,
//! and the operator's Ironic controller pointed at that image through its own image setting.
//! No pod simulator: every pod is real. The tests of `real::ironic`, `real::ironic_tls` and
//! `real::dhcp` stand on it (`mod real_ironic;`); a test uses what it needs of it.

#![allow(dead_code)]

use anyhow::Context;
use crds::ironic::Ironic;
use ferrometal_tests::node::{IRONIC_IMAGE_ARCHIVE, RealNode};
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, Result, wait};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{Api, ListParams, PostParams};
use operator::{Operator, OperatorConfig};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The probes start after 30 s and look every 30 s (the operator's rendering): the first
/// success comes after 30 to 60 s, on top of the image's import and Ironic's start.
pub const READY_TIMEOUT: Duration = Duration::from_secs(240);
pub const POLL: Duration = Duration::from_millis(500);
/// The API version header the tests send.
pub const API_VERSION: (&str, &str) = ("X-OpenStack-Ironic-API-Version", "1.81");

/// A control plane with a real node running the operator's Ironic controller, seen from one
/// namespace. Several may share one control plane and operator ([`RealIronic::start_many`]):
/// the last to go stops them.
pub struct RealIronic {
    // Fields drop top to bottom: the operator stops before the control plane and node go.
    _operator: Arc<Operator>,
    pub cp: Arc<ControlPlane>,
    pub ns: String,
}

impl RealIronic {
    /// A control plane with a node, the image imported, a namespace named after `prefix`, and
    /// the operator's Ironic controller watching it.
    pub async fn start(prefix: &str) -> Result<Self> {
        Self::start_with(prefix, |_| {}).await
    }

    /// Like [`RealIronic::start`], with the Ironic controller's settings adjusted by `adjust`.
    pub async fn start_with(prefix: &str, adjust: impl FnOnce(&mut operator::testing::ironic::Config)) -> Result<Self> {
        Self::start_many(&[prefix], adjust).await?.pop().context("one namespace")
    }

    /// One control plane, node and operator for several namespaces, one per prefix, in order:
    /// what tests that each wait a minute or more for pods run at once, on one node, instead of
    /// one after the other.
    pub async fn start_many(
        prefixes: &[&str],
        adjust: impl FnOnce(&mut operator::testing::ironic::Config),
    ) -> Result<Vec<Self>> {
        let mut cp = ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }).await?;
        cp.install_crds(&crds::all_crds()).await?;
        let node = cp.node().context("a node")?;
        let archive = RealNode::cached_image(IRONIC_IMAGE_ARCHIVE)?;
        let imported = Instant::now();
        node.import(&archive)?;
        eprintln!("imported {} in {:?}", archive.display(), imported.elapsed());
        let mut namespaces = Vec::new();
        for prefix in prefixes {
            namespaces.push(cp.namespace(prefix).await?);
        }
        let mut config = OperatorConfig::minimal(format!("test-{}", namespaces.first().context("a prefix")?));
        config.namespaces = namespaces.clone();
        let mut ironic = operator::testing::ironic::Config {
            progress_interval: Duration::from_secs(2),
            retry_interval: Duration::from_secs(1),
            ..Default::default()
        };
        ironic.images.ironic = Some(ferrometal_tests::node::ironic_image()?);
        adjust(&mut ironic);
        config.ironic = Some(ironic);
        let operator = Arc::new(Operator::start(cp.client(), config).await?);
        let cp = Arc::new(cp);
        Ok(namespaces.into_iter().map(|ns| Self { _operator: operator.clone(), cp: cp.clone(), ns }).collect())
    }

    /// The node under the control plane.
    pub fn node(&self) -> Result<&RealNode> {
        self.cp.node().context("a node")
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.cp.client(), &self.ns)
    }

    /// Creates `ironic` (JSON of an `Ironic` in this namespace) and waits until it is Ready.
    pub async fn create_ready(&self, ironic: Value) -> Result<Ironic> {
        let ironics = self.api::<Ironic>();
        let created = ironics.create(&PostParams::default(), &serde_json::from_value(ironic)?).await?;
        let name = created.metadata.name.clone().context("the Ironic's name")?;
        self.until_ready(&name).await
    }

    /// Waits until the Ironic `name` is Ready at its current generation.
    pub async fn until_ready(&self, name: &str) -> Result<Ironic> {
        self.until_ready_within(name, READY_TIMEOUT).await
    }

    /// [`RealIronic::until_ready`] with its own limit (a managed database, upgrade Jobs).
    pub async fn until_ready_within(&self, name: &str, limit: Duration) -> Result<Ironic> {
        let ironics = self.api::<Ironic>();
        let waited = wait::until("the Ironic Ready", limit, POLL, || {
            let ironics = ironics.clone();
            async move { ironics.get(name).await.ok().filter(ready) }
        })
        .await;
        match waited {
            Ok(ironic) => Ok(ironic),
            Err(err) => Err(err.context(self.pod_report().await)),
        }
    }

    /// The Service `name`'s ClusterIP and API port: where kube-proxy takes this machine to
    /// the pod.
    pub async fn service_address(&self, name: &str) -> Result<SocketAddr> {
        let service = self.api::<Service>().get(name).await?;
        let cluster_ip = service.spec.and_then(|s| s.cluster_ip).context("the ClusterIP")?;
        Ok((cluster_ip.parse::<IpAddr>()?, 443).into())
    }

    /// The API credentials generated for the Ironic `name`.
    pub async fn credentials(&self, name: &str) -> Result<(String, String)> {
        let credentials = self.api::<Secret>().get(&format!("{name}-api-credentials")).await?;
        let data = credentials.data.context("the credentials' data")?;
        let username = String::from_utf8(data.get("username").context("username")?.0.clone())?;
        let password = String::from_utf8(data.get("password").context("password")?.0.clone())?;
        Ok((username, password))
    }

    /// The CA the operator published for the Ironic `name` (its `<name>-ca-bundle` ConfigMap).
    pub async fn published_ca(&self, name: &str) -> Result<String> {
        let ca = self.api::<ConfigMap>().get(&format!("{name}-ca-bundle")).await?;
        ca.data.and_then(|d| d.get("ca.crt").cloned()).context("the published CA")
    }

    /// The node's address on the pod bridge: where pods reach this machine.
    pub fn node_address(&self) -> Result<IpAddr> {
        Ok(self.node()?.gateway()?.into())
    }

    /// Every pod of the namespace, by name and UID, with its containers' restarts: it changes
    /// when a pod is replaced or a container of it restarts.
    pub async fn incarnations(&self) -> Result<std::collections::BTreeSet<String>> {
        let pods = self.api::<Pod>().list(&ListParams::default()).await?;
        let incarnation = |pod: &Pod| {
            let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
            let restarts: i32 = statuses.iter().flat_map(|s| s.iter()).map(|c| c.restart_count).sum();
            let (name, uid) = (pod.metadata.name.as_deref(), pod.metadata.uid.as_deref());
            format!("{} (uid {}): {restarts} restarts", name.unwrap_or_default(), uid.unwrap_or_default())
        };
        Ok(pods.items.iter().map(incarnation).collect())
    }

    /// The pods' states, for a failure's message.
    pub async fn pod_report(&self) -> String {
        let Ok(pods) = self.api::<Pod>().list(&ListParams::default()).await else {
            return "no pods listed".to_string();
        };
        let mut report = String::new();
        for pod in pods.items {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let statuses = pod.status.and_then(|s| s.container_statuses).unwrap_or_default();
            for status in statuses {
                report.push_str(&format!(
                    "{name}/{}: ready={} restarts={} state={:?}\n",
                    status.name, status.ready, status.restart_count, status.state
                ));
            }
        }
        report
    }
}

/// Ready at its current generation because its Deployment is available.
pub fn ready(ironic: &Ironic) -> bool {
    let status = ironic.status.as_ref();
    let current = status.and_then(|s| s.observed_generation) == ironic.metadata.generation;
    current
        && status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True" && c.reason == "DeploymentAvailable")
}

/// A client that trusts only `ca_pem` and reaches `host` (a name of the certificate) at
/// `address`.
pub fn client(ca_pem: &str, host: &str, address: SocketAddr) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes())?)
        .resolve(host, address)
        .timeout(Duration::from_secs(20))
        .build()?)
}

/// An authenticated GET of Ironic's API, its JSON (an error for anything but success).
pub async fn get_json(http: &reqwest::Client, url: &str, (user, password): (&str, &str)) -> Result<Value> {
    let response = http.get(url).header(API_VERSION.0, API_VERSION.1).basic_auth(user, Some(password)).send().await?;
    Ok(response.error_for_status()?.json().await?)
}

/// A scenario of a test that runs several at once on one [`RealIronic::start_many`]: its name
/// (its function's) and its task.
pub type Outcome = (&'static str, tokio::task::JoinHandle<Result<()>>);

/// Runs a scenario on its own task, so that a panic in one is that one's failure.
pub fn scenario<F>(name: &'static str, run: F) -> Outcome
where
    F: std::future::Future<Output = Result<()>> + Send + 'static,
{
    (name, tokio::spawn(run))
}

/// Waits for every scenario; fails naming each that failed or panicked, with why.
pub async fn all_pass(outcomes: impl IntoIterator<Item = Outcome>) -> Result<()> {
    let mut failures = Vec::new();
    for (name, handle) in outcomes {
        match handle.await {
            Ok(Ok(())) => eprintln!("---- {name}: passed"),
            Ok(Err(err)) => failures.push(format!("{name}: {err:#}")),
            Err(err) if err.is_panic() => {
                let panic = err.into_panic();
                let message = panic.downcast_ref::<String>().cloned();
                let message = message.or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                failures.push(format!("{name}: panicked: {}", message.unwrap_or_default()));
            }
            Err(err) => failures.push(format!("{name}: {err}")),
        }
    }
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n\n"));
    Ok(())
}
