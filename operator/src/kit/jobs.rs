//! Jobs that run once: created when absent, observed until they end, never created again once
//! status recorded their success (a Job deleted after it succeeded is not rerun).

use super::error::KubeError;
use super::ledger::Ledger;
use super::observe::{self, JobState};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

/// Where a Job run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JobRun {
    /// It succeeded (now, or before: status recorded it).
    Succeeded,
    /// It runs; `created` when this call created it.
    Running { created: bool },
    /// It failed for good; the message quotes the failure.
    Failed(String),
}

/// What to do with a Job whose state is `state`, when status says whether it already
/// `succeeded_before`: `None` means create it.
pub(crate) fn next(state: &JobState, succeeded_before: bool) -> Option<JobRun> {
    match state {
        JobState::Succeeded => Some(JobRun::Succeeded),
        JobState::Absent if succeeded_before => Some(JobRun::Succeeded),
        JobState::Absent => None,
        JobState::Running => Some(JobRun::Running { created: false }),
        JobState::Failed { message } => Some(JobRun::Failed(message.clone())),
    }
}

/// Runs `job` through `ledger` once: observes it, creates it when absent (unless it
/// `succeeded_before`), and keeps it from the ledger's prunes.
pub(crate) async fn run_once(ledger: &Ledger, job: Job, succeeded_before: bool) -> Result<JobRun, KubeError> {
    let name = job.name_any();
    ledger.keep("Job", &name);
    let (existing, state) = observe::job(&ledger.api::<Job>(), &ledger.api::<Pod>(), &name).await?;
    // A Job of this name that the owner does not control tells nothing of the owner's run.
    if let Some(existing) = existing {
        ledger.controlled(existing)?;
    }
    match next(&state, succeeded_before) {
        Some(run) => Ok(run),
        None => {
            let (_, created) = ledger.create_once(job).await?;
            Ok(JobRun::Running { created })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_until_it_succeeded_once() {
        assert_eq!(next(&JobState::Absent, false), None, "create it");
        assert_eq!(next(&JobState::Absent, true), Some(JobRun::Succeeded), "deleted after success: not rerun");
        assert_eq!(next(&JobState::Running, false), Some(JobRun::Running { created: false }));
        assert_eq!(next(&JobState::Succeeded, false), Some(JobRun::Succeeded));
        assert_eq!(
            next(&JobState::Failed { message: "exit 1".into() }, true),
            Some(JobRun::Failed("exit 1".into())),
            "a Job that exists and failed is reported, whatever status says"
        );
    }
}
