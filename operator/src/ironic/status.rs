//! The status step, pure: the status from what the reconcile learned ([`Facts`], filled step
//! by step: a step that did not run leaves its part of status as it was) and how it ended (a
//! [`Progress`]), and the Events its transitions deserve.

use super::monitor::{Monitoring, SERVICE_MONITOR_READY};
use super::resolve::Resolved;
use super::tls;
use super::tls::csr::{CERTIFICATE_READY, reasons as csr_reasons};
use super::version::ResolvedVersion;
use crate::kit::condition::{Conditions, ReadyReasons};
use crate::kit::{Notices, Progress};
use crds::condition::{self, Condition, DEGRADED, PROGRESSING, READY, TRUE};
use crds::ironic::names::endpoints;
use crds::ironic::status::{
    DATABASE_READY, DatabaseMode, DatabaseStatus, IronicStatus, ResolvedImages, TlsStatus, UpgradeStatus,
    WorkloadStatus, reasons as ready_reasons,
};
use crds::ironic::{ReferenceKind, ResourceReferenceWithKey};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Reasons of Progressing and Degraded.
pub(crate) mod reasons {
    pub(crate) const INVALID_SPEC: &str = "InvalidSpec";
    pub(crate) const NAMESPACE_NOT_LISTED: &str = "NamespaceNotListed";
    pub(crate) const UNSUPPORTED_VERSION: &str = "UnsupportedVersion";
    pub(crate) const INVALID_LINKED_RESOURCE: &str = "InvalidLinkedResource";
    pub(crate) const RESOURCE_CONFLICT: &str = "ResourceConflict";
    pub(crate) const DOWNGRADE_REJECTED: &str = "DowngradeRejected";
    pub(crate) const UPGRADE_JOB_FAILED: &str = "UpgradeJobFailed";
    pub(crate) const CERT_MANAGER_MISSING: &str = "CertManagerMissing";
    pub(crate) const CERTIFICATE_FAILED: &str = "CertificateFailed";
    pub(crate) const DEPLOYING: &str = "Deploying";
    pub(crate) const WAITING_FOR_CERTIFICATE: &str = "WaitingForCertificate";
    pub(crate) const WAITING_FOR_DATABASE: &str = "WaitingForDatabase";
    pub(crate) const UPGRADING_DATABASE_SCHEMA: &str = "UpgradingDatabaseSchema";
    pub(crate) const ROLLING_OUT: &str = crate::kit::observe::ROLLING_OUT;
    pub(crate) const MIGRATING_DATA: &str = "MigratingData";
}

/// Ready's reasons (ironic-standalone-operator's).
pub(crate) const READY_REASONS: ReadyReasons = ReadyReasons {
    done: ready_reasons::DEPLOYMENT_AVAILABLE,
    waiting: ready_reasons::DEPLOYMENT_IN_PROGRESS,
    failed: ready_reasons::DEPLOYMENT_FAILED,
};

/// What the database reported for status.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DatabaseFacts {
    pub status: Option<DatabaseStatus>,
    /// DatabaseReady; `None` without a database, which removes it.
    pub condition: Option<Condition>,
}

/// What the resolved inputs publish in status.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Published {
    /// The generated credentials' Secret; `None` when the user names their own.
    pub api_credentials_secret_name: Option<String>,
    pub tls: Option<TlsStatus>,
    pub api_endpoint: String,
    pub image_server_endpoint: Option<String>,
    pub ca_ref: Option<ResourceReferenceWithKey>,
    pub workload: WorkloadStatus,
    /// CertificateReady (mode CertificateSigningRequest): status, reason, message; `None`
    /// removes it.
    pub certificate: Option<(bool, &'static str, String)>,
}

impl Published {
    pub(crate) fn of(resolved: &Resolved) -> Self {
        let names = &resolved.names;
        let (api_endpoint, image_server_endpoint) = endpoints(
            &names.ironic,
            &resolved.namespace,
            resolved.settings.high_availability,
            resolved.tls.mode.is_some(),
        );
        let workload = if resolved.settings.high_availability { "DaemonSet" } else { "Deployment" };
        Self {
            api_credentials_secret_name: resolved
                .credentials
                .generated
                .then(|| resolved.credentials.secret_name.clone()),
            tls: resolved.tls.status(names),
            api_endpoint,
            image_server_endpoint,
            ca_ref: resolved.tls.material.as_ref().and_then(|m| m.ca_pem.as_ref()).map(|_| ResourceReferenceWithKey {
                key: Some(tls::CA_CERT_KEY.to_string()),
                kind: Some(ReferenceKind::ConfigMap),
                name: Some(names.ca_bundle()),
            }),
            workload: WorkloadStatus { kind: Some(workload.to_string()), name: Some(names.workload()) },
            certificate: resolved.tls.csr.as_ref().map(|c| c.state.condition(&c.signer)),
        }
    }
}

/// What one reconcile learned, step by step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    /// validate: the requested version and its images.
    pub version: Option<ResolvedVersion>,
    /// The database.
    pub database: Option<DatabaseFacts>,
    /// resolve: credentials, TLS, endpoints, the workload.
    pub published: Option<Published>,
    /// apply: when cert-manager renews the Certificate.
    pub certificate_renewal: Option<Time>,
    /// sequence: `status.upgrade`.
    pub upgrade: Option<UpgradeStatus>,
    /// apply: the ServiceMonitor, for ServiceMonitorReady.
    pub service_monitor: Option<Monitoring>,
}

/// The status after a reconcile that learned `facts` and ended in `progress`, on top of `old`;
/// the conditions of `generation` at `now`, and installedVersion once done.
pub(crate) fn compute(
    old: &IronicStatus,
    facts: &Facts,
    progress: &Progress,
    generation: Option<i64>,
    now: Time,
) -> IronicStatus {
    let mut next = old.clone();
    if let Some(version) = &facts.version {
        next.requested_version = Some(version.version.to_string());
        next.images = Some(version.status_images());
    }
    let mut conditions = next.conditions.take().unwrap_or_default();
    if let Some(database) = &facts.database {
        next.database = database.status.clone();
        // status.images.mariadb: the image of the database the operator runs (none for an
        // external database or SQLite), beside Ironic's own images.
        let mariadb =
            database.status.as_ref().filter(|d| d.mode == Some(DatabaseMode::Managed)).and_then(|d| d.image.clone());
        match next.images.as_mut() {
            Some(images) => images.mariadb = mariadb,
            None if mariadb.is_some() => next.images = Some(ResolvedImages { mariadb, ..Default::default() }),
            None => {}
        }
        match &database.condition {
            Some(ready) => {
                condition::set_condition(&mut conditions, ready.clone());
            }
            None => conditions.retain(|c| c.type_ != DATABASE_READY),
        }
    }
    if let Some(published) = &facts.published {
        next.api_credentials_secret_name = published.api_credentials_secret_name.clone();
        next.tls = published.tls.clone();
        next.api_endpoint = Some(published.api_endpoint.clone());
        next.image_server_endpoint = published.image_server_endpoint.clone();
        next.ca_ref = published.ca_ref.clone();
        next.workload = Some(published.workload.clone());
        if let (Some(tls), Some(renewal)) = (next.tls.as_mut(), &facts.certificate_renewal) {
            tls.renewal_time = Some(renewal.clone());
        }
        match &published.certificate {
            Some((ready, reason, message)) => {
                let made = Conditions::new(generation, now.clone()).make(CERTIFICATE_READY, *ready, reason, message);
                condition::set_condition(&mut conditions, made);
            }
            None => conditions.retain(|c| c.type_ != CERTIFICATE_READY),
        }
    }
    if let Some(upgrade) = &facts.upgrade {
        next.upgrade = Some(upgrade.clone());
    }
    if let Some(monitoring) = &facts.service_monitor {
        match &monitoring.condition {
            Some((ready, reason, message)) => {
                let made =
                    Conditions::new(generation, now.clone()).make(SERVICE_MONITOR_READY, *ready, reason, message);
                condition::set_condition(&mut conditions, made);
            }
            None => conditions.retain(|c| c.type_ != SERVICE_MONITOR_READY),
        }
    }
    let version = next.requested_version.clone().unwrap_or_default();
    let endpoint = next.api_endpoint.as_deref().map(|e| format!(" at {e}")).unwrap_or_default();
    let available = format!("Ironic {version} is available{endpoint}");
    crate::kit::condition::set_all(
        &mut conditions,
        Conditions::new(generation, now).summary(progress, READY_REASONS, &available),
    );
    next.conditions = Some(conditions);
    next.observed_generation = generation;
    if progress.is_done() {
        next.installed_version = next.requested_version.clone();
    }
    next
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
pub(crate) fn transitions(old: &IronicStatus, new: &IronicStatus) -> Notices {
    let mut out = Notices::default();
    if let (Some(from), Some(to)) = (&old.requested_version, &new.requested_version)
        && from != to
    {
        out.normal("VersionChange", format!("requested version changed from {from} to {to}"));
    }
    let (old_progress, new_progress) = (find(old, PROGRESSING), find(new, PROGRESSING));
    if let Some(c) = new_progress.filter(|c| c.status == TRUE && changed(old_progress, Some(c))) {
        out.normal(&c.reason, &c.message);
    }
    let (old_degraded, new_degraded) = (find(old, DEGRADED), find(new, DEGRADED));
    if let Some(c) = new_degraded.filter(|c| changed(old_degraded, Some(c))) {
        if c.status == TRUE {
            out.warning(&c.reason, &c.message);
        } else if old_degraded.is_some_and(|o| o.status == TRUE) {
            out.normal("Recovered", "the problem was resolved");
        }
    }
    let (old_certificate, new_certificate) = (find(old, CERTIFICATE_READY), find(new, CERTIFICATE_READY));
    if let Some(c) = new_certificate.filter(|c| c.status != TRUE && changed(old_certificate, Some(c))) {
        // The request's own progress: an approval to give, a denial or refusal to look at.
        if c.reason == csr_reasons::APPROVAL_PENDING || c.reason == csr_reasons::SIGNING {
            out.normal(&c.reason, &c.message);
        } else {
            out.warning(&c.reason, &c.message);
        }
    }
    let (old_monitor, new_monitor) = (find(old, SERVICE_MONITOR_READY), find(new, SERVICE_MONITOR_READY));
    if let Some(c) = new_monitor.filter(|c| c.status != TRUE && changed(old_monitor, Some(c))) {
        out.warning(&c.reason, &c.message);
    }
    let (old_ready, new_ready) = (find(old, READY), find(new, READY));
    if let Some(c) = new_ready.filter(|c| changed(old_ready, Some(c))) {
        let was_ready = old_ready.is_some_and(|o| o.status == TRUE);
        if c.status == TRUE && !was_ready {
            out.normal("IronicReady", &c.message);
        } else if c.status != TRUE && was_ready {
            out.warning("IronicNotReady", &c.message);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Notice;
    use crate::kit::events::Severity;
    use crds::condition::FALSE;
    use crds::ironic::TlsMode;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("time"))
    }

    fn reason_of(status: &IronicStatus, type_: &str) -> (String, String) {
        let c = find(status, type_).expect("condition");
        (c.status.clone(), c.reason.clone())
    }

    /// These tests' shape: `next` already holds what the reconcile learned.
    fn finish(next: IronicStatus, progress: &Progress, generation: Option<i64>, now: Time) -> IronicStatus {
        compute(&next, &Facts::default(), progress, generation, now)
    }

    fn reasons_of(notices: Notices) -> Vec<String> {
        notices.into_iter().map(|n| n.reason).collect()
    }

    #[test]
    fn available_sets_ready_and_the_installed_version() {
        let next = IronicStatus { requested_version: Some("38.0".into()), ..Default::default() };
        let status = finish(next, &Progress::Done, Some(3), at(10));
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
        let failed = Progress::failed(reasons::UPGRADE_JOB_FAILED, "pre-upgrade Job failed: exit 1");
        let status = finish(next, &failed, Some(2), at(10));
        assert_eq!(reason_of(&status, READY), (FALSE.into(), "DeploymentFailed".into()));
        assert_eq!(reason_of(&status, DEGRADED), (TRUE.into(), "UpgradeJobFailed".into()));
        assert_eq!(status.installed_version.as_deref(), Some("37.0"));
        let notices = transitions(&old, &status);
        assert!(
            notices.iter().any(|n| *n == Notice::warning("UpgradeJobFailed", "pre-upgrade Job failed: exit 1")),
            "{notices:?}"
        );
    }

    #[test]
    fn repeating_a_verdict_changes_nothing_and_publishes_nothing() {
        let next = IronicStatus { requested_version: Some("38.0".into()), ..Default::default() };
        let first = finish(next.clone(), &Progress::Done, Some(1), at(10));
        let second = finish(first.clone(), &Progress::Done, Some(1), at(20));
        assert_eq!(first, second, "no churn: transition times are kept");
        assert!(transitions(&first, &second).is_empty());
    }

    #[test]
    fn transitions_name_what_happened() {
        let progressing = finish(
            IronicStatus { requested_version: Some("37.0".into()), ..Default::default() },
            &Progress::waiting(reasons::DEPLOYING, "creating the Deployment"),
            Some(1),
            at(10),
        );
        assert_eq!(reasons_of(transitions(&IronicStatus::default(), &progressing)), ["Deploying"]);
        let ready = finish(progressing.clone(), &Progress::Done, Some(1), at(20));
        assert_eq!(reasons_of(transitions(&progressing, &ready)), ["IronicReady"]);
        let upgrading = finish(
            IronicStatus { requested_version: Some("38.0".into()), ..ready.clone() },
            &Progress::waiting(reasons::UPGRADING_DATABASE_SCHEMA, "pre-upgrade Job runs"),
            Some(2),
            at(30),
        );
        assert_eq!(
            reasons_of(transitions(&ready, &upgrading)),
            ["VersionChange", "UpgradingDatabaseSchema", "IronicNotReady"]
        );
        let refused = finish(ready.clone(), &Progress::failed(reasons::DOWNGRADE_REJECTED, "no"), Some(3), at(40));
        let recovered = finish(refused.clone(), &Progress::Done, Some(4), at(50));
        assert_eq!(reasons_of(transitions(&refused, &recovered)), ["Recovered", "IronicReady"]);
    }

    fn published() -> Published {
        Published {
            api_credentials_secret_name: Some("ironic-api-credentials".into()),
            tls: Some(TlsStatus { mode: Some(TlsMode::CertManager), ..Default::default() }),
            api_endpoint: "https://ironic.metal3.svc:443".into(),
            image_server_endpoint: None,
            ca_ref: None,
            workload: WorkloadStatus { kind: Some("DaemonSet".into()), name: Some("ironic-service".into()) },
            certificate: None,
        }
    }

    #[test]
    fn a_certificate_request_has_its_own_condition_and_a_denial_warns() {
        let pending = (false, csr_reasons::APPROVAL_PENDING, "run `kubectl certificate approve x`".to_string());
        let facts = |certificate| Facts {
            published: Some(Published { certificate: Some(certificate), ..published() }),
            ..Default::default()
        };
        let old = IronicStatus::default();
        let waiting = compute(&old, &facts(pending), &Progress::Done, Some(1), at(10));
        let c = find(&waiting, CERTIFICATE_READY).expect("CertificateReady");
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", csr_reasons::APPROVAL_PENDING));
        assert!(c.message.contains("kubectl certificate approve x"));
        let notices: Vec<Notice> = transitions(&old, &waiting).into_iter().collect();
        assert!(
            notices.iter().any(|n| n.reason == csr_reasons::APPROVAL_PENDING && n.severity == Severity::Normal),
            "{notices:?}"
        );
        let denied = (false, csr_reasons::DENIED, "denied: no".to_string());
        let refused = compute(&waiting, &facts(denied), &Progress::Done, Some(1), at(20));
        let notices: Vec<Notice> = transitions(&waiting, &refused).into_iter().collect();
        assert!(
            notices.iter().any(|n| n.reason == csr_reasons::DENIED && n.severity == Severity::Warning),
            "{notices:?}"
        );
        let other_mode = Facts { published: Some(published()), ..Default::default() };
        assert!(find(&compute(&refused, &other_mode, &Progress::Done, Some(1), at(30)), CERTIFICATE_READY).is_none());
    }

    #[test]
    fn a_step_that_did_not_run_leaves_its_part_of_the_status_as_it_was() {
        let old = IronicStatus {
            requested_version: Some("37.0".into()),
            api_endpoint: Some("http://ironic.metal3.svc:80".into()),
            database: Some(DatabaseStatus { mode: Some(DatabaseMode::External), ..Default::default() }),
            ..Default::default()
        };
        let invalid = Progress::failed(reasons::INVALID_SPEC, "spec.networking.ipAddress: not an IP");
        let status = compute(&old, &Facts::default(), &invalid, Some(2), at(10));
        assert_eq!(status.requested_version, old.requested_version);
        assert_eq!(status.api_endpoint, old.api_endpoint);
        assert_eq!(status.database, old.database);
        assert_eq!(reason_of(&status, DEGRADED), (TRUE.into(), reasons::INVALID_SPEC.into()));
    }

    #[test]
    fn what_resolve_published_replaces_the_old_fields_and_cert_managers_renewal_time_is_kept() {
        let old = IronicStatus { ca_ref: Some(ResourceReferenceWithKey::default()), ..Default::default() };
        let facts = Facts { published: Some(published()), certificate_renewal: Some(at(99)), ..Default::default() };
        let status = compute(&old, &facts, &Progress::Done, Some(1), at(10));
        assert_eq!(status.ca_ref, None, "no CA known any more");
        assert_eq!(status.workload.and_then(|w| w.kind).as_deref(), Some("DaemonSet"));
        assert_eq!(status.api_credentials_secret_name.as_deref(), Some("ironic-api-credentials"));
        assert_eq!(status.tls.and_then(|t| t.renewal_time), Some(at(99)));
    }

    #[test]
    fn the_database_brings_its_status_and_database_ready_and_without_a_database_database_ready_goes() {
        let ready = Conditions::new(Some(1), at(5)).make(DATABASE_READY, true, "DatabaseAvailable", "MariaDB");
        let database = DatabaseFacts {
            status: Some(DatabaseStatus {
                mode: Some(DatabaseMode::Managed),
                image: Some("mariadb:10.11".into()),
                ..Default::default()
            }),
            condition: Some(ready),
        };
        let facts = Facts { database: Some(database), ..Default::default() };
        let with = compute(&IronicStatus::default(), &facts, &Progress::Done, Some(1), at(10));
        assert_eq!(with.database.as_ref().and_then(|d| d.mode), Some(DatabaseMode::Managed));
        assert_eq!(with.images.as_ref().and_then(|i| i.mariadb.as_deref()), Some("mariadb:10.11"), "images.mariadb");
        assert_eq!(reason_of(&with, DATABASE_READY), (TRUE.into(), "DatabaseAvailable".into()));
        let sqlite = Facts { database: Some(DatabaseFacts::default()), ..Default::default() };
        let without = compute(&with, &sqlite, &Progress::Done, Some(2), at(20));
        assert!(find(&without, DATABASE_READY).is_none() && without.database.is_none());
        assert_eq!(without.images.and_then(|i| i.mariadb), None, "no managed database, no MariaDB image");
    }

    #[test]
    fn service_monitor_ready_follows_the_apply_step_warns_once_and_goes_when_none_is_wanted() {
        use crate::ironic::monitor::reasons as monitor_reasons;
        let facts = |condition| Facts {
            service_monitor: Some(Monitoring { condition, requeue_after: None }),
            ..Default::default()
        };
        let missing = facts(Some((false, monitor_reasons::CRD_MISSING, "not installed".to_string())));
        let old = IronicStatus::default();
        let first = compute(&old, &missing, &Progress::Done, Some(1), at(10));
        assert_eq!(reason_of(&first, SERVICE_MONITOR_READY), (FALSE.into(), monitor_reasons::CRD_MISSING.into()));
        assert_eq!(reason_of(&first, READY), (TRUE.into(), "DeploymentAvailable".into()), "Ready all the same");
        let notices: Vec<Notice> = transitions(&old, &first).into_iter().collect();
        assert!(notices.iter().any(|n| n.reason == monitor_reasons::CRD_MISSING && n.severity == Severity::Warning));
        let again = compute(&first, &missing, &Progress::Done, Some(1), at(20));
        assert!(!reasons_of(transitions(&first, &again)).contains(&monitor_reasons::CRD_MISSING.to_string()));
        let created = facts(Some((true, monitor_reasons::CREATED, "ServiceMonitor ironic-metrics".to_string())));
        let made = compute(&again, &created, &Progress::Done, Some(1), at(30));
        assert_eq!(reason_of(&made, SERVICE_MONITOR_READY), (TRUE.into(), monitor_reasons::CREATED.into()));
        let untouched = compute(&made, &Facts::default(), &Progress::Done, Some(1), at(40));
        assert!(find(&untouched, SERVICE_MONITOR_READY).is_some(), "a step that did not run leaves it");
        let gone = compute(&made, &facts(None), &Progress::Done, Some(2), at(50));
        assert!(find(&gone, SERVICE_MONITOR_READY).is_none());
    }

    #[test]
    fn waiting_keeps_the_installed_version_and_says_why_in_ready_and_progressing() {
        let old = IronicStatus { installed_version: Some("37.0".into()), ..Default::default() };
        let waiting = Progress::waiting(reasons::WAITING_FOR_DATABASE, "waiting for the database (DatabaseStarting)");
        let status = compute(&old, &Facts::default(), &waiting, Some(1), at(10));
        assert_eq!(status.installed_version.as_deref(), Some("37.0"));
        assert_eq!(reason_of(&status, READY), (FALSE.into(), "DeploymentInProgress".into()));
        assert_eq!(reason_of(&status, PROGRESSING), (TRUE.into(), reasons::WAITING_FOR_DATABASE.into()));
    }
}
