use super::*;
use crate::nodeset::machine::{Action, Decision};
use crate::nodeset::plan::{HostPlan, Release};
use crate::nodeset::rollout::Failure;
use crds::baremetalhost::{BareMetalHostStatus, ProvisionStatus, ProvisioningState};
use crds::condition::{FALSE, TRUE};
use crds::nodeset::{BmhRef, DeletionPolicy};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use std::sync::Arc;

fn now() -> Time {
    Time(Timestamp::from_second(2_000).expect("time"))
}

fn nodeset(pre_provisioned: bool) -> NodeSet {
    let spec = if pre_provisioned {
        json!({"preProvisioned": true, "nodes": {"c-0": {}, "c-1": {}}})
    } else {
        json!({"baremetalSetTemplate": {"image": {"url": "http://i"}}, "nodes": {"c-0": {}, "c-1": {}}})
    };
    serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": "computes", "namespace": "metal3", "generation": 4}, "spec": spec}))
    .expect("nodeset")
}

fn bmh(name: &str, state: ProvisioningState) -> Arc<crds::baremetalhost::BareMetalHost> {
    let mut host = crds::baremetalhost::BareMetalHost::new(name, Default::default());
    host.metadata.namespace = Some("metal3".into());
    host.metadata.uid = Some(format!("uid-{name}"));
    host.status = Some(BareMetalHostStatus {
        provisioning: ProvisionStatus { state, ..Default::default() },
        ..Default::default()
    });
    Arc::new(host)
}

fn machine(phase: Phase, state: ProvisioningState, configured: bool, name: &str) -> HostPlan {
    HostPlan {
        phase: HostPhase::Machine(Decision {
            phase,
            action: Action::Keep,
            token: String::new(),
            provisioned_hash: Some("p".into()),
            outdated: Some(false),
            epoch: "e".into(),
            message: None,
        }),
        bmh: Some(bmh(name, state)),
        config: Default::default(),
        desired: "d".into(),
        completed: vec![],
        configured,
        approved: Some("d".into()),
        pending: false,
        at_approved: configured,
        message: None,
        firmware: Default::default(),
    }
}

fn plan_of(hosts: Vec<(&str, HostPlan)>) -> Plan {
    Plan {
        config_hash: "c".repeat(64),
        hosts: hosts.into_iter().map(|(n, h)| (n.to_string(), h)).collect(),
        ..Plan::default()
    }
}

fn condition<'a>(status: &'a NodeSetStatus, type_: &str) -> &'a crds::condition::Condition {
    status.conditions.iter().flatten().find(|c| c.type_ == type_).expect("condition")
}

#[test]
fn a_provisioned_and_configured_nodeset_is_ready() {
    let plan = plan_of(vec![
        ("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0")),
        ("c-1", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s1")),
    ]);
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(condition(&status, READY).status, TRUE);
    assert_eq!(condition(&status, PROVISIONED).status, TRUE);
    assert_eq!(condition(&status, CONFIGURED).status, TRUE);
    assert_eq!(condition(&status, DEGRADED).status, FALSE);
    assert_eq!((status.provisioned_hosts.as_deref(), status.configured_hosts.as_deref()), (Some("2/2"), Some("2/2")));
    assert_eq!(status.claimed_hosts, Some(2));
    assert_eq!(status.observed_generation, Some(4));
    assert_eq!(status.rollout.as_ref().and_then(|r| r.phase), Some(RolloutPhase::Complete));
}

#[test]
fn a_host_without_a_match_degrades_and_names_the_host() {
    let plan = plan_of(vec![
        ("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0")),
        (
            "c-1",
            HostPlan {
                phase: HostPhase::Unclaimed("3 match; none has 64 GiB".into()),
                ..machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "x")
            },
        ),
    ]);
    let (status, notices) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    let degraded = condition(&status, DEGRADED);
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), (TRUE, "NoMatchingHost"));
    assert!(degraded.message.contains("c-1: 3 match; none has 64 GiB"), "{}", degraded.message);
    assert_eq!(condition(&status, READY).reason, REASON_FAILED);
    assert!(notices.reasons().contains(&"NoMatchingHost"));
    assert_eq!(status.hosts.as_ref().and_then(|h| h["c-1"].bmh_ref.clone()), None);
}

#[test]
fn a_failed_job_degrades_quoting_it_and_the_rollout_is_failed() {
    let mut plan = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "s0"))]);
    plan.rollout.failures = vec![Failure {
        job: "computes-net-abc".into(),
        service: "configure-network".into(),
        hosts: vec!["c-0".into()],
        message: "container service exited with code 3: bad mtu".into(),
    }];
    let (status, notices) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    let degraded = condition(&status, DEGRADED);
    assert_eq!(degraded.reason, "JobFailed");
    assert!(degraded.message.contains("computes-net-abc") && degraded.message.contains("bad mtu"));
    assert_eq!(status.rollout.as_ref().and_then(|r| r.phase), Some(RolloutPhase::Failed));
    assert!(notices.reasons().contains(&"RolloutFailed"));
    let host = &status.hosts.as_ref().expect("hosts")["c-0"];
    assert!(host.message.as_deref().is_some_and(|m| m.contains("computes-net-abc")));
}

/// A host whose desired configuration waits for a token, at what was approved for it or not.
fn pending(at_approved: bool, name: &str) -> HostPlan {
    HostPlan {
        pending: true,
        at_approved,
        approved: Some("a".into()),
        ..machine(Phase::Provisioned, ProvisioningState::Provisioned, false, name)
    }
}

#[test]
fn a_manual_rollout_waiting_for_its_token_is_not_ready_and_not_progressing() {
    let mut plan = plan_of(vec![("c-0", pending(true, "s0"))]);
    plan.rollout.pending.insert("c-0".into());
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(condition(&status, READY).reason, ROLLOUT_PENDING);
    assert_eq!(condition(&status, PROGRESSING).status, FALSE);
    assert_eq!(status.rollout.as_ref().and_then(|r| r.phase), Some(RolloutPhase::Pending));
}

#[test]
fn hosts_waiting_for_a_token_are_configured_at_what_was_approved_and_counted_as_pending() {
    let mut plan = plan_of(vec![
        ("c-0", pending(true, "s0")),
        // Its approved rollout had not reached it when the edit came.
        ("c-1", pending(false, "s1")),
    ]);
    plan.rollout.pending.extend(["c-0".to_string(), "c-1".to_string()]);
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!((status.configured_hosts.as_deref(), status.pending_hosts), (Some("1/2"), Some(2)));
    let configured = condition(&status, CONFIGURED);
    assert_eq!((configured.status.as_str(), configured.reason.as_str()), (FALSE, ROLLOUT_PENDING));
    let ready = condition(&status, READY);
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), (FALSE, ROLLOUT_PENDING));
    assert!(
        ready
            .message
            .starts_with("1 of 2 hosts run the configuration approved for them; 2 wait for a new spec.rollout.token"),
        "{}",
        ready.message
    );
    assert!(ready.message.ends_with("c-0, c-1"), "{}", ready.message);
    assert_eq!(condition(&status, DEGRADED).status, FALSE, "waiting is not broken");
    let host = &status.hosts.as_ref().expect("hosts")["c-0"];
    assert_eq!(
        (
            host.approved_config_hash.as_deref(),
            host.desired_config_hash.as_deref(),
            host.deployed_config_hash.as_deref()
        ),
        (Some("a"), Some("d"), None),
        "approved is recorded; deployed is what ran, not what is approved"
    );

    // Once every host is at its approved configuration, Configured holds, saying what waits.
    plan.hosts.insert("c-1".into(), pending(true, "s1"));
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(status.configured_hosts.as_deref(), Some("2/2"));
    let configured = condition(&status, CONFIGURED);
    assert_eq!((configured.status.as_str(), configured.reason.as_str()), (TRUE, ROLLOUT_PENDING));
    assert_eq!(condition(&status, READY).status, FALSE, "the spec's configuration is not there yet");
}

#[test]
fn provisioning_hosts_are_progressing_and_a_claim_is_recorded_when_won() {
    let mut claiming = machine(Phase::Provisioned, ProvisioningState::Available, false, "s1");
    claiming.phase = HostPhase::Claiming;
    let plan = plan_of(vec![
        ("c-0", machine(Phase::Provisioning, ProvisioningState::Provisioning, false, "s0")),
        ("c-1", claiming),
    ]);
    let applied = Applied { claims_won: ["c-1".to_string()].into(), ..Applied::default() };
    let (status, notices) = compute(&nodeset(false), &plan, &applied, &Findings::default(), &now());
    assert_eq!(condition(&status, PROGRESSING).status, TRUE);
    assert_eq!(condition(&status, READY).reason, REASON_PROVISIONING);
    assert_eq!(condition(&status, PROVISIONED).status, FALSE);
    assert_eq!(status.claimed_hosts, Some(2), "the lock engages with the claim");
    assert_eq!(notices.reasons().iter().filter(|r| **r == "Claimed").count(), 2);
}

#[test]
fn a_lost_claim_records_nothing() {
    let mut claiming = machine(Phase::Provisioned, ProvisioningState::Available, false, "s1");
    claiming.phase = HostPhase::Claiming;
    let plan = plan_of(vec![("c-1", claiming)]);
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(status.claimed_hosts, Some(0));
}

#[test]
fn a_reprovision_not_written_keeps_the_old_token_so_the_next_reconcile_acts() {
    let mut host = machine(Phase::Waiting("deprovisioning".into()), ProvisioningState::Provisioned, false, "s0");
    if let HostPhase::Machine(d) = &mut host.phase {
        d.action = Action::Reprovision { token: "t2".into(), replaced: Some("t1".into()) };
        d.token = "t2".into();
    }
    let mut n = nodeset(false);
    n.status = Some(NodeSetStatus {
        hosts: Some(
            [("c-0".to_string(), HostStatus { reprovision_token: Some("t1".into()), ..Default::default() })].into(),
        ),
        ..Default::default()
    });
    let plan = plan_of(vec![("c-0", host)]);
    let (status, _) = compute(&n, &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(status.hosts.as_ref().expect("hosts")["c-0"].reprovision_token.as_deref(), Some("t1"));
    let applied = Applied { reprovisioned: ["c-0".to_string()].into(), ..Applied::default() };
    let (status, notices) = compute(&n, &plan, &applied, &Findings::default(), &now());
    assert_eq!(status.hosts.as_ref().expect("hosts")["c-0"].reprovision_token.as_deref(), Some("t2"));
    assert!(notices.reasons().contains(&"Reprovisioning"));
}

#[test]
fn a_released_host_leaves_status_with_an_event() {
    let mut plan = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0"))]);
    plan.releases =
        vec![Release { hostname: "c-1".into(), bmh: "s1".into(), policy: DeletionPolicy::Retain, held: false }];
    let mut n = nodeset(false);
    n.status =
        Some(NodeSetStatus { hosts: Some([("c-1".to_string(), HostStatus::default())].into()), ..Default::default() });
    let applied = Applied { released: ["c-1".to_string()].into(), ..Applied::default() };
    let (status, notices) = compute(&n, &plan, &applied, &Findings::default(), &now());
    assert!(!status.hosts.as_ref().expect("hosts").contains_key("c-1"));
    assert!(notices.reasons().contains(&"HostReleased"));
}

#[test]
fn a_preprovisioned_nodeset_has_no_provisioned_condition() {
    let plan = plan_of(vec![(
        "c-0",
        HostPlan {
            phase: HostPhase::PreProvisioned,
            bmh: None,
            ..machine(Phase::Provisioned, ProvisioningState::None, true, "x")
        },
    )]);
    let (status, _) = compute(&nodeset(true), &plan, &Applied::default(), &Findings::default(), &now());
    assert!(status.conditions.iter().flatten().all(|c| c.type_ != PROVISIONED));
    assert_eq!(status.provisioned_hosts.as_deref(), Some("1/1"));
}

#[test]
fn the_same_status_again_keeps_its_transition_times() {
    let plan = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0"))]);
    let (first, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    let mut n = nodeset(false);
    n.status = Some(first.clone());
    let later = Time(Timestamp::from_second(9_000).expect("time"));
    let (again, notices) = compute(&n, &plan, &Applied::default(), &Findings::default(), &later);
    assert_eq!(first, again, "nothing changed: nothing to write");
    assert!(notices.is_empty());
}

#[test]
fn events_mark_provisioned_and_the_rollout_starting_and_completing_once_each() {
    let provisioning =
        plan_of(vec![("c-0", machine(Phase::Provisioning, ProvisioningState::Provisioning, false, "s0"))]);
    let mut n = nodeset(false);
    let (first, _) = compute(&n, &provisioning, &Applied::default(), &Findings::default(), &now());
    n.status = Some(first);

    let mut running = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "s0"))]);
    running.rollout_status.started_at = Some(now());
    running.rollout_status.config_hash = Some(running.config_hash.clone());
    let (second, notices) = compute(&n, &running, &Applied::default(), &Findings::default(), &now());
    assert_eq!(second.rollout.as_ref().and_then(|r| r.phase), Some(RolloutPhase::RollingOut));
    assert_eq!(notices.reasons(), vec!["Provisioned", "RolloutStarted"]);
    n.status = Some(second);
    let (_, again) = compute(&n, &running, &Applied::default(), &Findings::default(), &now());
    assert!(again.is_empty(), "a transition is told once: {:?}", again.reasons());

    let mut done = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0"))]);
    done.rollout_status = running.rollout_status.clone();
    let (third, notices) = compute(&n, &done, &Applied::default(), &Findings::default(), &now());
    assert_eq!(third.rollout.as_ref().and_then(|r| r.phase), Some(RolloutPhase::Complete));
    assert_eq!(notices.reasons(), vec!["RolloutCompleted"]);
}

#[test]
fn a_machine_adopted_already_provisioned_is_claimed_not_provisioned() {
    let plan = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0"))]);
    let (_, notices) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(notices.reasons(), vec!["Claimed"], "adopted by label: nothing was provisioned");
}

#[test]
fn a_provisioning_whose_reconcile_died_before_its_status_is_told_by_the_next_reconcile_once() {
    // The status the last finished reconcile wrote: the machine claimed, available.
    let claimed = HostStatus {
        bmh_ref: Some(BmhRef { name: "s0".into(), namespace: "metal3".into(), uid: Some("uid-s0".into()) }),
        provisioning_state: Some(ProvisioningState::Available),
        ..HostStatus::default()
    };
    let mut n = nodeset(false);
    n.status = Some(NodeSetStatus {
        hosts: Some(BTreeMap::from([("c-0".to_string(), claimed.clone())])),
        ..NodeSetStatus::default()
    });
    // The image and its hash were written, then the operator died: this reconcile writes
    // nothing and reads the hash from the machine.
    let provisioning =
        plan_of(vec![("c-0", machine(Phase::Provisioning, ProvisioningState::Provisioning, false, "s0"))]);
    let (status, notices) = compute(&n, &provisioning, &Applied::default(), &Findings::default(), &now());
    assert_eq!(notices.reasons(), vec!["Provisioning"]);
    n.status = Some(status);
    let (_, again) = compute(&n, &provisioning, &Applied::default(), &Findings::default(), &now());
    assert!(again.is_empty(), "told once: {:?}", again.reasons());

    // A status that knew the machine provisioned already (restored without the hash) is no
    // provisioning now.
    let mut restored = nodeset(false);
    let provisioned = HostStatus { provisioning_state: Some(ProvisioningState::Provisioned), ..claimed };
    restored.status =
        Some(NodeSetStatus { hosts: Some(BTreeMap::from([("c-0".to_string(), provisioned)])), ..Default::default() });
    let running = plan_of(vec![("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0"))]);
    let (_, notices) = compute(&restored, &running, &Applied::default(), &Findings::default(), &now());
    assert!(!notices.reasons().contains(&"Provisioning"), "{:?}", notices.reasons());
}

#[test]
fn a_blocked_nodeset_keeps_its_claims_counts_and_completions_and_says_why() {
    let mut n = nodeset(false);
    let known: NodeSetStatus = serde_json::from_value(json!({
        "claimedHosts": 2, "provisionedHosts": "2/2", "configuredHosts": "2/2", "configHash": "old",
        "hosts": {
            "c-0": {"bmhRef": {"name": "s0", "namespace": "metal3"}, "deployedConfigHash": "d",
                    "servicesCompleted": [{"name": "bootstrap", "configHash": "d"}]},
            "c-1": {"bmhRef": {"name": "s1", "namespace": "metal3"}}
        }
    }))
    .expect("status");
    n.status = Some(known.clone());
    let findings = Findings { refused: Some(("HostPoolNotOpened", "not opened".into())), ..Findings::default() };
    // What plan() returns for a blocked NodeSet: every host unclaimed.
    let plan = plan_of(vec![
        (
            "c-0",
            HostPlan {
                phase: HostPhase::Unclaimed(String::new()),
                ..machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "s0")
            },
        ),
        (
            "c-1",
            HostPlan {
                phase: HostPhase::Unclaimed(String::new()),
                ..machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "s1")
            },
        ),
    ]);
    let (status, notices) = compute(&n, &plan, &Applied::default(), &findings, &now());
    assert_eq!(status.hosts, known.hosts, "claims and completions stay");
    assert_eq!(status.claimed_hosts, Some(2), "the locks keep holding");
    assert_eq!((status.provisioned_hosts.as_deref(), status.configured_hosts.as_deref()), (Some("2/2"), Some("2/2")));
    assert_eq!(status.observed_generation, Some(4));
    let degraded = condition(&status, DEGRADED);
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), (TRUE, "HostPoolNotOpened"));
    assert_eq!(condition(&status, READY).status, FALSE);
    assert!(notices.is_empty(), "no host was claimed or released");
}

#[test]
fn a_job_the_apiserver_refused_is_degraded_with_its_words() {
    let plan = plan_of(vec![
        ("c-0", machine(Phase::Provisioned, ProvisioningState::Provisioned, false, "s0")),
        ("c-1", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s1")),
    ]);
    let applied = Applied {
        jobs_refused: [("computes-net-1".to_string(), "violates PodSecurity \"restricted:latest\"".to_string())].into(),
        ..Applied::default()
    };
    let (status, _) = compute(&nodeset(false), &plan, &applied, &Findings::default(), &now());
    let degraded = condition(&status, DEGRADED);
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), (TRUE, "JobRefused"));
    assert!(degraded.message.contains("Job computes-net-1: violates PodSecurity"), "{}", degraded.message);
}

#[test]
fn outdated_machines_are_counted_and_named_in_a_condition() {
    let mut outdated = machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s0");
    if let HostPhase::Machine(d) = &mut outdated.phase {
        d.outdated = Some(true);
    }
    let plan = plan_of(vec![
        ("c-0", outdated),
        ("c-1", machine(Phase::Provisioned, ProvisioningState::Provisioned, true, "s1")),
    ]);
    let (status, _) = compute(&nodeset(false), &plan, &Applied::default(), &Findings::default(), &now());
    assert_eq!(status.outdated_hosts, Some(1));
    let outdated = condition(&status, OUTDATED);
    assert_eq!((outdated.status.as_str(), outdated.reason.as_str()), (TRUE, "ProvisioningInputsChanged"));
    assert!(outdated.message.starts_with("c-0 run") && outdated.message.contains("reprovisionToken"));
    assert_eq!(condition(&status, READY).status, TRUE, "outdated machines still run: Ready says so elsewhere");
    assert_eq!(status.deletion_policy, Some(crds::nodeset::DeletionPolicy::Retain), "the policy seen is recorded");
}
