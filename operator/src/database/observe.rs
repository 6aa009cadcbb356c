//! Reading the MariaDB StatefulSet and its pod: which image runs, whether the server is up,
//! and whether it is failing to start.

use super::build::CONTAINER;
use super::clean_stop::{self, Refusal};
use super::status::reasons;
use crate::kit::Progress;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;

/// Container states the kubelet keeps retrying but that rarely pass without help: counted
/// as errors that may pass, so a step fails only when they last.
const FAILING_REASONS: [&str; 6] = [
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// The image the StatefulSet's template runs.
pub(crate) fn template_image(sts: &StatefulSet) -> Option<String> {
    sts.spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == CONTAINER)
        .and_then(|c| c.image.clone())
}

/// Whether the pod reports Ready.
pub(crate) fn pod_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn starting(message: impl Into<String>) -> Progress {
    Progress::waiting(reasons::STARTING, message)
}

/// Compares the StatefulSet and its pod with `image`: done when the pod runs `image`, from
/// the current template, and is ready; waiting while on its way (the old pod stopping, the new
/// one starting); failed while the container cannot start (the kubelet keeps trying).
pub(crate) fn rollout(sts: Option<&StatefulSet>, pod: Option<&Pod>, image: &str) -> Progress {
    let Some(sts) = sts else {
        return starting("the StatefulSet does not exist yet");
    };
    let status = sts.status.clone().unwrap_or_default();
    if let (Some(generation), observed) = (sts.metadata.generation, status.observed_generation)
        && observed.is_none_or(|o| o < generation)
    {
        return starting("the StatefulSet controller has not seen the new template yet");
    }
    let Some(pod) = pod else {
        return starting("the MariaDB pod does not exist yet");
    };
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let running = pod.spec.as_ref().and_then(|s| s.containers.iter().find(|c| c.name == CONTAINER)?.image.clone());
    if running.as_deref() != Some(image) || pod.metadata.deletion_timestamp.is_some() {
        return starting(format!(
            "pod {pod_name} still runs {}; it shuts down slowly and is replaced",
            running.unwrap_or_else(|| "another image".to_string())
        ));
    }
    let revision = pod.metadata.labels.as_ref().and_then(|l| l.get("controller-revision-hash"));
    if let (Some(update), Some(revision)) = (status.update_revision.as_ref(), revision)
        && update != revision
    {
        return starting(format!("pod {pod_name} is from an older template"));
    }
    match clean_stop::refusal(pod) {
        Some(Refusal::Unclean(words)) => {
            return Progress::failed(
                reasons::NOT_CLEANLY_STOPPED,
                format!("pod {pod_name}: {}: {words}", clean_stop::INIT_CONTAINER),
            );
        }
        Some(Refusal::CheckFailed(code, words)) => {
            return Progress::failed(
                reasons::POD_FAILING,
                format!("init container {} of pod {pod_name} exited with {code}: {words}", clean_stop::INIT_CONTAINER),
            );
        }
        None => {}
    }
    let container = pod.status.iter().flat_map(|s| s.container_statuses.iter().flatten()).find(|c| c.name == CONTAINER);
    if let Some(waiting) = container.and_then(|c| c.state.as_ref()?.waiting.as_ref())
        && let Some(reason) = waiting.reason.as_deref().filter(|r| FAILING_REASONS.contains(r))
    {
        let detail = waiting.message.as_deref().map(|m| format!(": {}", m.trim())).unwrap_or_default();
        return Progress::failed(
            reasons::POD_FAILING,
            format!("container {CONTAINER} of pod {pod_name} is in {reason}{detail}"),
        );
    }
    if pod_ready(pod) { Progress::Done } else { starting(format!("pod {pod_name} is not ready yet")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{StatefulSetSpec, StatefulSetStatus};
    use k8s_openapi::api::core::v1::{
        Container, ContainerState, ContainerStateWaiting, ContainerStatus, PodCondition, PodSpec, PodStatus,
        PodTemplateSpec,
    };
    use kube::api::ObjectMeta;

    fn sts(image: &str, generation: i64, observed: i64) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta { generation: Some(generation), ..Default::default() },
            spec: Some(StatefulSetSpec {
                template: PodTemplateSpec {
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: CONTAINER.into(),
                            image: Some(image.into()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            }),
            status: Some(StatefulSetStatus {
                observed_generation: Some(observed),
                update_revision: Some("db-2".into()),
                ..Default::default()
            }),
        }
    }

    fn pod(image: &str, revision: &str, ready: bool, waiting: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("ironic-mariadb-0".into()),
                labels: Some([("controller-revision-hash".to_string(), revision.to_string())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container { name: CONTAINER.into(), image: Some(image.into()), ..Default::default() }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                container_statuses: Some(vec![ContainerStatus {
                    name: CONTAINER.into(),
                    state: Some(ContainerState {
                        waiting: waiting.map(|r| ContainerStateWaiting {
                            reason: Some(r.into()),
                            message: Some("back-off 5m0s".into()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_ready_pod_of_the_new_template_completes_the_rollout() {
        let set = sts("mariadb:11.4", 2, 2);
        assert_eq!(template_image(&set).as_deref(), Some("mariadb:11.4"));
        assert_eq!(rollout(Some(&set), Some(&pod("mariadb:11.4", "db-2", true, None)), "mariadb:11.4"), Progress::Done);
    }

    #[test]
    fn the_rollout_waits_for_the_controller_the_old_pod_and_readiness() {
        let new = "mariadb:11.4";
        assert!(matches!(rollout(None, None, new), Progress::Waiting { .. }));
        assert!(
            matches!(rollout(Some(&sts(new, 3, 2)), None, new), Progress::Waiting { message: m, .. } if m.contains("not seen"))
        );
        let set = sts(new, 2, 2);
        assert!(matches!(rollout(Some(&set), None, new), Progress::Waiting { .. }));
        let old = pod("mariadb:10.11", "db-1", true, None);
        assert!(
            matches!(rollout(Some(&set), Some(&old), new), Progress::Waiting { message: m, .. } if m.contains("still runs mariadb:10.11"))
        );
        let stale = pod(new, "db-1", true, None);
        assert!(
            matches!(rollout(Some(&set), Some(&stale), new), Progress::Waiting { message: m, .. } if m.contains("older template"))
        );
        let starting = pod(new, "db-2", false, None);
        assert!(
            matches!(rollout(Some(&set), Some(&starting), new), Progress::Waiting { message: m, .. } if m.contains("not ready"))
        );
    }

    #[test]
    fn a_crash_looping_or_unpullable_container_is_failing() {
        let set = sts("mariadb:11.4", 2, 2);
        for reason in ["CrashLoopBackOff", "ImagePullBackOff"] {
            let p = pod("mariadb:11.4", "db-2", false, Some(reason));
            assert!(
                matches!(rollout(Some(&set), Some(&p), "mariadb:11.4"), Progress::Failed { reason: r, message: m } if r == reasons::POD_FAILING && m.contains(reason))
            );
        }
        let creating = pod("mariadb:11.4", "db-2", false, Some("ContainerCreating"));
        assert!(matches!(rollout(Some(&set), Some(&creating), "mariadb:11.4"), Progress::Waiting { .. }));
    }

    #[test]
    fn a_new_pod_whose_check_refused_the_directory_is_not_cleanly_stopped() {
        use k8s_openapi::api::core::v1::ContainerStateTerminated;
        let set = sts("mariadb:11.4", 2, 2);
        let mut p = pod("mariadb:11.4", "db-2", false, Some("PodInitializing"));
        let check = |code: i32| ContainerStatus {
            name: clean_stop::INIT_CONTAINER.into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    message: Some("ibtmp1 is still there".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        p.status.as_mut().expect("status").init_container_statuses = Some(vec![check(clean_stop::EXIT_UNCLEAN)]);
        assert!(
            matches!(rollout(Some(&set), Some(&p), "mariadb:11.4"), Progress::Failed { reason: r, message: m } if r == reasons::NOT_CLEANLY_STOPPED && m.contains("ibtmp1 is still there"))
        );
        p.status.as_mut().expect("status").init_container_statuses = Some(vec![check(4)]);
        assert!(
            matches!(rollout(Some(&set), Some(&p), "mariadb:11.4"), Progress::Failed { reason: r, .. } if r == reasons::POD_FAILING)
        );
    }
}
