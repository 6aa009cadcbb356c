//! Why a reconcile of a host failed, to be retried with the runner's backoff. Failures of the
//! host itself (bad credentials, a failed deployment, an Ironic refusal) are not errors here:
//! the reconcile records them in the host's status and succeeds. Nor are Ironic calls that
//! fail transiently: each host retries those with its own backoff (`trouble`), and its
//! status says so after a few attempts.

use crate::host::connection;
use crate::kit::KubeError;
use crate::kit::ledger::Unstored;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
    /// The host has no namespace or uid, so nothing can be owned by it.
    #[error(transparent)]
    Unstored(#[from] Unstored),
    #[error("no Ironic connection")]
    Provisioner(#[from] connection::Error),
}

crate::kit::label::metric_labels!(Error: Kube, Unstored, Provisioner);
