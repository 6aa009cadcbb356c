//! Why a reconcile of a host failed, to be retried with the runner's backoff. Failures of the
//! host itself (bad credentials, a failed deployment, an Ironic refusal) are not errors here:
//! the reconcile records them in the host's status and succeeds.

use crate::host::connection::ProvisionerError;
use crate::host::machine::Act;
use crate::kube::KubeError;
use crate::kube::ledger::Unstored;
use crate::kube::runner::MetricLabel;

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] KubeError),
    /// The host has no namespace or uid, so nothing can be owned by it.
    #[error(transparent)]
    Unstored(#[from] Unstored),
    #[error("no Ironic connection")]
    Provisioner(#[from] ProvisionerError),
    /// Ironic or the way to it failed in a way that passes (`ironic_client::Error::is_transient`).
    #[error("Ironic failed transiently during {act:?}")]
    Ironic {
        act: Act,
        #[source]
        source: ironic_client::Error,
    },
}

impl MetricLabel for ReconcileError {
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Kube(_) => "kube",
            Self::Unstored(_) => "unstored",
            Self::Provisioner(_) => "provisioner",
            Self::Ironic { .. } => "ironic",
        }
    }
}
