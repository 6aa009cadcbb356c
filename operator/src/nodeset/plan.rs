//! The plan of one reconcile (pure): from the NodeSet and what the caches show, every write to
//! make. Claims first, then each claimed machine's decision, then the rollout of services on
//! the machines that run, then the writes that record it all on the BareMetalHosts.

use super::basis::Basis;
use super::claims::Owner;
use super::consumer::{Body, Consumer, HostWrite, Purpose, deprovision_patch, detach_patch};
use super::facts::Facts;
use super::firmware::{self, FirmwarePlan, HostFirmware};
use super::guard;
use super::inventory::{InventoryHost, inventory};
use super::job;
use super::machine::{Action, Decision};
use super::machine_writes::machine_writes;
use super::placement::{claims, listed_hosts, place};
use super::record;
use super::rollout::{self, HostWork, RolloutPlan};
use super::validate::Findings;
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{CompletedService, DeletionPolicy, EffectiveHostConfig, NodeSet, RolloutStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Finished Jobs kept per service by default.
pub(super) const DEFAULT_JOB_HISTORY: usize = 3;

/// Where one host of the NodeSet stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum HostPhase {
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
pub(super) struct HostPlan {
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
    /// Its BIOS settings (`firmware`).
    pub firmware: HostFirmware,
}

impl HostPlan {
    /// Services may run on the host.
    pub(super) fn runs_services(&self) -> bool {
        match &self.phase {
            HostPhase::PreProvisioned => true,
            HostPhase::Machine(d) => d.phase.runs_services(),
            _ => false,
        }
    }
}

/// A host leaving the NodeSet (its key was removed, or the NodeSet is deleted).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Release {
    pub hostname: String,
    pub bmh: String,
    pub policy: DeletionPolicy,
    /// Held back: more hosts than `maxUnavailable` would be deprovisioned at once (`guard`).
    pub held: bool,
}

impl Release {
    /// What the `HostReleased` Event says: under Retain nothing was written at all.
    pub(super) fn note(&self) -> String {
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
pub(super) struct JobRun {
    pub secret: Secret,
    pub job: Job,
}

/// Generated first-boot network data, written before the machine's image.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct NetworkData {
    pub name: String,
    pub namespace: String,
    /// The BareMetalHost that owns it.
    pub owner: Arc<BareMetalHost>,
    pub content: serde_json::Value,
}

/// Everything one reconcile does.
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
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
    /// BIOS settings handed over and reboots asked for (`firmware`).
    pub firmware: FirmwarePlan,
    /// The digest of the confirmation that let this plan's Deprovision releases go past
    /// `maxUnavailable` (`guard`): spent once one of them is applied.
    pub confirmed_by: Option<String>,
}

/// The generated network data Secret of a host: readable, and unique to the NodeSet (its
/// namespace and name) and the host, so that NodeSets of two namespaces sharing a host pool,
/// or `a-b`/`c` and `a`/`b-c`, never name the same Secret.
pub(super) fn network_data_name(owner: &Owner, hostname: &str) -> String {
    let identity = format!("{}\0{}\0{hostname}", owner.namespace, owner.name);
    let digest = crate::kit::digest::short(identity.as_bytes(), 4);
    crate::kit::names::bounded(&format!("{}-{hostname}-network-data-{digest}", owner.label), 253)
}

/// Plans the reconcile of a NodeSet that is not being deleted: the hosts as listed, where each
/// stands (claims, then each claimed machine's decision), the rollout of services on the
/// machines that run, what each machine gets written, then the hosts that leave, the Jobs and
/// the record of what ran.
pub(super) fn plan(nodeset: &NodeSet, facts: &Facts, findings: &Findings, history: usize, now: &Time) -> Plan {
    let basis = Basis::of(nodeset, facts, now);
    let mut plan = Plan {
        config_hash: basis.acknowledged.config_hash.clone(),
        rollout_status: basis.acknowledged.status.clone(),
        hosts: listed_hosts(&basis, facts),
        ..Plan::default()
    };
    if findings.blocks() {
        return plan;
    }
    let claims = claims(&basis, facts);
    plan.writes = place(&basis, &claims, &mut plan.hosts);
    plan.rollout_with_firmware(&basis, facts, history);
    settle(&mut plan.hosts, &plan.rollout, &plan.firmware);
    let machines = machine_writes(&basis, facts, &plan.hosts, &claims.plan.claimed);
    plan.writes.extend(machines.writes);
    plan.network_data = machines.network_data;
    plan.release_removed(&basis, &claims.plan.removed);
    plan.jobs_for(nodeset, &basis.owner, facts);
    plan.record(nodeset, &basis.owner, &basis.recorded, facts);
    plan
}

impl Plan {
    /// The rollout of services and of BIOS settings, on the hosts whose machines run, sharing
    /// `maxUnavailable` among the hosts that serve: a host whose settings are on their way runs
    /// no Job, one in a Job is never rebooted, and a failure of either stops both for the hosts
    /// that serve.
    fn rollout_with_firmware(&mut self, basis: &Basis, facts: &Facts, history: usize) {
        let mut work: Vec<HostWork> = self.hosts.iter().map(|(name, host)| host_work(basis, name, host)).collect();
        let machines = firmware::parts::hosts(basis, facts, &self.hosts, &work);
        let started = firmware::started(&machines);
        // Firmware: a host whose machine runs is rebooted for it; services: one that ran a
        // configuration is unavailable in a Job (a host being brought up is not serving yet).
        let running: BTreeSet<String> = work.iter().filter(|w| w.ready).map(|w| w.name.clone()).collect();
        let serving: BTreeSet<String> = work.iter().filter(|w| w.configured_before).map(|w| w.name.clone()).collect();
        let firmware_busy = started.iter().filter(|h| running.contains(**h)).count();
        let firmware_failed = machines.iter().any(|h| h.failed());
        for host in &mut work {
            host.ready &= !started.contains(host.name.as_str());
        }
        let spec = basis.spec;
        let max_unavailable =
            rollout::max_unavailable(spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref()), self.hosts.len());
        let approved = basis.acknowledged.status.approved_services.as_deref();
        let for_services = if firmware_failed { 0 } else { max_unavailable.saturating_sub(firmware_busy) };
        let rollout = rollout::plan(&work, &basis.services, &facts.jobs, approved, for_services, history);
        let busy: BTreeSet<String> = rollout
            .running
            .iter()
            .cloned()
            .chain(rollout.batches.iter().flat_map(|b| b.hosts.keys().cloned()))
            .collect();
        let in_jobs = busy.iter().filter(|h| serving.contains(*h)).count();
        let slots = max_unavailable.saturating_sub(firmware_busy).saturating_sub(in_jobs);
        let firmware = firmware::plan(&machines, slots, !rollout.failures.is_empty(), &busy);
        let reboots = firmware.reboots.iter().map(|r| (r, Purpose::FirmwareReboot));
        for ((hostname, patch), purpose) in reboots.chain(firmware.marks.iter().map(|m| (m, Purpose::Update))) {
            if let Some(bmh) = self.hosts.get(hostname).and_then(|h| h.bmh.clone()) {
                self.writes.push(write(&bmh, hostname, purpose, Body::Merge(patch.clone())));
            }
        }
        self.rollout = rollout;
        self.firmware = firmware;
    }
}

/// A host as the rollout sees it: completions recorded by an older operator read as this one
/// records them (`upgrade`), and a host that ran a configuration before is not brought up anew.
fn host_work(basis: &Basis, name: &str, host: &HostPlan) -> HostWork {
    let before = basis.previous.get(name);
    HostWork {
        name: name.to_string(),
        desired: host.desired.clone(),
        epoch: match &host.phase {
            HostPhase::Machine(d) => d.epoch.clone(),
            _ => String::new(),
        },
        completed: basis.upgrade.completions(&host.completed),
        ready: host.runs_services(),
        configured_before: !host.completed.is_empty() && before.is_none_or(|b| b.deployed_config_hash.is_some()),
        approved: host.approved.clone(),
    }
}

/// Each host as the rollout leaves it: its completions with the finished Jobs recorded, and
/// whether it is configured, waits for a token, or runs what was approved for it.
/// A host is configured once its BIOS settings are settled too, and pending while either waits
/// for a token.
fn settle(hosts: &mut BTreeMap<String, HostPlan>, rollout: &RolloutPlan, firmware: &FirmwarePlan) {
    for (name, host) in hosts.iter_mut() {
        if let Some(completed) = rollout.completed.get(name) {
            host.completed = completed.clone();
        }
        if let Some(stage) = firmware.stages.get(name) {
            host.firmware.stage = Some(stage.clone());
            host.firmware.applied = firmware.applied.get(name).cloned().flatten();
        }
        let settled = matches!(host.firmware.stage, None | Some(firmware::Stage::Settled));
        let services_at_approved = rollout.configured.contains(name) || rollout.at_approved.contains(name);
        host.configured = rollout.configured.contains(name) && settled;
        host.pending = rollout.pending.contains(name) || host.firmware.stage == Some(firmware::Stage::Pending);
        host.at_approved = services_at_approved && host.firmware.at_approved();
    }
}

/// A write on `host` (claimed for `hostname`).
pub(super) fn write(host: &BareMetalHost, hostname: &str, purpose: Purpose, body: Body) -> HostWrite {
    HostWrite {
        host: host.name_any(),
        namespace: host.namespace().unwrap_or_default(),
        hostname: hostname.to_string(),
        purpose,
        body,
    }
}

impl Consumer {
    /// What a claim writes: labels and consumerRef, and the cleaning mode.
    pub(super) fn claim(hostname: &str, spec: &crds::nodeset::NodeSetSpec) -> Self {
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
            token: None,
        }
    }
}

impl Plan {
    /// Releases `host` (claimed for `hostname`) per `policy`.
    pub(super) fn release(&mut self, host: &BareMetalHost, hostname: &str, policy: DeletionPolicy) {
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

    /// Hosts removed from spec.nodes leave per the deletion policy, once (those status still
    /// lists).
    fn release_removed(&mut self, basis: &Basis, removed: &BTreeMap<String, Arc<BareMetalHost>>) {
        let leaving: Vec<(&str, &Arc<BareMetalHost>)> =
            removed.iter().filter(|(h, _)| basis.previous.contains_key(*h)).map(|(h, b)| (h.as_str(), b)).collect();
        let total = self.hosts.len().saturating_add(leaving.len());
        self.release_all(basis.nodeset, &leaving, total);
    }

    /// Releases `leaving` per the NodeSet's release policy; under Deprovision, more than
    /// `maxUnavailable` of `total` at once are held for a confirmation (`guard`).
    fn release_all(&mut self, nodeset: &NodeSet, leaving: &[(&str, &Arc<BareMetalHost>)], total: usize) {
        let policy = release_policy(nodeset);
        let verdict = match policy {
            DeletionPolicy::Deprovision => {
                guard::held(nodeset, &leaving.iter().map(|(h, _)| h.to_string()).collect::<Vec<_>>(), total)
            }
            _ => guard::Verdict::default(),
        };
        self.confirmed_by = verdict.confirmed_by;
        let held = verdict.held;
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
    pub(super) fn held(&self) -> Vec<String> {
        self.releases.iter().filter(|r| r.held).map(|r| r.hostname.clone()).collect()
    }

    /// The confirmation this plan spent, once `released` holds every host it let go (one
    /// refused keeps it for the retry).
    pub(super) fn spent_confirmation(&self, released: &BTreeSet<String>) -> Option<&String> {
        let deprovisioned = |r: &&Release| !r.held && r.policy == DeletionPolicy::Deprovision;
        let applied = self.releases.iter().filter(deprovisioned).all(|r| released.contains(&r.hostname));
        self.confirmed_by.as_ref().filter(|_| applied)
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
pub(super) fn release_policy(nodeset: &NodeSet) -> DeletionPolicy {
    let recorded = nodeset.status.as_ref().and_then(|s| s.deletion_policy).unwrap_or_default();
    nodeset.spec.deletion_policy().min(recorded)
}

/// Plans the deletion of a NodeSet: every host of `spec.nodes` leaves per the deletion policy.
/// Hosts are found by label, whatever status says; a machine released earlier (its key removed
/// under Retain or Detach) is no longer the NodeSet's and stays as it is.
pub(super) fn plan_deletion(nodeset: &NodeSet, facts: &Facts) -> Plan {
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
