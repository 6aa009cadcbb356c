//! The NodeSet service Jobs of a namespace, recorded from a watch for the whole scenario: the
//! NodeSet controller deletes finished Jobs beyond its history, so what exists at the end is
//! not what ran. A watch delivers every change in the apiserver's order, also of a Job that
//! lived shorter than a listing interval; after a broken watch it lists again, and a Job
//! created and deleted in that gap is not seen (the recorder counts the gaps).
//!
//! A Job says what it runs in its annotations (the controller's `operator/src/nodeset/job.rs`):
//! its service, the service's spec hash, and per host the config hash and the machine's epoch
//! it runs with. One host of one Job is a *run*.

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

use super::record::Record;

/// The Job's NodeSetService (`operator::testing::nodeset::SERVICE_ANNOTATION`).
pub const SERVICE_ANNOTATION: &str = "ferrometal.io/service";
/// The service's spec hash the Job runs.
pub const SERVICE_HASH_ANNOTATION: &str = "ferrometal.io/service-hash";
/// The Job's hosts and what each runs with, JSON (`operator::testing::nodeset::HOSTS_ANNOTATION`).
pub const HOSTS_ANNOTATION: &str = "ferrometal.io/hosts";

/// What one host of a Job runs with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct RunWith {
    #[serde(rename = "configHash", default)]
    pub config_hash: String,
    /// The machine's provisioning (its BareMetalHost's uid, and the reprovision token acted
    /// on): a reprovisioned machine runs everything again, on purpose.
    #[serde(default)]
    pub epoch: String,
}

/// How a Job ended, as far as the watch showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum JobEnd {
    #[default]
    Running,
    /// Complete; `at` is its `completionTime` (seconds), `seen` the watch event that showed it.
    Succeeded {
        at: Option<jiff::Timestamp>,
        seen: u64,
    },
    Failed {
        seen: u64,
    },
}

/// One service Job, by what it runs and when.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceJob {
    pub name: String,
    /// The NodeSet label's value.
    pub nodeset: String,
    pub service: String,
    pub service_hash: String,
    pub hosts: BTreeMap<String, RunWith>,
    /// `metadata.creationTimestamp` (seconds).
    pub created: Option<jiff::Timestamp>,
    /// The watch event that first showed it: events come in the apiserver's order.
    pub seen: u64,
    /// When the recorder first saw it, from its start.
    pub at: Duration,
    pub end: JobEnd,
    /// The watch event that showed it deleted.
    pub deleted: Option<u64>,
}

impl ServiceJob {
    /// The watch event after which the Job no longer ran (finished or deleted).
    pub fn stopped(&self) -> Option<u64> {
        let ended = match self.end {
            JobEnd::Running => None,
            JobEnd::Succeeded { seen, .. } | JobEnd::Failed { seen } => Some(seen),
        };
        match (ended, self.deleted) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn timestamp(time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<jiff::Timestamp> {
    time.and_then(|t| t.0.to_string().parse().ok())
}

/// The service Job of `job`, seen at event `seen`; `None` for a Job without the annotations.
pub fn service_job(job: &Job, seen: u64, at: Duration) -> Option<ServiceJob> {
    let annotations = job.annotations();
    let hosts = serde_json::from_str(annotations.get(HOSTS_ANNOTATION)?).ok()?;
    Some(ServiceJob {
        name: job.name_any(),
        nodeset: job.labels().get(crds::nodeset::NODESET_LABEL).cloned().unwrap_or_default(),
        service: annotations.get(SERVICE_ANNOTATION)?.clone(),
        service_hash: annotations.get(SERVICE_HASH_ANNOTATION)?.clone(),
        hosts,
        created: timestamp(job.metadata.creation_timestamp.as_ref()),
        seen,
        at,
        end: end_of(job, seen),
        deleted: None,
    })
}

/// How `job` stands, as of event `seen`.
fn end_of(job: &Job, seen: u64) -> JobEnd {
    let status = job.status.as_ref();
    let condition = |kind: &str| {
        status.and_then(|s| s.conditions.as_ref()).into_iter().flatten().find(|c| c.type_ == kind && c.status == "True")
    };
    if let Some(complete) = condition("Complete") {
        let at = status.and_then(|s| s.completion_time.as_ref()).or(complete.last_transition_time.as_ref());
        JobEnd::Succeeded { at: timestamp(at), seen }
    } else if condition("Failed").is_some() {
        JobEnd::Failed { seen }
    } else {
        JobEnd::Running
    }
}

/// Adds one watch event's view of `job` to the record: the first sight, and the first end.
pub fn saw_job(record: &mut Record, job: &Job, at: Duration) {
    record.job_events += 1;
    let seen = record.job_events;
    let Some(uid) = job.uid() else { return };
    match record.jobs.get_mut(&uid) {
        Some(known) => {
            if known.end == JobEnd::Running {
                known.end = end_of(job, seen);
            }
        }
        None => {
            if let Some(new) = service_job(job, seen, at) {
                record.jobs.insert(uid, new);
            }
        }
    }
}

/// Adds a deletion to the record.
pub fn saw_deleted(record: &mut Record, job: &Job) {
    record.job_events += 1;
    let seen = record.job_events;
    if let Some(known) = job.uid().and_then(|uid| record.jobs.get_mut(&uid))
        && known.deleted.is_none()
    {
        known.deleted = Some(seen);
    }
}

/// Watches the service Jobs (labelled with a NodeSet) of `namespace` into `record`.
pub fn watch(
    client: Client,
    namespace: &str,
    record: Arc<Mutex<Record>>,
    start: tokio::time::Instant,
) -> JoinHandle<()> {
    let jobs: Api<Job> = Api::namespaced(client, namespace);
    let config = watcher::Config::default().labels(crds::nodeset::NODESET_LABEL);
    tokio::spawn(async move {
        let mut events = watcher::watcher(jobs, config).boxed();
        while let Some(event) = events.next().await {
            let at = start.elapsed();
            let Ok(mut record) = record.lock() else { return };
            match event {
                Ok(Event::Apply(job) | Event::InitApply(job)) => saw_job(&mut record, &job, at),
                Ok(Event::Delete(job)) => saw_deleted(&mut record, &job),
                Ok(Event::Init) => record.job_relists += 1,
                Ok(Event::InitDone) => {}
                Err(_) => {
                    drop(record);
                    // The watcher lists again on its next poll; not at once.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(uid: &str, status: serde_json::Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "computes-configure-abc", "uid": uid, "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {"ferrometal.io/nodeset": "computes"},
                "annotations": {"ferrometal.io/service": "configure", "ferrometal.io/service-hash": "s1",
                    "ferrometal.io/hosts": r#"{"c-0":{"configHash":"A","epoch":"e1"}}"#}},
            "status": status,
        }))
        .expect("a Job")
    }

    #[test]
    fn a_job_is_recorded_once_with_what_it_runs_and_its_first_end() {
        let mut record = Record::default();
        saw_job(&mut record, &job("u1", json!({})), Duration::from_secs(1));
        let done = json!({"completionTime": "2026-12-01T10:00:03Z",
            "conditions": [{"type": "Complete", "status": "True"}]});
        saw_job(&mut record, &job("u1", done.clone()), Duration::from_secs(4));
        saw_job(&mut record, &job("u1", done), Duration::from_secs(5));
        saw_deleted(&mut record, &job("u1", json!({})));
        let seen = &record.jobs["u1"];
        assert_eq!(
            (seen.service.as_str(), seen.service_hash.as_str(), seen.nodeset.as_str(), seen.seen),
            ("configure", "s1", "computes", 1)
        );
        assert_eq!(seen.hosts["c-0"], RunWith { config_hash: "A".into(), epoch: "e1".into() });
        assert_eq!(seen.end, JobEnd::Succeeded { at: "2026-12-01T10:00:03Z".parse().ok(), seen: 2 });
        assert_eq!((seen.deleted, seen.stopped()), (Some(4), Some(2)));
        assert_eq!(seen.created, "2026-12-01T10:00:00Z".parse().ok());
    }

    #[test]
    fn a_job_without_the_controller_annotations_is_not_a_service_job() {
        let mut plain = job("u2", json!({}));
        plain.metadata.annotations = None;
        let mut record = Record::default();
        saw_job(&mut record, &plain, Duration::ZERO);
        assert!(record.jobs.is_empty());
        let failed = job("u3", json!({"conditions": [{"type": "Failed", "status": "True"}]}));
        saw_job(&mut record, &failed, Duration::ZERO);
        assert_eq!(record.jobs["u3"].end, JobEnd::Failed { seen: 2 });
    }
}
