//! The operator's resolved configuration, from flags or built by tests.

use std::net::SocketAddr;
use std::time::Duration;

/// How long the controllers get to finish their reconciles on shutdown
/// before they are aborted; inside Kubernetes' default 30 s termination grace.
pub(crate) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

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
