//! The version change state machine: every step, a failure at every step, the step timeout,
//! retries, spec changes mid-way, and resuming from any persisted state.

use super::*;

const OLD: &str = "docker.io/library/mariadb:10.11";
const NEW: &str = "docker.io/library/mariadb:11.4";
const NEWER: &str = "docker.io/library/mariadb:11.8";
const T0: i64 = 1_785_571_200;
const TIMEOUT: i64 = 900;

fn names() -> Names {
    Names::new("ironic")
}

fn facts<'a>(names: &'a Names, now: i64, live: Option<&'a str>, desired: &'a str, backup: bool) -> Facts<'a> {
    Facts {
        names,
        now,
        live_image: live,
        desired_image: desired,
        desired_version: Some("11.4"),
        backup,
        retry_token: None,
        step_timeout: TIMEOUT,
    }
}

fn recorded(plan: Plan) -> (Option<Upgrade>, Note) {
    match plan {
        Plan::Record { status, note } => (status.map(|s| *s), note),
        other => panic!("expected Record, got {other:?}"),
    }
}

fn performed(plan: Plan) -> (Step, Work) {
    match plan {
        Plan::Perform { step, work } => (step, work),
        other => panic!("expected Perform, got {other:?}"),
    }
}

fn done(version: Option<&str>) -> Report {
    Report::Done { server_version: version.map(str::to_string) }
}

/// A sequence persisted at `step`, between OLD and NEW.
fn at(step: Step) -> Upgrade {
    let n = names();
    Upgrade {
        attempt: Some(1),
        from_image: Some(OLD.into()),
        to_image: Some(NEW.into()),
        to_version: Some("11.4".into()),
        from_version: (!matches!(step, Step::Backup | Step::SlowShutdownEnabled)).then(|| "10.11.9-MariaDB".into()),
        backup_job_name: Some(n.backup_job(OLD, NEW, 1)),
        upgrade_job_name: matches!(step, Step::RunningMariadbUpgrade | Step::VerifyingVersion)
            .then(|| n.upgrade_job(OLD, NEW, 1)),
        step: Some(step),
        started_at: time(T0),
        step_started_at: time(T0),
        ..Default::default()
    }
}

/// The image the StatefulSet runs while the sequence is persisted at `step`.
fn live_at(step: Step) -> &'static str {
    match step {
        Step::Backup | Step::SlowShutdownEnabled | Step::RollingOut => OLD,
        _ => NEW,
    }
}

#[test]
fn nothing_to_do_without_a_statefulset_or_without_a_change() {
    let n = names();
    assert_eq!(plan(None, &facts(&n, T0, None, NEW, true)), Plan::Idle);
    assert_eq!(plan(None, &facts(&n, T0, Some(NEW), NEW, true)), Plan::Idle);
    let completed = Upgrade { step: Some(Step::Completed), ..at(Step::VerifyingVersion) };
    assert_eq!(plan(Some(&completed), &facts(&n, T0, Some(NEW), NEW, true)), Plan::Idle);
}

#[test]
fn a_change_begins_with_the_backup_when_backups_are_on() {
    let n = names();
    let (status, note) = recorded(plan(None, &facts(&n, T0, Some(OLD), NEW, true)));
    let status = status.expect("a sequence");
    assert_eq!(status.step, Some(Step::Backup));
    assert_eq!(status.from_image.as_deref(), Some(OLD));
    assert_eq!(status.to_image.as_deref(), Some(NEW));
    assert_eq!(status.to_version.as_deref(), Some("11.4"));
    assert_eq!(status.attempt, Some(1));
    assert_eq!(status.backup_job_name, Some(n.backup_job(OLD, NEW, 1)));
    assert_eq!(status.from_version, None, "recorded by the slow-shutdown step");
    assert_eq!(note.reason, "DatabaseUpgradeStarted");
    let (step, work) = performed(plan(Some(&status), &facts(&n, T0, Some(OLD), NEW, true)));
    assert_eq!(step, Step::Backup);
    assert_eq!(work, Work::Backup { job: n.backup_job(OLD, NEW, 1), image: OLD.into() }, "the dump uses the old tools");
}

#[test]
fn without_backups_a_change_begins_with_the_slow_shutdown() {
    let n = names();
    let (status, _) = recorded(plan(None, &facts(&n, T0, Some(OLD), NEW, false)));
    let status = status.expect("a sequence");
    assert_eq!(status.step, Some(Step::SlowShutdownEnabled));
    assert_eq!(status.backup_job_name, None);
    assert_eq!(performed(plan(Some(&status), &facts(&n, T0, Some(OLD), NEW, false))).1, Work::EnableSlowShutdown);
}

/// Walks the whole sequence the way the driver does, checking the order of the work and that
/// nothing rolls before the old version is recorded.
#[test]
fn every_step_in_order_from_backup_to_completed() {
    let n = names();
    let mut live = OLD;
    let mut now = T0;
    let (status, _) = recorded(plan(None, &facts(&n, now, Some(live), NEW, true)));
    let mut status = status.expect("a sequence");
    let mut order = Vec::new();
    loop {
        now += 10;
        let f = facts(&n, now, Some(live), NEW, true);
        let (step, work) = match plan(Some(&status), &f) {
            Plan::Idle => break,
            other => performed(other),
        };
        order.push(step);
        let report = match (&work, step) {
            (Work::Roll { image }, _) if live != image => {
                // The roll itself: only ever after the old version was recorded.
                assert_eq!(status.from_version.as_deref(), Some("10.11.9-MariaDB"));
                live = NEW;
                Report::Waiting("rolling".into())
            }
            (_, Step::SlowShutdownEnabled) => done(Some("10.11.9-MariaDB")),
            (_, Step::VerifyingVersion) => done(Some("11.4.5-MariaDB")),
            _ => done(None),
        };
        let next = advance(&status, step, report, &f);
        status = next.status;
        if step == Step::RunningMariadbUpgrade {
            assert_eq!(work, Work::MariadbUpgrade { job: n.upgrade_job(OLD, NEW, 1), image: NEW.into() });
        }
    }
    assert_eq!(
        order,
        [
            Step::Backup,
            Step::SlowShutdownEnabled,
            Step::RollingOut,
            Step::RollingOut,
            Step::RunningMariadbUpgrade,
            Step::VerifyingVersion
        ]
    );
    assert_eq!(status.step, Some(Step::Completed));
    assert_eq!(status.from_version.as_deref(), Some("10.11.9-MariaDB"));
    assert_eq!(status.upgrade_job_name, Some(n.upgrade_job(OLD, NEW, 1)));
    assert_eq!(status.message, None);
    assert!(!is_active(Some(&status)));
}

#[test]
fn each_completed_step_is_announced_and_the_last_one_completes() {
    let n = names();
    let f = facts(&n, T0 + 5, Some(NEW), NEW, true);
    let next = advance(&at(Step::RunningMariadbUpgrade), Step::RunningMariadbUpgrade, done(None), &f);
    assert_eq!(next.status.step, Some(Step::VerifyingVersion));
    assert_eq!(next.note.map(|n| n.reason), Some("DatabaseUpgradeStep"));
    assert!(next.waiting.is_some_and(|w| w.contains("VerifyingVersion")));
    let last = advance(&at(Step::VerifyingVersion), Step::VerifyingVersion, done(Some("11.4.5-MariaDB")), &f);
    assert_eq!(last.status.step, Some(Step::Completed));
    assert_eq!(last.waiting, None);
    let note = last.note.expect("a note");
    assert_eq!(note.reason, "DatabaseUpgradeCompleted");
    assert!(note.message.contains("11.4.5-MariaDB"));
    assert_eq!(last.status.step_started_at, time(T0 + 5));
}

#[test]
fn a_failure_at_any_step_halts_naming_the_step_and_the_reason() {
    let n = names();
    for step in
        [Step::Backup, Step::SlowShutdownEnabled, Step::RollingOut, Step::RunningMariadbUpgrade, Step::VerifyingVersion]
    {
        let live = live_at(step);
        let f = facts(&n, T0 + 30, Some(live), NEW, true);
        let failed = advance(&at(step), step, Report::Failed(format!("{step:?} broke")), &f);
        assert_eq!(failed.status.step, Some(Step::Failed), "{step:?}");
        assert_eq!(failed.status.failed_step, Some(step));
        assert_eq!(failed.status.message.as_deref(), Some(format!("{step:?} broke").as_str()));
        assert_eq!(failed.waiting, None);
        let note = failed.note.expect("a note");
        assert!(note.warning && note.reason == "DatabaseUpgradeFailed");
        // Everything recorded before the failure stays: nothing is lost or undone.
        assert_eq!(failed.status.from_image.as_deref(), Some(OLD));
        assert_eq!(failed.status.to_image.as_deref(), Some(NEW));
        match plan(Some(&failed.status), &f) {
            Plan::Halted { failed_step, message } => {
                assert_eq!(failed_step, Some(step));
                assert!(message.contains(step_name(step)), "{message}");
                assert!(message.contains(&format!("{step:?} broke")), "{message}");
                assert!(message.contains(RETRY_ANNOTATION), "{message}");
                assert!(message.contains("Nothing was deleted"), "{message}");
            }
            other => panic!("{step:?}: expected Halted, got {other:?}"),
        }
        // A failed sequence never rolls anything: the image to apply stays what runs.
        assert_eq!(image_to_apply(Some(&failed.status), Some(live), NEW), live);
    }
}

#[test]
fn errors_that_may_pass_are_retried_until_the_step_timeout() {
    let n = names();
    let start = at(Step::SlowShutdownEnabled);
    let first = advance(
        &start,
        Step::SlowShutdownEnabled,
        Report::Retrying("unreachable".into()),
        &facts(&n, T0 + 10, Some(OLD), NEW, true),
    );
    assert_eq!(first.status.step, Some(Step::SlowShutdownEnabled));
    assert_eq!(first.status.failing_since, time(T0 + 10));
    assert!(first.waiting.is_some_and(|w| w.contains("retrying: unreachable")));
    let still = advance(
        &first.status,
        Step::SlowShutdownEnabled,
        Report::Retrying("unreachable".into()),
        &facts(&n, T0 + 10 + TIMEOUT - 1, Some(OLD), NEW, true),
    );
    assert_eq!(still.status.step, Some(Step::SlowShutdownEnabled));
    assert_eq!(still.status.failing_since, time(T0 + 10), "the first failure's time is kept");
    let over = advance(
        &still.status,
        Step::SlowShutdownEnabled,
        Report::Retrying("unreachable".into()),
        &facts(&n, T0 + 10 + TIMEOUT, Some(OLD), NEW, true),
    );
    assert_eq!(over.status.step, Some(Step::Failed));
    assert_eq!(over.status.failed_step, Some(Step::SlowShutdownEnabled));
    assert!(over.status.message.is_some_and(|m| m.contains("unreachable") && m.contains("step timeout")));
    // Progress in between forgets earlier trouble.
    let recovered = advance(
        &first.status,
        Step::SlowShutdownEnabled,
        Report::Waiting("working".into()),
        &facts(&n, T0 + 20, Some(OLD), NEW, true),
    );
    assert_eq!(recovered.status.failing_since, None);
}

#[test]
fn the_retry_annotation_resumes_at_the_failed_step_with_a_new_job() {
    let n = names();
    let failed = Upgrade {
        step: Some(Step::Failed),
        failed_step: Some(Step::RunningMariadbUpgrade),
        message: Some("mariadb-upgrade Job failed".into()),
        ..at(Step::RunningMariadbUpgrade)
    };
    let mut f = facts(&n, T0 + 100, Some(NEW), NEW, true);
    assert!(matches!(plan(Some(&failed), &f), Plan::Halted { .. }));
    f.retry_token = Some("1");
    let (status, note) = recorded(plan(Some(&failed), &f));
    let status = status.expect("retried");
    assert_eq!(note.reason, "DatabaseUpgradeRetried");
    assert_eq!(status.step, Some(Step::RunningMariadbUpgrade));
    assert_eq!((status.failed_step, status.message.as_deref()), (None, None));
    assert_eq!(status.attempt, Some(2));
    assert_eq!(status.retry_token.as_deref(), Some("1"));
    assert_eq!(status.upgrade_job_name, Some(n.upgrade_job(OLD, NEW, 2)), "the failed Job stays as the record");
    assert_eq!(status.from_version, failed.from_version, "the recorded old version is kept");
    // The same annotation value does not retry twice.
    let again = Upgrade { step: Some(Step::Failed), failed_step: Some(Step::RunningMariadbUpgrade), ..status };
    assert!(matches!(plan(Some(&again), &f), Plan::Halted { .. }));
}

#[test]
fn an_annotation_left_from_an_earlier_change_is_no_retry() {
    let n = names();
    let mut f = facts(&n, T0, Some(OLD), NEW, false);
    f.retry_token = Some("old");
    let (status, _) = recorded(plan(None, &f));
    let status = status.expect("begun");
    assert_eq!(status.retry_token.as_deref(), Some("old"));
    let failed = advance(&status, Step::SlowShutdownEnabled, Report::Failed("no".into()), &f).status;
    assert!(matches!(plan(Some(&failed), &f), Plan::Halted { .. }));
}

#[test]
fn a_crashed_operator_resumes_every_step_from_status_alone() {
    let n = names();
    let expected = |step: Step| match step {
        Step::Backup => Work::Backup { job: n.backup_job(OLD, NEW, 1), image: OLD.into() },
        Step::SlowShutdownEnabled => Work::EnableSlowShutdown,
        Step::RollingOut => Work::Roll { image: NEW.into() },
        Step::RunningMariadbUpgrade => Work::MariadbUpgrade { job: n.upgrade_job(OLD, NEW, 1), image: NEW.into() },
        _ => Work::VerifyVersion,
    };
    for step in
        [Step::Backup, Step::SlowShutdownEnabled, Step::RollingOut, Step::RunningMariadbUpgrade, Step::VerifyingVersion]
    {
        let status = at(step);
        // A new operator process knows only the persisted status and the live StatefulSet.
        let f = facts(&n, T0 + 3600, Some(live_at(step)), NEW, true);
        assert_eq!(performed(plan(Some(&status), &f)), (step, expected(step)), "{step:?}");
        // Its work may have finished before the crash (a Job that succeeded, a flag set):
        // doing it again reports Done again and the sequence moves on exactly once.
        let once = advance(&status, step, done(Some("10.11.9-MariaDB")), &f);
        let twice = advance(&status, step, done(Some("10.11.9-MariaDB")), &f);
        assert_eq!(once.status, twice.status);
    }
    // A crash right after the roll was applied: the StatefulSet already runs NEW, so the
    // step watches the rollout instead of setting the flag on a server that is gone.
    let f = facts(&n, T0, Some(NEW), NEW, true);
    assert_eq!(performed(plan(Some(&at(Step::RollingOut)), &f)), (Step::RollingOut, Work::Roll { image: NEW.into() }));
    assert_eq!(image_to_apply(Some(&at(Step::RollingOut)), Some(NEW), NEW), NEW);
    assert_eq!(image_to_apply(Some(&at(Step::RollingOut)), Some(OLD), NEW), OLD);
}

#[test]
fn the_statefulset_keeps_the_old_image_until_the_roll() {
    assert_eq!(image_to_apply(None, None, NEW), NEW, "a new StatefulSet starts with the spec's image");
    assert_eq!(image_to_apply(None, Some(OLD), NEW), OLD, "a change begins before anything is applied");
    for step in [Step::Backup, Step::SlowShutdownEnabled] {
        assert_eq!(image_to_apply(Some(&at(step)), Some(OLD), NEW), OLD);
    }
    for step in [Step::RunningMariadbUpgrade, Step::VerifyingVersion] {
        assert_eq!(image_to_apply(Some(&at(step)), Some(NEW), NEW), NEW);
        // Someone edited the StatefulSet back: the operator puts the rolled image back.
        assert_eq!(image_to_apply(Some(&at(step)), Some(OLD), NEW), NEW);
    }
    let completed = Upgrade { step: Some(Step::Completed), ..at(Step::VerifyingVersion) };
    assert_eq!(image_to_apply(Some(&completed), Some(NEW), NEWER), NEW);
}

#[test]
fn a_spec_change_before_the_roll_restarts_or_abandons_the_change() {
    let n = names();
    for step in [Step::Backup, Step::SlowShutdownEnabled, Step::RollingOut] {
        let (status, note) = recorded(plan(Some(&at(step)), &facts(&n, T0, Some(OLD), NEWER, true)));
        let status = status.expect("restarted");
        assert_eq!((status.from_image.as_deref(), status.to_image.as_deref()), (Some(OLD), Some(NEWER)));
        assert_eq!(status.step, Some(Step::Backup));
        assert_eq!(note.reason, "DatabaseUpgradeStarted");
        let (status, note) = recorded(plan(Some(&at(step)), &facts(&n, T0, Some(OLD), OLD, true)));
        assert_eq!(status, None, "back to the running image: nothing to do");
        assert_eq!(note.reason, "DatabaseUpgradeAbandoned");
    }
}

#[test]
fn a_spec_change_after_the_roll_waits_for_the_change_under_way() {
    let n = names();
    let f = facts(&n, T0, Some(NEW), NEWER, true);
    let (step, work) = performed(plan(Some(&at(Step::RunningMariadbUpgrade)), &f));
    assert_eq!(
        (step, work),
        (Step::RunningMariadbUpgrade, Work::MariadbUpgrade { job: n.upgrade_job(OLD, NEW, 1), image: NEW.into() })
    );
    let completed = Upgrade { step: Some(Step::Completed), ..at(Step::VerifyingVersion) };
    let (status, _) = recorded(plan(Some(&completed), &f));
    let status = status.expect("the next change");
    assert_eq!((status.from_image.as_deref(), status.to_image.as_deref()), (Some(NEW), Some(NEWER)));
}

#[test]
fn a_new_image_that_never_came_up_can_be_replaced_in_the_spec() {
    let n = names();
    let failed = Upgrade {
        step: Some(Step::Failed),
        failed_step: Some(Step::RollingOut),
        message: Some("ImagePullBackOff".into()),
        ..at(Step::RollingOut)
    };
    let f = facts(&n, T0 + 50, Some(NEW), NEWER, true);
    let (status, note) = recorded(plan(Some(&failed), &f));
    let status = status.expect("retargeted");
    assert_eq!(note.reason, "DatabaseUpgradeRetargeted");
    assert_eq!((status.step, status.failed_step), (Some(Step::RollingOut), None));
    assert_eq!((status.from_image.as_deref(), status.to_image.as_deref()), (Some(OLD), Some(NEWER)));
    assert_eq!(status.from_version, failed.from_version);
    assert_eq!(status.attempt, Some(2));
    assert_eq!(performed(plan(Some(&status), &f)).1, Work::Roll { image: NEWER.into() });
}

#[test]
fn a_later_failure_is_replaced_by_a_new_change_when_the_spec_moves_on() {
    let n = names();
    let failed = Upgrade {
        step: Some(Step::Failed),
        failed_step: Some(Step::VerifyingVersion),
        message: Some("the server runs 11.8.1, not the requested 11.4".into()),
        ..at(Step::VerifyingVersion)
    };
    let (status, note) = recorded(plan(Some(&failed), &facts(&n, T0, Some(NEW), NEWER, false)));
    let status = status.expect("a new change");
    assert_eq!(note.reason, "DatabaseUpgradeStarted");
    assert_eq!((status.from_image.as_deref(), status.to_image.as_deref()), (Some(NEW), Some(NEWER)));
    assert_eq!(status.step, Some(Step::SlowShutdownEnabled));
}
