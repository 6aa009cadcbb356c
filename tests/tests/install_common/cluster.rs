//! The cluster the install tests run on: an apiserver with RBAC, the pod simulator, a real
//! Ironic and an external MariaDB, and the operator as the Deployment's pod.

use super::workloads;
use super::*;
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::operator_process::OperatorProcess;
use ferrometal_tests::{ControlPlane, PodSimulator, ports};
use operator::testing::install::{DEFAULT_NAMESPACE, NAME};
use serde_json::Value;
use std::time::Duration;

/// The cluster, the servers behind it, and the manifests rendered for it.
pub struct Cluster {
    pub cp: ControlPlane,
    _sim: PodSimulator,
    pub ironic: IronicServer,
    pub database: ferrometal_tests::mariadb::MariaDb,
}

impl Cluster {
    pub async fn start() -> anyhow::Result<Self> {
        let cp = ControlPlane::start().await?;
        let sim = PodSimulator::start(cp.client()).await?;
        let (ironic, database) = tokio::try_join!(IronicServer::start(IronicConfig::default()), workloads::database())?;
        Ok(Self { cp, _sim: sim, ironic, database })
    }

    /// Installs what `objects` holds as an administrator would: the CRDs as the harness creates
    /// them (what `kubectl create` does on 1.20), everything else with `kubectl apply`. The
    /// Deployment is returned instead of applied: its pod is the operator process.
    pub async fn install(&self, objects: Vec<Value>) -> anyhow::Result<Value> {
        let (crds, rest): (Vec<Value>, Vec<Value>) =
            objects.into_iter().partition(|o| kind_of(o) == "CustomResourceDefinition");
        let mut crds = crds;
        crds.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        let mut expected: Vec<Value> =
            crds::all_crds().iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
        // kustomize orders its output by kind and name.
        expected.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        if let Some(difference) = first_difference(&Value::from(crds), &Value::from(expected), "crds") {
            anyhow::bail!("the manifests' CRDs are not the crates' CRDs: {difference}");
        }
        self.cp.install_crds(&crds::all_crds()).await?;
        let (deployments, rest): (Vec<Value>, Vec<Value>) = rest.into_iter().partition(|o| kind_of(o) == "Deployment");
        anyhow::ensure!(deployments.len() == 1, "one Deployment");
        apply(&self.cp, &rest)?;
        Ok(deployments.into_iter().next().unwrap_or_default())
    }

    /// Installs `config/default` (cluster-wide) and starts the operator as its Deployment's pod,
    /// serving its webhooks at a loopback URL, with `extra_env` after the Deployment's own.
    /// With `ironic_namespaces`, the tree is generated as an admin generates it for Ironics in
    /// those namespaces (`ferrometal manifests --ironic-namespaces`), which must exist.
    pub async fn install_cluster_wide(
        &self,
        extra_env: Env,
        ironic_namespaces: &[&str],
    ) -> anyhow::Result<OperatorProcess> {
        let generated = tempfile::tempdir()?;
        let tree = if ironic_namespaces.is_empty() {
            config_dir()
        } else {
            let status = std::process::Command::new(ferrometal_tests::operator_process::binary()?)
                .args(["manifests", "--out", &generated.path().display().to_string()])
                .arg(format!("--ironic-namespaces={}", ironic_namespaces.join(",")))
                .status()?;
            anyhow::ensure!(status.success(), "ferrometal manifests failed");
            generated.path().to_path_buf()
        };
        let mut objects = render(&tree, "default")?;
        let webhook_port = ports::free_port()?;
        webhooks_at(configuration(&mut objects)?, &format!("https://127.0.0.1:{webhook_port}"), None);
        let deployment = self.install(objects).await?;
        let (mut args, mut env) = pod_command(&deployment, DEFAULT_NAMESPACE, "ferrometal-0", &[])?;
        // The operator publishes its CA for the webhooks it serves, reached at the loopback URL.
        args.retain(|a| !a.starts_with("--webhook-service="));
        set_flag(&mut args, "webhook-url", &format!("https://127.0.0.1:{webhook_port}"));
        set_flag(&mut args, "webhook-addr", &format!("127.0.0.1:{webhook_port}"));
        env.extend(extra_env);
        self.operator(args, env).await
    }

    /// The operator process as the Deployment's pod, with the ServiceAccount's token; the
    /// webhook server listens on `webhook_port`; the host controller uses the harness's Ironic.
    pub async fn operator(&self, args: Vec<String>, env: Env) -> anyhow::Result<OperatorProcess> {
        let kubeconfig = self.cp.service_account_kubeconfig(DEFAULT_NAMESPACE, NAME).await?;
        let mut env = env;
        env.extend([
            ("CONTROLLERS".to_string(), workloads::controllers()),
            ("IRONIC_ENDPOINT".to_string(), self.ironic.endpoint().to_string()),
            ("HOST_FAST_POLL_INTERVAL".to_string(), "300ms".to_string()),
            ("HOST_SLOW_POLL_INTERVAL".to_string(), "2s".to_string()),
        ]);
        let mut operator = OperatorProcess::start("ferrometal", &kubeconfig, &args, &env)?;
        let report = operator.wait_leading(Duration::from_secs(120)).await?;
        anyhow::ensure!(report.contains("[+]watch baremetalhosts.metal3.io"), "the watches are listed: {report}");
        Ok(operator)
    }

    /// A client with the operator's identity, for access reviews.
    pub async fn operator_client(&self) -> anyhow::Result<kube::Client> {
        let kubeconfig = self.cp.service_account_kubeconfig(DEFAULT_NAMESPACE, NAME).await?;
        ferrometal_tests::control_plane::client_from_kubeconfig(&kubeconfig).await
    }
}

/// The ValidatingWebhookConfiguration among rendered manifests.
pub fn configuration(objects: &mut [Value]) -> anyhow::Result<&mut Value> {
    objects
        .iter_mut()
        .find(|o| kind_of(o) == "ValidatingWebhookConfiguration")
        .ok_or_else(|| anyhow::anyhow!("no ValidatingWebhookConfiguration"))
}
