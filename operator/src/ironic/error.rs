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
                validate::Error::Kube { .. } => None,
            },
            Self::Credentials(err @ credentials::Error::Conflict { .. }) => {
                Some(Verdict::failed(reasons::RESOURCE_CONFLICT, err.to_string()))
            }
            Self::Credentials(err @ credentials::Error::NotText { .. }) => {
                Some(Verdict::failed(reasons::INVALID_LINKED_RESOURCE, err.to_string()))
            }
            Self::Tls(err @ tls::Error::Conflict { .. }) => Some(Verdict::failed(reasons::RESOURCE_CONFLICT, err.to_string())),
            Self::Tls(tls::Error::Generate(err)) => Some(Verdict::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the serving certificate: {}", crate::error::chain(err)),
            )),
            Self::Database(crate::database::Error::Certificates(err)) => Some(Verdict::failed(
                reasons::CERTIFICATE_FAILED,
                format!("cannot make the managed database's certificates: {}", crate::error::chain(err)),
            )),
            Self::Database(crate::database::Error::Apply { kind, name, source: kube::Error::Api(status) })
                if matches!(status.code, 400 | 404 | 422) =>
            {
                Some(Verdict::failed(
                    reasons::APPLY_REJECTED,
                    format!("the apiserver refused {kind} {name}: {}", status.message),
                ))
            }
            Self::Apply(err) => err.refusal().map(|(code, message)| {
                if code == 404 && err.kind() == "Certificate" {
                    Verdict::failed(
                        reasons::CERT_MANAGER_MISSING,
                        "cert-manager's Certificate API (cert-manager.io/v1) is not installed; install cert-manager or choose another TLS mode",
                    )
                } else {
                    Verdict::failed(reasons::APPLY_REJECTED, message)
                }
            }),
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
