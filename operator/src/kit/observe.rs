//! Reading what Kubernetes reports, for every controller: how a Job ended (quoting the failed
//! container), and whether a Deployment or DaemonSet finished rolling out.

use super::error::{KubeError, Verb};
use super::progress::Progress;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

/// Where a Job stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JobState {
    Absent,
    Running,
    Succeeded,
    /// Failed for good (its backoff limit is spent); the message quotes the failure.
    Failed {
        message: String,
    },
}

fn has_condition(job: &Job, type_: &str) -> bool {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == type_ && c.status == "True")
}

/// The state of `job`, reading its `pods` for the failure message.
pub(crate) fn job_state(job: Option<&Job>, pods: &[Pod]) -> JobState {
    let Some(job) = job else {
        return JobState::Absent;
    };
    if has_condition(job, "Complete") {
        return JobState::Succeeded;
    }
    if has_condition(job, "Failed") {
        return JobState::Failed { message: failure_message(job, pods) };
    }
    JobState::Running
}

/// The reason Kubernetes gives a Job that ran longer than its `activeDeadlineSeconds`.
pub(crate) const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";

fn failed_condition(job: &Job) -> Option<&k8s_openapi::api::batch::v1::JobCondition> {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).find(|c| c.type_ == "Failed" && c.status == "True")
}

/// The most recent container failure among the Job's pods, or the Job's own condition, as a
/// status may carry it: scrubbed ([`super::scrub::scrubbed`]: values after secret-like keys
/// redacted, the length bounded), because a container writes its termination message itself
/// and may write a password into it.
pub(crate) fn failure_message(job: &Job, pods: &[Pod]) -> String {
    super::scrub::scrubbed(&unscrubbed_failure(job, pods), &[])
}

/// A Job that ran out of time says so first: its killed container's exit code would hide why.
fn unscrubbed_failure(job: &Job, pods: &[Pod]) -> String {
    if let Some(c) = failed_condition(job).filter(|c| c.reason.as_deref() == Some(DEADLINE_EXCEEDED)) {
        let deadline = job.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        return format!(
            "{DEADLINE_EXCEEDED}: the Job ran out of time (activeDeadlineSeconds {}): {}",
            deadline.map_or_else(|| "unset".to_string(), |d| d.to_string()),
            c.message.as_deref().unwrap_or("no details")
        );
    }
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by_key(|p| std::cmp::Reverse(p.metadata.creation_timestamp.clone().map(|t| t.0)));
    let container = pods.iter().find_map(|pod| {
        pod.status.iter().flat_map(|s| s.container_statuses.iter().flatten()).find_map(|status| {
            let terminated = status.state.as_ref()?.terminated.as_ref()?;
            (terminated.exit_code != 0).then(|| {
                let detail = terminated
                    .message
                    .as_deref()
                    .or(terminated.reason.as_deref())
                    .map(|m| format!(": {}", m.trim()))
                    .unwrap_or_default();
                format!("container {} exited with code {}{detail}", status.name, terminated.exit_code)
            })
        })
    });
    container.unwrap_or_else(|| {
        job.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .find(|c| c.type_ == "Failed")
            .map(|c| {
                format!("{}: {}", c.reason.as_deref().unwrap_or("Failed"), c.message.as_deref().unwrap_or("no details"))
            })
            .unwrap_or_else(|| "the Job failed".to_string())
    })
}

/// Reads a Job and, when it failed, its pods.
pub(crate) async fn job(jobs: &Api<Job>, pods: &Api<Pod>, name: &str) -> Result<(Option<Job>, JobState), KubeError> {
    let job = jobs.get_opt(name).await.map_err(KubeError::of::<Job>(Verb::Get, name))?;
    let failed = job.as_ref().is_some_and(|j| has_condition(j, "Failed"));
    let job_pods = if failed {
        let selector = format!("job-name={name}");
        pods.list(&ListParams::default().labels(&selector))
            .await
            .map_err(KubeError::of::<Pod>(Verb::List, &selector))?
            .items
    } else {
        Vec::new()
    };
    let state = job_state(job.as_ref(), &job_pods);
    Ok((job, state))
}

/// Progressing's reason while a workload rolls out.
pub(crate) const ROLLING_OUT: &str = "RollingOut";
/// Degraded's reason when a workload's rollout is stuck.
pub(crate) const ROLLOUT_FAILED: &str = "RolloutFailed";

fn rolling(message: impl Into<String>) -> Progress {
    Progress::waiting(ROLLING_OUT, message)
}

fn generation_seen(generation: Option<i64>, observed: Option<i64>) -> bool {
    match (generation, observed) {
        (Some(generation), Some(observed)) => observed >= generation,
        (None, _) => true,
        (Some(_), None) => false,
    }
}

/// Whether a Deployment runs what was last applied.
pub fn deployment_rollout(deployment: &Deployment) -> Progress {
    let status = deployment.status.clone().unwrap_or_default();
    if !generation_seen(deployment.metadata.generation, status.observed_generation) {
        return rolling("the Deployment controller has not seen the new template yet");
    }
    if let Some(stuck) = status.conditions.iter().flatten().find(|c| {
        c.type_ == "Progressing" && c.status == "False" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    }) {
        return Progress::failed(
            ROLLOUT_FAILED,
            format!(
                "the Deployment made no progress: {}",
                stuck.message.as_deref().unwrap_or("progress deadline exceeded")
            ),
        );
    }
    let wanted = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    if updated >= wanted && available >= wanted && total == updated {
        Progress::Done
    } else {
        rolling(format!("{available} of {wanted} pods available, {updated} updated, {total} running"))
    }
}

/// Whether a DaemonSet runs what was last applied.
pub(crate) fn daemonset_rollout(daemonset: &DaemonSet) -> Progress {
    let status = daemonset.status.clone().unwrap_or_default();
    if !generation_seen(daemonset.metadata.generation, status.observed_generation) {
        return rolling("the DaemonSet controller has not seen the new template yet");
    }
    let desired = status.desired_number_scheduled;
    if desired == 0 {
        return rolling("no node matches spec.nodeSelector yet");
    }
    let updated = status.updated_number_scheduled.unwrap_or(0);
    let available = status.number_available.unwrap_or(0);
    if updated >= desired && available >= desired {
        Progress::Done
    } else {
        rolling(format!("{available} of {desired} pods available, {updated} updated"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec, DeploymentStatus};
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus};
    use kube::api::ObjectMeta;

    fn job(conditions: &[(&str, &str)]) -> Job {
        Job {
            status: Some(JobStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| JobCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            reason: Some("BackoffLimitExceeded".into()),
                            message: Some("Job has reached the specified backoff limit".into()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn failed_pod(exit_code: i32, message: &str) -> Pod {
        Pod {
            metadata: ObjectMeta::default(),
            status: Some(PodStatus {
                phase: Some("Failed".into()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "database-upgrade".into(),
                    state: Some(ContainerState {
                        terminated: Some(ContainerStateTerminated {
                            exit_code,
                            message: Some(message.into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn job_states_follow_the_conditions() {
        assert_eq!(job_state(None, &[]), JobState::Absent);
        assert_eq!(job_state(Some(&job(&[])), &[]), JobState::Running);
        assert_eq!(job_state(Some(&job(&[("Complete", "True")])), &[]), JobState::Succeeded);
    }

    #[test]
    fn a_failed_job_quotes_its_container() {
        let state = job_state(Some(&job(&[("Failed", "True")])), &[failed_pod(3, "alembic: cannot upgrade\n")]);
        assert_eq!(
            state,
            JobState::Failed {
                message: "container database-upgrade exited with code 3: alembic: cannot upgrade".into()
            }
        );
        let state = job_state(Some(&job(&[("Failed", "True")])), &[]);
        assert_eq!(
            state,
            JobState::Failed { message: "BackoffLimitExceeded: Job has reached the specified backoff limit".into() }
        );
    }

    #[test]
    fn a_password_a_container_writes_into_its_termination_message_never_reaches_status() {
        let pod = failed_pod(1, &format!("connect failed: password={} host=db\n{}", "hunter22", "x".repeat(5000)));
        let message = failure_message(&job(&[("Failed", "True")]), &[pod]);
        assert!(!message.contains("hunter22"), "{message}");
        assert!(message.contains("container database-upgrade exited with code 1: connect failed"), "{message}");
        assert!(message.len() < 2000, "bounded: {} bytes", message.len());
    }

    #[test]
    fn a_job_that_ran_out_of_time_says_so_before_its_killed_container() {
        let mut timed_out = job(&[("Failed", "True")]);
        if let Some(c) = timed_out.status.as_mut().and_then(|s| s.conditions.as_mut()).and_then(|c| c.first_mut()) {
            c.reason = Some(DEADLINE_EXCEEDED.into());
            c.message = Some("Job was active longer than specified deadline".into());
        }
        timed_out.spec =
            Some(k8s_openapi::api::batch::v1::JobSpec { active_deadline_seconds: Some(60), ..Default::default() });
        let JobState::Failed { message } = job_state(Some(&timed_out), &[failed_pod(137, "killed")]) else {
            panic!("failed");
        };
        assert_eq!(
            message,
            "DeadlineExceeded: the Job ran out of time (activeDeadlineSeconds 60): \
             Job was active longer than specified deadline"
        );
    }

    #[test]
    fn a_deployment_is_complete_when_the_new_pod_is_available_and_the_old_one_gone() {
        let deployment = |observed, updated, available, total, stuck: bool| Deployment {
            metadata: ObjectMeta { generation: Some(2), ..Default::default() },
            spec: Some(DeploymentSpec { replicas: Some(1), ..Default::default() }),
            status: Some(DeploymentStatus {
                observed_generation: Some(observed),
                updated_replicas: Some(updated),
                available_replicas: Some(available),
                replicas: Some(total),
                conditions: stuck.then(|| {
                    vec![DeploymentCondition {
                        type_: "Progressing".into(),
                        status: "False".into(),
                        reason: Some("ProgressDeadlineExceeded".into()),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        };
        assert!(matches!(deployment_rollout(&deployment(1, 1, 1, 1, false)), Progress::Waiting { .. }));
        assert!(matches!(deployment_rollout(&deployment(2, 1, 0, 1, false)), Progress::Waiting { .. }));
        assert!(matches!(deployment_rollout(&deployment(2, 1, 1, 2, false)), Progress::Waiting { .. }));
        assert_eq!(deployment_rollout(&deployment(2, 1, 1, 1, false)), Progress::Done);
        assert!(matches!(deployment_rollout(&deployment(2, 0, 0, 1, true)), Progress::Failed { .. }));
    }
}
