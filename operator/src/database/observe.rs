//! Reading the MariaDB StatefulSet and its pod: which image runs, whether the server is up,
//! and whether it is failing to start.

use super::build::CONTAINER;
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
pub fn template_image(sts: &StatefulSet) -> Option<String> {
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
pub fn pod_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Where the StatefulSet stands with respect to `image`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rollout {
    /// The pod runs `image`, from the current template, and is ready.
    Complete,
    /// On its way (the old pod stopping, the new one starting).
    InProgress(String),
    /// The container cannot start; the kubelet keeps trying.
    Failing(String),
}

/// Compares the StatefulSet and its pod with `image`.
pub fn rollout(sts: Option<&StatefulSet>, pod: Option<&Pod>, image: &str) -> Rollout {
    let Some(sts) = sts else {
        return Rollout::InProgress("the StatefulSet does not exist yet".to_string());
    };
    let status = sts.status.clone().unwrap_or_default();
    if let (Some(generation), observed) = (sts.metadata.generation, status.observed_generation)
        && observed.is_none_or(|o| o < generation)
    {
        return Rollout::InProgress("the StatefulSet controller has not seen the new template yet".to_string());
    }
    let Some(pod) = pod else {
        return Rollout::InProgress("the MariaDB pod does not exist yet".to_string());
    };
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let running = pod.spec.as_ref().and_then(|s| s.containers.iter().find(|c| c.name == CONTAINER)?.image.clone());
    if running.as_deref() != Some(image) || pod.metadata.deletion_timestamp.is_some() {
        return Rollout::InProgress(format!(
            "pod {pod_name} still runs {}; it shuts down slowly and is replaced",
            running.unwrap_or_else(|| "another image".to_string())
        ));
    }
    let revision = pod.metadata.labels.as_ref().and_then(|l| l.get("controller-revision-hash"));
    if let (Some(update), Some(revision)) = (status.update_revision.as_ref(), revision)
        && update != revision
    {
        return Rollout::InProgress(format!("pod {pod_name} is from an older template"));
    }
    let container = pod.status.iter().flat_map(|s| s.container_statuses.iter().flatten()).find(|c| c.name == CONTAINER);
    if let Some(waiting) = container.and_then(|c| c.state.as_ref()?.waiting.as_ref())
        && let Some(reason) = waiting.reason.as_deref().filter(|r| FAILING_REASONS.contains(r))
    {
        let detail = waiting.message.as_deref().map(|m| format!(": {}", m.trim())).unwrap_or_default();
        return Rollout::Failing(format!("container {CONTAINER} of pod {pod_name} is in {reason}{detail}"));
    }
    if pod_ready(pod) { Rollout::Complete } else { Rollout::InProgress(format!("pod {pod_name} is not ready yet")) }
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
        assert_eq!(
            rollout(Some(&set), Some(&pod("mariadb:11.4", "db-2", true, None)), "mariadb:11.4"),
            Rollout::Complete
        );
    }

    #[test]
    fn the_rollout_waits_for_the_controller_the_old_pod_and_readiness() {
        let new = "mariadb:11.4";
        assert!(matches!(rollout(None, None, new), Rollout::InProgress(_)));
        assert!(matches!(rollout(Some(&sts(new, 3, 2)), None, new), Rollout::InProgress(m) if m.contains("not seen")));
        let set = sts(new, 2, 2);
        assert!(matches!(rollout(Some(&set), None, new), Rollout::InProgress(_)));
        let old = pod("mariadb:10.11", "db-1", true, None);
        assert!(
            matches!(rollout(Some(&set), Some(&old), new), Rollout::InProgress(m) if m.contains("still runs mariadb:10.11"))
        );
        let stale = pod(new, "db-1", true, None);
        assert!(
            matches!(rollout(Some(&set), Some(&stale), new), Rollout::InProgress(m) if m.contains("older template"))
        );
        let starting = pod(new, "db-2", false, None);
        assert!(matches!(rollout(Some(&set), Some(&starting), new), Rollout::InProgress(m) if m.contains("not ready")));
    }

    #[test]
    fn a_crash_looping_or_unpullable_container_is_failing() {
        let set = sts("mariadb:11.4", 2, 2);
        for reason in ["CrashLoopBackOff", "ImagePullBackOff"] {
            let p = pod("mariadb:11.4", "db-2", false, Some(reason));
            assert!(matches!(rollout(Some(&set), Some(&p), "mariadb:11.4"), Rollout::Failing(m) if m.contains(reason)));
        }
        let creating = pod("mariadb:11.4", "db-2", false, Some("ContainerCreating"));
        assert!(matches!(rollout(Some(&set), Some(&creating), "mariadb:11.4"), Rollout::InProgress(_)));
    }
}
