//! The cluster every fault scenario stands on: a control plane with the pod simulator, a real
//! Ironic, `config/default` installed as a user installs it (the install tests' way), and the
//! operator as `ferrometal run` replicas with the ServiceAccount's token and the Deployment's
//! own arguments, against that Ironic, with short poll intervals.

use crate::install_common::workloads::{controllers, fake_host};
use crate::install_common::*;
use ferrometal_tests::faults::{IronicProbe, Launch, Recorder, Replicas};
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::{ControlPlane, PodSimulator, ports};
use operator::testing::install::{DEFAULT_NAMESPACE, NAME};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub struct Cluster {
    pub cp: ControlPlane,
    /// The kubelet's stand-in: a scenario decides how Job pods end, and when.
    pub sim: PodSimulator,
    pub ironic: IronicServer,
    /// The Deployment's arguments and environment, resolved for a pod.
    args: Vec<String>,
    env: Vec<(String, String)>,
    kubeconfig: PathBuf,
    pub ns: String,
    /// The ValidatingWebhookConfiguration as installed (pointed at replica 0's loopback port).
    pub webhook_configuration: Value,
}

/// Leader election as shipped (a 15 s lease, given up 10 s after the last renewal, retried
/// every 2 s): a 4 s deadline lost leases on the loaded 2-core machine.
pub const LEASE_SECONDS: u64 = 15;
pub const RENEW_DEADLINE_SECONDS: u64 = 10;
pub const RETRY_PERIOD_SECONDS: u64 = 2;

impl Cluster {
    pub async fn start(prefix: &str, ironic: IronicConfig) -> anyhow::Result<Self> {
        let mut cp = ControlPlane::start().await?;
        let sim = PodSimulator::start(cp.client()).await?;
        let ironic = IronicServer::start(ironic).await?;
        let mut objects = render(&config_dir(), "default")?;
        let webhook_port = ports::free_port()?;
        let configuration = objects
            .iter_mut()
            .find(|o| kind_of(o) == "ValidatingWebhookConfiguration")
            .ok_or_else(|| anyhow::anyhow!("no ValidatingWebhookConfiguration"))?;
        webhooks_at(configuration, &format!("https://127.0.0.1:{webhook_port}"), None);
        let webhook_configuration = configuration.clone();
        let (crds, rest): (Vec<Value>, Vec<Value>) =
            objects.into_iter().partition(|o| kind_of(o) == "CustomResourceDefinition");
        drop(crds);
        cp.install_crds(&crds::all_crds()).await?;
        let (deployments, rest): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(|o| kind_of(o) == "Deployment");
        apply(&cp, &rest)?;
        let deployment = deployments.into_iter().next().ok_or_else(|| anyhow::anyhow!("no Deployment"))?;
        let (mut args, env) = pod_command(&deployment, DEFAULT_NAMESPACE, "ferrometal-0", &[])?;
        args.retain(|a| !a.starts_with("--webhook-service="));
        set_flag(&mut args, "webhook-url", &format!("https://127.0.0.1:{webhook_port}"));
        set_flag(&mut args, "webhook-addr", &format!("127.0.0.1:{webhook_port}"));
        set_flag(&mut args, "leader-election-lease-duration-seconds", &LEASE_SECONDS.to_string());
        set_flag(&mut args, "leader-election-renew-deadline-seconds", &RENEW_DEADLINE_SECONDS.to_string());
        set_flag(&mut args, "leader-election-retry-period-seconds", &RETRY_PERIOD_SECONDS.to_string());
        let kubeconfig = cp.service_account_kubeconfig(DEFAULT_NAMESPACE, NAME).await?;
        let ns = cp.namespace(prefix).await?;
        Ok(Self { cp, sim, ironic, args, env, kubeconfig, ns, webhook_configuration })
    }

    /// How to start replica `i` (pod `ferrometal-<i>`), reaching the apiserver at `apiserver`
    /// (a proxy) instead of directly when given, and Ironic at `ironic` when given. Only
    /// replica 0 serves the webhook URL the configuration names.
    pub fn launch(&self, i: usize, apiserver: Option<SocketAddr>, ironic: Option<&str>) -> anyhow::Result<Launch> {
        let mut args = self.args.clone();
        if i > 0 {
            set_flag(&mut args, "webhook-addr", &format!("127.0.0.1:{}", ports::free_port()?));
        }
        let mut env = self.env.clone();
        for (key, value) in &mut env {
            if key == "POD_NAME" {
                *value = format!("ferrometal-{i}");
            }
        }
        env.extend([
            ("CONTROLLERS".to_string(), controllers()),
            ("IRONIC_ENDPOINT".to_string(), ironic.unwrap_or(self.ironic.endpoint()).to_string()),
            ("HOST_FAST_POLL_INTERVAL".to_string(), "300ms".to_string()),
            ("HOST_SLOW_POLL_INTERVAL".to_string(), "2s".to_string()),
        ]);
        let kubeconfig = match apiserver {
            None => self.kubeconfig.clone(),
            Some(addr) => {
                let text =
                    std::fs::read_to_string(&self.kubeconfig)?.replace(self.cp.server(), &format!("https://{addr}"));
                let path = self.kubeconfig.with_file_name(format!("replica-{i}-{}.kubeconfig", addr.port()));
                std::fs::write(&path, text)?;
                path
            }
        };
        Ok(Launch { kubeconfig, args, env })
    }

    /// One replica, running and leading.
    pub async fn one_replica(&self) -> anyhow::Result<Replicas> {
        let mut replicas = Replicas::start(vec![self.launch(0, None, None)?])?;
        replicas.wait_leader(Duration::from_secs(120)).await?;
        Ok(replicas)
    }

    /// A recorder of this cluster's namespace.
    pub fn recorder(&self) -> anyhow::Result<Recorder> {
        Ok(Recorder::start(IronicProbe::of(&self.ironic)?, self.cp.client(), &self.ns, Duration::from_millis(300)))
    }

    /// Creates (or updates) fake-hardware hosts `<prefix>-0..n` deploying a live ISO, retrying
    /// each while the apiserver or the webhook refuses (as it does while the operator is down).
    pub async fn provisioned_hosts(&self, prefix: &str, n: usize) -> anyhow::Result<Vec<String>> {
        let iso = self.ironic.image_server().write_live_iso(&format!("{}/live.iso", self.ns))?;
        let names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
        for name in &names {
            self.apply_retrying(fake_host(name, true, Some(&iso), json!({}))).await?;
        }
        Ok(names)
    }

    /// Server-side applies `object`, retrying for up to 60 s.
    pub async fn apply_retrying(&self, object: Value) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            match crate::install_common::workloads::apply(&self.cp.client(), &self.ns, object.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::info!("apply refused, retrying: {e:#}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A host with an image has converged once provisioned.
pub fn provisioned(host: &Value) -> bool {
    ferrometal_tests::faults::host_state(host) == "provisioned"
}
