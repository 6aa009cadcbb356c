//! Why a step of the managed database could not finish: the Kubernetes API failing (which a
//! person fixes only when it says forbidden or invalid), or certificates that cannot be made.

use super::super::status::reasons;
use crate::kit::error::chain;
use crate::kit::{KubeError, Progress};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the MariaDB StatefulSet or its data volume")]
    Observe(#[source] KubeError),
    #[error("cannot read the database's credentials")]
    Credentials(#[source] KubeError),
    #[error("cannot read the TLS material or Ironic's pods")]
    Transport(#[source] KubeError),
    #[error("cannot make the managed database's certificates")]
    Certificates(#[source] crate::pki::certificate::Error),
    #[error("cannot write the managed database's objects")]
    Apply(#[source] KubeError),
    #[error("cannot read MariaDB's pod")]
    Check(#[source] KubeError),
    #[error("cannot move the MariaDB version change on")]
    VersionChange(#[source] KubeError),
}

impl Error {
    /// What only a person can fix, as a failed progress; `None` for what is worth retrying.
    pub fn failure(&self) -> Option<Progress> {
        match self {
            Self::Observe(err)
            | Self::Credentials(err)
            | Self::Transport(err)
            | Self::Apply(err)
            | Self::Check(err)
            | Self::VersionChange(err) => err.failure(),
            Self::Certificates(err) => Some(Progress::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the managed database's certificates: {}", chain(err)),
            )),
        }
    }
}
