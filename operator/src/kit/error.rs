//! One Kubernetes error for every controller: what the operator asked (the verb), of which
//! object (kind and name), and what the apiserver answered. The tests that decide what a
//! failure means (forbidden, conflict, not found, refused) live here, once.

use super::progress::Progress;
use std::borrow::Cow;
use std::fmt;

/// Degraded's reason when the operator lacks a permission (RBAC only an administrator grants).
pub(crate) const FORBIDDEN: &str = "Forbidden";
/// Degraded's reason when the apiserver refused an object the operator wrote.
pub(crate) const APPLY_REJECTED: &str = "ApplyRejected";

/// Degraded's reason when an object of a name the operator writes exists and is not the
/// owner's: someone else created it first.
pub(crate) const IN_THE_WAY: &str = "ObjectInTheWay";

/// What the operator asked of the apiserver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Create,
    Apply,
    Patch,
    /// A PUT with the resourceVersion read (a Lease's take).
    Replace,
    Delete,
    WriteStatus,
}

impl Verb {
    /// The verb as the sentence "the operator may not {verb} {kind} {name}" reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "read",
            Self::List => "list",
            Self::Create => "create",
            Self::Apply | Self::Patch | Self::Replace => "write",
            Self::Delete => "delete",
            Self::WriteStatus => "write the status of",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request the apiserver did not fulfil.
#[derive(Debug, thiserror::Error)]
#[error("cannot {verb} {kind} {name}")]
pub struct KubeError {
    pub verb: Verb,
    pub kind: Cow<'static, str>,
    pub name: String,
    #[source]
    pub source: kube::Error,
}

impl KubeError {
    pub fn new(verb: Verb, kind: impl Into<Cow<'static, str>>, name: impl Into<String>, source: kube::Error) -> Self {
        Self { verb, kind: kind.into(), name: name.into(), source }
    }

    /// A closure for `map_err` on a request about `K` named `name`.
    pub fn of<K: kube::Resource<DynamicType = ()>>(verb: Verb, name: &str) -> impl FnOnce(kube::Error) -> Self + '_ {
        move |source| Self::new(verb, K::kind(&()).into_owned(), name, source)
    }

    /// An object `kind` `name` exists where the operator would create its own, and `owner` does
    /// not control it. Whoever may create such objects in the namespace could otherwise fake
    /// the outcome of a run-once Job (a backup, a schema upgrade) by creating it first.
    pub fn in_the_way(kind: impl Into<Cow<'static, str>>, name: &str, owner: (&str, &str)) -> Self {
        let kind = kind.into();
        let message = format!(
            "{kind} {name} exists and is not controlled by {} {}: someone else created it, so the operator \
             neither trusts its outcome nor replaces it; delete it to let the operator create its own",
            owner.0, owner.1
        );
        let status =
            kube::core::Status { code: 409, reason: IN_THE_WAY.to_string(), message, ..kube::core::Status::default() };
        Self::new(Verb::Create, kind, name, kube::Error::Api(Box::new(status)))
    }

    /// True for [`KubeError::in_the_way`].
    pub fn is_in_the_way(&self) -> bool {
        matches!(&self.source, kube::Error::Api(status) if status.reason == IN_THE_WAY)
    }

    /// The HTTP status the apiserver answered with, when it answered.
    pub fn code(&self) -> Option<u16> {
        code(&self.source)
    }

    /// The apiserver's own message, when it answered.
    pub fn message(&self) -> Option<&str> {
        match &self.source {
            kube::Error::Api(status) => Some(status.message.as_str()),
            _ => None,
        }
    }

    /// 403: the operator lacks a permission, which only an administrator can grant.
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// 409: someone else changed the object first (or it exists already).
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409) && !self.is_in_the_way()
    }

    /// 404: the object, or its whole API, does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// The apiserver refused the object itself: it is invalid (400, 422), or a write went to
    /// an API that does not exist (404). Retrying the same object cannot help.
    pub fn is_refused(&self) -> bool {
        match self.code() {
            Some(400 | 422) => true,
            Some(404) => {
                matches!(self.verb, Verb::Apply | Verb::Create | Verb::Patch | Verb::Replace | Verb::WriteStatus)
            }
            _ => false,
        }
    }

    /// What only a person can fix, as the message a condition carries; `None` for failures
    /// worth retrying (no answer, a conflict, a server error).
    pub fn user_facing(&self) -> Option<String> {
        let message = self.message().unwrap_or_default();
        if self.is_in_the_way() {
            return Some(message.to_string());
        }
        if self.is_forbidden() {
            return Some(format!(
                "the operator may not {} {} {}: {message}; grant its service account that permission (RBAC)",
                self.verb, self.kind, self.name
            ));
        }
        self.is_refused().then(|| format!("the apiserver refused {} {}: {message}", self.kind, self.name))
    }

    /// [`KubeError::user_facing`] as the progress a condition reports: failed with
    /// [`FORBIDDEN`] or [`APPLY_REJECTED`]; `None` for failures worth retrying.
    pub fn failure(&self) -> Option<Progress> {
        let reason = match () {
            () if self.is_in_the_way() => IN_THE_WAY,
            () if self.is_forbidden() => FORBIDDEN,
            () => APPLY_REJECTED,
        };
        self.user_facing().map(|message| Progress::failed(reason, message))
    }
}

/// The HTTP status of a kube error, when the apiserver answered.
pub(crate) fn code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// `error: cause: cause` on one line, for logs.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
pub(crate) fn api_error(code: u16, message: &str) -> kube::Error {
    let status: kube::core::Status =
        serde_json::from_value(serde_json::json!({"code": code, "message": message})).expect("a Status");
    kube::Error::Api(Box::new(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(verb: Verb, code: u16) -> KubeError {
        KubeError::new(verb, "Deployment", "ironic-service", api_error(code, "no"))
    }

    #[test]
    fn a_forbidden_request_tells_what_to_grant() {
        let err = error(Verb::Apply, 403);
        assert!(err.is_forbidden());
        let message = err.user_facing().expect("user-facing");
        assert!(message.contains("may not write Deployment ironic-service") && message.contains("RBAC"), "{message}");
    }

    #[test]
    fn an_invalid_object_is_refused_and_a_missing_api_refuses_writes_only() {
        assert!(error(Verb::Apply, 422).is_refused());
        assert!(error(Verb::Apply, 404).is_refused());
        assert!(!error(Verb::Get, 404).is_refused(), "a read of a missing object is an answer");
        assert_eq!(
            error(Verb::Apply, 400).user_facing().as_deref(),
            Some("the apiserver refused Deployment ironic-service: no")
        );
    }

    #[test]
    fn an_object_in_the_way_is_a_persons_to_remove_not_a_race_to_retry() {
        let err = KubeError::in_the_way("Job", "ironic-dbsync-1", ("Ironic", "ironic"));
        assert!(err.is_in_the_way() && !err.is_conflict());
        let failure = err.failure().expect("failed");
        let (reason, message) = failure.reason_and_message().expect("a reason");
        assert_eq!(reason, IN_THE_WAY);
        assert!(message.contains("Job ironic-dbsync-1 exists and is not controlled by Ironic ironic"), "{message}");
        assert!(!error(Verb::Apply, 409).is_in_the_way());
    }

    #[test]
    fn conflicts_server_errors_and_silence_are_retried() {
        assert!(error(Verb::Apply, 409).is_conflict());
        assert_eq!(error(Verb::Apply, 409).user_facing(), None);
        assert_eq!(error(Verb::Apply, 503).user_facing(), None);
        let silent = KubeError::new(Verb::Get, "Secret", "s", kube::Error::LinesCodecMaxLineLengthExceeded);
        assert_eq!((silent.code(), silent.user_facing()), (None, None));
    }

    #[test]
    fn a_failure_a_person_must_fix_becomes_failed_progress_with_its_reason() {
        let forbidden = error(Verb::Get, 403).failure().expect("user-facing");
        assert_eq!(forbidden.reason_and_message().map(|(r, _)| r), Some(FORBIDDEN));
        let refused = error(Verb::Apply, 422).failure().expect("user-facing");
        assert_eq!(
            refused.reason_and_message(),
            Some((APPLY_REJECTED, "the apiserver refused Deployment ironic-service: no"))
        );
        assert_eq!(error(Verb::Apply, 409).failure(), None, "a conflict is retried");
    }

    #[test]
    fn the_error_names_verb_kind_and_object() {
        assert_eq!(error(Verb::Delete, 500).to_string(), "cannot delete Deployment ironic-service");
        assert_eq!(error(Verb::WriteStatus, 500).to_string(), "cannot write the status of Deployment ironic-service");
    }
}
