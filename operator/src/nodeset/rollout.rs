//! Day-2 rollouts (pure): which services must run on which hosts, in which batches, and when a
//! rollout stops.
//!
//! A service runs on a host when the host's effective config hash or the service's spec hash
//! differs from what `servicesCompleted` recorded for it (once, ever, for a `runOnce` service).
//! Services run in the listed order, one Job per service and batch of hosts. At most
//! `maxUnavailable` hosts that already run a configuration are in running Jobs at once; a host
//! being brought up (never configured since it was provisioned) is not serving, so it gets all
//! its services at once, unthrottled. A failed Job stops the rollout until the service's spec
//! or the hosts' configuration changes; nothing is undone.
//!
//! A host that runs a configuration gets a new one only when a rollout approved it: per host,
//! the configuration approved for it, and for the NodeSet, the services (see [`acknowledge`]).
//! Approvals are per host so that adding or removing hosts, which changes no other host's
//! configuration, holds back no approved rollout of the others.

#[path = "rollout_jobs.rs"]
mod jobs;

use crds::nodeset::{ApprovedService, CompletedService, Rollout, RolloutStatus, RolloutStrategy};
use jobs::{Running, completions, failures, prunable};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Hosts in one Job at most: bounds the inventory Secret (1 MiB) and the Job's annotations.
pub(super) const MAX_BATCH_HOSTS: usize = 100;

/// A host as the rollout sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct HostWork {
    pub name: String,
    /// Its effective config hash now.
    pub desired: String,
    /// The machine's epoch (completions of another epoch do not count).
    pub epoch: String,
    /// Completions recorded so far.
    pub completed: Vec<CompletedService>,
    /// Services may run on it (provisioned, or preProvisioned).
    pub ready: bool,
    /// It was fully configured once since it was provisioned.
    pub configured_before: bool,
    /// The configuration a rollout approved for it (`None`: none): once configured, it gets a
    /// new one only when its desired hash is this one.
    pub approved: Option<String>,
}

/// A service of the NodeSet that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Service {
    pub name: String,
    pub run_once: bool,
    pub hash: String,
}

/// One host of a Job: what it ran with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub(super) struct JobHost {
    #[serde(rename = "configHash")]
    pub config_hash: String,
    pub epoch: String,
    /// The [`fingerprint`] of the service's completion on the host when the Job was planned.
    /// It orders the run after that completion whatever the clocks say: completion times have
    /// a resolution of one second, and a fast service completes twice within one. `None` on
    /// Jobs planned by operators that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A short digest of a host's completion of a service ("" for none): what a Job records as
/// the completion it was planned after. The time counts in whole seconds, the resolution
/// status stores it in, so a completion recorded in memory (a Job finished without a
/// completion time is timed by the clock) and the same one read back from status match.
pub(super) fn fingerprint(entry: Option<&CompletedService>) -> String {
    let Some(entry) = entry else { return String::new() };
    let mut digest = Sha256::new();
    let time = entry.completed_at.as_ref().map(|t| t.0.as_second().to_string()).unwrap_or_default();
    for part in [
        entry.name.as_str(),
        entry.config_hash.as_deref().unwrap_or(""),
        entry.service_hash.as_deref().unwrap_or(""),
        &time,
    ] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    hex::encode(&digest.finalize()[..8])
}

/// How a Job ended, or that it has not yet.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum JobOutcome {
    Running,
    Succeeded { at: Time },
    Failed { message: String, at: Time },
}

/// A service Job of this NodeSet, as the watch cache shows it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ObservedJob {
    pub name: String,
    pub service: String,
    pub service_hash: String,
    pub hosts: BTreeMap<String, JobHost>,
    pub outcome: JobOutcome,
    pub created: Time,
}

impl ObservedJob {
    fn finished(&self) -> Option<&Time> {
        match &self.outcome {
            JobOutcome::Running => None,
            JobOutcome::Succeeded { at } | JobOutcome::Failed { at, .. } => Some(at),
        }
    }
}

/// A Job to create: one service for a batch of hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Batch {
    pub service: String,
    pub service_hash: String,
    /// Per host, what it runs with, including the completion it runs after: a run after that
    /// is a new run, so its Job gets a new name even for a configuration the host had before.
    pub hosts: BTreeMap<String, JobHost>,
}

/// A failed Job that stops the rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Failure {
    pub job: String,
    pub service: String,
    pub hosts: Vec<String>,
    pub message: String,
}

/// What the rollout does in this reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RolloutPlan {
    /// Per host, the completions after recording finished Jobs.
    pub completed: BTreeMap<String, Vec<CompletedService>>,
    /// Hosts with every service done for their desired hash.
    pub configured: BTreeSet<String>,
    /// Hosts in running Jobs.
    pub running: BTreeSet<String>,
    pub failures: Vec<Failure>,
    /// Jobs to create.
    pub batches: Vec<Batch>,
    /// Finished Jobs past the history bound whose outcome status holds: to delete.
    pub prunable: Vec<String>,
    /// Configured hosts whose desired configuration waits for a new Manual rollout token.
    pub pending: BTreeSet<String>,
    /// Of the pending hosts, those that run everything approved for them: they are at their
    /// approved configuration, and only the token is missing.
    pub at_approved: BTreeSet<String>,
}

/// `maxUnavailable` as a number of hosts: a count, or a percentage of `hosts` rounded down;
/// at least one, so a rollout always moves.
pub(super) fn max_unavailable(value: Option<&IntOrString>, hosts: usize) -> usize {
    let n = match value {
        None => 1,
        Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(1),
        Some(IntOrString::String(s)) => {
            let percent = s.trim().strip_suffix('%').and_then(|p| p.trim().parse::<usize>().ok()).unwrap_or(0);
            // hosts * percent / 100, without overflowing.
            let percent = percent.min(100);
            (hosts / 100).saturating_mul(percent).saturating_add(hosts % 100 * percent / 100)
        }
    };
    n.max(1)
}

/// The rollout's record, and whether every host's configuration is approved as the spec asks
/// it now (the caller records that per host, [`HostWork::approved`]). The Automatic strategy
/// approves everything, always. Manual approves for a new `spec.rollout.token`: the token is
/// recorded with the NodeSet's hash (`gated`) and the services as they are (`services`).
/// Otherwise each host keeps what was approved for it before; a host added since has nothing
/// approved, which its bring-up does not need. On first sight (a new NodeSet, or one recreated
/// or whose status was lost) the token is recorded and nothing is approved: a host that already
/// runs a configuration gets a new one only for a new token, since nothing says anyone approved
/// what the spec asks now.
pub(super) fn acknowledge(
    rollout: Option<&Rollout>,
    previous: Option<&RolloutStatus>,
    gated: &str,
    services: &[ApprovedService],
    now: &Time,
) -> (RolloutStatus, bool) {
    let strategy = rollout.and_then(|r| r.strategy).unwrap_or_default();
    let token = rollout.and_then(|r| r.token.clone()).filter(|t| !t.is_empty());
    let mut status = previous.cloned().unwrap_or_default();
    let start = |status: &mut RolloutStatus| {
        status.config_hash = Some(gated.to_string());
        status.started_at = Some(now.clone());
        status.completed_at = None;
    };
    let approve_all = match strategy {
        RolloutStrategy::Automatic => {
            if status.config_hash.as_deref() != Some(gated) {
                start(&mut status);
            }
            true
        }
        RolloutStrategy::Manual if previous.is_none() => {
            status.acknowledged_token = token;
            false
        }
        RolloutStrategy::Manual if token.is_some() && token != status.acknowledged_token => {
            status.acknowledged_token = token;
            start(&mut status);
            true
        }
        // Recorded by an operator that approved by the NodeSet's hash alone (no approved
        // services): it approved what the spec asks now if that hash is the one it recorded.
        RolloutStrategy::Manual => status.approved_services.is_none() && status.config_hash.as_deref() == Some(gated),
    };
    if approve_all {
        status.approved_services = Some(services.to_vec());
    }
    (status, approve_all)
}

/// The NodeSet's desired hash (`status.configHash`, what a rollout starts for): its config hash
/// (every host's configuration and the service list) and the spec hash of every service it
/// lists, so an edit of a shared NodeSetService is a new configuration like any other edit of
/// what runs.
pub(super) fn gated_hash(config_hash: &str, services: &[(String, Option<String>)]) -> String {
    let mut digest = Sha256::new();
    digest.update(config_hash.as_bytes());
    for (name, hash) in services {
        digest.update([0]);
        digest.update(name.as_bytes());
        digest.update([0]);
        digest.update(hash.as_deref().unwrap_or("missing").as_bytes());
    }
    hex::encode(digest.finalize())
}

/// True when `service` is done on a host whose desired hash is `desired`.
pub(super) fn done(completed: &[CompletedService], service: &Service, desired: &str) -> bool {
    completed.iter().any(|c| {
        c.name == service.name
            && (service.run_once
                || (c.config_hash.as_deref() == Some(desired) && c.service_hash.as_deref() == Some(&service.hash)))
    })
}

fn entry<'a>(completed: &'a [CompletedService], service: &str) -> Option<&'a CompletedService> {
    completed.iter().find(|c| c.name == service)
}

/// True when `approved` is the services as they are: the same names in the same order, each at
/// the spec hash it has now. A service that does not exist matches nothing (nothing new runs
/// then anyway).
fn services_approved(approved: Option<&[ApprovedService]>, services: &[Option<Service>]) -> bool {
    approved.is_some_and(|approved| {
        approved.len() == services.len()
            && approved.iter().zip(services).all(|(a, s)| {
                s.as_ref().is_some_and(|s| a.name == s.name && a.service_hash.as_deref() == Some(s.hash.as_str()))
            })
    })
}

/// True when `host` (with `completed`) runs everything approved for it: every approved service
/// done at the configuration approved for the host. A service that did not exist when approved
/// had nothing of it approved; a host nothing was approved for runs all it may.
fn at_approved(
    host: &HostWork,
    completed: &[CompletedService],
    approved: Option<&[ApprovedService]>,
    known: &BTreeMap<&str, &Service>,
) -> bool {
    let (Some(config), Some(approved)) = (host.approved.as_deref(), approved) else { return true };
    approved.iter().all(|a| {
        let Some(hash) = &a.service_hash else { return true };
        let run_once = known.get(a.name.as_str()).is_some_and(|s| s.run_once);
        done(completed, &Service { name: a.name.clone(), run_once, hash: hash.clone() }, config)
    })
}

/// Plans the rollout. `services` is `spec.services` in order, `None` where no such
/// NodeSetService exists (nothing new runs then); `approved` is the services a rollout
/// approved: a configured host gets new work only while they are the services as they are and
/// its desired configuration is the one approved for it (see [`acknowledge`]).
pub(super) fn plan(
    hosts: &[HostWork],
    services: &[Option<Service>],
    jobs: &[ObservedJob],
    approved: Option<&[ApprovedService]>,
    max_unavailable: usize,
    history: usize,
) -> RolloutPlan {
    let lookup = Lookup::of(hosts, services);
    let completed = completions(hosts, jobs, &lookup);
    let configured = configured(hosts, &lookup, &completed);
    let running = Running::of(jobs, &lookup);
    let failures = failures(jobs, &lookup, &completed);
    let mut plan =
        RolloutPlan { completed, configured, running: running.hosts.clone(), failures, ..RolloutPlan::default() };
    plan.prunable = prunable(jobs, &plan, &lookup.hosts, history);
    if !lookup.all_known {
        return plan;
    }
    let wanting = wanting(hosts, &plan);
    let slots = max_unavailable.saturating_sub(running.busy(&lookup));
    let (updates, held) = approved_updates(&wanting, services_approved(approved, services));
    for host in held {
        if at_approved(host, &plan.completed[&host.name], approved, &lookup.known) {
            plan.at_approved.insert(host.name.clone());
        }
        plan.pending.insert(host.name.clone());
    }
    let chosen = chosen(&wanting, updates, slots, &lookup, &plan.completed);
    plan.batches = batches(&chosen, &lookup, &plan.completed);
    plan
}

/// The hosts and services of a rollout, by name.
struct Lookup<'a> {
    hosts: BTreeMap<&'a str, &'a HostWork>,
    /// The listed services that exist.
    known: BTreeMap<&'a str, &'a Service>,
    /// The same, in the listed order: the order they run in.
    ordered: Vec<&'a Service>,
    /// Every listed service exists: only then does anything new run.
    all_known: bool,
}

impl<'a> Lookup<'a> {
    /// Worked out once: the steps look hosts and services up by name many times over.
    fn of(hosts: &'a [HostWork], services: &'a [Option<Service>]) -> Self {
        Lookup {
            hosts: hosts.iter().map(|h| (h.name.as_str(), h)).collect(),
            known: services.iter().flatten().map(|s| (s.name.as_str(), s)).collect(),
            ordered: services.iter().flatten().collect(),
            all_known: services.iter().all(Option::is_some),
        }
    }
}

/// The hosts with every service done for their desired hash (none while a service is missing).
fn configured(
    hosts: &[HostWork],
    lookup: &Lookup,
    completed: &BTreeMap<String, Vec<CompletedService>>,
) -> BTreeSet<String> {
    hosts
        .iter()
        .filter(|host| {
            lookup.all_known && lookup.ordered.iter().all(|s| done(&completed[&host.name], s, &host.desired))
        })
        .map(|host| host.name.clone())
        .collect()
}

/// The hosts that want work: ready, neither configured nor in a running Job. A failure stops
/// the rollout (no configured host gets new work) and holds its own hosts; hosts being brought
/// up that it does not concern go on.
fn wanting<'a>(hosts: &'a [HostWork], plan: &RolloutPlan) -> Vec<&'a HostWork> {
    let failed: BTreeSet<&str> = plan.failures.iter().flat_map(|f| f.hosts.iter().map(String::as_str)).collect();
    hosts
        .iter()
        .filter(|h| h.ready && !plan.configured.contains(&h.name) && !plan.running.contains(&h.name))
        .filter(|h| !failed.contains(h.name.as_str()) && (failed.is_empty() || !h.configured_before))
        .collect()
}

/// Of the configured hosts among `wanting`, those a rollout approved new work for (`services_ok`:
/// the approved services are the services as they are; and the host's desired configuration),
/// and those held: configured hosts get what was approved for them; the others wait for a token.
fn approved_updates<'a>(wanting: &[&'a HostWork], services_ok: bool) -> (Vec<&'a HostWork>, Vec<&'a HostWork>) {
    wanting
        .iter()
        .copied()
        .filter(|h| h.configured_before)
        .partition(|h| services_ok && h.approved.as_deref() == Some(h.desired.as_str()))
}

/// The hosts that get work now: every host being brought up (it is not serving), and of the
/// approved `updates`, as many as `slots` allows, those that started a rollout first (they
/// finish it before others start one), then by name.
fn chosen<'a>(
    wanting: &[&'a HostWork],
    mut updates: Vec<&'a HostWork>,
    slots: usize,
    lookup: &Lookup,
    completed: &BTreeMap<String, Vec<CompletedService>>,
) -> Vec<&'a HostWork> {
    let partial = |h: &HostWork| {
        let completed = &completed[&h.name];
        lookup.ordered.iter().any(|s| !s.run_once && done(completed, s, &h.desired))
    };
    updates.sort_by_key(|h| (!partial(h), h.name.clone()));
    let mut chosen: Vec<&HostWork> = wanting.iter().copied().filter(|h| !h.configured_before).collect();
    chosen.extend(updates.into_iter().take(slots));
    chosen
}

/// The Jobs to create: each chosen host with the next service it has not done, grouped by
/// service, in batches of at most [`MAX_BATCH_HOSTS`] by host name.
fn batches(chosen: &[&HostWork], lookup: &Lookup, completed: &BTreeMap<String, Vec<CompletedService>>) -> Vec<Batch> {
    let mut groups: BTreeMap<&str, Vec<&HostWork>> = BTreeMap::new();
    for host in chosen {
        if let Some(next) = lookup.ordered.iter().find(|s| !done(&completed[&host.name], s, &host.desired)) {
            groups.entry(next.name.as_str()).or_default().push(host);
        }
    }
    let mut batches = Vec::new();
    for (service, mut members) in groups {
        let Some(service) = lookup.known.get(service) else { continue };
        members.sort_by(|a, b| a.name.cmp(&b.name));
        for chunk in members.chunks(MAX_BATCH_HOSTS) {
            let hosts = chunk
                .iter()
                .map(|h| {
                    let after = fingerprint(entry(&completed[&h.name], &service.name));
                    let ran = JobHost { config_hash: h.desired.clone(), epoch: h.epoch.clone(), after: Some(after) };
                    (h.name.clone(), ran)
                })
                .collect();
            batches.push(Batch { service: service.name.clone(), service_hash: service.hash.clone(), hosts });
        }
    }
    batches
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
