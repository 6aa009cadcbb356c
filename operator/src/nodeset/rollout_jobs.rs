//! What the NodeSet's service Jobs say (pure): the completions finished Jobs record, the hosts
//! in running Jobs, the failures that stop the rollout, and the finished Jobs to prune.

use super::{Failure, HostWork, JobHost, JobOutcome, Lookup, ObservedJob, RolloutPlan, done, entry, fingerprint};
use crds::nodeset::CompletedService;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::{BTreeMap, BTreeSet};

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

/// Per host, its completions with what finished Jobs completed recorded, oldest first so that
/// the newest run wins.
pub(super) fn completions(
    hosts: &[HostWork],
    jobs: &[ObservedJob],
    lookup: &Lookup,
) -> BTreeMap<String, Vec<CompletedService>> {
    let mut completed = hosts.iter().map(|h| (h.name.clone(), h.completed.clone())).collect();
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
            changed |= record(&mut completed, &lookup.hosts, job, at);
        }
        if !changed {
            break;
        }
    }
    completed
}

/// The hosts in running Jobs.
pub(super) struct Running {
    pub(super) hosts: BTreeSet<String>,
    /// Hosts whose running Job began on an earlier installation (a reprovision asked for while
    /// it ran): that installation ran a configuration, so the Job takes a slot of
    /// maxUnavailable although the new installation is being brought up.
    earlier_installation: BTreeSet<String>,
}

impl Running {
    /// The hosts of the Jobs still running, and which of them began on an earlier installation.
    pub(super) fn of(jobs: &[ObservedJob], lookup: &Lookup) -> Self {
        let mut running = Running { hosts: BTreeSet::new(), earlier_installation: BTreeSet::new() };
        for job in jobs.iter().filter(|j| j.outcome == JobOutcome::Running) {
            running.hosts.extend(job.hosts.keys().cloned());
            for (hostname, ran) in &job.hosts {
                if lookup.hosts.get(hostname.as_str()).is_some_and(|h| h.epoch != ran.epoch) {
                    running.earlier_installation.insert(hostname.clone());
                }
            }
        }
        running
    }

    /// The running hosts that take a slot of maxUnavailable: those that ran a configuration.
    pub(super) fn busy(&self, lookup: &Lookup) -> usize {
        let serving = |h: &String| {
            self.earlier_installation.contains(h) || lookup.hosts.get(h.as_str()).is_some_and(|h| h.configured_before)
        };
        self.hosts.iter().filter(|h| serving(h)).count()
    }
}

/// The failed Jobs that stop the rollout: of a service as it is now, on hosts still at the
/// configuration and installation it ran with, where nothing completed the service since.
pub(super) fn failures(
    jobs: &[ObservedJob],
    lookup: &Lookup,
    completed: &BTreeMap<String, Vec<CompletedService>>,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    for job in jobs {
        let JobOutcome::Failed { message, .. } = &job.outcome else { continue };
        let Some(service) = lookup.known.get(job.service.as_str()).filter(|s| s.hash == job.service_hash) else {
            continue;
        };
        let blocked: Vec<String> = job
            .hosts
            .iter()
            .filter(|(hostname, ran)| {
                lookup.hosts.get(hostname.as_str()).is_some_and(|host| {
                    let completed = &completed[hostname.as_str()];
                    ran.epoch == host.epoch
                        && ran.config_hash == host.desired
                        && !done(completed, service, &host.desired)
                        && nothing_completed_since(entry(completed, &service.name), ran, &job.created)
                })
            })
            .map(|(h, _)| h.clone())
            .collect();
        if !blocked.is_empty() {
            failures.push(Failure {
                job: job.name.clone(),
                service: job.service.clone(),
                hosts: blocked,
                message: message.clone(),
            });
        }
    }
    failures
}

/// Finished Jobs beyond the newest `history` of each service whose outcome is recorded: a
/// success that every host's stored completions reflect (or whose host left), a failure that
/// stops nothing any more.
pub(super) fn prunable(
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
