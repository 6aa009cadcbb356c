use super::*;
use k8s_openapi::jiff::Timestamp;

fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).expect("time"))
}

fn service(name: &str, run_once: bool) -> Option<Service> {
    Some(Service { name: name.into(), run_once, hash: format!("{name}-v1") })
}

fn completion(name: &str, config: &str, secs: i64) -> CompletedService {
    CompletedService {
        name: name.into(),
        config_hash: Some(config.into()),
        service_hash: Some(format!("{name}-v1")),
        completed_at: Some(at(secs)),
    }
}

/// A host at `desired` that completed `done` (service names) at config `at_config`.
fn host(name: &str, desired: &str, done: &[&str], at_config: &str) -> HostWork {
    HostWork {
        name: name.into(),
        desired: desired.into(),
        epoch: "e".into(),
        completed: done.iter().map(|s| completion(s, at_config, 10)).collect(),
        ready: true,
        configured_before: !done.is_empty(),
        approved: Some(desired.into()),
    }
}

/// `services` as a rollout approves them.
fn approve(services: &[Option<Service>]) -> Vec<ApprovedService> {
    services
        .iter()
        .map(|s| match s {
            Some(s) => ApprovedService { name: s.name.clone(), service_hash: Some(s.hash.clone()) },
            None => ApprovedService { name: "missing".into(), service_hash: None },
        })
        .collect()
}

/// Plans with every host's desired configuration and the services approved (`gate`), or
/// nothing approved.
fn planned(
    hosts: &[HostWork],
    services: &[Option<Service>],
    jobs: &[ObservedJob],
    gate: bool,
    max_unavailable: usize,
    history: usize,
) -> RolloutPlan {
    let approved = gate.then(|| approve(services));
    plan(hosts, services, jobs, approved.as_deref(), max_unavailable, history)
}

fn job(name: &str, service: &str, hosts: &[(&str, &str)], outcome: JobOutcome) -> ObservedJob {
    ObservedJob {
        name: name.into(),
        service: service.into(),
        service_hash: format!("{service}-v1"),
        hosts: hosts
            .iter()
            .map(|(h, c)| (h.to_string(), JobHost { config_hash: c.to_string(), epoch: "e".into(), after: None }))
            .collect(),
        outcome,
        created: at(20),
    }
}

fn batches(plan: &RolloutPlan) -> Vec<(String, Vec<String>)> {
    plan.batches.iter().map(|b| (b.service.clone(), b.hosts.keys().cloned().collect())).collect()
}

fn services() -> Vec<Option<Service>> {
    vec![service("bootstrap", true), service("configure-network", false), service("configure-os", false)]
}

const ALL: [&str; 3] = ["bootstrap", "configure-network", "configure-os"];

#[test]
fn new_hosts_get_their_first_service_together_and_unthrottled() {
    let hosts = [host("c-0", "A", &[], ""), host("c-1", "A", &[], ""), host("c-2", "A", &[], "")];
    let plan = planned(&hosts, &services(), &[], true, 1, 3);
    assert_eq!(batches(&plan), [("bootstrap".to_string(), vec!["c-0".into(), "c-1".into(), "c-2".into()])]);
}

#[test]
fn a_configured_host_needs_nothing() {
    let plan = planned(&[host("c-0", "A", &ALL, "A")], &services(), &[], true, 1, 3);
    assert!(plan.batches.is_empty());
    assert!(plan.configured.contains("c-0"));
}

#[test]
fn an_edit_reruns_every_service_but_the_run_once_ones_at_most_max_unavailable_hosts_at_a_time() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("c-1", "B", &ALL, "A"), host("c-2", "B", &ALL, "A")];
    let plan = planned(&hosts, &services(), &[], true, 2, 3);
    assert_eq!(batches(&plan), [("configure-network".to_string(), vec!["c-0".into(), "c-1".into()])]);
}

#[test]
fn hosts_in_running_jobs_count_against_max_unavailable() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("c-1", "B", &ALL, "A")];
    let running = job("j", "configure-network", &[("c-0", "B")], JobOutcome::Running);
    let plan = planned(&hosts, &services(), &[running], true, 1, 3);
    assert!(plan.batches.is_empty(), "c-0 is unavailable, and one is the limit");
    assert_eq!(plan.running, BTreeSet::from(["c-0".to_string()]));
}

#[test]
fn a_succeeded_job_is_recorded_and_the_host_moves_to_the_next_service() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("c-1", "B", &ALL, "A")];
    let finished = job("j", "configure-network", &[("c-0", "B")], JobOutcome::Succeeded { at: at(30) });
    let plan = planned(&hosts, &services(), &[finished], true, 1, 3);
    assert_eq!(plan.completed["c-0"][1], completion("configure-network", "B", 30));
    assert_eq!(batches(&plan), [("configure-os".to_string(), vec!["c-0".into()])], "c-0 finishes before c-1 starts");
}

#[test]
fn run_once_services_run_once_per_host_ever() {
    let hosts = [host("c-0", "C", &ALL, "A")];
    let plan = planned(&hosts, &[service("bootstrap", true)], &[], true, 1, 3);
    assert!(plan.batches.is_empty());
    assert!(plan.configured.contains("c-0"));
}

#[test]
fn a_changed_service_spec_reruns_that_service() {
    let mut changed = services();
    changed[2] = Some(Service { name: "configure-os".into(), run_once: false, hash: "configure-os-v2".into() });
    let plan = planned(&[host("c-0", "A", &ALL, "A")], &changed, &[], true, 1, 3);
    assert_eq!(batches(&plan), [("configure-os".to_string(), vec!["c-0".into()])]);
}

#[test]
fn a_failed_job_stops_the_rollout_and_quotes_the_job() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("c-1", "B", &ALL, "A")];
    let failed =
        job("j", "configure-network", &[("c-0", "B")], JobOutcome::Failed { message: "exit 3".into(), at: at(30) });
    let plan = planned(&hosts, &services(), &[failed], true, 5, 3);
    assert_eq!(
        plan.failures,
        [Failure {
            job: "j".into(),
            service: "configure-network".into(),
            hosts: vec!["c-0".into()],
            message: "exit 3".into()
        }]
    );
    assert!(plan.batches.is_empty(), "c-1 does not start either");
}

#[test]
fn a_failed_job_does_not_hold_back_the_bring_up_of_hosts_it_does_not_concern() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("c-1", "B", &ALL, "A"), host("new-0", "B", &[], "")];
    let failed =
        job("j", "configure-network", &[("c-0", "B")], JobOutcome::Failed { message: "exit 3".into(), at: at(30) });
    let plan = planned(&hosts, &services(), &[failed], true, 5, 3);
    assert_eq!(plan.failures.len(), 1);
    assert_eq!(batches(&plan), [("bootstrap".to_string(), vec!["new-0".into()])], "the rollout stays stopped");
}

#[test]
fn fixing_the_service_resumes_a_failed_rollout() {
    let hosts = [host("c-0", "B", &ALL, "A")];
    let failed =
        job("j", "configure-network", &[("c-0", "B")], JobOutcome::Failed { message: "exit 3".into(), at: at(30) });
    let mut fixed = services();
    fixed[1] = Some(Service { name: "configure-network".into(), run_once: false, hash: "configure-network-v2".into() });
    let plan = planned(&hosts, &fixed, &[failed], true, 1, 3);
    assert!(plan.failures.is_empty());
    assert_eq!(batches(&plan), [("configure-network".to_string(), vec!["c-0".into()])]);
}

#[test]
fn a_manual_rollout_holds_configured_hosts_but_brings_new_ones_up() {
    let hosts = [host("c-0", "B", &ALL, "A"), host("new", "B", &[], "")];
    let plan = planned(&hosts, &services(), &[], false, 1, 3);
    assert_eq!(batches(&plan), [("bootstrap".to_string(), vec!["new".into()])]);
    assert_eq!(plan.pending, BTreeSet::from(["c-0".to_string()]));
}

/// `host`, with `approved` approved for it.
fn approved_at(host: HostWork, approved: Option<&str>) -> HostWork {
    HostWork { approved: approved.map(str::to_string), ..host }
}

#[test]
fn approvals_are_per_host_so_hosts_that_come_and_go_hold_no_approved_rollout_back() {
    let hosts = [
        // Approved B by the token: rolls out.
        approved_at(host("c-0", "B", &ALL, "A"), Some("B")),
        // Approved A, then edited to B: waits, at what was approved for it.
        approved_at(host("c-1", "B", &ALL, "A"), Some("A")),
        // Added after the token and brought up at A: nothing approved for B.
        approved_at(host("c-2", "B", &ALL, "A"), None),
        // Added now: its bring-up needs no approval.
        approved_at(host("new", "B", &[], ""), None),
    ];
    let plan = planned(&hosts, &services(), &[], true, 5, 3);
    assert_eq!(
        batches(&plan),
        [("bootstrap".to_string(), vec!["new".into()]), ("configure-network".to_string(), vec!["c-0".into()])]
    );
    assert_eq!(plan.pending, BTreeSet::from(["c-1".to_string(), "c-2".to_string()]));
    assert_eq!(plan.at_approved, plan.pending, "both run all that was approved for them");
}

#[test]
fn a_service_edit_after_the_approval_holds_every_configured_host_and_tells_who_reached_what_was_approved() {
    let approved = approve(&services());
    let mut edited = services();
    edited[2] = Some(Service { name: "configure-os".into(), run_once: false, hash: "configure-os-v2".into() });
    let hosts = [
        host("c-0", "A", &ALL, "A"),
        // The approved rollout (configure-os at v1, after a host edit to B) had not reached it.
        host("c-1", "B", &ALL, "A"),
        host("new", "A", &[], ""),
    ];
    let plan = plan(&hosts, &edited, &[], Some(&approved), 5, 3);
    assert_eq!(batches(&plan), [("bootstrap".to_string(), vec!["new".into()])], "a bring-up runs what is asked");
    assert_eq!(plan.pending, BTreeSet::from(["c-0".to_string(), "c-1".to_string()]));
    assert_eq!(plan.at_approved, BTreeSet::from(["c-0".to_string()]));
}

#[test]
fn an_unknown_service_runs_nothing_new() {
    let hosts = [host("c-0", "A", &[], "")];
    let plan = planned(&hosts, &[service("bootstrap", true), None], &[], true, 1, 3);
    assert!(plan.batches.is_empty());
    assert!(!plan.configured.contains("c-0"));
}

#[test]
fn completions_of_another_epoch_do_not_count() {
    let hosts = [host("c-0", "A", &[], "")];
    let mut old = job("j", "bootstrap", &[("c-0", "A")], JobOutcome::Succeeded { at: at(30) });
    old.hosts.get_mut("c-0").expect("host").epoch = "before-reprovision".into();
    let plan = planned(&hosts, &services(), &[old], true, 1, 3);
    assert!(plan.completed["c-0"].is_empty());
    assert_eq!(batches(&plan), [("bootstrap".to_string(), vec!["c-0".into()])]);
}

#[test]
fn large_groups_are_split_into_bounded_batches() {
    let hosts: Vec<HostWork> = (0..250).map(|i| host(&format!("c-{i:03}"), "A", &[], "")).collect();
    let plan = planned(&hosts, &services(), &[], true, 1, 3);
    let sizes: Vec<usize> = plan.batches.iter().map(|b| b.hosts.len()).collect();
    assert_eq!(sizes, [100, 100, 50]);
}

#[test]
fn finished_jobs_beyond_the_history_are_pruned_once_recorded() {
    let hosts = [host("c-0", "A", &ALL, "A")];
    let mut jobs = Vec::new();
    for (i, name) in ["j1", "j2", "j3"].iter().enumerate() {
        let secs = 5 + i64::try_from(i).expect("small");
        jobs.push(job(name, "configure-os", &[("c-0", "A")], JobOutcome::Succeeded { at: at(secs) }));
    }
    let plan = planned(&hosts, &services(), &jobs, true, 1, 2);
    // c-0's configure-os completed at 10, after every one of them: all recorded.
    assert_eq!(plan.prunable, ["j1"], "the two newest are kept");
    let running = job("r", "configure-os", &[("c-0", "A")], JobOutcome::Running);
    let plan = planned(&hosts, &services(), &[running], true, 1, 0);
    assert!(plan.prunable.is_empty(), "a running Job is never pruned");
}

#[test]
fn a_success_is_pruned_only_after_its_outcome_was_stored() {
    let mut hosts = [host("c-0", "B", &[], "")];
    let finished = job("j", "bootstrap", &[("c-0", "B")], JobOutcome::Succeeded { at: at(30) });
    let first = planned(&hosts, &services(), std::slice::from_ref(&finished), true, 1, 0);
    assert_eq!(first.completed["c-0"].len(), 1, "recorded by this plan");
    assert!(first.prunable.is_empty(), "but not stored yet: a failed status write must not lose it");
    hosts[0].completed = first.completed["c-0"].clone();
    let next = planned(&hosts, &services(), &[finished], true, 1, 0);
    assert_eq!(next.prunable, ["j"]);
}

/// A Job of `service` on `c-0` at config `config`, planned after the host's completion `after`.
fn job_after(
    name: &str,
    service: &str,
    config: &str,
    after: Option<&CompletedService>,
    outcome: JobOutcome,
) -> ObservedJob {
    let mut job = job(name, service, &[("c-0", config)], outcome);
    job.hosts.get_mut("c-0").expect("host").after = Some(fingerprint(after));
    job.created = at(10);
    job
}

// Completion times have a one-second resolution: a fast service completes twice within one
// second, and the run planned after a completion must still count as the newer one.
#[test]
fn a_rerun_that_completes_in_the_second_of_the_completion_it_followed_is_recorded() {
    let hosts = [host("c-0", "B", &ALL, "A")];
    let before = completion("configure-network", "A", 10);
    let rerun = job_after("j", "configure-network", "B", Some(&before), JobOutcome::Succeeded { at: at(10) });
    let plan = planned(&hosts, &services(), &[rerun], true, 1, 3);
    assert_eq!(plan.completed["c-0"][1], completion("configure-network", "B", 10));
    assert_eq!(batches(&plan), [("configure-os".to_string(), vec!["c-0".into()])], "the host moves on");
}

#[test]
fn runs_chained_within_one_second_record_the_last_whatever_their_names() {
    let hosts = [host("c-0", "C", &ALL, "A")];
    let first = completion("configure-network", "A", 10);
    let second = completion("configure-network", "B", 10);
    // Named so that the later run sorts first.
    let jobs = [
        job_after("a-later", "configure-network", "C", Some(&second), JobOutcome::Succeeded { at: at(10) }),
        job_after("b-earlier", "configure-network", "B", Some(&first), JobOutcome::Succeeded { at: at(10) }),
    ];
    let plan = planned(&hosts, &services(), &jobs, true, 1, 3);
    assert_eq!(plan.completed["c-0"][1], completion("configure-network", "C", 10));
}

#[test]
fn an_older_run_in_the_same_second_does_not_replace_a_newer_completion() {
    let hosts = [host("c-0", "B", &ALL, "B")];
    let older = job_after("j", "configure-network", "A", None, JobOutcome::Succeeded { at: at(10) });
    let plan = planned(&hosts, &services(), &[older], true, 1, 3);
    assert_eq!(plan.completed["c-0"][1], completion("configure-network", "B", 10));
    assert!(plan.configured.contains("c-0"));
}

#[test]
fn a_success_in_the_second_of_another_completion_is_not_pruned_before_it_is_stored() {
    let hosts = [host("c-0", "B", &ALL, "A")];
    let before = completion("configure-network", "A", 10);
    let rerun = job_after("j", "configure-network", "B", Some(&before), JobOutcome::Succeeded { at: at(10) });
    let plan = planned(&hosts, &services(), &[rerun], true, 1, 0);
    assert!(plan.prunable.is_empty(), "the stored completion of the same second is the one before it");
}

#[test]
fn a_failure_planned_after_the_current_completion_blocks_even_within_its_second() {
    let hosts = [host("c-0", "B", &ALL, "A")];
    let before = completion("configure-network", "A", 10);
    let failed = JobOutcome::Failed { message: "exit 3".into(), at: at(10) };
    let plan =
        planned(&hosts, &services(), &[job_after("j", "configure-network", "B", Some(&before), failed)], true, 1, 3);
    assert_eq!(plan.failures.len(), 1, "{plan:?}");
    assert!(plan.batches.is_empty());
}

#[test]
fn the_next_job_records_the_completion_it_runs_after() {
    let hosts = [host("c-0", "B", &ALL, "A")];
    let plan = planned(&hosts, &services(), &[], true, 1, 3);
    let ran = &plan.batches[0].hosts["c-0"];
    assert_eq!(ran.after.as_deref(), Some(fingerprint(Some(&completion("configure-network", "A", 10))).as_str()));
}

#[test]
fn max_unavailable_is_a_count_or_a_percentage_and_never_zero() {
    for (value, hosts, expected) in [
        (None, 10, 1),
        (Some(IntOrString::Int(3)), 10, 3),
        (Some(IntOrString::Int(0)), 10, 1),
        (Some(IntOrString::Int(-5)), 10, 1),
        (Some(IntOrString::String("25%".into())), 10, 2),
        (Some(IntOrString::String("100%".into())), 10, 10),
        (Some(IntOrString::String("1%".into())), 10, 1),
        (Some(IntOrString::String("500%".into())), usize::MAX, usize::MAX),
        (Some(IntOrString::String("nonsense".into())), 10, 1),
    ] {
        assert_eq!(max_unavailable(value.as_ref(), hosts), expected, "{value:?} of {hosts}");
    }
}

fn listed(hash: &str) -> Vec<ApprovedService> {
    vec![ApprovedService { name: "configure-os".into(), service_hash: Some(hash.into()) }]
}

#[test]
fn the_manual_strategy_approves_what_its_token_acknowledged() {
    let manual = |token: Option<&str>| Rollout {
        strategy: Some(RolloutStrategy::Manual),
        token: token.map(str::to_string),
        ..Default::default()
    };
    // First sight (a new NodeSet, a recreated one, status lost): nothing is approved, so a host
    // that runs a configuration already gets no new one without a token; hosts being brought
    // up are not gated.
    let (first, all) = acknowledge(Some(&manual(Some("old"))), None, "A", &listed("v1"), &at(1));
    assert!(!all);
    assert_eq!(
        (first.config_hash.as_deref(), first.acknowledged_token.as_deref(), first.approved_services.clone()),
        (None, Some("old"), None),
        "the token seen, nothing approved"
    );
    let (again, all) = acknowledge(Some(&manual(Some("old"))), Some(&first), "A", &listed("v1"), &at(1));
    assert!(!all, "a token seen on first sight is no new token");
    // An edit waits.
    let (waiting, all) = acknowledge(Some(&manual(None)), Some(&again), "B", &listed("v1"), &at(2));
    assert!(!all);
    assert_eq!(waiting.config_hash, None);
    // A new token approves the current configuration, and the services as they are.
    let (acked, all) = acknowledge(Some(&manual(Some("2026-08-01"))), Some(&waiting), "B", &listed("v1"), &at(3));
    assert!(all);
    assert_eq!(
        (acked.acknowledged_token.as_deref(), acked.config_hash.as_deref(), acked.started_at.clone()),
        (Some("2026-08-01"), Some("B"), Some(at(3)))
    );
    assert_eq!(acked.approved_services, Some(listed("v1")));
    // An edit during it approves nothing new: each host keeps what was approved for it, and
    // the services stay approved as they were.
    let (during, all) = acknowledge(Some(&manual(Some("2026-08-01"))), Some(&acked), "C", &listed("v2"), &at(4));
    assert!(!all);
    assert_eq!(during.approved_services, Some(listed("v1")));
}

#[test]
fn a_manual_rollout_recorded_by_an_older_operator_approved_what_its_hash_says() {
    let manual = Rollout { strategy: Some(RolloutStrategy::Manual), ..Default::default() };
    let older = RolloutStatus { config_hash: Some("A".into()), ..Default::default() };
    let (status, all) = acknowledge(Some(&manual), Some(&older), "A", &listed("v1"), &at(1));
    assert!(all, "it approved what the spec asks now");
    assert_eq!(status.approved_services, Some(listed("v1")));
    let (status, all) = acknowledge(Some(&manual), Some(&older), "B", &listed("v1"), &at(1));
    assert!(!all, "an edit it had not approved still waits");
    assert_eq!(status.approved_services, None);
}

#[test]
fn the_automatic_strategy_starts_a_rollout_per_configuration_and_approves_everything() {
    let (first, all) = acknowledge(None, None, "A", &listed("v1"), &at(1));
    assert!(all);
    let (same, _) = acknowledge(None, Some(&first), "A", &listed("v1"), &at(5));
    assert_eq!(same.started_at, Some(at(1)), "the same configuration is the same rollout");
    let (next, all) = acknowledge(None, Some(&first), "B", &listed("v2"), &at(6));
    assert!(all);
    assert_eq!((next.config_hash.as_deref(), next.started_at), (Some("B"), Some(at(6))));
    assert_eq!(next.approved_services, Some(listed("v2")));
}

#[test]
fn a_completion_has_one_fingerprint_whether_read_from_memory_or_back_from_status() {
    let stored = completion("configure-network", "A", 10);
    let mut in_memory = stored.clone();
    in_memory.completed_at = Some(Time(Timestamp::from_millisecond(10_400).expect("time")));
    assert_eq!(fingerprint(Some(&in_memory)), fingerprint(Some(&stored)));
    assert_ne!(fingerprint(Some(&stored)), fingerprint(Some(&completion("configure-network", "B", 10))));
    assert_eq!(fingerprint(None), "");
}
