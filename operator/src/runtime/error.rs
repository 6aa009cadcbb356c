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
    LeaderElection(#[source] crate::runtime::leader::Error),
    #[error("lost the leader lease; stopped so that another replica takes over")]
    LostLeadership(#[source] crate::runtime::leader::Loss),
    #[error("the controllers did not stop within the shutdown grace period of {grace:?}; aborted them")]
    StopTimeout { grace: std::time::Duration },
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
