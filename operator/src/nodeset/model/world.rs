//! The simulated world: BareMetalHosts with resourceVersions and the field manager's applied
//! fields, a baremetal-operator that takes one step at a time, the Jobs the plans created with
//! the outcomes the test chooses, and the NodeSet with its stored status.

use super::fixtures::{self, MACHINES, NAMESPACE};
use super::ssa::{self, Fields, Path};
use crate::nodeset::consumer::Purpose;
use crate::nodeset::facts::Facts;
use crate::nodeset::job;
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{HOSTNAME_LABEL, NodeSet};
use crds::nodesetservice::NodeSetService;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One BareMetalHost as the apiserver stores it.
#[derive(Clone, Debug)]
pub(super) struct Bmh {
    pub value: Value,
    pub rv: u64,
    /// Who owns which field.
    pub fields: Fields,
}

impl Bmh {
    pub(super) fn typed(&self) -> Arc<BareMetalHost> {
        let mut value = self.value.clone();
        value["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        Arc::new(serde_json::from_value(value).expect("a BareMetalHost"))
    }

    pub(super) fn has_image(&self) -> bool {
        self.value.pointer("/spec/image/url").and_then(Value::as_str).is_some_and(|u| !u.is_empty())
    }

    pub(super) fn state(&self) -> &str {
        self.value.pointer("/status/provisioning/state").and_then(Value::as_str).unwrap_or_default()
    }

    pub(super) fn hostname_label(&self) -> Option<String> {
        self.value
            .pointer("/metadata/labels")
            .and_then(|l| l.get(HOSTNAME_LABEL))
            .and_then(Value::as_str)
            .map(Into::into)
    }

    fn set_state(&mut self, state: &str) {
        self.value["status"]["provisioning"]["state"] = Value::String(state.into());
        self.rv += 1;
    }
}

/// How a Job ends, at which second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Running,
    Succeeded(i64),
    Failed(i64),
}

#[derive(Clone, Debug)]
pub(super) struct SimJob {
    pub job: Job,
    pub outcome: Outcome,
}

/// What happened in the world, for the oracle to judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// A write removed a machine's image: which host it named, what the machine's hostname
    /// label said before the write, and the write's purpose.
    ImageLost { bmh: String, hostname: String, label: Option<String>, purpose: Purpose },
    /// A machine got an image: a new provisioning of it.
    ImageSet { bmh: String },
    /// baremetal-operator took a machine out of `provisioned`.
    LeftProvisioned { bmh: String },
}

/// A write the apiserver refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum WriteError {
    Conflict,
    NotFound,
}

pub(super) struct World {
    pub bmhs: BTreeMap<String, Bmh>,
    pub nodeset: NodeSet,
    pub incarnation: u32,
    pub services: BTreeMap<String, Arc<NodeSetService>>,
    pub jobs: BTreeMap<String, SimJob>,
    /// Seconds since the start.
    pub clock: i64,
    pub events: Vec<Event>,
    /// The NodeSet's record of completions (the ConfigMaps outliving it), by name.
    pub records: BTreeMap<String, crate::nodeset::record::Completions>,
    /// The Secrets the NodeSet's variablesFrom and its services' Jobs read, with their content.
    pub sources: crds::nodeset::Sources,
}

impl World {
    pub(super) fn new(pre_provisioned: bool, hosts: usize) -> Self {
        let bmhs = (0..MACHINES)
            .map(|i| {
                // Its creator owns what it wrote.
                let value = fixtures::machine(i);
                let fields = Fields { others: ssa::leaves(&value), ..Fields::default() };
                (format!("server-{i}"), Bmh { value, rv: 1, fields })
            })
            .collect();
        let services = fixtures::SERVICES.iter().map(|s| (s.to_string(), Arc::new(fixtures::service(s, 1)))).collect();
        World {
            bmhs,
            nodeset: fixtures::nodeset(&fixtures::spec(pre_provisioned, hosts), 0),
            incarnation: 0,
            services,
            jobs: BTreeMap::new(),
            clock: 0,
            events: Vec::new(),
            records: BTreeMap::new(),
            sources: fixtures::sources(0),
        }
    }

    pub(super) fn now(&self) -> Time {
        Time(Timestamp::from_second(1_000_000 + self.clock).expect("time"))
    }

    /// What a reconcile reads, straight from the world (the caches are never behind here).
    pub(super) fn facts(&self) -> Facts {
        let listed: BTreeSet<&String> = self.nodeset.spec.services.iter().flatten().collect();
        let now = self.now();
        Facts {
            bmh_namespace: NAMESPACE.into(),
            hosts: if self.nodeset.spec.pre_provisioned() {
                Vec::new()
            } else {
                self.bmhs.values().map(Bmh::typed).collect()
            },
            services: self
                .services
                .iter()
                .filter(|(n, _)| listed.contains(n))
                .map(|(n, s)| (n.clone(), s.clone()))
                .collect(),
            jobs: self.jobs.values().filter_map(|j| job::observe(&j.job, None, &now)).collect(),
            records: self.records.clone(),
            sources: self.sources.clone(),
            ..Facts::default()
        }
    }

    /// Writes `body` on `host` as "ferrometal" (server-side apply, or a merge patch), guarded
    /// by the resourceVersion the body carries; records image changes as events.
    pub(super) fn write(
        &mut self,
        host: &str,
        hostname: &str,
        purpose: Purpose,
        apply: bool,
        body: &Value,
    ) -> Result<Arc<BareMetalHost>, WriteError> {
        let bmh = self.bmhs.get_mut(host).ok_or(WriteError::NotFound)?;
        if let Some(rv) = body.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            && rv != bmh.rv.to_string()
        {
            return Err(WriteError::Conflict);
        }
        let (had_image, label, before) = (bmh.has_image(), bmh.hostname_label(), bmh.value.clone());
        if apply {
            ssa::apply(&mut bmh.value, &mut bmh.fields, body);
        } else {
            ssa::merge(&mut bmh.value, &mut bmh.fields, body);
        }
        if bmh.value != before {
            bmh.rv += 1;
        }
        match (had_image, bmh.has_image()) {
            (true, false) => {
                self.events.push(Event::ImageLost { bmh: host.into(), hostname: hostname.into(), label, purpose })
            }
            (false, true) => self.events.push(Event::ImageSet { bmh: host.into() }),
            _ => {}
        }
        Ok(self.bmhs[host].typed())
    }

    /// A user's update removing a field of a BareMetalHost.
    pub(super) fn user_remove(&mut self, host: &str, path: &[&str]) {
        if let Some(bmh) = self.bmhs.get_mut(host) {
            let path: Path = path.iter().map(|s| s.to_string()).collect();
            if ssa::get(&bmh.value, &path).is_some() {
                ssa::user_remove(&mut bmh.value, &mut bmh.fields, &path);
                bmh.rv += 1;
            }
        }
    }

    /// baremetal-operator's step on every machine; true when one moved.
    pub(super) fn bmo_step(&mut self) -> bool {
        let mut moved = false;
        for (name, bmh) in self.bmhs.iter_mut() {
            let next = match (bmh.state(), bmh.has_image()) {
                ("available", true) => "provisioning",
                ("provisioning", true) => "provisioned",
                ("provisioning", false) | ("provisioned", false) => "deprovisioning",
                ("deprovisioning", _) => "available",
                _ => continue,
            };
            if bmh.state() == "provisioned" {
                self.events.push(Event::LeftProvisioned { bmh: name.clone() });
            }
            bmh.set_state(next);
            moved = true;
        }
        moved
    }

    /// Names of the running Jobs, in order.
    pub(super) fn running(&self) -> Vec<String> {
        self.jobs.iter().filter(|(_, j)| j.outcome == Outcome::Running).map(|(n, _)| n.clone()).collect()
    }

    /// Ends the Job `name`.
    pub(super) fn finish(&mut self, name: &str, succeed: bool) {
        let now = self.now();
        let Some(sim) = self.jobs.get_mut(name) else { return };
        let (kind, outcome) = if succeed {
            ("Complete", Outcome::Succeeded(self.clock))
        } else {
            ("Failed", Outcome::Failed(self.clock))
        };
        sim.outcome = outcome;
        sim.job.status = Some(JobStatus {
            completion_time: succeed.then(|| now.clone()),
            conditions: Some(vec![JobCondition {
                type_: kind.into(),
                status: "True".into(),
                message: Some(format!("{kind} by the model")),
                last_transition_time: Some(now),
                ..Default::default()
            }]),
            ..Default::default()
        });
    }

    /// Creates a Job unless one of its name exists (the ledger's `create_once`).
    pub(super) fn create_job(&mut self, mut job: Job) -> bool {
        let name = job.metadata.name.clone().unwrap_or_default();
        if self.jobs.contains_key(&name) {
            return false;
        }
        job.metadata.creation_timestamp = Some(self.now());
        self.jobs.insert(name, SimJob { job, outcome: Outcome::Running });
        true
    }
}
