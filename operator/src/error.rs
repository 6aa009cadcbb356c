//! Errors of the runtime, and a helper to print an error with its causes.

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

/// `error: cause: cause` on one line, for logs.
pub fn chain(err: &dyn StdError) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
