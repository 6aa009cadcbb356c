//! Drives the version change [`super::sequence`] decides: does each step's work (Jobs, sqlx,
//! the roll), persists every transition in `status.database.upgrade` before going on, and
//! notes an Event for each.

use super::account::{self, UPGRADE_USER, UpgradeAccount};
use super::build::{self, Inputs};
use super::check::{self, Target};
use super::clean_stop;
use super::credentials::Credentials;
use super::names::Names;
use super::observe;
use super::run::Run;
use super::sequence::{self, Facts, Plan, Report, Work};
use super::status::reasons;
use super::version::{parse_major_minor, verify_after_change};
use crate::kit::jobs::{self, JobRun};
use crate::kit::{KubeError, Progress};
use crds::ironic::status::{DatabaseBackupStatus, DatabaseStatus, DatabaseUpgradeStep as Step};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Steps one reconcile may take before it yields: enough for every step that completes at
/// once, few enough that a confused state cannot spin.
const MAX_TRANSITIONS: usize = 8;

/// What the sequence is asked to do.
#[derive(Clone, Debug)]
pub(super) struct Request<'a> {
    pub names: &'a Names,
    pub desired_image: &'a str,
    pub desired_version: Option<&'a str>,
    /// Number of backups kept, when backups are on.
    pub backup_keep: Option<i32>,
    pub retry_token: Option<&'a str>,
    pub step_timeout_seconds: i64,
}

/// The driver: the objects it may apply and the server it talks to as the maintenance account.
pub(super) struct Driver<'a> {
    pub inputs: Inputs<'a>,
    pub maintenance: &'a Target,
    /// The maintenance password's hash, for the init file the new server starts with.
    pub account_hash: &'a str,
    /// The image the StatefulSet runs; `None` when it was just created.
    pub live_image: Option<String>,
}

fn check_report(error: check::Error) -> Report {
    if error.is_transient() { Report::Retrying(error.to_string()) } else { Report::Failed(error.to_string()) }
}

impl Driver<'_> {
    /// The account the `mariadb-upgrade` Job runs as: it shares the maintenance password.
    fn upgrade_account(&self) -> Target {
        let password = self.maintenance.credentials.password.clone();
        Target { credentials: Credentials { username: UPGRADE_USER.to_string(), password }, ..self.maintenance.clone() }
    }

    /// A Job of the sequence, created once. Whether it already ran is the sequence's business
    /// (each attempt has a Job of its own name), so status never stops one from being created.
    async fn job(&self, run: &Run<'_>, job: Job) -> Result<JobRun, KubeError> {
        jobs::run_once(run.ledger, job, false).await
    }

    async fn perform(&mut self, run: &Run<'_>, work: &Work, db: &mut DatabaseStatus) -> Result<Report, KubeError> {
        match work {
            Work::Backup { job, image } => self.backup(run, job, image, db).await,
            Work::EnableSlowShutdown => Ok(match check::prepare_for_version_change(self.maintenance).await {
                Ok(version) => Report::Done { server_version: Some(version.raw) },
                Err(e) => check_report(e),
            }),
            Work::Roll { image } if self.live_image.as_deref() != Some(image.as_str()) => {
                self.roll(run, image, db).await
            }
            Work::Roll { image } => self.rolled(run, image, db).await,
            Work::MariadbUpgrade { job, image } => self.mariadb_upgrade(run, job, image).await,
            Work::VerifyVersion => Ok(self.verify_version(db).await),
        }
    }

    /// A backup of the old server by its Job; the file it wrote is recorded once it succeeds.
    async fn backup(
        &self,
        run: &Run<'_>,
        job: &str,
        image: &str,
        db: &mut DatabaseStatus,
    ) -> Result<Report, KubeError> {
        let started =
            db.upgrade.as_ref().and_then(|u| u.started_at.as_ref()).map(|t| t.0.as_second()).unwrap_or_default();
        let file = build::jobs::backup_file(&self.inputs.names.stateful_set(), started, db.server_version.as_deref());
        let keep = self.inputs.managed.backup.as_ref().map(|b| b.keep()).unwrap_or(1);
        let state = self.job(run, build::jobs::backup(&self.inputs, job, image, &file, keep)).await?;
        Ok(match state {
            JobRun::Succeeded => {
                db.last_backup = Some(DatabaseBackupStatus {
                    completed_at: Some(Time(Timestamp::now())),
                    file: Some(file),
                    job_name: Some(job.to_string()),
                    server_version: db.server_version.clone(),
                });
                Report::Done { server_version: None }
            }
            JobRun::Failed(message) => Report::Failed(format!("backup Job {job} failed: {message}")),
            JobRun::Running { .. } => Report::Waiting(format!("backup Job {job} runs")),
        })
    }

    /// The StatefulSet moved to the new image, its old server stopping slowly.
    async fn roll(&mut self, run: &Run<'_>, image: &str, db: &mut DatabaseStatus) -> Result<Report, KubeError> {
        // The old server is about to stop: make sure this stop is the slow one, even if it
        // restarted since the flag was set. A server that is not the old one (a new image that
        // never came up) has nothing to protect.
        let from_image = db.upgrade.as_ref().and_then(|u| u.from_image.as_deref());
        if self.live_image.is_some()
            && self.live_image.as_deref() == from_image
            && let Err(e) = check::prepare_for_version_change(self.maintenance).await
        {
            return Ok(check_report(e));
        }
        // The new server starts with the account mariadb-upgrade runs as.
        let sql = account::init_sql(self.account_hash, UpgradeAccount::Present);
        run.ledger.apply(account::render_init(self.inputs.names, self.inputs.secret_meta(), &sql)).await?;
        let rolled = Inputs { image, ..self.inputs.clone() };
        run.ledger.apply(build::stateful_set::render(&rolled)).await?;
        self.live_image = Some(image.to_string());
        db.image = Some(image.to_string());
        Ok(Report::Waiting(format!("the StatefulSet now runs {image}; the old server shuts down slowly")))
    }

    /// Whether the new server's pod runs, once the StatefulSet was rolled.
    async fn rolled(&self, run: &Run<'_>, image: &str, db: &DatabaseStatus) -> Result<Report, KubeError> {
        let names = self.inputs.names;
        let sts = run.ledger.get::<StatefulSet>(&names.stateful_set()).await?;
        let pod = run.ledger.get::<Pod>(&names.pod()).await?;
        Ok(match observe::rollout(sts.as_ref(), pod.as_ref(), image) {
            Progress::Done => Report::Done { server_version: None },
            Progress::Waiting { message, .. } => Report::Waiting(message),
            // The new pod refused the directory: waiting changes nothing, a person must.
            Progress::Failed { reason, message } if reason == reasons::NOT_CLEANLY_STOPPED => {
                let upgrade = db.upgrade.clone().unwrap_or_default();
                Report::Failed(clean_stop::refused_message(&upgrade, &names.pod(), &message))
            }
            // The kubelet keeps trying: an error that may pass, until the step times out.
            Progress::Failed { message, .. } => Report::Retrying(message),
        })
    }

    /// `mariadb-upgrade` by its Job; the upgrade account goes as soon as it succeeded.
    async fn mariadb_upgrade(&self, run: &Run<'_>, job: &str, image: &str) -> Result<Report, KubeError> {
        let state = self.job(run, build::jobs::upgrade(&self.inputs, job, image)).await?;
        Ok(match state {
            // Its work done, the account that holds root's privileges goes at once.
            JobRun::Succeeded => match check::drop_upgrade_account(&self.upgrade_account()).await {
                Ok(()) => Report::Done { server_version: None },
                Err(e) if e.is_transient() => Report::Retrying(format!("removing the upgrade account: {e}")),
                Err(e) => Report::Failed(format!("mariadb-upgrade ran, but the upgrade account stays: {e}")),
            },
            JobRun::Failed(message) => Report::Failed(format!("mariadb-upgrade Job {job} failed: {message}")),
            JobRun::Running { .. } => Report::Waiting(format!("mariadb-upgrade Job {job} runs")),
        })
    }

    /// The server's version, read and held against what the change was to reach.
    async fn verify_version(&self, db: &mut DatabaseStatus) -> Report {
        let version = match check::read_version(self.maintenance).await {
            Ok(version) => version,
            Err(e) => return check_report(e),
        };
        let upgrade = db.upgrade.clone().unwrap_or_default();
        let target = upgrade.to_version.as_deref().and_then(parse_major_minor);
        match verify_after_change(upgrade.from_version.as_deref(), &version.raw, target) {
            Ok(_) => {
                db.server_version = Some(version.raw.clone());
                Report::Done { server_version: Some(version.raw) }
            }
            Err(reason) => Report::Failed(reason),
        }
    }
}

fn note(run: &mut Run<'_>, note: sequence::Note) {
    if note.warning {
        run.notices.warning(note.reason, note.message);
    } else {
        run.notices.normal(note.reason, note.message);
    }
}

/// Runs the sequence as far as it goes now: done when no change is under way, waiting at a
/// step, or failed at one. Every transition is written to `status.database.upgrade` (through
/// `run.persist`) before the next step's work starts.
pub(super) async fn run(
    run: &mut Run<'_>,
    driver: &mut Driver<'_>,
    request: &Request<'_>,
    db: &mut DatabaseStatus,
) -> Result<Progress, KubeError> {
    for _ in 0..MAX_TRANSITIONS {
        let live_image = driver.live_image.clone();
        let facts = Facts {
            names: request.names,
            // The clock moves on between transitions: step timeouts count from each step's start.
            now: Timestamp::now().as_second(),
            live_image: live_image.as_deref(),
            desired_image: request.desired_image,
            desired_version: request.desired_version,
            backup: request.backup_keep.is_some(),
            retry_token: request.retry_token,
            step_timeout: request.step_timeout_seconds,
        };
        match sequence::plan(db.upgrade.as_ref(), &facts) {
            Plan::Idle => return Ok(Progress::Done),
            Plan::Halted { message, .. } => {
                let refused =
                    db.upgrade.as_ref().and_then(|u| u.message.as_deref()).is_some_and(clean_stop::is_refusal);
                let reason = if refused { reasons::NOT_CLEANLY_STOPPED } else { reasons::UPGRADE_FAILED };
                return Ok(Progress::failed(reason, message));
            }
            Plan::Record { status, note: recorded } => {
                db.upgrade = status.map(|s| *s);
                run.persist.save(Some(db)).await?;
                tracing::info!(reason = recorded.reason, "{}", recorded.message);
                note(run, recorded);
            }
            Plan::Perform { step, work } => {
                let report = driver.perform(run, &work, db).await?;
                let finished = matches!(report, Report::Done { .. } | Report::Failed(_));
                let current = db.upgrade.clone().unwrap_or_default();
                let advance = sequence::advance(&current, step, report, &facts);
                db.upgrade = Some(advance.status);
                run.persist.save(Some(db)).await?;
                if let Some(advanced) = advance.note {
                    tracing::info!(reason = advanced.reason, step = ?step, "{}", advanced.message);
                    note(run, advanced);
                }
                if !finished {
                    let waiting = advance.waiting.unwrap_or_else(|| format!("step {}", sequence::step_name(step)));
                    return Ok(Progress::waiting(reasons::UPGRADING, waiting));
                }
                if step == Step::VerifyingVersion && db.upgrade.as_ref().and_then(|u| u.step) == Some(Step::Completed) {
                    return Ok(Progress::Done);
                }
            }
        }
    }
    Ok(Progress::waiting(reasons::UPGRADING, "the MariaDB version change goes on at the next reconcile"))
}
