//! Shared set-up of the end-to-end tests: a control plane with our CRDs,
//! the pod simulator, a fresh namespace, and the operator running in-process.
//!
//! Each test file declares `mod common;`. Helpers that only one test file
//! needs live in that file.
#![allow(dead_code)]

use ferrometal_tests::{ControlPlane, ControlPlaneConfig, PodSimulator};
use operator::{Operator, OperatorConfig};
use std::time::Duration;

/// A control plane with every ferrometal CRD installed, the pod simulator,
/// and a fresh namespace.
pub struct Env {
    pub cp: ControlPlane,
    pub sim: PodSimulator,
    pub ns: String,
}

impl Env {
    pub async fn start(prefix: &str) -> anyhow::Result<Self> {
        Self::start_with(prefix, ControlPlaneConfig::default()).await
    }

    /// Without kube-controller-manager and kube-scheduler: for the tests of the API alone (CRD
    /// install, CEL rules, webhooks, events), which also run against the oldest Kubernetes
    /// release, built as its kube-apiserver alone (`scripts/build-kubernetes.sh oldest`).
    pub async fn start_api_only(prefix: &str) -> anyhow::Result<Self> {
        Self::start_with(prefix, ControlPlaneConfig { controller_manager: false, ..ControlPlaneConfig::default() })
            .await
    }

    async fn start_with(prefix: &str, config: ControlPlaneConfig) -> anyhow::Result<Self> {
        let mut cp = ControlPlane::start_with(config).await?;
        cp.install_crds(&crds::all_crds()).await?;
        let sim = PodSimulator::start(cp.client()).await?;
        let ns = cp.namespace(prefix).await?;
        Ok(Self { cp, sim, ns })
    }

    pub fn client(&self) -> kube::Client {
        self.cp.client()
    }

    /// An operator configuration that watches this test's namespace and
    /// runs nothing yet; tests switch on what they need.
    pub fn operator_config(&self) -> OperatorConfig {
        let mut config = OperatorConfig::minimal(format!("test-{}", self.ns));
        config.namespaces = vec![self.ns.clone()];
        config
    }

    /// Switches on the validating webhooks, registered with the apiserver
    /// at a loopback URL, with operator-managed certificates.
    pub fn with_webhooks(&self, config: &mut OperatorConfig) -> anyhow::Result<()> {
        let port = ferrometal_tests::ports::free_port()?;
        config.webhook = Some(operator::testing::webhook::Config::new(
            ([127, 0, 0, 1], port).into(),
            operator::testing::webhook::Certificates::SelfManaged { secret_namespace: self.ns.clone() },
            Some(operator::testing::webhook::ClientConfig::Url(format!("https://127.0.0.1:{port}"))),
        ));
        Ok(())
    }

    /// Starts the operator in this process.
    pub async fn start_operator(&self, config: OperatorConfig) -> anyhow::Result<Operator> {
        Ok(Operator::start(self.client(), config).await?)
    }
}

/// One second, for readable timeouts.
pub const SECOND: Duration = Duration::from_secs(1);
/// Polling interval for waits on the apiserver.
pub const POLL: Duration = Duration::from_millis(200);

/// The operator's controller context for a reconcile driven in-process (the database module's
/// `reconcile`, with no runtime around it): `namespace` watched, every option at its default,
/// `identity` as the holder's name.
pub fn kit_context(client: kube::Client, namespace: &str, identity: String) -> operator::testing::kit::Context {
    operator::testing::kit::Context {
        client,
        metrics: std::sync::Arc::new(operator::testing::metrics::Metrics::new()),
        namespaces: vec![namespace.to_string()],
        identity,
        features: Default::default(),
        host_pools: Default::default(),
        host_access: Default::default(),
        ironic_namespaces: crds::ironic::IronicNamespaces::Any,
        reserved_account: None,
    }
}
