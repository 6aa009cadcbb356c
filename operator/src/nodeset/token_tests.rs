//! Reprovision tokens across lost writes and undos: a token value reprovisions a machine at
//! most once, and an installation is never taken for a request it already answered.

use super::*;
use crate::nodeset::machine::{Action, token_used};
use crds::nodeset::{PROVISIONED_TOKEN_ANNOTATION, REPROVISION_TOKEN_ANNOTATION};

/// `host` after `write` landed (an apply or a merge patch, merged as the apiserver would for
/// the fields these writes carry).
fn landed(host: &BareMetalHost, write: &HostWrite) -> BareMetalHost {
    let mut value = serde_json::to_value(host).expect("json");
    match &write.body {
        Body::Apply(body) | Body::Merge(body) => json_patch::merge(&mut value, body),
    }
    serde_json::from_value(value).expect("host")
}

fn with_token(spec: &Value, hostname: &str, token: &str) -> Value {
    let mut spec = spec.clone();
    spec["nodes"][hostname]["reprovisionToken"] = json!(token);
    spec
}

fn recording(hosts: &[Arc<BareMetalHost>], hostname: &str, token: &str) -> NodeSetStatus {
    let mut known = status(&spec(), hosts);
    if let Some(entry) = known.hosts.as_mut().and_then(|h| h.get_mut(hostname)) {
        entry.reprovision_token = Some(token.into());
    }
    known
}

fn decision<'a>(plan: &'a Plan, hostname: &str) -> &'a Decision {
    let HostPhase::Machine(decision) = &plan.hosts[hostname].phase else { panic!("a machine") };
    decision
}

/// compute-0's machine freed, the spec asking `wanted` where status recorded `recorded`: the
/// NodeSet, the free machine, the first plan and its provisioning write.
fn provisioning(
    hosts: &[Arc<BareMetalHost>],
    recorded: &str,
    wanted: &str,
) -> (NodeSet, BareMetalHost, Plan, HostWrite) {
    let free = freed(&hosts[0]);
    let mut n = nodeset(&with_token(&spec(), "compute-0", wanted));
    n.status = Some(recording(hosts, "compute-0", recorded));
    let machines = facts(vec![Arc::new(free.clone()), hosts[1].clone(), hosts[2].clone()]);
    let first = plan(&n, &machines, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let write = first.writes.iter().find(|w| w.purpose == Purpose::Provision).expect("a provision write").clone();
    (n, free, first, write)
}

#[test]
fn a_provisioning_whose_status_write_was_lost_is_not_taken_for_a_reprovision_request() {
    // compute-0's token went from t1 to t2 while its machine was free (a new machine for it, or
    // one still being brought up): the provisioning lands, the status write after it does not.
    let hosts = provisioned(&spec());
    let (n, free, first, write) = provisioning(&hosts, "t1", "t2");
    assert_eq!(decision(&first, "compute-0").action, Action::Provision { token: Some("t2".into()) });
    let mut underway = landed(&free, &write);
    underway.status.as_mut().expect("status").provisioning.state = ProvisioningState::Provisioning;
    // The next reconcile reads the same status (t1): the machine says it answered t2.
    let machines = facts(vec![Arc::new(underway), hosts[1].clone(), hosts[2].clone()]);
    let next = plan(&n, &machines, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(next.writes.iter().all(|w| !w.clears_image()), "{:?}", purposes(&next));
    assert_eq!(decision(&next, "compute-0").action, Action::Keep);
    assert_eq!(decision(&next, "compute-0").message, None, "nothing to say of a token it was provisioned for");
}

#[test]
fn an_undo_to_a_token_only_recorded_on_first_sight_does_not_reprovision_again() {
    // compute-1 came with "A" (recorded, never acted on); "B" reprovisioned it; a GitOps
    // self-heal brings "A" back.
    let hosts = provisioned(&spec());
    let mut n = nodeset(&with_token(&spec(), "compute-1", "B"));
    n.status = Some(recording(&hosts, "compute-1", "A"));
    let asked = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let clear = asked.writes.iter().find(|w| w.purpose == Purpose::Reprovision).expect("the reprovision B asks for");
    let mut cleared = landed(&hosts[1], clear);
    assert!(token_used(&cleared, "A") && token_used(&cleared, "B"));
    // Reprovisioned with B's installation, as the next provisioning leaves it.
    cleared.spec.image = hosts[1].spec.image.clone();
    let reprovisioned = Arc::new(cleared);
    let machines = vec![hosts[0].clone(), reprovisioned, hosts[2].clone()];
    let mut n = nodeset(&with_token(&spec(), "compute-1", "A"));
    n.status = Some(recording(&hosts, "compute-1", "B"));
    let undone = plan(&n, &facts(machines), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(undone.writes.iter().all(|w| !w.clears_image()), "{:?}", purposes(&undone));
    assert_eq!(decision(&undone, "compute-1").token, "A");
}

#[test]
fn a_provisioning_records_its_token_on_the_machine_and_begins_no_other_epoch() {
    let hosts = provisioned(&spec());
    let (_, free, plan, write) = provisioning(&hosts, "t1", "t1");
    let provisioned = landed(&free, &write);
    assert_eq!(provisioned.annotations().get(PROVISIONED_TOKEN_ANNOTATION).map(String::as_str), Some("t1"));
    assert!(!provisioned.annotations().contains_key(REPROVISION_TOKEN_ANNOTATION), "no reprovision was acted on");
    assert_eq!(decision(&plan, "compute-0").epoch, crate::nodeset::machine::epoch(&provisioned, None));
}

#[test]
fn a_reprovision_token_brought_back_by_an_undo_does_not_reprovision_again() {
    // compute-1 was reprovisioned for "A", then for "B"; an undo brings "A" back.
    let hosts = provisioned_with(|h| {
        if h.name_any() == "server-1" {
            let used = crate::nodeset::machine::tokens_used_after(h, &["A"]);
            h.annotations_mut().insert(crds::nodeset::REPROVISION_TOKENS_USED_ANNOTATION.into(), used);
            let used = crate::nodeset::machine::tokens_used_after(h, &["B"]);
            h.annotations_mut().insert(crds::nodeset::REPROVISION_TOKENS_USED_ANNOTATION.into(), used);
            h.annotations_mut().insert(crds::nodeset::REPROVISION_TOKEN_ANNOTATION.into(), "B".into());
        }
    });
    let mut n = nodeset(&edited(|s| s["nodes"]["compute-1"]["reprovisionToken"] = json!("A")));
    let mut known = status(&spec(), &hosts);
    if let Some(entry) = known.hosts.as_mut().and_then(|h| h.get_mut("compute-1")) {
        entry.reprovision_token = Some("B".into());
    }
    n.status = Some(known);
    let plan = plan(&n, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(plan.writes.iter().all(|w| !w.clears_image()), "{:?}", purposes(&plan));
    let HostPhase::Machine(decision) = &plan.hosts["compute-1"].phase else { panic!("a machine") };
    assert_eq!(decision.token, "A", "recorded, so the next new value is a request");
    assert!(decision.message.as_deref().is_some_and(|m| m.contains("once, ever")), "{:?}", decision.message);
    // And a value never used does reprovision.
    let mut fresh = n.clone();
    fresh.spec.nodes.as_mut().and_then(|m| m.get_mut("compute-1")).expect("host").reprovision_token = Some("C".into());
    let hosts = provisioned_with(|_| {});
    let plan = super::plan(&fresh, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(purposes(&plan), [("compute-1".to_string(), Purpose::Reprovision)]);
}
