//! The errors of a reconcile, one variant per pipeline step, and which of them the user must
//! fix (they become conditions) rather than the operator retrying.

use super::status::{Verdict, reasons};
use super::{apply, credentials, tls, validate};

/// Why a reconcile of an Ironic did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("validation failed")]
    Validate(#[from] validate::Error),
    #[error("cannot reconcile the database")]
    Database(#[from] crate::database::Error),
    #[error("cannot resolve the API credentials")]
    Credentials(#[from] credentials::Error),
    #[error("cannot resolve TLS")]
    Tls(#[from] tls::Error),
    #[error("cannot read the state of {what}")]
    Observe {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write objects")]
    Apply(#[from] apply::Error),
    #[error("cannot write the status")]
    Status(#[source] kube::Error),
    #[error("the Ironic has no namespace")]
    NoNamespace,
    #[error("finalizer")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<ReconcileError>>),
}

impl ReconcileError {
    /// The verdict to report for errors only the user can fix; `None` for errors worth
    /// retrying (the apiserver did not answer, a conflict, a timeout).
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            Self::Validate(err) => match err {
                validate::Error::InvalidSpec(_) => Some(Verdict::failed(reasons::INVALID_SPEC, err.to_string())),
                validate::Error::UnsupportedVersion(_) => {
                    Some(Verdict::failed(reasons::UNSUPPORTED_VERSION, err.to_string()))
                }
                validate::Error::Missing { .. } | validate::Error::InvalidLinked(_) => {
                    Some(Verdict::failed(reasons::INVALID_LINKED_RESOURCE, err.to_string()))
                }
                validate::Error::Kube { kind, name, source } => {
                    forbidden(source).map(|message| forbidden_verdict(&format!("read the {kind:?} {name}"), message))
                }
            },
            Self::Credentials(err @ credentials::Error::Conflict { .. }) => {
                Some(Verdict::failed(reasons::RESOURCE_CONFLICT, err.to_string()))
            }
            Self::Credentials(err @ credentials::Error::NotText { .. }) => {
                Some(Verdict::failed(reasons::INVALID_LINKED_RESOURCE, err.to_string()))
            }
            Self::Tls(err @ tls::Error::Conflict { .. }) => {
                Some(Verdict::failed(reasons::RESOURCE_CONFLICT, err.to_string()))
            }
            Self::Tls(tls::Error::Generate(err)) => Some(Verdict::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the serving certificate: {}", crate::kube::error::chain(err)),
            )),
            Self::Database(crate::database::Error::Certificates(err)) => Some(Verdict::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the managed database's certificates: {}", crate::kube::error::chain(err)),
            )),
            Self::Observe { what, source } => {
                forbidden(source).map(|message| forbidden_verdict(&format!("read {what}"), message))
            }
            Self::Database(crate::database::Error::Read { kind, name, source }) => {
                forbidden(source).map(|message| forbidden_verdict(&format!("read {kind} {name}"), message))
            }
            Self::Database(crate::database::Error::Apply { kind, name, source }) => {
                forbidden(source).map(|message| forbidden_verdict(&format!("write {kind} {name}"), message)).or_else(
                    || apply::refusal(kind, name, source).map(|(_, m)| Verdict::failed(reasons::APPLY_REJECTED, m)),
                )
            }
            Self::Apply(err) => {
                if let Some(message) = forbidden(err.cause()) {
                    return Some(forbidden_verdict(&format!("write {} {}", err.kind(), err.name()), message));
                }
                err.refusal().map(|(code, message)| {
                if code == 404 && err.kind() == "Certificate" {
                    Verdict::failed(
                        reasons::CERT_MANAGER_MISSING,
                        "cert-manager's Certificate API (cert-manager.io/v1) is not installed; install cert-manager or choose another TLS mode",
                    )
                } else {
                    Verdict::failed(reasons::APPLY_REJECTED, message)
                }
                })
            }
            _ => None,
        }
    }

    /// A short label for the failure metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Validate(_) => "validate",
            Self::Database(_) => "database",
            Self::Credentials(_) => "credentials",
            Self::Tls(_) => "tls",
            Self::Observe { .. } => "observe",
            Self::Apply(_) => "apply",
            Self::Status(_) => "status",
            Self::NoNamespace => "no_namespace",
            Self::Finalizer(_) => "finalizer",
        }
    }
}

/// The apiserver's message when it refused the operator access (403): missing RBAC, which
/// only an administrator can grant, so it belongs in status rather than in endless retries.
fn forbidden(err: &kube::Error) -> Option<&str> {
    match err {
        kube::Error::Api(status) if status.code == 403 => Some(status.message.as_str()),
        _ => None,
    }
}

fn forbidden_verdict(action: &str, message: &str) -> Verdict {
    Verdict::failed(
        reasons::FORBIDDEN,
        format!("the operator may not {action}: {message}; grant its service account that permission (RBAC)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, message: &str) -> kube::Error {
        let status: kube::core::Status =
            serde_json::from_value(serde_json::json!({"code": code, "message": message})).expect("a Status");
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_refusal_for_lack_of_rbac_is_a_condition_and_other_api_failures_are_retried() {
        let forbidden = ReconcileError::Observe {
            what: "Job ironic-pre-none-to-38.0".into(),
            source: api_error(403, "jobs.batch is forbidden: User cannot get resource jobs"),
        };
        let Some(Verdict::Failed { reason, message }) = forbidden.verdict() else { panic!("a verdict") };
        assert_eq!(reason, reasons::FORBIDDEN);
        assert!(message.contains("jobs.batch is forbidden") && message.contains("RBAC"), "{message}");

        let unavailable =
            ReconcileError::Observe { what: "Job x".into(), source: api_error(503, "the server is shutting down") };
        assert_eq!(unavailable.verdict(), None, "worth retrying");
        let conflict = ReconcileError::Database(crate::database::Error::Apply {
            kind: "StatefulSet",
            name: "ironic-mariadb".into(),
            source: api_error(409, "the object has been modified"),
        });
        assert_eq!(conflict.verdict(), None, "worth retrying");

        let write = |code, message: &str| {
            ReconcileError::Apply(apply::Error::Apply {
                kind: "Deployment".into(),
                name: "ironic-service".into(),
                source: api_error(code, message),
            })
        };
        let Some(Verdict::Failed { reason, message }) = write(403, "deployments.apps is forbidden").verdict() else {
            panic!("a verdict")
        };
        assert_eq!(reason, reasons::FORBIDDEN);
        assert!(message.contains("may not write Deployment ironic-service"), "{message}");
        let Some(Verdict::Failed { reason, .. }) = write(422, "spec.template: Invalid value").verdict() else {
            panic!("a verdict")
        };
        assert_eq!(reason, reasons::APPLY_REJECTED);
    }
}
