//! The errors of a reconcile, one variant per pipeline step and a metric label per variant,
//! and which of them only a person can fix: those become conditions (a failed
//! [`Progress`]) instead of retries.

use super::status::reasons;
use super::{apply, credentials, dereference, resolve, sequence, tls, validate};
use crate::kit::error::chain;
use crate::kit::{KubeError, Progress};

/// Why a reconcile of an Ironic did not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("cannot read the Ironic or what it refers to")]
    Dereference(#[from] dereference::Error),
    #[error("validation failed")]
    Validate(#[from] validate::Error),
    #[error("cannot reconcile the database")]
    Database(#[from] crate::database::Error),
    #[error("cannot resolve the inputs")]
    Resolve(#[from] resolve::Error),
    #[error("cannot write the objects")]
    Apply(#[from] apply::Error),
    #[error("cannot run the upgrade sequence")]
    Sequence(#[from] sequence::Error),
    #[error("cannot write the status")]
    Status(#[source] KubeError),
    #[error("cannot add or remove the finalizer")]
    Finalizer(#[source] KubeError),
}

impl Error {
    /// The progress to report for errors only a person can fix; `None` for errors worth
    /// retrying (the apiserver did not answer, a conflict, a timeout).
    pub(crate) fn failure(&self) -> Option<Progress> {
        let failed =
            |reason: &'static str, err: &dyn std::error::Error| Some(Progress::failed(reason, err.to_string()));
        match self {
            Self::Dereference(err) => err.kube().and_then(KubeError::failure),
            Self::Validate(err @ validate::Error::InvalidSpec(_)) => failed(reasons::INVALID_SPEC, err),
            Self::Validate(err @ validate::Error::NamespaceNotListed(_)) => failed(reasons::NAMESPACE_NOT_LISTED, err),
            Self::Validate(err @ validate::Error::UnsupportedVersion(_)) => failed(reasons::UNSUPPORTED_VERSION, err),
            Self::Validate(err @ (validate::Error::Missing { .. } | validate::Error::InvalidLinked(_))) => {
                failed(reasons::INVALID_LINKED_RESOURCE, err)
            }
            Self::Database(err) => err.failure(),
            Self::Resolve(resolve::Error::Credentials(err @ credentials::Error::Conflict { .. })) => {
                failed(reasons::RESOURCE_CONFLICT, err)
            }
            Self::Resolve(resolve::Error::Credentials(err @ credentials::Error::NotText { .. })) => {
                failed(reasons::INVALID_LINKED_RESOURCE, err)
            }
            Self::Resolve(resolve::Error::Credentials(_)) => None,
            Self::Resolve(resolve::Error::Tls(err @ tls::Error::Conflict { .. })) => {
                failed(reasons::RESOURCE_CONFLICT, err)
            }
            Self::Resolve(resolve::Error::Tls(tls::Error::Generate(err))) => Some(Progress::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the serving certificate: {}", chain(err)),
            )),
            Self::Resolve(resolve::Error::Tls(tls::Error::Request(err))) => Some(Progress::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the key or the CertificateSigningRequest: {}", chain(err)),
            )),
            Self::Apply(err) => err.failure(),
            Self::Sequence(sequence::Error(err)) => err.failure(),
            Self::Status(_) | Self::Finalizer(_) => None,
        }
    }
}

crate::kit::label::metric_labels!(Error: Dereference, Validate, Database, Resolve, Apply, Sequence, Status, Finalizer);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Verb;
    use crate::kit::error::api_error;
    use crate::kit::runner::MetricLabel;

    fn kube(verb: Verb, kind: &'static str, name: &str, code: u16, message: &str) -> KubeError {
        KubeError::new(verb, kind, name, api_error(code, message))
    }

    #[test]
    fn a_refusal_for_lack_of_rbac_is_a_condition_and_other_api_failures_are_retried() {
        let forbidden = Error::Sequence(sequence::Error(kube(
            Verb::Get,
            "Job",
            "ironic-pre-none-to-38.0",
            403,
            "jobs.batch is forbidden: User cannot get resource jobs",
        )));
        let Some(Progress::Failed { reason, message }) = forbidden.failure() else { panic!("a failure") };
        assert_eq!(reason, crate::kit::error::FORBIDDEN);
        assert!(message.contains("jobs.batch is forbidden") && message.contains("RBAC"), "{message}");

        let unavailable =
            Error::Sequence(sequence::Error(kube(Verb::Get, "Job", "x", 503, "the server is shutting down")));
        assert_eq!(unavailable.failure(), None, "worth retrying");
        let conflict = Error::Database(crate::database::Error::Kube(kube(
            Verb::Apply,
            "StatefulSet",
            "ironic-mariadb",
            409,
            "the object has been modified",
        )));
        assert_eq!(conflict.failure(), None, "worth retrying");

        let write = |code, message: &str| {
            Error::Apply(apply::Error::Kube(kube(Verb::Apply, "Deployment", "ironic-service", code, message)))
        };
        let Some(Progress::Failed { reason, message }) = write(403, "deployments.apps is forbidden").failure() else {
            panic!("a failure")
        };
        assert_eq!(reason, crate::kit::error::FORBIDDEN);
        assert!(message.contains("may not write Deployment ironic-service"), "{message}");
        let Some(Progress::Failed { reason, .. }) = write(422, "spec.template: Invalid value").failure() else {
            panic!("a failure")
        };
        assert_eq!(reason, crate::kit::error::APPLY_REJECTED);
    }

    #[test]
    fn a_missing_linked_resource_and_a_name_taken_by_someone_else_are_conditions() {
        let missing = Error::Validate(validate::Error::InvalidLinked("Secret creds has no key \"password\"".into()));
        assert!(
            matches!(missing.failure(), Some(Progress::Failed { reason, .. }) if reason == reasons::INVALID_LINKED_RESOURCE)
        );
        let taken = Error::Resolve(resolve::Error::Tls(tls::Error::Conflict { name: "ironic-tls-ca".into() }));
        assert!(
            matches!(taken.failure(), Some(Progress::Failed { reason, .. }) if reason == reasons::RESOURCE_CONFLICT)
        );
    }

    #[test]
    fn every_step_has_its_metric_label() {
        let validate = Error::Validate(validate::Error::InvalidLinked("x".into()));
        assert_eq!(validate.metric_label(), "validate");
        let finalizer = Error::Finalizer(kube(Verb::Patch, "Ironic", "ironic", 500, "x"));
        assert_eq!(finalizer.metric_label(), "finalizer");
        assert!(finalizer.failure().is_none(), "retried");
        assert_eq!(Error::Status(kube(Verb::WriteStatus, "Ironic", "ironic", 500, "x")).metric_label(), "status");
    }
}
