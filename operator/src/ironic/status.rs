//! The status step, pure: conditions from the reconcile's verdict, the fields it learned, and
//! the Events that the transitions deserve.

use super::build::network::{IMAGES_SERVICE_PORT, api_service_port};
use super::names::Names;
use crds::condition::{self, Condition, DEGRADED, FALSE, PROGRESSING, READY, TRUE};
use crds::ironic::IronicSpec;
use crds::ironic::status::{IronicStatus, reasons as ready_reasons};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::borrow::Cow;

/// Reasons of Progressing and Degraded.
pub mod reasons {
    pub const INVALID_SPEC: &str = "InvalidSpec";
    pub const UNSUPPORTED_VERSION: &str = "UnsupportedVersion";
    pub const INVALID_LINKED_RESOURCE: &str = "InvalidLinkedResource";
    pub const RESOURCE_CONFLICT: &str = "ResourceConflict";
    pub const DOWNGRADE_REJECTED: &str = "DowngradeRejected";
    pub const UPGRADE_JOB_FAILED: &str = "UpgradeJobFailed";
    pub const ROLLOUT_FAILED: &str = "RolloutFailed";
    pub const APPLY_REJECTED: &str = "ApplyRejected";
    pub const FORBIDDEN: &str = "Forbidden";
    pub const CERT_MANAGER_MISSING: &str = "CertManagerMissing";
    pub const CERTIFICATE_FAILED: &str = "CertificateFailed";
    pub const AS_EXPECTED: &str = "AsExpected";
    pub const DEPLOYING: &str = "Deploying";
    pub const WAITING_FOR_CERTIFICATE: &str = "WaitingForCertificate";
    pub const WAITING_FOR_DATABASE: &str = "WaitingForDatabase";
    pub const UPGRADING_DATABASE_SCHEMA: &str = "UpgradingDatabaseSchema";
    pub const ROLLING_OUT: &str = "RollingOut";
    pub const MIGRATING_DATA: &str = "MigratingData";
    pub const COMPLETE: &str = "Complete";
    pub const STOPPED: &str = "Stopped";
}

/// How a reconcile ended, as the user should read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Ironic runs the requested version and every step is done.
    Available,
    /// Work is under way (or waiting for something that will come); `reason` is Progressing's.
    InProgress { reason: Cow<'static, str>, message: String },
    /// Stopped until the user acts; `reason` is Degraded's.
    Failed { reason: Cow<'static, str>, message: String },
}

impl Verdict {
    pub fn in_progress(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::InProgress { reason: reason.into(), message: message.into() }
    }

    pub fn failed(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::Failed { reason: reason.into(), message: message.into() }
    }
}

/// The API and image server URLs inside the cluster.
pub fn endpoints(names: &Names, namespace: &str, spec: &IronicSpec, tls: bool) -> (String, Option<String>) {
    let host = format!("{}.{namespace}.svc", names.service());
    let scheme = if tls { "https" } else { "http" };
    let api = format!("{scheme}://{host}:{}", api_service_port(tls));
    let images = (!spec.high_availability()).then(|| format!("http://{host}:{IMAGES_SERVICE_PORT}"));
    (api, images)
}

/// A condition of `type_` from its (status, reason, message).
fn condition(
    type_: &str,
    (status, reason, message): (&str, &str, String),
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    let message = if message.is_empty() { reason.to_string() } else { message };
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: truncate(message),
        observed_generation: generation,
        last_transition_time: now.clone(),
    }
}

/// Degraded's message when nothing is wrong; the CRD requires a message on every condition.
const NOTHING_WRONG: &str = "nothing needs attention";

/// Conditions and Events carry at most about a kilobyte of message.
fn truncate(mut message: String) -> String {
    const LIMIT: usize = 1000;
    if message.len() > LIMIT {
        let mut cut = LIMIT;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// Completes `next` (the fields the reconcile learned, on top of the old status, with the
/// conditions it already set, such as DatabaseReady) with the conditions of `verdict`,
/// observedGeneration, and installedVersion once available.
pub fn finish(mut next: IronicStatus, verdict: &Verdict, generation: Option<i64>, now: Time) -> IronicStatus {
    let mut conditions = next.conditions.take().unwrap_or_default();
    let (ready, progressing, degraded) = match verdict {
        Verdict::Available => {
            let version = next.requested_version.clone().unwrap_or_default();
            let endpoint = next.api_endpoint.as_deref().map(|e| format!(" at {e}")).unwrap_or_default();
            (
                (TRUE, ready_reasons::DEPLOYMENT_AVAILABLE, format!("Ironic {version} is available{endpoint}")),
                (FALSE, reasons::COMPLETE, "every step is done".to_string()),
                (FALSE, reasons::AS_EXPECTED, NOTHING_WRONG.to_string()),
            )
        }
        Verdict::InProgress { reason, message } => (
            (FALSE, ready_reasons::DEPLOYMENT_IN_PROGRESS, message.clone()),
            (TRUE, &**reason, message.clone()),
            (FALSE, reasons::AS_EXPECTED, NOTHING_WRONG.to_string()),
        ),
        Verdict::Failed { reason, message } => (
            (FALSE, ready_reasons::DEPLOYMENT_FAILED, message.clone()),
            (FALSE, reasons::STOPPED, message.clone()),
            (TRUE, &**reason, message.clone()),
        ),
    };
    for (type_, parts) in [(READY, ready), (PROGRESSING, progressing), (DEGRADED, degraded)] {
        condition::set_condition(&mut conditions, condition(type_, parts, generation, &now));
    }
    next.conditions = Some(conditions);
    next.observed_generation = generation;
    if *verdict == Verdict::Available {
        next.installed_version = next.requested_version.clone();
    }
    next
}

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Normal,
    Warning,
}

/// An Event to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub severity: Severity,
    pub reason: String,
    pub note: String,
}

impl Notice {
    pub fn normal(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self { severity: Severity::Normal, reason: reason.into(), note: truncate(note.into()) }
    }

    pub fn warning(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, reason: reason.into(), note: truncate(note.into()) }
    }
}

fn find<'a>(status: &'a IronicStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.as_deref().and_then(|c| condition::find(c, type_))
}

fn changed(old: Option<&Condition>, new: Option<&Condition>) -> bool {
    match (old, new) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(o), Some(n)) => o.status != n.status || o.reason != n.reason,
    }
}

/// One Event per transition between `old` and `new`.
pub fn transitions(old: &IronicStatus, new: &IronicStatus) -> Vec<Notice> {
    let mut out = Vec::new();
    if let (Some(from), Some(to)) = (&old.requested_version, &new.requested_version)
        && from != to
    {
        out.push(Notice::normal("VersionChange", format!("requested version changed from {from} to {to}")));
    }
    let (old_progress, new_progress) = (find(old, PROGRESSING), find(new, PROGRESSING));
    if let Some(c) = new_progress.filter(|c| c.status == TRUE && changed(old_progress, Some(c))) {
        out.push(Notice::normal(&c.reason, &c.message));
    }
    let (old_degraded, new_degraded) = (find(old, DEGRADED), find(new, DEGRADED));
    if let Some(c) = new_degraded.filter(|c| changed(old_degraded, Some(c))) {
        if c.status == TRUE {
            out.push(Notice::warning(&c.reason, &c.message));
        } else if old_degraded.is_some_and(|o| o.status == TRUE) {
            out.push(Notice::normal("Recovered", "the problem was resolved"));
        }
    }
    let (old_ready, new_ready) = (find(old, READY), find(new, READY));
    if let Some(c) = new_ready.filter(|c| changed(old_ready, Some(c))) {
        let was_ready = old_ready.is_some_and(|o| o.status == TRUE);
        if c.status == TRUE && !was_ready {
            out.push(Notice::normal("IronicReady", &c.message));
        } else if c.status != TRUE && was_ready {
            out.push(Notice::warning("IronicNotReady", &c.message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("time"))
    }

    fn reason_of(status: &IronicStatus, type_: &str) -> (String, String) {
        let c = find(status, type_).expect("condition");
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn available_sets_ready_and_the_installed_version() {
        let next = IronicStatus { requested_version: Some("38.0".into()), ..Default::default() };
        let status = finish(next, &Verdict::Available, Some(3), at(10));
        assert_eq!(reason_of(&status, READY), (TRUE.into(), "DeploymentAvailable".into()));
        assert_eq!(reason_of(&status, PROGRESSING), (FALSE.into(), "Complete".into()));
        assert_eq!(reason_of(&status, DEGRADED), (FALSE.into(), "AsExpected".into()));
        assert_eq!(status.installed_version.as_deref(), Some("38.0"));
        assert_eq!(status.observed_generation, Some(3));
    }

    #[test]
    fn a_failure_keeps_the_installed_version_and_degrades() {
        let old = IronicStatus { installed_version: Some("37.0".into()), ..Default::default() };
        let next = IronicStatus { requested_version: Some("38.0".into()), ..old.clone() };
        let verdict = Verdict::failed(reasons::UPGRADE_JOB_FAILED, "pre-upgrade Job failed: exit 1");
        let status = finish(next, &verdict, Some(2), at(10));
        assert_eq!(reason_of(&status, READY), (FALSE.into(), "DeploymentFailed".into()));
        assert_eq!(reason_of(&status, DEGRADED), (TRUE.into(), "UpgradeJobFailed".into()));
        assert_eq!(status.installed_version.as_deref(), Some("37.0"));
        let notices = transitions(&old, &status);
        assert!(
            notices.contains(&Notice::warning("UpgradeJobFailed", "pre-upgrade Job failed: exit 1")),
            "{notices:?}"
        );
    }

    #[test]
    fn repeating_a_verdict_changes_nothing_and_publishes_nothing() {
        let next = IronicStatus { requested_version: Some("38.0".into()), ..Default::default() };
        let first = finish(next.clone(), &Verdict::Available, Some(1), at(10));
        let second = finish(first.clone(), &Verdict::Available, Some(1), at(20));
        assert_eq!(first, second, "no churn: transition times are kept");
        assert!(transitions(&first, &second).is_empty());
    }

    #[test]
    fn transitions_name_what_happened() {
        let progressing = finish(
            IronicStatus { requested_version: Some("37.0".into()), ..Default::default() },
            &Verdict::in_progress(reasons::DEPLOYING, "creating the Deployment"),
            Some(1),
            at(10),
        );
        let first: Vec<_> = transitions(&IronicStatus::default(), &progressing).into_iter().map(|n| n.reason).collect();
        assert_eq!(first, ["Deploying"]);
        let ready = finish(progressing.clone(), &Verdict::Available, Some(1), at(20));
        let reasons: Vec<_> = transitions(&progressing, &ready).into_iter().map(|n| n.reason).collect();
        assert_eq!(reasons, ["IronicReady"]);
        let upgrading = finish(
            IronicStatus { requested_version: Some("38.0".into()), ..ready.clone() },
            &Verdict::in_progress(reasons::UPGRADING_DATABASE_SCHEMA, "pre-upgrade Job runs"),
            Some(2),
            at(30),
        );
        let reasons: Vec<_> = transitions(&ready, &upgrading).into_iter().map(|n| n.reason).collect();
        assert_eq!(reasons, ["VersionChange", "UpgradingDatabaseSchema", "IronicNotReady"]);
        let refused = finish(ready.clone(), &Verdict::failed(reasons::DOWNGRADE_REJECTED, "no"), Some(3), at(40));
        let recovered = finish(refused.clone(), &Verdict::Available, Some(4), at(50));
        let reasons: Vec<_> = transitions(&refused, &recovered).into_iter().map(|n| n.reason).collect();
        assert_eq!(reasons, ["Recovered", "IronicReady"]);
    }

    #[test]
    fn endpoints_follow_tls_and_high_availability() {
        let names = Names::new("ironic");
        let (api, images) = endpoints(&names, "metal3", &IronicSpec::default(), true);
        assert_eq!(api, "https://ironic.metal3.svc:443");
        assert_eq!(images.as_deref(), Some("http://ironic.metal3.svc:8080"));
        let ha = IronicSpec { high_availability: Some(true), ..Default::default() };
        assert_eq!(endpoints(&names, "metal3", &ha, false), ("http://ironic.metal3.svc:80".to_string(), None));
    }
}
