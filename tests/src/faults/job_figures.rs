//! The figures of NodeSet service Jobs (pure): duplicate Jobs and reruns of completed work,
//! from the recorded Jobs.
//!
//! The work of a run is (NodeSet, host, machine epoch, service, service hash, config hash):
//! what the controller names a Job after, less the time of the host's previous completion,
//! which only tells a deliberate run of an earlier configuration again (A, then B, then A)
//! from a repeated one. Here the runs of one host, epoch and service are put in the order the
//! Jobs were created, and a run counts as
//!
//! - a **duplicate** when the run just before it had the same work (two Jobs for one piece of
//!   work, whether at once or one after the other; A, B, A is no duplicate);
//! - a **rerun of completed work** when its service is `runOnce` and an earlier run of it on
//!   that machine did not fail, or when a run of the same work just before it (with no other
//!   work in between) had succeeded before it was created: by the watch's order of events,
//!   or by the timestamps (seconds; a tie counts as before).
//!
//! A rerun of the same work is also a duplicate; a rerun of a `runOnce` service with new work
//! (after an edit) is only a rerun. Both count runs, not Jobs: a Job that repeats the work of
//! three hosts counts three.

use super::jobs::{JobEnd, ServiceJob};
use std::collections::{BTreeMap, BTreeSet};

/// The service Job figures of a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobFigures {
    /// Runs recorded (hosts of Jobs).
    pub runs: usize,
    pub duplicates: usize,
    pub reruns: usize,
}

/// One host of one Job.
struct Run<'a> {
    job: &'a ServiceJob,
    config_hash: &'a str,
}

impl Run<'_> {
    fn work(&self) -> (&str, &str) {
        (&self.job.service_hash, self.config_hash)
    }

    /// The order Jobs were created in: the watch's first sight, which follows the apiserver's
    /// order, then the creation timestamp and the name for Jobs first seen in one listing.
    fn order(&self) -> (u64, Option<jiff::Timestamp>, &str) {
        (self.job.seen, self.job.created, &self.job.name)
    }

    /// This run had succeeded before `later` was created.
    fn succeeded_before(&self, later: &Run<'_>) -> bool {
        match &self.job.end {
            JobEnd::Succeeded { at, seen } => {
                *seen < later.job.seen
                    || matches!((at, later.job.created), (Some(done), Some(created)) if *done <= created)
            }
            _ => false,
        }
    }

    fn failed(&self) -> bool {
        matches!(self.job.end, JobEnd::Failed { .. })
    }
}

/// The figures of `jobs`; `run_once` names the services that are `runOnce`.
pub fn job_figures<'a>(jobs: impl IntoIterator<Item = &'a ServiceJob>, run_once: &BTreeSet<String>) -> JobFigures {
    let mut by_machine: BTreeMap<(&str, &str, &str, &str), Vec<Run<'_>>> = BTreeMap::new();
    for job in jobs {
        for (host, with) in &job.hosts {
            by_machine
                .entry((job.nodeset.as_str(), host.as_str(), with.epoch.as_str(), job.service.as_str()))
                .or_default()
                .push(Run { job, config_hash: &with.config_hash });
        }
    }
    let mut figures = JobFigures::default();
    for ((_, _, _, service), mut runs) in by_machine {
        runs.sort_by(|a, b| a.order().cmp(&b.order()));
        figures.runs += runs.len();
        let once = run_once.contains(service);
        for (i, run) in runs.iter().enumerate() {
            let Some(previous) = i.checked_sub(1).map(|p| &runs[p]) else { continue };
            if previous.work() == run.work() {
                figures.duplicates += 1;
            }
            // The same work just before this run, back to the last other work.
            let same_before = runs[..i].iter().rev().take_while(|r| r.work() == run.work());
            let rerun = if once {
                runs[..i].iter().any(|r| !r.failed())
            } else {
                same_before.into_iter().any(|r| r.succeeded_before(run))
            };
            figures.reruns += usize::from(rerun);
        }
    }
    figures
}

/// The most hosts in running Jobs at once, among the Jobs first seen after watch event
/// `since`, by the watch's order of events (the order the controller saw them in too: it
/// starts a Job only after it saw the one before end).
pub fn most_hosts_running<'a>(jobs: impl IntoIterator<Item = &'a ServiceJob>, since: u64) -> usize {
    let jobs: Vec<&ServiceJob> = jobs.into_iter().filter(|j| j.seen > since).collect();
    let mut most = 0;
    for start in jobs.iter().map(|j| j.seen) {
        let running: BTreeSet<(&str, &str)> = jobs
            .iter()
            .filter(|j| j.seen <= start && j.stopped().is_none_or(|stop| stop > start))
            .flat_map(|j| j.hosts.keys().map(|h| (j.nodeset.as_str(), h.as_str())))
            .collect();
        most = most.max(running.len());
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::jobs::RunWith;

    /// A Job of `service` first seen at event `seen`, created at second `created`, running
    /// `hosts` with config hash `config`, ended as `end`.
    fn job(service: &str, config: &str, hosts: &[&str], seen: u64, created: i64, end: JobEnd) -> ServiceJob {
        ServiceJob {
            name: format!("{service}-{seen}"),
            nodeset: "computes".into(),
            service: service.into(),
            service_hash: "s1".into(),
            hosts: hosts
                .iter()
                .map(|h| (h.to_string(), RunWith { config_hash: config.into(), epoch: "e1".into() }))
                .collect(),
            created: jiff::Timestamp::from_second(created).ok(),
            seen,
            end,
            ..ServiceJob::default()
        }
    }

    fn ok(seen: u64, at: i64) -> JobEnd {
        JobEnd::Succeeded { at: jiff::Timestamp::from_second(at).ok(), seen }
    }

    fn once() -> BTreeSet<String> {
        BTreeSet::from(["bootstrap".to_string()])
    }

    #[test]
    fn a_bring_up_and_an_edit_are_clean_and_a_revert_reruns_nothing() {
        let jobs = [
            job("bootstrap", "A", &["c-0", "c-1"], 1, 100, ok(2, 102)),
            job("configure", "A", &["c-0", "c-1"], 3, 103, ok(4, 105)),
            job("configure", "B", &["c-0"], 5, 110, ok(6, 112)),
            job("configure", "B", &["c-1"], 7, 113, ok(8, 115)),
            // Back to A: the earlier configuration again, on purpose.
            job("configure", "A", &["c-0"], 9, 120, ok(10, 122)),
        ];
        assert_eq!(job_figures(&jobs, &once()), JobFigures { runs: 7, duplicates: 0, reruns: 0 });
    }

    #[test]
    fn a_second_job_for_the_same_work_is_a_duplicate_and_after_its_success_also_a_rerun() {
        let jobs = [
            job("configure", "A", &["c-0", "c-1"], 1, 100, ok(3, 104)),
            // At once with the first (created before it ended): a duplicate of c-1's work.
            job("configure", "A", &["c-1"], 2, 101, ok(5, 106)),
            // After the first succeeded (by the watch): a duplicate and a rerun, for c-0.
            job("configure", "A", &["c-0"], 4, 104, JobEnd::Running),
        ];
        assert_eq!(job_figures(&jobs, &once()), JobFigures { runs: 4, duplicates: 2, reruns: 1 });
    }

    #[test]
    fn a_success_in_the_second_a_job_was_created_counts_as_before_it() {
        // The watch showed the success later (say, after a broken watch): the seconds decide.
        let first = job("configure", "A", &["c-0"], 1, 100, ok(9, 104));
        let second = job("configure", "A", &["c-0"], 2, 104, JobEnd::Running);
        assert_eq!(job_figures([&first, &second], &once()).reruns, 1);
    }

    #[test]
    fn a_run_once_service_run_again_after_an_edit_is_a_rerun_unless_the_first_run_failed() {
        let rerun =
            [job("bootstrap", "A", &["c-0"], 1, 100, ok(2, 101)), job("bootstrap", "B", &["c-0"], 3, 110, ok(4, 111))];
        assert_eq!(job_figures(&rerun, &once()), JobFigures { runs: 2, duplicates: 0, reruns: 1 });
        let retried = [
            job("bootstrap", "A", &["c-0"], 1, 100, JobEnd::Failed { seen: 2 }),
            job("bootstrap", "B", &["c-0"], 3, 110, ok(4, 111)),
        ];
        assert_eq!(job_figures(&retried, &once()), JobFigures { runs: 2, duplicates: 0, reruns: 0 });
    }

    #[test]
    fn another_machine_epoch_or_nodeset_is_other_work() {
        let mut reprovisioned = job("bootstrap", "A", &["c-0"], 3, 110, ok(4, 111));
        reprovisioned.hosts.get_mut("c-0").expect("c-0").epoch = "e2".into();
        let mut elsewhere = job("bootstrap", "A", &["c-0"], 5, 112, ok(6, 113));
        elsewhere.nodeset = "storage".into();
        let jobs = [job("bootstrap", "A", &["c-0"], 1, 100, ok(2, 101)), reprovisioned, elsewhere];
        assert_eq!(job_figures(&jobs, &once()), JobFigures { runs: 3, duplicates: 0, reruns: 0 });
    }

    #[test]
    fn the_most_hosts_running_follows_the_order_of_events() {
        let jobs = [
            job("configure", "A", &["c-0", "c-1"], 1, 100, ok(2, 101)),
            job("configure", "B", &["c-0"], 3, 110, ok(5, 112)),
            job("configure", "B", &["c-1"], 4, 111, ok(6, 113)),
            job("configure", "B", &["c-2"], 7, 114, JobEnd::Running),
        ];
        assert_eq!(most_hosts_running(&jobs, 0), 2);
        assert_eq!(most_hosts_running(&jobs, 2), 2, "c-0 and c-1 at once, after event 2");
        assert_eq!(most_hosts_running(&jobs[3..], 2), 1);
    }
}
