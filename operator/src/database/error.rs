//! Why a reconcile of the database could not finish. Problems a user fixes (a missing Secret,
//! a refused password, a failed step) are not errors: they are a failed or waiting
//! [`crate::kit::Progress`] in the outcome. These are the Kubernetes API failing, and
//! certificates that cannot be made; [`Error::failure`] says which of them a person must fix.

use crate::kit::{KubeError, Progress};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
    /// Boxed: a step's error holds a whole [`KubeError`], and every reconcile result carries
    /// this enum.
    #[error("cannot reconcile the managed database")]
    Managed(#[source] Box<super::managed::Error>),
}

impl From<super::managed::Error> for Error {
    fn from(err: super::managed::Error) -> Self {
        Self::Managed(Box::new(err))
    }
}

impl Error {
    /// What only a person can fix, as the progress the Ironic's conditions report; `None` for
    /// failures worth retrying (no answer, a conflict, a server error).
    pub fn failure(&self) -> Option<Progress> {
        match self {
            Self::Kube(err) => err.failure(),
            Self::Managed(err) => err.failure(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Verb;
    use crate::kit::error::{FORBIDDEN, api_error};

    #[test]
    fn a_missing_permission_is_for_a_person_and_a_conflict_is_retried() {
        let forbidden = Error::from(KubeError::new(Verb::Apply, "StatefulSet", "ironic-mariadb", api_error(403, "no")));
        assert!(matches!(forbidden.failure(), Some(Progress::Failed { reason, .. }) if reason == FORBIDDEN));
        let conflict = Error::from(KubeError::new(Verb::Apply, "StatefulSet", "ironic-mariadb", api_error(409, "x")));
        assert_eq!(conflict.failure(), None, "worth retrying");
    }

    #[test]
    fn certificates_that_cannot_be_made_are_reported() {
        let err =
            Error::from(super::super::managed::Error::Certificates(crate::pki::certificate::Error::Time(i64::MAX)));
        let Some(Progress::Failed { reason, message }) = err.failure() else { panic!("a failure") };
        assert_eq!(reason, crate::database::status::reasons::CERTIFICATE_FAILED);
        assert!(message.contains("managed database's certificates"), "{message}");
    }
}
