//! Service Jobs and their inventory Secrets (pure): one Job per NodeSet, service and batch of
//! hosts, named after exactly what it runs, so that the same work always has the same name
//! (a restarted operator finds its Job instead of starting a second) and new work a new one.

use super::rollout::{Batch, JobHost, JobOutcome, ObservedJob};
use crate::kit::names::{MAX_LABEL_VALUE, bounded};
use crate::kit::observe::{JobState, job_state};
use crate::kit::pod::{mount, restricted_container, secret_volume};
use crds::nodeset::{NODESET_LABEL, SERVICE_LABEL};
use crds::nodesetservice::{
    DEFAULT_ACTIVE_DEADLINE_SECONDS, DEFAULT_BACKOFF_LIMIT, INVENTORY_ENV, INVENTORY_PATH, NodeSetServiceSpec,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Annotation of a service Job: the NodeSetService's name (the label is bounded).
pub const SERVICE_ANNOTATION: &str = "ferrometal.io/service";
/// Annotation of a service Job: the service's spec hash it runs.
pub(super) const SERVICE_HASH_ANNOTATION: &str = "ferrometal.io/service-hash";
/// Annotation of a service Job: its hosts and what each runs with (JSON).
pub const HOSTS_ANNOTATION: &str = "ferrometal.io/hosts";
/// The inventory's key in its Secret, and so the file name under the mount.
pub const INVENTORY_KEY: &str = "inventory.json";
/// The container of every service Job.
pub(super) const CONTAINER: &str = "service";
/// Value of the component label of service Jobs and inventory Secrets: the ledger's scope.
pub(super) const COMPONENT: &str = "nodeset-service";

const VOLUME: &str = "inventory";

/// The name of the Job (and inventory Secret) running `batch` for the NodeSet labelled
/// `nodeset`: readable prefix, and a digest of everything the run is.
pub(super) fn name(nodeset: &str, batch: &Batch) -> String {
    let mut digest = Sha256::new();
    digest.update(batch.service.as_bytes());
    digest.update([0]);
    digest.update(batch.service_hash.as_bytes());
    for (host, ran) in &batch.hosts {
        for part in [host.as_str(), &ran.config_hash, &ran.epoch, ran.after.as_deref().unwrap_or("")] {
            digest.update([0]);
            digest.update(part.as_bytes());
        }
    }
    let digest = hex::encode(digest.finalize());
    let prefix = bounded(&format!("{nodeset}-{}", batch.service), MAX_LABEL_VALUE - 11);
    let prefix = prefix.trim_end_matches(['-', '.']);
    format!("{prefix}-{}", &digest[..10])
}

/// Labels of a service Job, its pods and its Secret (the ledger adds the scope's).
fn labels(nodeset: &str, service: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NODESET_LABEL.to_string(), nodeset.to_string()),
        (SERVICE_LABEL.to_string(), bounded(service, MAX_LABEL_VALUE)),
    ])
}

/// The inventory Secret of a Job.
pub(super) fn inventory_secret(name: &str, nodeset: &str, service: &str, inventory: &Value) -> Secret {
    let json = serde_json::to_vec_pretty(inventory).unwrap_or_default();
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels(nodeset, service)),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(INVENTORY_KEY.to_string(), ByteString(json))])),
        ..Default::default()
    }
}

/// The Job running `service` for `batch`, with its inventory Secret `name` mounted.
pub(super) fn job(name: &str, nodeset_name: &str, nodeset: &str, spec: &NodeSetServiceSpec, batch: &Batch) -> Job {
    let template = &spec.job;
    let mount_dir = INVENTORY_PATH.rsplit_once('/').map(|(dir, _)| dir).unwrap_or("/var/run/ferrometal");
    let mut env: Vec<EnvVar> = [
        (INVENTORY_ENV, INVENTORY_PATH.to_string()),
        ("FERROMETAL_NODESET", nodeset_name.to_string()),
        ("FERROMETAL_SERVICE", batch.service.clone()),
    ]
    .into_iter()
    .map(|(name, value)| EnvVar { name: name.into(), value: Some(value), ..Default::default() })
    .collect();
    env.extend(template.env.iter().flatten().cloned());
    let hosts = serde_json::to_string(&batch.hosts).unwrap_or_default();
    Job {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels(nodeset, &batch.service)),
            annotations: Some(BTreeMap::from([
                (SERVICE_ANNOTATION.to_string(), batch.service.clone()),
                (SERVICE_HASH_ANNOTATION.to_string(), batch.service_hash.clone()),
                (HOSTS_ANNOTATION.to_string(), hosts),
            ])),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(template.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT)),
            active_deadline_seconds: Some(template.active_deadline_seconds.unwrap_or(DEFAULT_ACTIVE_DEADLINE_SECONDS)),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels(nodeset, &batch.service)), ..Default::default() }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    service_account_name: template.service_account_name.clone(),
                    // An API token only for a service that names the account it runs as: the
                    // namespace's default account is nobody's choice to hand to a service.
                    automount_service_account_token: Some(template.service_account_name.is_some()),
                    containers: vec![Container {
                        name: CONTAINER.into(),
                        image: Some(template.image.clone()),
                        command: template.command.clone(),
                        args: template.args.clone(),
                        env: Some(env),
                        env_from: template.env_from.clone(),
                        resources: template.resources.clone(),
                        volume_mounts: Some(vec![mount(VOLUME, mount_dir, true)]),
                        security_context: Some(restricted_container()),
                        ..Default::default()
                    }],
                    volumes: Some(vec![secret_volume(VOLUME, name)]),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A service Job as the rollout reads it; `None` for a Job without our annotations. `failure`
/// replaces the Job's own failure message (the container's, read from its pods).
pub(super) fn observe(job: &Job, failure: Option<&str>, now: &Time) -> Option<ObservedJob> {
    let annotations = job.annotations();
    let service = annotations.get(SERVICE_ANNOTATION)?.clone();
    let service_hash = annotations.get(SERVICE_HASH_ANNOTATION)?.clone();
    let hosts: BTreeMap<String, JobHost> = serde_json::from_str(annotations.get(HOSTS_ANNOTATION)?).ok()?;
    let status = job.status.as_ref();
    let finished = status
        .and_then(|s| s.completion_time.clone())
        .or_else(|| {
            status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| {
                    c.iter().find(|c| c.status == "True" && matches!(c.type_.as_str(), "Complete" | "Failed"))
                })
                .and_then(|c| c.last_transition_time.clone())
        })
        .unwrap_or_else(|| now.clone());
    let outcome = match job_state(Some(job), &[]) {
        JobState::Succeeded => JobOutcome::Succeeded { at: finished },
        JobState::Failed { message } => {
            JobOutcome::Failed { message: failure.map(str::to_string).unwrap_or(message), at: finished }
        }
        JobState::Running | JobState::Absent => JobOutcome::Running,
    };
    Some(ObservedJob {
        name: job.name_any(),
        service,
        service_hash,
        hosts,
        outcome,
        created: job.metadata.creation_timestamp.clone().unwrap_or_else(|| now.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn batch(config: &str, after: &str) -> Batch {
        let ran = JobHost { config_hash: config.into(), epoch: "e".into(), after: Some(after.into()) };
        Batch {
            service: "configure-network".into(),
            service_hash: "s1".into(),
            hosts: BTreeMap::from([("c-0".to_string(), ran)]),
        }
    }

    fn spec() -> NodeSetServiceSpec {
        serde_json::from_value(
            json!({"job": {"image": "netconf:1", "command": ["apply"], "env": [{"name": "LOG", "value": "info"}]}}),
        )
        .expect("spec")
    }

    #[test]
    fn the_same_work_has_the_same_name_and_new_work_a_new_one() {
        let a = name("computes", &batch("A", ""));
        assert_eq!(a, name("computes", &batch("A", "")));
        assert_ne!(a, name("computes", &batch("B", "")));
        assert_ne!(a, name("computes", &batch("A", "0123456789abcdef")), "A again after B is a new run");
        assert!(a.starts_with("computes-configure-network-") && a.len() <= MAX_LABEL_VALUE);
        let long = name(&"n".repeat(63), &batch("A", ""));
        assert!(long.len() <= MAX_LABEL_VALUE, "{long}");
    }

    #[test]
    fn the_job_mounts_the_inventory_and_sets_the_reserved_environment() {
        let job = job("j", "computes", "computes", &spec(), &batch("A", ""));
        let job_spec = job.spec.clone().expect("spec");
        assert_eq!(job_spec.backoff_limit, Some(DEFAULT_BACKOFF_LIMIT));
        assert_eq!(job_spec.active_deadline_seconds, Some(DEFAULT_ACTIVE_DEADLINE_SECONDS));
        let pod = job_spec.template.spec.expect("pod");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let container = &pod.containers[0];
        let env: Vec<(&str, Option<&str>)> =
            container.env.iter().flatten().map(|e| (e.name.as_str(), e.value.as_deref())).collect();
        assert_eq!(
            env,
            [
                (INVENTORY_ENV, Some(INVENTORY_PATH)),
                ("FERROMETAL_NODESET", Some("computes")),
                ("FERROMETAL_SERVICE", Some("configure-network")),
                ("LOG", Some("info"))
            ]
        );
        let mounts = container.volume_mounts.clone().expect("mounts");
        assert_eq!((mounts[0].mount_path.as_str(), mounts[0].read_only), ("/var/run/ferrometal", Some(true)));
        assert_eq!(pod.volumes.expect("volumes")[0].secret.as_ref().and_then(|s| s.secret_name.as_deref()), Some("j"));
    }

    #[test]
    fn a_service_pod_is_restricted_and_gets_an_api_token_only_with_the_account_it_names() {
        let pod = |spec: &NodeSetServiceSpec| {
            job("j", "computes", "computes", spec, &batch("A", "")).spec.and_then(|s| s.template.spec).expect("pod")
        };
        let plain = pod(&spec());
        assert_eq!(plain.automount_service_account_token, Some(false), "the default account's token stays out");
        let security = plain.containers[0].security_context.clone().expect("security context");
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(security.run_as_non_root, Some(true));
        assert_eq!(security.seccomp_profile.map(|p| p.type_).as_deref(), Some("RuntimeDefault"));
        assert_eq!(security.capabilities.and_then(|c| c.drop), Some(vec!["ALL".to_string()]));
        let mut named = spec();
        named.job.service_account_name = Some("netconf".into());
        let with_account = pod(&named);
        assert_eq!(
            (with_account.service_account_name.as_deref(), with_account.automount_service_account_token),
            (Some("netconf"), Some(true))
        );
    }

    #[test]
    fn a_job_is_read_back_with_what_it_ran_and_how_it_ended() {
        let now = Time(Timestamp::from_second(100).expect("t"));
        let mut job = job("j", "computes", "computes", &spec(), &batch("A", ""));
        let seen = observe(&job, None, &now).expect("ours");
        assert_eq!(
            (seen.service.as_str(), seen.service_hash.as_str(), seen.outcome.clone()),
            ("configure-network", "s1", JobOutcome::Running)
        );
        assert_eq!(
            seen.hosts["c-0"],
            JobHost { config_hash: "A".into(), epoch: "e".into(), after: Some(String::new()) }
        );
        job.status = Some(JobStatus {
            conditions: Some(vec![JobCondition {
                type_: "Failed".into(),
                status: "True".into(),
                reason: Some("BackoffLimitExceeded".into()),
                message: Some("too many".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let seen = observe(&job, Some("container service exited with code 3: bad mtu"), &now).expect("ours");
        assert_eq!(
            seen.outcome,
            JobOutcome::Failed { message: "container service exited with code 3: bad mtu".into(), at: now.clone() }
        );
        job.metadata.annotations = None;
        assert_eq!(observe(&job, None, &now), None, "not a service Job");
    }
}
