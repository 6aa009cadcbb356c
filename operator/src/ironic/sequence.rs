//! The upgrade sequence step: first the gates (a certificate cert-manager has not issued yet,
//! a database that is not ready, a refused downgrade), then the pre-upgrade Job, the rollout
//! of the workload, the post-upgrade Job, and once an upgrade completed, the prune of the
//! Jobs of earlier upgrades (the latest ones stay for inspection). The other workload kind is
//! pruned right after the workload is applied, so a highAvailability flip replaces it at once.
//! A failed Job stops the sequence where it is and deletes nothing.

use super::build::{Desired, Phase, Resolved, UpgradeVersions, Workload};
use super::names::Names;
use super::status::reasons;
use super::upgrade::{self, VersionPlan};
use crate::kit::jobs::{self, JobRun};
use crate::kit::{KubeError, Ledger, Notices, Progress, observe};
use crds::ironic::status::{IronicStatus, UpgradePhase, UpgradeStatus};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

/// Why the sequence could not go on: a Job or the workload could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct Error(#[from] pub KubeError);

/// Where the sequence stands, and `status.upgrade` when this reconcile has news of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sequenced {
    pub progress: Progress,
    pub upgrade: Option<UpgradeStatus>,
}

impl Sequenced {
    fn stop(progress: Progress) -> Self {
        Self { progress, upgrade: None }
    }
}

/// What stops the sequence before it starts, in this order.
pub(crate) fn gate(resolved: &Resolved, database: &Progress) -> Option<Progress> {
    if let Some((reason, message)) = &resolved.tls.failed {
        return Some(Progress::failed(*reason, message.clone()));
    }
    if let Some(pending) = &resolved.tls.pending {
        return Some(Progress::waiting(reasons::WAITING_FOR_CERTIFICATE, pending.clone()));
    }
    if let Progress::Waiting { reason, message } = database {
        let message = format!("waiting for the database ({reason}): {message}");
        return Some(Progress::waiting(reasons::WAITING_FOR_DATABASE, message));
    }
    if let VersionPlan::DowngradeRefused { installed, requested } = &resolved.plan {
        return Some(Progress::failed(
            reasons::DOWNGRADE_REJECTED,
            format!(
                "Ironic {installed} is installed with a database and cannot go back to {requested}: its database migrations only go forward; set spec.version to {installed} or newer"
            ),
        ));
    }
    None
}

/// What one Job's run means for the sequence: `None` goes on; else the progress to stop with
/// and the phase `status.upgrade` reports.
pub(crate) fn judge(
    phase: Phase,
    name: &str,
    run: &JobRun,
    versions: &UpgradeVersions,
    schema_missing: bool,
) -> Option<(Progress, UpgradePhase, Option<String>)> {
    let (running, reason, serving) = match phase {
        Phase::Pre => (UpgradePhase::PreUpgrade, reasons::UPGRADING_DATABASE_SCHEMA, versions.from.clone()),
        Phase::Post => (UpgradePhase::PostUpgrade, reasons::MIGRATING_DATA, Some(versions.to.clone())),
    };
    // A first installation's pre Job runs before any Ironic does.
    let (serves, keeps) = match &serving {
        Some(version) => (format!("Ironic {version} serves meanwhile"), format!("Ironic {version} keeps running")),
        None => ("no Ironic serves yet".to_string(), "no Ironic ran yet".to_string()),
    };
    match run {
        JobRun::Succeeded if phase == Phase::Pre && schema_missing => {
            // The Job says it succeeded, yet the database has no schema: it worked on another
            // database, or the schema was lost since. Rolling out would start pods on empty
            // tables; stop and say so.
            let message = format!(
                "the {} {name} succeeded, but the database still has no Ironic schema (alembic_version is empty); check that the Job and Ironic use the same database, then delete the Job to run it again",
                phase.describe()
            );
            Some((Progress::failed(reasons::UPGRADE_JOB_FAILED, message.clone()), UpgradePhase::Failed, Some(message)))
        }
        JobRun::Succeeded => None,
        JobRun::Running { .. } => {
            let message = format!("the {} {name} runs; {serves}", phase.describe());
            Some((Progress::waiting(reason, message), running, None))
        }
        JobRun::Failed(cause) => {
            let message = format!(
                "the {} {name} failed: {cause}. Nothing was deleted and {keeps}; fix the cause, then delete the Job to run it again",
                phase.describe()
            );
            Some((Progress::failed(reasons::UPGRADE_JOB_FAILED, message.clone()), UpgradePhase::Failed, Some(message)))
        }
    }
}

/// The sequence of one reconcile.
struct Sequence<'a> {
    ledger: &'a Ledger,
    resolved: &'a Resolved,
    previous: &'a IronicStatus,
    now: Time,
}

impl Sequence<'_> {
    fn status(&self, versions: &UpgradeVersions, phase: UpgradePhase, message: Option<String>) -> UpgradeStatus {
        let names = &self.resolved.names;
        let job_names = (
            names.upgrade_job(Phase::Pre.label(), versions.from.as_deref(), &versions.to),
            names.upgrade_job(Phase::Post.label(), versions.from.as_deref(), &versions.to),
        );
        upgrade::status(self.previous.upgrade.as_ref(), versions, phase, message, job_names, self.now.clone())
    }

    /// Runs one Job of the sequence; `Some` stops the reconcile there.
    async fn job(&self, phase: Phase, job: Option<&Job>, notices: &mut Notices) -> Result<Option<Sequenced>, Error> {
        let (Some(versions), Some(job)) = (self.resolved.upgrade.as_ref(), job) else {
            return Ok(None);
        };
        let name = job.name_any();
        let succeeded_before = match phase {
            Phase::Pre if self.resolved.schema_missing => false,
            Phase::Pre => upgrade::pre_done(self.previous.upgrade.as_ref(), versions),
            Phase::Post => upgrade::post_done(self.previous.upgrade.as_ref(), versions),
        };
        let run = jobs::run_once(self.ledger, job.clone(), succeeded_before).await?;
        if run == (JobRun::Running { created: true }) {
            let from = versions.from.as_deref().unwrap_or("nothing");
            let note = format!("created the {} {name} ({from} to {})", phase.describe(), versions.to);
            notices.normal("UpgradeJobCreated", note);
        }
        Ok(judge(phase, &name, &run, versions, self.resolved.schema_missing).map(|(progress, phase, message)| {
            Sequenced { progress, upgrade: Some(self.status(versions, phase, message)) }
        }))
    }
}

/// Applies the workload, prunes the other kind (highAvailability flipped) and reads how the
/// rollout goes.
async fn roll_out(
    ledger: &Ledger,
    names: &Names,
    workload: &Workload,
    notices: &mut Notices,
) -> Result<Progress, Error> {
    let (rollout, replaced) = match workload {
        Workload::Deployment(deployment) => {
            let stored = ledger.apply(deployment.as_ref().clone()).await?;
            (observe::deployment_rollout(&stored), ledger.prune::<DaemonSet>().await?.first().map(|_| "DaemonSet"))
        }
        Workload::DaemonSet(daemonset) => {
            let stored = ledger.apply(daemonset.as_ref().clone()).await?;
            (observe::daemonset_rollout(&stored), ledger.prune::<Deployment>().await?.first().map(|_| "Deployment"))
        }
    };
    if let Some(old_kind) = replaced {
        let note = format!("replaced the {old_kind} {} with a {}", names.workload(), workload.kind());
        notices.normal("WorkloadReplaced", note);
    }
    Ok(rollout)
}

/// Runs the sequence as far as it goes now, in `ledger` (the Ironic's scope). `database` is
/// the database's progress; `previous` the status as read; `now` stamps `status.upgrade`.
pub(crate) async fn run(
    ledger: &Ledger,
    resolved: &Resolved,
    desired: &Desired,
    previous: &IronicStatus,
    database: &Progress,
    now: Time,
    notices: &mut Notices,
) -> Result<Sequenced, Error> {
    if let Some(stop) = gate(resolved, database) {
        return Ok(Sequenced::stop(stop));
    }
    let sequence = Sequence { ledger, resolved, previous, now };
    if let Some(stop) = sequence.job(Phase::Pre, desired.pre_upgrade_job.as_ref(), notices).await? {
        return Ok(stop);
    }
    let kind = desired.workload.kind();
    match roll_out(ledger, &resolved.names, &desired.workload, notices).await? {
        Progress::Done => {}
        Progress::Waiting { message, .. } => {
            let requested = resolved.version.version.to_string();
            let upgrade = resolved.upgrade.as_ref().map(|v| sequence.status(v, UpgradePhase::RollingOut, None));
            let changing = previous.installed_version.as_deref().is_some_and(|installed| installed != requested);
            let reason = if upgrade.is_some() || changing { reasons::ROLLING_OUT } else { reasons::DEPLOYING };
            let progress = Progress::waiting(reason, format!("waiting for the {kind}: {message}"));
            return Ok(Sequenced { progress, upgrade });
        }
        failed @ Progress::Failed { .. } => return Ok(Sequenced::stop(failed)),
    }
    if let Some(stop) = sequence.job(Phase::Post, desired.post_upgrade_job.as_ref(), notices).await? {
        return Ok(stop);
    }
    let Some(versions) = &resolved.upgrade else {
        return Ok(Sequenced::stop(Progress::Done));
    };
    // The upgrade completed: the Jobs of earlier upgrades have served their purpose. This
    // reconcile ran (and so kept) the current ones.
    ledger.prune::<Job>().await?;
    Ok(Sequenced { progress: Progress::Done, upgrade: Some(sequence.status(versions, UpgradePhase::Completed, None)) })
}

#[cfg(test)]
mod tests;
