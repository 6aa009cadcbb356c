//! The upgrade-safe MariaDB version change, as a pure state machine.
//!
//! The steps, in order (each persisted in `status.database.upgrade` before its work starts, so
//! an operator that crashes anywhere resumes where it stopped):
//! 1. `Backup` (when backups are on): a `mariadb-dump` Job, with the old image;
//! 2. `SlowShutdownEnabled`: `innodb_fast_shutdown` must read `0` (the server starts with it);
//!    the server's version is read and recorded as `fromVersion`;
//! 3. `RollingOut`: only now does the StatefulSet get the new image (the flag is read once
//!    more right before, and the new server starts with the upgrade account); the old server
//!    stops slowly, the new one starts;
//! 4. `RunningMariadbUpgrade`: the `mariadb-upgrade` Job, with the new image, as the upgrade
//!    account, which is dropped once the Job succeeded;
//! 5. `VerifyingVersion`: the new server's version, read with sqlx, must be MariaDB, no older
//!    than before and in the requested series;
//! 6. `Completed`: Ironic's schema Job may run.
//!
//! Any failed step stops the sequence at `Failed`, naming the step and the reason. Nothing is
//! deleted and no data is touched; the user fixes the cause and sets the retry annotation,
//! which resumes at the failed step. [`plan`] says what to do next, the driver does it and
//! reports, and [`advance`] turns the report into the next persisted state.

use super::names::Names;
use crds::ironic::status::{DatabaseUpgradeStatus as Upgrade, DatabaseUpgradeStep as Step};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Annotation on the Ironic that resumes a failed version change at the failed step. Any new
/// value counts as one retry (e.g. a timestamp).
pub const RETRY_ANNOTATION: &str = "ironic.ferrometal.io/retry-database-upgrade";

/// What the machine knows.
#[derive(Clone, Debug)]
pub(crate) struct Facts<'a> {
    pub names: &'a Names,
    /// Unix seconds.
    pub now: i64,
    /// The image of the existing StatefulSet; `None` before it exists.
    pub live_image: Option<&'a str>,
    /// The image the spec asks for.
    pub desired_image: &'a str,
    /// The version the spec asks for, when it names one.
    pub desired_version: Option<&'a str>,
    /// Take a logical backup before the change.
    pub backup: bool,
    /// The retry annotation's value.
    pub retry_token: Option<&'a str>,
    /// How long a step may meet errors that may pass before it fails, in seconds.
    pub step_timeout: i64,
}

/// Work the driver does for a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Create (once) and watch the backup Job, which runs `image` (the old one).
    Backup { job: String, image: String },
    /// Require `innodb_fast_shutdown = 0` (read, never set), read the server's version.
    EnableSlowShutdown,
    /// Read the flag once more, give the init file the upgrade account and the StatefulSet
    /// `image`, then watch the rollout.
    Roll { image: String },
    /// Create (once) and watch the `mariadb-upgrade` Job, which runs `image` (the new one).
    MariadbUpgrade { job: String, image: String },
    /// Read the new server's version and judge it.
    VerifyVersion,
}

/// The next thing to do.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Plan {
    /// No version change: the StatefulSet runs what the spec asks for.
    Idle,
    /// Persist this state (a new change, a retry, a change given up before anything moved),
    /// tell the user, and plan again.
    Record { status: Option<Box<Upgrade>>, note: Note },
    /// Do the step's work and report back to [`advance`].
    Perform { step: Step, work: Work },
    /// A step failed; the sequence waits for the user.
    Halted { failed_step: Option<Step>, message: String },
}

/// What the driver found doing the work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// The step is done; `server_version` when the step read one.
    Done { server_version: Option<String> },
    /// The work goes on (a Job runs, the pod starts).
    Waiting(String),
    /// An error that may pass: the step is retried until the step timeout.
    Retrying(String),
    /// The step failed.
    Failed(String),
}

/// An Event to publish about a transition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Note {
    pub reason: &'static str,
    pub message: String,
    pub warning: bool,
}

impl Note {
    fn normal(reason: &'static str, message: String) -> Self {
        Self { reason, message, warning: false }
    }
}

/// The state after a report.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Advance {
    pub status: Upgrade,
    /// Why the sequence is not done, for a waiting gate; `None` when it is Completed or Failed.
    pub waiting: Option<String>,
    pub note: Option<Note>,
}

fn time(unix: i64) -> Option<Time> {
    k8s_openapi::jiff::Timestamp::from_second(unix).ok().map(Time)
}

fn unix(time: Option<&Time>) -> Option<i64> {
    time.map(|t| t.0.as_second())
}

/// `from → to`, for messages.
pub(crate) fn describe(u: &Upgrade) -> String {
    format!(
        "MariaDB version change from {} to {}",
        u.from_image.as_deref().unwrap_or("?"),
        u.to_image.as_deref().unwrap_or("?")
    )
}

/// What a step does, for messages.
pub(crate) fn step_name(step: Step) -> &'static str {
    match step {
        Step::Backup => "Backup (mariadb-dump Job)",
        Step::SlowShutdownEnabled => "SlowShutdownEnabled (innodb_fast_shutdown = 0)",
        Step::RollingOut => "RollingOut (StatefulSet to the new image)",
        Step::RunningMariadbUpgrade => "RunningMariadbUpgrade (mariadb-upgrade Job)",
        Step::VerifyingVersion => "VerifyingVersion (new server version)",
        Step::Completed => "Completed",
        Step::Failed => "Failed",
    }
}

fn begin(f: &Facts<'_>, live: &str) -> Upgrade {
    let first = if f.backup { Step::Backup } else { Step::SlowShutdownEnabled };
    Upgrade {
        attempt: Some(1),
        backup_job_name: f.backup.then(|| f.names.backup_job(live, f.desired_image, 1)),
        from_image: Some(live.to_string()),
        to_image: Some(f.desired_image.to_string()),
        to_version: f.desired_version.map(str::to_string),
        step: Some(first),
        started_at: time(f.now),
        step_started_at: time(f.now),
        // An annotation left from an earlier change is no retry of this one.
        retry_token: f.retry_token.map(str::to_string),
        ..Default::default()
    }
}

fn retry(u: &Upgrade, f: &Facts<'_>, token: &str) -> Upgrade {
    let attempt = u.attempt.unwrap_or(1).saturating_add(1);
    let step = u.failed_step.unwrap_or(Step::SlowShutdownEnabled);
    let (from, to) = (u.from_image.as_deref().unwrap_or_default(), u.to_image.as_deref().unwrap_or_default());
    let mut next = Upgrade {
        attempt: Some(attempt),
        step: Some(step),
        failed_step: None,
        message: None,
        failing_since: None,
        step_started_at: time(f.now),
        retry_token: Some(token.to_string()),
        ..u.clone()
    };
    // A failed Job stays as the record of the failure; the retry runs a new one.
    match step {
        Step::Backup => next.backup_job_name = Some(f.names.backup_job(from, to, attempt)),
        Step::RunningMariadbUpgrade => next.upgrade_job_name = Some(f.names.upgrade_job(from, to, attempt)),
        _ => {}
    }
    next
}

fn retarget(u: &Upgrade, f: &Facts<'_>) -> Upgrade {
    Upgrade {
        attempt: Some(u.attempt.unwrap_or(1).saturating_add(1)),
        to_image: Some(f.desired_image.to_string()),
        to_version: f.desired_version.map(str::to_string),
        step: Some(Step::RollingOut),
        failed_step: None,
        message: None,
        failing_since: None,
        step_started_at: time(f.now),
        upgrade_job_name: None,
        ..u.clone()
    }
}

/// True while the sequence runs or waits at a failure.
pub(crate) fn is_active(u: Option<&Upgrade>) -> bool {
    u.and_then(|u| u.step).is_some_and(|s| s != Step::Completed)
}

/// What to do next.
pub(crate) fn plan(current: Option<&Upgrade>, f: &Facts<'_>) -> Plan {
    // Nothing runs yet: the StatefulSet is created with the desired image, no change to make.
    let Some(live) = f.live_image else {
        return Plan::Idle;
    };
    let Some(u) = current.filter(|u| is_active(Some(u))) else {
        if live == f.desired_image {
            return Plan::Idle;
        }
        let status = begin(f, live);
        let message = format!("{} started", describe(&status));
        return record(status, "DatabaseUpgradeStarted", message);
    };
    if let Some(replanned) = spec_moved_on(u, f, live) {
        return replanned;
    }
    next(u, f)
}

/// A transition to record, with its Event.
fn record(status: Upgrade, reason: &'static str, message: String) -> Plan {
    Plan::Record { status: Some(Box::new(status)), note: Note::normal(reason, message) }
}

/// When the spec asks for another image than the change under way aims at: the change
/// dropped, restarted or retargeted; `None` when it completes first.
fn spec_moved_on(u: &Upgrade, f: &Facts<'_>, live: &str) -> Option<Plan> {
    let to = u.to_image.as_deref().unwrap_or_default();
    if f.desired_image == to {
        return None;
    }
    // The spec moved on before the StatefulSet did: nothing has changed yet, so start over
    // toward the new target, or drop the change when the spec went back.
    if live != to {
        if f.desired_image == live {
            let message = format!("{} abandoned: the spec asks for {live} again", describe(u));
            return Some(Plan::Record { status: None, note: Note::normal("DatabaseUpgradeAbandoned", message) });
        }
        let status = begin(f, live);
        let message = format!("{} started; it replaces the {} that had not rolled yet", describe(&status), describe(u));
        return Some(record(status, "DatabaseUpgradeStarted", message));
    }
    match (u.step, u.failed_step) {
        // The new server never came up: the old one had stopped slowly and cleanly, so the
        // roll can aim at the image the spec asks for now.
        (Some(Step::Failed), Some(Step::RollingOut)) => {
            let message = format!("{} now aims at {}", describe(u), f.desired_image);
            Some(record(retarget(u, f), "DatabaseUpgradeRetargeted", message))
        }
        // The new server runs but a later step failed: a new change from it starts, with
        // its own slow shutdown, roll, mariadb-upgrade and check.
        (Some(Step::Failed), _) => {
            let status = begin(f, live);
            let message = format!("{} started; it replaces the failed {}", describe(&status), describe(u));
            Some(record(status, "DatabaseUpgradeStarted", message))
        }
        // Under way: this change completes first, then the next one starts.
        _ => None,
    }
}

/// The work of the change's current step, or its halt until a person asks for a retry.
fn next(u: &Upgrade, f: &Facts<'_>) -> Plan {
    let (from, to) = (u.from_image.as_deref().unwrap_or_default(), u.to_image.as_deref().unwrap_or_default());
    let attempt = u.attempt.unwrap_or(1);
    let perform = |step: Step, work: Work| Plan::Perform { step, work };
    match u.step {
        Some(Step::Failed) => match f.retry_token.filter(|token| u.retry_token.as_deref() != Some(*token)) {
            Some(token) => {
                let status = retry(u, f, token);
                let step = status.step.map(step_name).unwrap_or_default();
                let next = attempt.saturating_add(1);
                let message = format!("{}: attempt {next} resumes at step {step}", describe(u));
                record(status, "DatabaseUpgradeRetried", message)
            }
            None => Plan::Halted { failed_step: u.failed_step, message: halted_message(u) },
        },
        Some(Step::Backup) => {
            let job = u.backup_job_name.clone().unwrap_or_else(|| f.names.backup_job(from, to, attempt));
            perform(Step::Backup, Work::Backup { job, image: from.to_string() })
        }
        Some(Step::SlowShutdownEnabled) => perform(Step::SlowShutdownEnabled, Work::EnableSlowShutdown),
        Some(Step::RollingOut) => perform(Step::RollingOut, Work::Roll { image: to.to_string() }),
        Some(Step::RunningMariadbUpgrade) => {
            let job = u.upgrade_job_name.clone().unwrap_or_else(|| f.names.upgrade_job(from, to, attempt));
            perform(Step::RunningMariadbUpgrade, Work::MariadbUpgrade { job, image: to.to_string() })
        }
        Some(Step::VerifyingVersion) => perform(Step::VerifyingVersion, Work::VerifyVersion),
        Some(Step::Completed) | None => Plan::Idle,
    }
}

fn halted_message(u: &Upgrade) -> String {
    let step = u.failed_step.map(step_name).unwrap_or("unknown");
    let reason = u.message.as_deref().unwrap_or("no reason recorded");
    format!(
        "{} failed at step {step}: {reason}. Nothing was deleted and no data was touched. Fix the cause and set \
         the annotation {RETRY_ANNOTATION} on the Ironic to a new value to resume at that step, or change \
         spec.database.managed to another image or version",
        describe(u)
    )
}

/// The step after `step`.
fn next_step(step: Step) -> Step {
    match step {
        Step::Backup => Step::SlowShutdownEnabled,
        Step::SlowShutdownEnabled => Step::RollingOut,
        Step::RollingOut => Step::RunningMariadbUpgrade,
        Step::RunningMariadbUpgrade => Step::VerifyingVersion,
        Step::VerifyingVersion | Step::Completed => Step::Completed,
        Step::Failed => Step::Failed,
    }
}

fn fail(u: &Upgrade, step: Step, message: String) -> Advance {
    let status = Upgrade {
        step: Some(Step::Failed),
        failed_step: Some(step),
        message: Some(message.clone()),
        failing_since: None,
        ..u.clone()
    };
    let note = Note {
        reason: "DatabaseUpgradeFailed",
        message: format!("{} failed at step {}: {message}", describe(u), step_name(step)),
        warning: true,
    };
    Advance { status, waiting: None, note: Some(note) }
}

/// The state after the driver reported on `step`.
pub(crate) fn advance(u: &Upgrade, step: Step, report: Report, f: &Facts<'_>) -> Advance {
    match report {
        Report::Done { server_version } => {
            let next = next_step(step);
            let mut status = Upgrade {
                step: Some(next),
                failing_since: None,
                message: None,
                step_started_at: time(f.now),
                ..u.clone()
            };
            if step == Step::SlowShutdownEnabled {
                status.from_version = server_version.clone();
            }
            if next == Step::RunningMariadbUpgrade && status.upgrade_job_name.is_none() {
                let (from, to) =
                    (u.from_image.as_deref().unwrap_or_default(), u.to_image.as_deref().unwrap_or_default());
                status.upgrade_job_name = Some(f.names.upgrade_job(from, to, u.attempt.unwrap_or(1)));
            }
            let note = if next == Step::Completed {
                let version = server_version.map(|v| format!("; the server runs {v}")).unwrap_or_default();
                Note::normal("DatabaseUpgradeCompleted", format!("{} completed{version}", describe(u)))
            } else {
                Note::normal(
                    "DatabaseUpgradeStep",
                    format!("{}: step {} done, next {}", describe(u), step_name(step), step_name(next)),
                )
            };
            let waiting = (next != Step::Completed).then(|| format!("{}: step {}", describe(u), step_name(next)));
            Advance { status, waiting, note: Some(note) }
        }
        Report::Waiting(message) => Advance {
            status: Upgrade { failing_since: None, ..u.clone() },
            waiting: Some(format!("{}: step {}: {message}", describe(u), step_name(step))),
            note: None,
        },
        Report::Retrying(message) => {
            let since = unix(u.failing_since.as_ref()).unwrap_or(f.now);
            let failing_for = f.now.saturating_sub(since);
            if failing_for >= f.step_timeout {
                return fail(u, step, format!("{message} (for {failing_for} s, longer than the step timeout)"));
            }
            Advance {
                status: Upgrade { failing_since: time(since), ..u.clone() },
                waiting: Some(format!("{}: step {}: retrying: {message}", describe(u), step_name(step))),
                note: None,
            }
        }
        Report::Failed(message) => fail(u, step, message),
    }
}

/// The image the StatefulSet is applied with outside the roll itself: whatever runs, until
/// the sequence has rolled it to the new image; the desired image for a new StatefulSet.
pub(crate) fn image_to_apply(current: Option<&Upgrade>, live_image: Option<&str>, desired_image: &str) -> String {
    let Some(live) = live_image else {
        return desired_image.to_string();
    };
    match current.filter(|u| is_active(Some(u))) {
        Some(u) => {
            let step = match u.step {
                Some(Step::Failed) => u.failed_step,
                step => step,
            };
            let rolled = matches!(step, Some(Step::RunningMariadbUpgrade | Step::VerifyingVersion));
            match (rolled, u.to_image.as_deref()) {
                (true, Some(to)) => to.to_string(),
                _ => live.to_string(),
            }
        }
        // No change under way: what runs (a change begins before anything is applied) or,
        // after a completed change, the same.
        None => live.to_string(),
    }
}

#[cfg(test)]
mod tests;
