//! The figures every fault scenario reports, computed from a [`Record`] the same way for all.

use super::job_figures::job_figures;
use super::record::{MachineRecord, Record};
use std::fmt;
use std::time::Duration;

/// How the machines ended, as the scenario's convergence wait measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Convergence {
    /// Hosts that had not reached their expected state when the wait gave up.
    pub not_converged: usize,
    /// From the end of the last fault until every host was in its expected state.
    pub time: Option<Duration>,
}

/// The figures of one scenario run: one row of the faults table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub scenario: String,
    /// Faults injected (kills, restarts, cuts).
    pub faults: usize,
    pub hosts: usize,
    /// Ironic nodes beyond one per host at any moment, plus nodes whose host never existed.
    pub duplicates: usize,
    /// Nodes that left `active` (the scenarios never ask for that).
    pub left_active: usize,
    /// Entries into `deploying` beyond the first per host.
    pub reprovisions: usize,
    /// NodeSet service Job runs recorded (hosts of Jobs); none: the Job columns print "–".
    pub job_runs: usize,
    /// Runs that repeat the work of the run before them ([`super::job_figures`]).
    pub duplicate_jobs: usize,
    /// Runs of work already completed, or of a `runOnce` service again.
    pub reruns: usize,
    /// Hosts that lost their finalizer while not being deleted.
    pub lost_finalizers: usize,
    pub not_converged: usize,
    pub converge_time: Option<Duration>,
    /// Panics in the operator's logs (the scenario sets it from its replicas).
    pub panics: usize,
}

/// Counts entries into `state` in a sequence of states.
fn entries<'a>(states: impl Iterator<Item = &'a str>, state: &str) -> usize {
    let mut previous: Option<&str> = None;
    let mut count = 0;
    for s in states {
        if s == state && previous != Some(state) {
            count += 1;
        }
        previous = Some(s);
    }
    count
}

/// Times a node went from `active` to anything else, in a sequence of states.
fn departures<'a>(states: impl Iterator<Item = &'a str>) -> usize {
    let states: Vec<&str> = states.collect();
    states.windows(2).filter(|w| w[0] == "active" && w[1] != "active").count()
}

fn machine_deploys(record: &Record, machine: &MachineRecord) -> (usize, usize) {
    let mut deploys = 0;
    let mut left = 0;
    for node in &machine.nodes {
        let polled = node.states.iter().map(|(_, s)| s.as_str());
        let (mut d, mut l) = (entries(polled.clone(), "deploying"), departures(polled));
        // Ironic's log has every change, also those between two listings.
        if let Some(logged) = record.transitions.as_ref().and_then(|t| t.get(&node.uuid)) {
            d = d.max(logged.iter().filter(|t| t.to == "deploying").count());
            l = l.max(logged.iter().filter(|t| t.from == "active" && t.to != "active").count());
        }
        deploys += d;
        left += l;
    }
    (deploys, left)
}

impl Figures {
    /// The figures of `record` for `scenario`, with `faults` injected.
    pub fn compute(scenario: &str, faults: usize, record: &Record, convergence: Convergence) -> Self {
        let mut figures = Figures {
            scenario: scenario.to_string(),
            faults,
            hosts: record.machines.len(),
            duplicates: record.orphans.len(),
            not_converged: convergence.not_converged,
            converge_time: convergence.time,
            ..Figures::default()
        };
        let jobs = job_figures(record.jobs.values(), &record.run_once);
        (figures.job_runs, figures.duplicate_jobs, figures.reruns) = (jobs.runs, jobs.duplicates, jobs.reruns);
        for machine in record.machines.values() {
            figures.duplicates += machine.most_nodes_at_once.saturating_sub(1);
            let (deploys, left) = machine_deploys(record, machine);
            figures.reprovisions += deploys.saturating_sub(1);
            figures.left_active += left;
            figures.lost_finalizers += usize::from(machine.lost_finalizer);
        }
        figures
    }

    /// Fails, naming every figure that is not clean: the promise every scenario checks.
    pub fn assert_clean(&self) {
        let mut dirty = Vec::new();
        for (name, value) in [
            ("duplicate Ironic nodes", self.duplicates),
            ("nodes that left active", self.left_active),
            ("reprovisions", self.reprovisions),
            ("duplicate Jobs", self.duplicate_jobs),
            ("reruns of completed work", self.reruns),
            ("lost finalizers", self.lost_finalizers),
            ("hosts not converged", self.not_converged),
            ("panics", self.panics),
        ] {
            if value > 0 {
                dirty.push(format!("{value} {name}"));
            }
        }
        if self.converge_time.is_none() {
            dirty.push("no convergence measured".to_string());
        }
        assert!(dirty.is_empty(), "{}: {}\n{}\n{self}", self.scenario, dirty.join(", "), Self::HEADER);
    }

    /// The table's header, matching [`Display`](fmt::Display)'s columns.
    pub const HEADER: &'static str = "| scenario | faults | hosts | duplicate nodes | left active | reprovisions | duplicate Jobs | reruns | lost finalizers | not converged | converged after | panics |\n|---|---|---|---|---|---|---|---|---|---|---|---|";
}

impl fmt::Display for Figures {
    /// One Markdown table row.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = self.converge_time.map(|t| format!("{:.1} s", t.as_secs_f64())).unwrap_or_else(|| "never".into());
        // No Job ran: nothing could be duplicated, which is not the same as none was.
        let jobs = |n: usize| if self.job_runs == 0 && n == 0 { "–".to_string() } else { n.to_string() };
        write!(
            f,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            self.scenario,
            self.faults,
            self.hosts,
            self.duplicates,
            self.left_active,
            self.reprovisions,
            jobs(self.duplicate_jobs),
            jobs(self.reruns),
            self.lost_finalizers,
            self.not_converged,
            time,
            self.panics
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::record::Transition;
    use std::collections::BTreeMap;

    fn at(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn machine(nodes: &[(&str, &[&str])]) -> MachineRecord {
        let mut m = MachineRecord::default();
        for (uuid, states) in nodes {
            for (i, s) in states.iter().enumerate() {
                m.saw_node(at(i as u64), uuid, s);
            }
        }
        m.most_nodes_at_once = 1;
        m
    }

    #[test]
    fn a_clean_run_has_zero_figures_and_prints_one_row() {
        let mut record = Record::default();
        record.machines.insert("h0".into(), machine(&[("u0", &["enroll", "manageable", "deploying", "active"])]));
        let figures = Figures::compute(
            "kill",
            3,
            &record,
            Convergence { not_converged: 0, time: Some(Duration::from_millis(2500)) },
        );
        figures.assert_clean();
        assert_eq!(figures.to_string(), "| kill | 3 | 1 | 0 | 0 | 0 | – | – | 0 | 0 | 2.5 s | 0 |");
        assert_eq!(
            figures.to_string().matches('|').count(),
            Figures::HEADER.lines().next().unwrap().matches('|').count()
        );
    }

    #[test]
    fn a_second_deploy_leaving_active_a_duplicate_and_a_lost_finalizer_are_counted() {
        let mut record = Record::default();
        let mut m = machine(&[("u0", &["deploying", "active", "deploying", "active"])]);
        m.most_nodes_at_once = 2;
        m.saw_host(at(1), "provisioned", true, false);
        m.saw_host(at(2), "provisioned", false, false);
        record.machines.insert("h0".into(), m);
        record.orphans.insert("stray".into());
        let figures = Figures::compute("x", 0, &record, Convergence { not_converged: 1, time: None });
        assert_eq!(
            (
                figures.duplicates,
                figures.reprovisions,
                figures.left_active,
                figures.lost_finalizers,
                figures.not_converged
            ),
            (2, 1, 1, 1, 1)
        );
        assert!(std::panic::catch_unwind(|| figures.assert_clean()).is_err());
    }

    #[test]
    fn ironic_log_transitions_count_the_deploys_polling_missed_and_a_deleted_host_keeps_its_finalizer_figure_clean() {
        let mut record = Record::default();
        let mut m = machine(&[("u0", &["available", "active"])]);
        m.saw_host(at(1), "provisioned", true, false);
        m.saw_host(at(2), "deprovisioning", false, true);
        record.machines.insert("h0".into(), m);
        let t = |from: &str, to: &str| Transition { from: from.into(), to: to.into() };
        record.transitions = Some(BTreeMap::from([(
            "u0".to_string(),
            vec![t("available", "deploying"), t("deploying", "active"), t("active", "deploying")],
        )]));
        let figures = Figures::compute("x", 0, &record, Convergence::default());
        assert_eq!((figures.reprovisions, figures.left_active, figures.lost_finalizers), (1, 1, 0));
    }

    #[test]
    fn service_jobs_are_counted_and_a_duplicate_or_a_rerun_fails_the_run() {
        use crate::faults::jobs::{JobEnd, RunWith, ServiceJob};
        let run = |uid: &str, service: &str, config: &str, seen: u64, end: JobEnd| {
            let job = ServiceJob {
                name: uid.into(),
                nodeset: "computes".into(),
                service: service.into(),
                service_hash: "s1".into(),
                hosts: BTreeMap::from([("c-0".into(), RunWith { config_hash: config.into(), epoch: "e".into() })]),
                seen,
                end,
                ..ServiceJob::default()
            };
            (uid.to_string(), job)
        };
        let done = |seen: u64| JobEnd::Succeeded { at: None, seen };
        let mut record = Record::default();
        record.machines.insert("h0".into(), machine(&[("u0", &["deploying", "active"])]));
        record.run_once.insert("bootstrap".into());
        record.jobs =
            BTreeMap::from([run("j1", "bootstrap", "A", 1, done(2)), run("j2", "configure", "A", 3, done(4))]);
        let clean = Convergence { not_converged: 0, time: Some(at(1)) };
        let figures = Figures::compute("nodeset", 2, &record, clean);
        figures.assert_clean();
        assert_eq!(figures.to_string(), "| nodeset | 2 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1.0 s | 0 |");

        record.jobs.extend([run("j3", "bootstrap", "B", 5, done(6)), run("j4", "configure", "A", 7, JobEnd::Running)]);
        let figures = Figures::compute("nodeset", 2, &record, clean);
        assert_eq!((figures.job_runs, figures.duplicate_jobs, figures.reruns), (4, 1, 2));
        let failure = std::panic::catch_unwind(|| figures.assert_clean()).expect_err("not clean");
        let message = failure.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("1 duplicate Jobs, 2 reruns of completed work"), "{message}");
    }

    #[test]
    fn a_node_replaced_after_ironic_lost_its_database_and_adopted_is_no_reprovision() {
        let mut record = Record::default();
        record.machines.insert(
            "h0".into(),
            machine(&[("u0", &["deploying", "active"]), ("u1", &["enroll", "manageable", "adopting", "active"])]),
        );
        let figures = Figures::compute("x", 1, &record, Convergence { not_converged: 0, time: Some(at(1)) });
        figures.assert_clean();
    }
}
