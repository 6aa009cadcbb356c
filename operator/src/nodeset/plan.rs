//! The plan of one reconcile (pure): from the NodeSet and what the caches show, every write to
//! make. Claims first, then each claimed machine's decision, then the rollout of services on
//! the machines that run, then the writes that record it all on the BareMetalHosts.

use super::claims::{ClaimPlan, Owner, plan_claims};
use super::consumer::{
    Body, Consumer, HostWrite, Purpose, apply_body, deprovision_patch, detach_patch, live_provisioning_fields,
    provisioning_fields, recorded_completions, reprovision_patch,
};
use super::facts::Facts;
use super::guard;
use super::inventory::{InventoryHost, inventory};
use super::job;
use super::lost;
use super::machine::{Action, Decision, decide, has_image, same_epoch};
use super::network_data::network_data;
use super::record;
use super::rollout::{self, HostWork, RolloutPlan, Service};
use super::upgrade::Upgrade;
use super::validate::Findings;
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{
    ApprovedService, CompletedService, DeletionPolicy, EffectiveHostConfig, HostStatus, NodeSet, RolloutStatus,
    effective_host_config_with, host_config_hash_with, nodeset_config_hash_with,
};
use crds::nodesetservice::{missing_sources, run_hash};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Finished Jobs kept per service by default.
pub const DEFAULT_JOB_HISTORY: usize = 3;

/// Where one host of the NodeSet stands.
#[derive(Clone, Debug, PartialEq)]
pub enum HostPhase {
    /// No BareMetalHost, and why.
    Unclaimed(String),
    /// A claim is written in this reconcile.
    Claiming,
    /// A claimed machine, and what was decided for it.
    Machine(Decision),
    /// Its claimed machine dropped out of view, and why: held, no new claim (`lost`).
    Lost(String),
    /// A host of a preProvisioned NodeSet: always running.
    PreProvisioned,
}

/// One host of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPlan {
    pub phase: HostPhase,
    /// The BareMetalHost backing it (claimed, or being claimed).
    pub bmh: Option<Arc<BareMetalHost>>,
    pub config: EffectiveHostConfig,
    pub desired: String,
    /// Services completed, after this reconcile's records.
    pub completed: Vec<CompletedService>,
    /// At its desired configuration: every service done for it.
    pub configured: bool,
    /// The configuration a rollout approved for it (`rollout::acknowledge`).
    pub approved: Option<String>,
    /// Its desired configuration waits for a new Manual rollout token.
    pub pending: bool,
    /// It runs the configuration approved for it: its desired one, or, while that is pending,
    /// everything approved for it before.
    pub at_approved: bool,
    pub message: Option<String>,
}

impl HostPlan {
    /// Services may run on the host.
    pub fn runs_services(&self) -> bool {
        match &self.phase {
            HostPhase::PreProvisioned => true,
            HostPhase::Machine(d) => d.phase.runs_services(),
            _ => false,
        }
    }
}

/// A host leaving the NodeSet (its key was removed, or the NodeSet is deleted).
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    pub hostname: String,
    pub bmh: String,
    pub policy: DeletionPolicy,
    /// Held back: more hosts than `maxUnavailable` would be deprovisioned at once (`guard`).
    pub held: bool,
}

impl Release {
    /// What the `HostReleased` Event says: under Retain nothing was written at all.
    pub fn note(&self) -> String {
        let (hostname, bmh) = (&self.hostname, &self.bmh);
        match self.policy {
            DeletionPolicy::Retain => format!("{hostname} left BareMetalHost {bmh} as it is, still claimed (Retain)"),
            DeletionPolicy::Detach => format!("{hostname} detached BareMetalHost {bmh} (Detach)"),
            DeletionPolicy::Deprovision => {
                format!("{hostname} released BareMetalHost {bmh} to be deprovisioned (Deprovision)")
            }
        }
    }
}

/// A Job to run, with its inventory Secret and the generated network data it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRun {
    pub secret: Secret,
    pub job: Job,
}

/// Generated first-boot network data, written before the machine's image.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkData {
    pub name: String,
    pub namespace: String,
    /// The BareMetalHost that owns it.
    pub owner: Arc<BareMetalHost>,
    pub content: serde_json::Value,
}

/// Everything one reconcile does.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub config_hash: String,
    pub rollout_status: RolloutStatus,
    pub hosts: BTreeMap<String, HostPlan>,
    pub network_data: Vec<NetworkData>,
    /// BareMetalHost writes: claims first.
    pub writes: Vec<HostWrite>,
    pub releases: Vec<Release>,
    pub jobs: Vec<JobRun>,
    /// Observed Jobs (and their Secrets) that stay.
    pub keep: Vec<String>,
    /// Observed Jobs to delete.
    pub prune: Vec<String>,
    /// The shards of the NodeSet's record of completions that changed (`record`).
    pub records: Vec<ConfigMap>,
    pub rollout: RolloutPlan,
}

/// The generated network data Secret of a host: readable, and unique to the NodeSet (its
/// namespace and name) and the host, so that NodeSets of two namespaces sharing a host pool,
/// or `a-b`/`c` and `a`/`b-c`, never name the same Secret.
pub fn network_data_name(owner: &Owner, hostname: &str) -> String {
    use sha2::{Digest, Sha256};
    let identity = format!("{}\0{}\0{hostname}", owner.namespace, owner.name);
    let digest = hex::encode(&Sha256::digest(identity.as_bytes())[..4]);
    crate::kit::names::bounded(&format!("{}-{hostname}-network-data-{digest}", owner.label), 253)
}

/// Plans the reconcile of a NodeSet that is not being deleted.
pub fn plan(nodeset: &NodeSet, facts: &Facts, findings: &Findings, history: usize, now: &Time) -> Plan {
    let owner = Owner::of(nodeset);
    let spec = &nodeset.spec;
    let previous: BTreeMap<String, HostStatus> =
        nodeset.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default();
    let services = listed_services(spec, facts);
    let upgrade = Upgrade::of(facts);
    let (config_hash, rollout_status, approve_all) = acknowledged(nodeset, &services, &facts.sources, &upgrade, now);
    let mut plan = Plan { config_hash, rollout_status, ..Plan::default() };
    let recorded = record::merged(&facts.records, &owner);
    let nodes = spec.nodes.clone().unwrap_or_default();
    for (hostname, section) in &nodes {
        let config = effective_host_config_with(hostname, spec.node_template.as_ref(), Some(section), &facts.sources);
        let desired = host_config_hash_with(hostname, spec.node_template.as_ref(), Some(section), &facts.sources);
        let phase =
            if spec.pre_provisioned() { HostPhase::PreProvisioned } else { HostPhase::Unclaimed(String::new()) };
        // A preProvisioned host's completions: the record that outlives the NodeSet, else
        // what status held before the record did (an operator upgrade).
        let completed = if spec.pre_provisioned() {
            recorded
                .get(hostname)
                // A machine's entry (a NodeSet of that name that claimed BareMetalHosts) is not
                // what ran on a preProvisioned host.
                .filter(|e| e.machine.is_none())
                .map(|e| e.completed.clone())
                .filter(|c| !c.is_empty())
                .or_else(|| previous.get(hostname).and_then(|p| p.services_completed.clone()))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        // What a rollout approved for the host: what it asks now for a new approval, else what
        // was approved for it before (nothing for a host new to the NodeSet).
        let approved = if approve_all {
            Some(desired.clone())
        } else {
            previous.get(hostname).and_then(|p| p.approved_config_hash.clone())
        };
        plan.hosts.insert(
            hostname.clone(),
            HostPlan {
                phase,
                bmh: None,
                config,
                desired,
                completed,
                configured: false,
                approved,
                pending: false,
                at_approved: false,
                message: None,
            },
        );
    }
    if findings.blocks() {
        return plan;
    }

    let claims = if spec.pre_provisioned() {
        ClaimPlan::default()
    } else {
        let held = lost::lost_claims(&owner, spec, &previous, &facts.hosts);
        for (hostname, why) in &held {
            if let Some(entry) = plan.hosts.get_mut(hostname) {
                entry.phase = HostPhase::Lost(why.clone());
            }
        }
        let preferred =
            previous.iter().filter_map(|(h, s)| s.bmh_ref.as_ref().map(|r| (h.clone(), r.name.clone()))).collect();
        plan_claims(&owner, &lost::without(spec, &held), &facts.hosts, &facts.hardware, &preferred, &facts.lost)
    };
    for (hostname, host) in &claims.new {
        if let (Some(entry), Some(body)) =
            (plan.hosts.get_mut(hostname), apply_body(&owner, host, &Consumer::claim(hostname, spec), Purpose::Claim))
        {
            entry.phase = HostPhase::Claiming;
            entry.bmh = Some(host.clone());
            plan.writes.push(write(host, hostname, Purpose::Claim, Body::Apply(body)));
        }
    }
    for (hostname, why) in &claims.unmatched {
        if let Some(entry) = plan.hosts.get_mut(hostname) {
            entry.phase = HostPhase::Unclaimed(why.clone());
        }
    }
    for (hostname, host) in &claims.claimed {
        let Some(entry) = plan.hosts.get_mut(hostname) else { continue };
        let decision = decide(hostname, host, spec, previous.get(hostname));
        entry.completed = match decision.action {
            Action::Reprovision { .. } => Vec::new(),
            // The machine's record, else (someone removed it) the NodeSet's record of the same
            // machine in the same epoch, else what status held before the record did: a
            // runOnce service never runs twice.
            _ => Some(recorded_completions(host))
                .filter(|c| !c.is_empty())
                .or_else(|| {
                    recorded
                        .get(hostname)
                        .filter(|e| {
                            has_image(host) && e.machine == host.uid() && e.epoch.as_ref() == Some(&decision.epoch)
                        })
                        .map(|e| e.completed.clone())
                })
                .or_else(|| same_epoch(host, previous.get(hostname)).and_then(|p| p.services_completed.clone()))
                .unwrap_or_default(),
        };
        entry.message = decision.message.clone();
        if let Some(others) = claims.duplicates.get(hostname) {
            entry.message = Some(format!(
                "BareMetalHosts {} also carry this host's labels; {} is used",
                others.join(", "),
                host.name_any()
            ));
        }
        entry.bmh = Some(host.clone());
        entry.phase = HostPhase::Machine(decision);
    }

    // The rollout, on the hosts whose machines run.
    let work: Vec<HostWork> = plan
        .hosts
        .iter()
        .map(|(name, host)| {
            let before = previous.get(name);
            HostWork {
                name: name.clone(),
                desired: host.desired.clone(),
                epoch: match &host.phase {
                    HostPhase::Machine(d) => d.epoch.clone(),
                    _ => String::new(),
                },
                completed: upgrade.completions(&host.completed),
                ready: host.runs_services(),
                configured_before: !host.completed.is_empty()
                    && before.is_none_or(|b| b.deployed_config_hash.is_some()),
                approved: host.approved.clone(),
            }
        })
        .collect();
    let max_unavailable =
        rollout::max_unavailable(spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref()), plan.hosts.len());
    let approved = plan.rollout_status.approved_services.as_deref();
    plan.rollout = rollout::plan(&work, &services, &facts.jobs, approved, max_unavailable, history);
    for (name, host) in plan.hosts.iter_mut() {
        if let Some(completed) = plan.rollout.completed.get(name) {
            host.completed = completed.clone();
        }
        host.configured = plan.rollout.configured.contains(name);
        host.pending = plan.rollout.pending.contains(name);
        host.at_approved = host.configured || plan.rollout.at_approved.contains(name);
    }

    // What each claimed machine gets written.
    for (hostname, host) in &claims.claimed {
        let Some(entry) = plan.hosts.get(hostname) else { continue };
        let HostPhase::Machine(decision) = &entry.phase else { continue };
        let cleaning = spec
            .baremetal_set_template
            .as_ref()
            .and_then(|t| t.automated_cleaning_mode)
            .and_then(|m| serde_json::to_value(m).ok());
        match &decision.action {
            Action::Reprovision { token } => {
                plan.writes.push(write(
                    host,
                    hostname,
                    Purpose::Reprovision,
                    Body::Merge(reprovision_patch(host, token)),
                ));
            }
            Action::Provision => {
                let generated = generated_network_data(&owner, spec, entry, facts, host, hostname);
                let generated_name = generated.as_ref().map(|g| g.name.clone());
                plan.network_data.extend(generated);
                let consumer = Consumer {
                    hostname: hostname.clone(),
                    cleaning,
                    provisioned_hash: decision.provisioned_hash.clone(),
                    completed: entry.completed.clone(),
                    provisioning: Some(provisioning_fields(
                        hostname,
                        spec,
                        &facts.bmh_namespace,
                        generated_name.as_deref(),
                    )),
                };
                if let Some(body) = apply_body(&owner, host, &consumer, Purpose::Provision) {
                    plan.writes.push(write(host, hostname, Purpose::Provision, Body::Apply(body)));
                }
            }
            Action::Keep => {
                let consumer = Consumer {
                    hostname: hostname.clone(),
                    cleaning,
                    provisioned_hash: decision.provisioned_hash.clone(),
                    completed: entry.completed.clone(),
                    // Only what this NodeSet provisioned is its to apply, and as it is now.
                    provisioning: decision.provisioned_hash.as_ref().map(|_| live_provisioning_fields(host)),
                };
                if let Some(body) = apply_body(&owner, host, &consumer, Purpose::Update) {
                    plan.writes.push(write(host, hostname, Purpose::Update, Body::Apply(body)));
                }
            }
        }
    }

    // Hosts removed from spec.nodes leave per the deletion policy, once.
    let removed: Vec<(&str, &Arc<BareMetalHost>)> =
        claims.removed.iter().filter(|(h, _)| previous.contains_key(*h)).map(|(h, b)| (h.as_str(), b)).collect();
    let total = plan.hosts.len().saturating_add(removed.len());
    plan.release_all(nodeset, &removed, total);

    plan.jobs_for(nodeset, &owner, facts);
    plan.record(nodeset, &owner, &recorded, facts);
    plan
}

/// `spec.services` in order, `None` where no such NodeSetService exists or its Job needs a
/// Secret or ConfigMap that does not (it waits: nothing new runs). A service's hash counts the
/// content of what its Job reads (`run_hash`), so a content change reruns it like an edit.
fn listed_services(spec: &crds::nodeset::NodeSetSpec, facts: &Facts) -> Vec<Option<Service>> {
    spec.services
        .iter()
        .flatten()
        .map(|name| {
            facts.services.get(name).filter(|s| missing_sources(&s.spec, &facts.sources).is_empty()).map(|s| Service {
                name: name.clone(),
                run_once: s.spec.run_once.unwrap_or(false),
                hash: run_hash(&s.spec, &facts.sources),
            })
        })
        .collect()
}

/// The NodeSet's hash (the hosts' configurations, the service list and every listed service's
/// spec), the rollout's record with the services it approved, and whether every host's
/// configuration is approved as it is now (`rollout::acknowledge`).
fn acknowledged(
    nodeset: &NodeSet,
    services: &[Option<Service>],
    sources: &crds::nodeset::Sources,
    upgrade: &Upgrade,
    now: &Time,
) -> (String, RolloutStatus, bool) {
    let spec = &nodeset.spec;
    let config_hash = nodeset_config_hash_with(spec, sources);
    let listed: Vec<ApprovedService> = spec
        .services
        .iter()
        .flatten()
        .zip(services)
        .map(|(name, s)| ApprovedService { name: name.clone(), service_hash: s.as_ref().map(|s| s.hash.clone()) })
        .collect();
    let hashes: Vec<(String, Option<String>)> =
        listed.iter().map(|s| (s.name.clone(), s.service_hash.clone())).collect();
    let gated = rollout::gated_hash(&config_hash, &hashes);
    let mut previous = migrated(nodeset, &config_hash, &gated);
    if let Some(approved) = previous.as_mut().and_then(|p| p.approved_services.as_mut()) {
        upgrade.approvals(approved);
    }
    let (status, approve_all) = rollout::acknowledge(spec.rollout.as_ref(), previous.as_ref(), &gated, &listed, now);
    (gated, status, approve_all)
}

/// The rollout status as `acknowledge` reads it: one recorded by an operator that gated on the
/// config hash alone counts as having acknowledged the services as they are now, so an upgrade
/// of the operator neither starts a rollout nor holds a Manual NodeSet back.
fn migrated(nodeset: &NodeSet, config_hash: &str, gated: &str) -> Option<RolloutStatus> {
    let mut status = nodeset.status.as_ref()?.rollout.clone()?;
    if status.config_hash.as_deref() == Some(config_hash) {
        status.config_hash = Some(gated.to_string());
    }
    Some(status)
}

fn write(host: &BareMetalHost, hostname: &str, purpose: Purpose, body: Body) -> HostWrite {
    HostWrite {
        host: host.name_any(),
        namespace: host.namespace().unwrap_or_default(),
        hostname: hostname.to_string(),
        purpose,
        body,
    }
}

fn generated_network_data(
    owner: &Owner,
    spec: &crds::nodeset::NodeSetSpec,
    entry: &HostPlan,
    facts: &Facts,
    host: &Arc<BareMetalHost>,
    hostname: &str,
) -> Option<NetworkData> {
    let template = spec.baremetal_set_template.as_ref()?;
    let section = spec.nodes.as_ref().and_then(|n| n.get(hostname));
    if template.network_data.is_some() || section.is_some_and(|s| s.network_data.is_some()) {
        return None;
    }
    let content = network_data(&entry.config, facts.hardware.get(&host.name_any()))?;
    Some(NetworkData {
        name: network_data_name(owner, hostname),
        namespace: facts.bmh_namespace.clone(),
        owner: host.clone(),
        content,
    })
}

impl Consumer {
    /// What a claim writes: labels and consumerRef, and the cleaning mode.
    pub fn claim(hostname: &str, spec: &crds::nodeset::NodeSetSpec) -> Self {
        Consumer {
            hostname: hostname.to_string(),
            cleaning: spec
                .baremetal_set_template
                .as_ref()
                .and_then(|t| t.automated_cleaning_mode)
                .and_then(|m| serde_json::to_value(m).ok()),
            provisioned_hash: None,
            completed: Vec::new(),
            provisioning: None,
        }
    }
}

impl Plan {
    /// Releases `host` (claimed for `hostname`) per `policy`.
    pub fn release(&mut self, host: &BareMetalHost, hostname: &str, policy: DeletionPolicy) {
        match policy {
            DeletionPolicy::Retain => {}
            DeletionPolicy::Detach => {
                if let Some(patch) = detach_patch(host) {
                    self.writes.push(write(host, hostname, Purpose::Detach, Body::Merge(patch)));
                }
            }
            DeletionPolicy::Deprovision => {
                self.writes.push(write(host, hostname, Purpose::Deprovision, Body::Merge(deprovision_patch(host))));
            }
        }
        self.releases.push(Release { hostname: hostname.to_string(), bmh: host.name_any(), policy, held: false });
    }

    /// Releases `leaving` per the NodeSet's release policy; under Deprovision, more than
    /// `maxUnavailable` of `total` at once are held for a confirmation (`guard`).
    fn release_all(&mut self, nodeset: &NodeSet, leaving: &[(&str, &Arc<BareMetalHost>)], total: usize) {
        let policy = release_policy(nodeset);
        let held = match policy {
            DeletionPolicy::Deprovision => {
                guard::held(nodeset, &leaving.iter().map(|(h, _)| h.to_string()).collect::<Vec<_>>(), total)
            }
            _ => Vec::new(),
        };
        for (hostname, host) in leaving {
            if held.iter().any(|h| h == hostname) {
                let bmh = host.name_any();
                self.releases.push(Release { hostname: hostname.to_string(), bmh, policy, held: true });
            } else {
                self.release(host, hostname, policy);
            }
        }
    }

    /// The record's shards to write after this plan: what ran on each host, and the entries
    /// of removed hosts whose machines stay (Retain, or held for a confirmation).
    fn record(&mut self, nodeset: &NodeSet, owner: &Owner, recorded: &record::Completions, facts: &Facts) {
        let known = self
            .hosts
            .iter()
            .map(|(hostname, host)| {
                let entry = |machine: Option<String>, epoch: Option<String>| {
                    record::Known::Ran(record::Entry { machine, epoch, completed: host.completed.clone() })
                };
                let known = match &host.phase {
                    HostPhase::PreProvisioned => entry(None, None),
                    HostPhase::Machine(d) if !matches!(d.action, Action::Reprovision { .. }) => {
                        entry(host.bmh.as_ref().and_then(|b| b.uid()), Some(d.epoch.clone()))
                    }
                    _ => record::Known::Unknown,
                };
                (hostname.clone(), known)
            })
            .collect();
        let retain = release_policy(nodeset) == DeletionPolicy::Retain;
        let held = self.held();
        // A removed host's machine that still carries this NodeSet's claim (removed under
        // Retain, whatever the policy is now) keeps its entry: it runs, and may come back.
        let still_claimed: BTreeSet<(&str, String)> =
            facts.hosts.iter().filter_map(|h| Some((owner.hostname_of(h)?, h.uid()?))).collect();
        let next = record::after(recorded, known, |hostname, entry| {
            retain
                || held.iter().any(|h| h == hostname)
                || entry.machine.as_ref().is_some_and(|uid| still_claimed.contains(&(hostname, uid.clone())))
        });
        self.records = record::writes(owner, &next, &facts.records);
    }

    /// The hosts held back for a confirmation.
    pub fn held(&self) -> Vec<String> {
        self.releases.iter().filter(|r| r.held).map(|r| r.hostname.clone()).collect()
    }

    fn jobs_for(&mut self, nodeset: &NodeSet, owner: &Owner, facts: &Facts) {
        let pruned: BTreeSet<&String> = self.rollout.prunable.iter().collect();
        self.keep = facts.jobs.iter().map(|j| j.name.clone()).filter(|n| !pruned.contains(n)).collect();
        self.prune = self.rollout.prunable.clone();
        for batch in &self.rollout.batches {
            let Some(service) = facts.services.get(&batch.service) else { continue };
            let name = job::name(&owner.label, batch);
            let hosts: Vec<InventoryHost<'_>> = batch
                .hosts
                .keys()
                .filter_map(|h| self.hosts.get(h))
                .map(|h| InventoryHost {
                    config: &h.config,
                    config_hash: &h.desired,
                    bmh: h
                        .bmh
                        .as_ref()
                        .map(|b| (b.metadata.name.as_deref().unwrap_or_default(), facts.bmh_namespace.as_str())),
                })
                .collect();
            let content = inventory(&owner.name, &owner.namespace, &batch.service, &self.config_hash, &hosts);
            self.jobs.push(JobRun {
                secret: job::inventory_secret(&name, &owner.label, &batch.service, &content),
                job: job::job(&name, &nodeset.name_any(), &owner.label, &service.spec, batch),
            });
        }
    }
}

/// The policy hosts leave under: the less destructive of the one in force now and the one status
/// recorded (in force when the hosts were last seen in spec). A removal made in the same edit
/// that switched to a more destructive policy, or before the controller saw the switch, was not
/// made under it. Status written by an operator that did not record it counts as Retain.
pub fn release_policy(nodeset: &NodeSet) -> DeletionPolicy {
    let recorded = nodeset.status.as_ref().and_then(|s| s.deletion_policy).unwrap_or_default();
    nodeset.spec.deletion_policy().min(recorded)
}

/// Plans the deletion of a NodeSet: every host of `spec.nodes` leaves per the deletion policy.
/// Hosts are found by label, whatever status says; a machine released earlier (its key removed
/// under Retain or Detach) is no longer the NodeSet's and stays as it is.
pub fn plan_deletion(nodeset: &NodeSet, facts: &Facts) -> Plan {
    let owner = Owner::of(nodeset);
    let mut plan = Plan::default();
    let nodes = nodeset.spec.nodes.clone().unwrap_or_default();
    let mut claimed: Vec<(&str, &Arc<BareMetalHost>)> = facts
        .hosts
        .iter()
        .filter_map(|h| owner.hostname_of(h).map(|name| (name, h)))
        .filter(|(name, _)| nodes.contains_key(*name))
        .collect();
    claimed.sort_by(|a, b| a.0.cmp(b.0).then_with(|| a.1.name_any().cmp(&b.1.name_any())));
    plan.release_all(nodeset, &claimed, nodes.len());
    plan
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
