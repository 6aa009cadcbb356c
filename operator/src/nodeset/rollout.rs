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

use crds::nodeset::{ApprovedService, CompletedService, Rollout, RolloutStatus, RolloutStrategy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Hosts in one Job at most: bounds the inventory Secret (1 MiB) and the Job's annotations.
pub const MAX_BATCH_HOSTS: usize = 100;

/// A host as the rollout sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostWork {
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
pub struct Service {
    pub name: String,
    pub run_once: bool,
    pub hash: String,
}

/// One host of a Job: what it ran with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct JobHost {
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
pub fn fingerprint(entry: Option<&CompletedService>) -> String {
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

/// Whether a run of a service (`ran`, finished `at`) is newer than the host's recorded
/// completion `entry` of it: planned after that very completion, or finished later.
fn supersedes(entry: Option<&CompletedService>, ran: &JobHost, at: &Time) -> bool {
    let Some(entry) = entry else { return true };
    if ran.after.as_deref().is_some_and(|after| after == fingerprint(Some(entry))) {
        return true;
    }
    entry.completed_at.as_ref().is_none_or(|t| t.0 < at.0)
}

/// Whether no completion of the service arrived on the host since a Job (`ran`, created
/// `created`) was planned: the host's completion is still the one the Job came after.
fn nothing_completed_since(entry: Option<&CompletedService>, ran: &JobHost, created: &Time) -> bool {
    match &ran.after {
        Some(after) => *after == fingerprint(entry),
        // An older operator's Job: by the clock.
        None => entry.and_then(|e| e.completed_at.as_ref()).is_none_or(|t| t.0 < created.0),
    }
}

/// How a Job ended, or that it has not yet.
#[derive(Clone, Debug, PartialEq)]
pub enum JobOutcome {
    Running,
    Succeeded { at: Time },
    Failed { message: String, at: Time },
}

/// A service Job of this NodeSet, as the watch cache shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedJob {
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
pub struct Batch {
    pub service: String,
    pub service_hash: String,
    /// Per host, what it runs with, including the completion it runs after: a run after that
    /// is a new run, so its Job gets a new name even for a configuration the host had before.
    pub hosts: BTreeMap<String, JobHost>,
}

/// A failed Job that stops the rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub job: String,
    pub service: String,
    pub hosts: Vec<String>,
    pub message: String,
}

/// What the rollout does in this reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutPlan {
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
pub fn max_unavailable(value: Option<&IntOrString>, hosts: usize) -> usize {
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
pub fn acknowledge(
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
pub fn gated_hash(config_hash: &str, services: &[(String, Option<String>)]) -> String {
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
pub fn done(completed: &[CompletedService], service: &Service, desired: &str) -> bool {
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

/// Records the success of `job` (finished `at`) on each of its hosts where it is newer than
/// what is recorded; true when anything changed.
fn record(
    completed: &mut BTreeMap<String, Vec<CompletedService>>,
    hosts: &BTreeMap<&str, &HostWork>,
    job: &ObservedJob,
    at: &Time,
) -> bool {
    let mut changed = false;
    for (hostname, ran) in &job.hosts {
        let (Some(host), Some(completed)) = (hosts.get(hostname.as_str()), completed.get_mut(hostname)) else {
            continue;
        };
        if ran.epoch != host.epoch {
            continue;
        }
        let record = CompletedService {
            name: job.service.clone(),
            config_hash: Some(ran.config_hash.clone()),
            service_hash: Some(job.service_hash.clone()),
            completed_at: Some(at.clone()),
        };
        let position = completed.iter().position(|c| c.name == job.service);
        if !supersedes(position.map(|i| &completed[i]), ran, at) {
            continue;
        }
        match position {
            Some(i) if completed[i] == record => {}
            Some(i) => {
                completed[i] = record;
                changed = true;
            }
            None => {
                completed.push(record);
                changed = true;
            }
        }
    }
    changed
}

/// Plans the rollout. `services` is `spec.services` in order, `None` where no such
/// NodeSetService exists (nothing new runs then); `approved` is the services a rollout
/// approved: a configured host gets new work only while they are the services as they are and
/// its desired configuration is the one approved for it (see [`acknowledge`]).
pub fn plan(
    hosts: &[HostWork],
    services: &[Option<Service>],
    jobs: &[ObservedJob],
    approved: Option<&[ApprovedService]>,
    max_unavailable: usize,
    history: usize,
) -> RolloutPlan {
    let mut plan = RolloutPlan::default();
    let by_name: BTreeMap<&str, &HostWork> = hosts.iter().map(|h| (h.name.as_str(), h)).collect();
    let known: BTreeMap<&str, &Service> = services.iter().flatten().map(|s| (s.name.as_str(), s)).collect();

    // Record what finished Jobs completed, oldest first so that the newest run wins.
    plan.completed = hosts.iter().map(|h| (h.name.clone(), h.completed.clone())).collect();
    let mut succeeded: Vec<(&ObservedJob, &Time)> = jobs
        .iter()
        .filter_map(|j| match &j.outcome {
            JobOutcome::Succeeded { at } => Some((j, at)),
            _ => None,
        })
        .collect();
    succeeded.sort_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| a.0.name.cmp(&b.0.name)));
    // Runs of one service that finished within the same second are ordered by what they were
    // planned after, which one pass in time order may see in the wrong order: repeat until
    // nothing changes (a chain of n such runs takes n passes).
    for _ in 0..=succeeded.len() {
        let mut changed = false;
        for (job, at) in &succeeded {
            changed |= record(&mut plan.completed, &by_name, job, at);
        }
        if !changed {
            break;
        }
    }

    let all_known = services.iter().all(Option::is_some);
    let ordered: Vec<&Service> = services.iter().flatten().collect();
    for host in hosts {
        let completed = &plan.completed[&host.name];
        if all_known && ordered.iter().all(|s| done(completed, s, &host.desired)) {
            plan.configured.insert(host.name.clone());
        }
    }

    // Hosts whose running Job began on an earlier installation (a reprovision asked for while
    // it ran): that installation ran a configuration, so the Job takes a slot of
    // maxUnavailable although the new installation is being brought up.
    let mut earlier_installation = BTreeSet::new();
    for job in jobs {
        match &job.outcome {
            JobOutcome::Running => {
                plan.running.extend(job.hosts.keys().cloned());
                for (hostname, ran) in &job.hosts {
                    if by_name.get(hostname.as_str()).is_some_and(|h| h.epoch != ran.epoch) {
                        earlier_installation.insert(hostname.clone());
                    }
                }
            }
            JobOutcome::Failed { message, .. } => {
                let Some(service) = known.get(job.service.as_str()).filter(|s| s.hash == job.service_hash) else {
                    continue;
                };
                let blocked: Vec<String> = job
                    .hosts
                    .iter()
                    .filter(|(hostname, ran)| {
                        by_name.get(hostname.as_str()).is_some_and(|host| {
                            let completed = &plan.completed[hostname.as_str()];
                            ran.epoch == host.epoch
                                && ran.config_hash == host.desired
                                && !done(completed, service, &host.desired)
                                && nothing_completed_since(entry(completed, &service.name), ran, &job.created)
                        })
                    })
                    .map(|(h, _)| h.clone())
                    .collect();
                if !blocked.is_empty() {
                    plan.failures.push(Failure {
                        job: job.name.clone(),
                        service: job.service.clone(),
                        hosts: blocked,
                        message: message.clone(),
                    });
                }
            }
            JobOutcome::Succeeded { .. } => {}
        }
    }

    plan.prunable = prunable(jobs, &plan, &by_name, history);

    // A failure stops the rollout (no configured host gets new work) and holds its own hosts;
    // hosts being brought up that it does not concern go on.
    let failed: BTreeSet<&str> = plan.failures.iter().flat_map(|f| f.hosts.iter().map(String::as_str)).collect();
    let wanting: Vec<&HostWork> = hosts
        .iter()
        .filter(|h| h.ready && !plan.configured.contains(&h.name) && !plan.running.contains(&h.name))
        .filter(|h| !failed.contains(h.name.as_str()) && (failed.is_empty() || !h.configured_before))
        .collect();
    if !all_known {
        return plan;
    }
    let busy = plan
        .running
        .iter()
        .filter(|h| earlier_installation.contains(*h) || by_name.get(h.as_str()).is_some_and(|h| h.configured_before))
        .count();
    let mut slots = max_unavailable.saturating_sub(busy);
    // Hosts that started a rollout finish it before others start one.
    let partial = |h: &HostWork| {
        let completed = &plan.completed[&h.name];
        ordered.iter().any(|s| !s.run_once && done(completed, s, &h.desired))
    };
    // Configured hosts get what was approved for them; the others wait for a token.
    let services_ok = services_approved(approved, services);
    let (mut updates, held): (Vec<&HostWork>, Vec<&HostWork>) = wanting
        .iter()
        .copied()
        .filter(|h| h.configured_before)
        .partition(|h| services_ok && h.approved.as_deref() == Some(h.desired.as_str()));
    for host in held {
        if at_approved(host, &plan.completed[&host.name], approved, &known) {
            plan.at_approved.insert(host.name.clone());
        }
        plan.pending.insert(host.name.clone());
    }
    updates.sort_by_key(|h| (!partial(h), h.name.clone()));
    let mut chosen: Vec<&HostWork> = wanting.iter().copied().filter(|h| !h.configured_before).collect();
    for host in updates {
        if slots == 0 {
            break;
        }
        slots -= 1;
        chosen.push(host);
    }
    let mut groups: BTreeMap<&str, Vec<&HostWork>> = BTreeMap::new();
    for host in chosen {
        let completed = &plan.completed[&host.name];
        if let Some(next) = ordered.iter().find(|s| !done(completed, s, &host.desired)) {
            groups.entry(next.name.as_str()).or_default().push(host);
        }
    }
    for (service, mut members) in groups {
        let Some(service) = known.get(service) else { continue };
        members.sort_by(|a, b| a.name.cmp(&b.name));
        for chunk in members.chunks(MAX_BATCH_HOSTS) {
            plan.batches.push(Batch {
                service: service.name.clone(),
                service_hash: service.hash.clone(),
                hosts: chunk
                    .iter()
                    .map(|h| {
                        let after = fingerprint(entry(&plan.completed[&h.name], &service.name));
                        (
                            h.name.clone(),
                            JobHost { config_hash: h.desired.clone(), epoch: h.epoch.clone(), after: Some(after) },
                        )
                    })
                    .collect(),
            });
        }
    }
    plan
}

/// Finished Jobs beyond the newest `history` of each service whose outcome is recorded: a
/// success that every host's stored completions reflect (or whose host left), a failure that
/// stops nothing any more.
fn prunable(
    jobs: &[ObservedJob],
    plan: &RolloutPlan,
    hosts: &BTreeMap<&str, &HostWork>,
    history: usize,
) -> Vec<String> {
    let blocking: BTreeSet<&str> = plan.failures.iter().map(|f| f.job.as_str()).collect();
    let mut by_service: BTreeMap<&str, Vec<&ObservedJob>> = BTreeMap::new();
    for job in jobs.iter().filter(|j| j.finished().is_some()) {
        by_service.entry(job.service.as_str()).or_default().push(job);
    }
    let mut out = Vec::new();
    for (_, mut finished) in by_service {
        finished.sort_by(|a, b| {
            let (ta, tb) = (a.finished().map(|t| t.0), b.finished().map(|t| t.0));
            tb.cmp(&ta).then_with(|| b.name.cmp(&a.name))
        });
        for job in finished.into_iter().skip(history) {
            let recorded = match &job.outcome {
                JobOutcome::Succeeded { at } => job.hosts.iter().all(|(hostname, ran)| {
                    match hosts.get(hostname.as_str()) {
                        None => true,
                        Some(host) if host.epoch != ran.epoch => true,
                        // What was persisted before this plan, not what it records now: a Job
                        // goes only once its outcome is stored, or a later one's (a later
                        // second: within the same second, "later" is not known here).
                        Some(host) => entry(&host.completed, &job.service).is_some_and(|e| {
                            e.completed_at.as_ref().is_some_and(|t| t.0 > at.0)
                                || (e.completed_at.as_ref() == Some(at)
                                    && e.config_hash.as_deref() == Some(ran.config_hash.as_str())
                                    && e.service_hash.as_deref() == Some(job.service_hash.as_str()))
                        }),
                    }
                }),
                JobOutcome::Failed { .. } => !blocking.contains(job.name.as_str()),
                JobOutcome::Running => false,
            };
            if recorded {
                out.push(job.name.clone());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
