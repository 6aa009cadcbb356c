use super::*;
use crate::ironic::fixtures;

fn resolved() -> Resolved {
    fixtures::resolved(&fixtures::ironic(fixtures::WITH_DATABASE), Some("37.0"))
}

fn upgrade() -> UpgradeVersions {
    UpgradeVersions { from: Some("37.0".into()), to: "38.0".into() }
}

fn reason(progress: &Progress) -> &str {
    progress.reason_and_message().map(|(r, _)| r).unwrap_or("Done")
}

#[test]
fn nothing_stops_a_ready_ironic_before_its_jobs() {
    assert_eq!(gate(&resolved(), &Progress::Done), None);
}

#[test]
fn a_certificate_cert_manager_has_not_issued_stops_the_sequence_before_anything_else() {
    let mut resolved = resolved();
    resolved.tls.pending = Some("waiting for cert-manager to issue Secret ironic-tls".into());
    resolved.plan = VersionPlan::DowngradeRefused { installed: "38.0".into(), requested: "37.0".into() };
    let stop = gate(&resolved, &Progress::waiting("DatabaseStarting", "MariaDB is starting")).expect("stopped");
    assert_eq!(reason(&stop), reasons::WAITING_FOR_CERTIFICATE);
}

#[test]
fn a_database_that_is_not_ready_yet_stops_the_sequence_and_names_its_reason() {
    let stop = gate(&resolved(), &Progress::waiting("DatabaseStarting", "MariaDB is starting")).expect("stopped");
    assert_eq!(
        stop,
        Progress::waiting(
            reasons::WAITING_FOR_DATABASE,
            "waiting for the database (DatabaseStarting): MariaDB is starting"
        )
    );
}

#[test]
fn a_downgrade_with_a_database_is_refused_naming_both_versions() {
    let mut resolved = resolved();
    resolved.plan = VersionPlan::DowngradeRefused { installed: "38.0".into(), requested: "37.0".into() };
    let stop = gate(&resolved, &Progress::Done).expect("refused");
    let (reason, message) = stop.reason_and_message().expect("failed");
    assert_eq!(reason, reasons::DOWNGRADE_REJECTED);
    assert!(stop.is_failed() && message.contains("38.0") && message.contains("37.0"), "{message}");
}

#[test]
fn a_job_that_succeeded_lets_the_sequence_go_on() {
    assert_eq!(judge(Phase::Pre, "ironic-pre-37.0-to-38.0", &JobRun::Succeeded, &upgrade(), false), None);
    assert_eq!(judge(Phase::Post, "ironic-post-37.0-to-38.0", &JobRun::Succeeded, &upgrade(), true), None);
}

#[test]
fn a_schema_job_that_succeeded_on_a_database_still_without_a_schema_stops_the_sequence() {
    let (progress, phase, message) =
        judge(Phase::Pre, "ironic-pre-38.0-to-38.0", &JobRun::Succeeded, &upgrade(), true).expect("stopped");
    assert_eq!((reason(&progress), phase), (reasons::UPGRADE_JOB_FAILED, UpgradePhase::Failed));
    assert!(message.is_some_and(|m| m.contains("still has no Ironic schema")));
}

#[test]
fn a_running_pre_job_waits_while_the_old_version_serves_and_a_post_job_while_the_new_one_does() {
    let running = JobRun::Running { created: true };
    let (pre, phase, _) = judge(Phase::Pre, "ironic-pre-37.0-to-38.0", &running, &upgrade(), false).expect("waits");
    assert_eq!((reason(&pre), phase), (reasons::UPGRADING_DATABASE_SCHEMA, UpgradePhase::PreUpgrade));
    assert!(pre.reason_and_message().is_some_and(|(_, m)| m.contains("Ironic 37.0 serves meanwhile")));
    let (post, phase, _) = judge(Phase::Post, "ironic-post-37.0-to-38.0", &running, &upgrade(), false).expect("waits");
    assert_eq!((reason(&post), phase), (reasons::MIGRATING_DATA, UpgradePhase::PostUpgrade));
    assert!(post.reason_and_message().is_some_and(|(_, m)| m.contains("Ironic 38.0 serves meanwhile")));
}

#[test]
fn a_first_installations_pre_job_says_no_ironic_serves_yet_and_its_failure_that_none_ran() {
    let first = UpgradeVersions { from: None, to: "38.0".into() };
    let running = JobRun::Running { created: true };
    let (pre, _, _) = judge(Phase::Pre, "ironic-pre-none-to-38.0", &running, &first, false).expect("waits");
    let message = pre.reason_and_message().map(|(_, m)| m.to_string()).unwrap_or_default();
    assert!(message.ends_with("runs; no Ironic serves yet"), "{message}");
    let failed = JobRun::Failed("container database-upgrade exited with code 1".into());
    let (_, _, message) = judge(Phase::Pre, "ironic-pre-none-to-38.0", &failed, &first, false).expect("stops");
    assert!(message.is_some_and(|m| m.contains("Nothing was deleted and no Ironic ran yet;")));
}

#[test]
fn a_failed_job_stops_the_sequence_quoting_its_cause_and_telling_what_to_do() {
    let failed = JobRun::Failed("container database-upgrade exited with code 3".into());
    let (progress, phase, message) =
        judge(Phase::Pre, "ironic-pre-37.0-to-38.0", &failed, &upgrade(), false).expect("stopped");
    assert!(progress.is_failed() && phase == UpgradePhase::Failed);
    let message = message.expect("a message");
    assert!(message.contains("exited with code 3") && message.contains("delete the Job"), "{message}");
    assert!(message.contains("Ironic 37.0 keeps running"), "{message}");
}
