//! Why the operator's runtime could not start or had to stop.

use std::error::Error as StdError;

/// Why the operator's runtime could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("cannot read the Kubernetes configuration")]
    KubeConfig(#[source] kube::config::InferConfigError),
    #[error("cannot bind {what} on {addr}")]
    Bind {
        what: &'static str,
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("leader election failed")]
    LeaderElection(#[source] kube_lease_manager::LeaseManagerError),
    #[error("lost the leader lease; stopping so that another replica takes over")]
    LostLeadership,
    #[error("webhook setup failed")]
    Webhook(#[source] crate::webhook::Error),
    #[error("the {controller} controller failed")]
    Controller {
        controller: &'static str,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    #[error("cannot wait for a shutdown signal")]
    Signal(#[source] std::io::Error),
}
