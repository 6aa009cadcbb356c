//! The operator's resolved configuration, from flags or built by tests.

use crate::cli::{ControllerKind, RunArgs};
use std::net::SocketAddr;
use std::time::Duration;

/// How long the controllers get to finish their reconciles on shutdown
/// before they are aborted; inside Kubernetes' default 30 s termination grace.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// Everything the runtime needs to start. `ferrometal run` builds it from
/// its flags; tests build it directly.
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// Namespaces to watch; empty means all.
    pub namespaces: Vec<String>,
    /// Where to serve /healthz, /readyz and /metrics; `None` serves nothing.
    pub health_addr: Option<SocketAddr>,
    /// What clients may hold of the health server.
    pub health_limits: crate::serve::Limits,
    /// This replica's identity (leader election, event reports).
    pub identity: String,
    /// Leader election; `None` runs the controllers unconditionally.
    pub leader_election: Option<crate::runtime::leader::LeaderElection>,
    /// The validating webhook server; `None` serves no webhooks.
    pub webhook: Option<crate::webhook::Config>,
    /// The `Ironic` controller; `None` does not run it.
    pub ironic: Option<crate::ironic::Config>,
    /// The `BareMetalHost` controller; `None` does not run it.
    pub host: Option<crate::host::Config>,
    /// The `NodeSet` controller; `None` does not run it.
    pub nodeset: Option<crate::nodeset::Config>,
    /// How long the controllers get to stop on shutdown before they are aborted.
    pub shutdown_grace: Duration,
    /// Feature gates: the one set the Ironic controller and the webhook both apply.
    pub features: crds::ironic::IronicValidationOptions,
    /// The namespaces where an Ironic may run: the controller and the webhook both apply them.
    pub ironic_namespaces: crds::ironic::IronicNamespaces,
    /// Where hosts may make Ironic reach (BMC networks, `file://` image directories): the host
    /// controller and the webhook both apply them.
    pub host_access: crds::baremetalhost::access::HostAccess,
    /// Host pools opened to NodeSets of other namespaces: the controller and the webhook both
    /// apply them.
    pub host_pools: crds::nodeset::HostPools,
    /// The operator's own ServiceAccount, which no NodeSetService may run as: the controller
    /// and the webhook both refuse it.
    pub reserved_account: Option<crds::nodesetservice::ReservedAccount>,
}

impl OperatorConfig {
    /// A configuration that runs nothing: a base for tests to fill in.
    pub fn minimal(identity: impl Into<String>) -> Self {
        Self {
            namespaces: Vec::new(),
            health_addr: None,
            health_limits: crate::serve::Limits::HEALTH,
            identity: identity.into(),
            leader_election: None,
            webhook: None,
            ironic: None,
            host: None,
            nodeset: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            features: crds::ironic::IronicValidationOptions::default(),
            // Tests deploy Ironics in namespaces of their own; the flags' default is the
            // operator's namespace.
            ironic_namespaces: crds::ironic::IronicNamespaces::Any,
            host_pools: crds::nodeset::HostPools::default(),
            host_access: Default::default(),
            reserved_account: None,
        }
    }
}

impl TryFrom<RunArgs> for OperatorConfig {
    type Error = crate::host::ConfigError;

    /// Fails on flags that name something in a form that cannot be used.
    fn try_from(args: RunArgs) -> Result<Self, Self::Error> {
        let identity = args.identity.clone().unwrap_or_else(default_identity);
        let enabled = |kind| args.controllers.contains(&kind);
        let host_access = crds::baremetalhost::access::HostAccess {
            bmc_networks: args.bmc_networks.clone(),
            file_image_dirs: args.file_image_dirs.clone(),
        };
        Ok(Self {
            namespaces: args.namespaces.into_iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect(),
            health_addr: Some(args.health_addr),
            health_limits: crate::serve::Limits::HEALTH,
            leader_election: args.leader.into_config(),
            webhook: args.webhook.into_config(),
            ironic: enabled(ControllerKind::Ironic).then(|| args.ironic.into()),
            host: enabled(ControllerKind::Host)
                .then(|| crate::host::Config::try_from(args.host))
                .transpose()?
                .map(|host| crate::host::Config { access: host_access.clone(), ..host }),
            nodeset: enabled(ControllerKind::NodeSet).then(|| args.nodeset.into()),
            shutdown_grace: Duration::from_secs(args.shutdown_grace_seconds),
            features: args.feature_gates,
            ironic_namespaces: args.ironic_namespaces.or_operator_namespace(args.pod_namespace.as_deref()),
            host_pools: args.nodeset_host_pools,
            host_access,
            reserved_account: match (args.pod_namespace, args.pod_service_account) {
                (Some(namespace), Some(name)) => Some(crds::nodesetservice::ReservedAccount { namespace, name }),
                _ => None,
            },
            identity,
        })
    }
}

fn default_identity() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| format!("ferrometal-{}", std::process::id()))
}
