//! Where each host of a plan stands (pure): the hosts as `spec.nodes` lists them, then which
//! BareMetalHost backs each (`claims`, `lost`) and what is decided for each claimed machine
//! (`machine`), with the completions that count for it.

use super::basis::Basis;
use super::claims::{ClaimPlan, plan_claims};
use super::consumer::{Body, Consumer, HostWrite, Purpose, apply_body, recorded_completions};
use super::facts::Facts;
use super::lost;
use super::machine::{Action, Decision, decide, has_image, same_epoch};
use super::plan::{HostPhase, HostPlan, write};
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{CompletedService, NodeSection, effective_host_config_with, host_config_hash_with};
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The hosts of `spec.nodes`, each with its desired configuration and what a rollout approved
/// for it, before any claim is looked at: all a plan whose findings block it reports.
pub(super) fn listed_hosts(basis: &Basis, facts: &Facts) -> BTreeMap<String, HostPlan> {
    let nodes = basis.spec.nodes.clone().unwrap_or_default();
    nodes.iter().map(|(hostname, section)| (hostname.clone(), listed_host(basis, facts, hostname, section))).collect()
}

/// One host of `spec.nodes` as `listed_hosts` has it.
fn listed_host(basis: &Basis, facts: &Facts, hostname: &str, section: &NodeSection) -> HostPlan {
    let spec = basis.spec;
    let config = effective_host_config_with(hostname, spec.node_template.as_ref(), Some(section), &facts.sources);
    let desired = host_config_hash_with(hostname, spec.node_template.as_ref(), Some(section), &facts.sources);
    let (phase, completed) = if spec.pre_provisioned() {
        (HostPhase::PreProvisioned, pre_provisioned_completions(basis, hostname))
    } else {
        (HostPhase::Unclaimed(String::new()), Vec::new())
    };
    // What a rollout approved for the host: what it asks now for a new approval, else what
    // was approved for it before (nothing for a host new to the NodeSet).
    let approved = if basis.acknowledged.approve_all {
        Some(desired.clone())
    } else {
        basis.previous.get(hostname).and_then(|p| p.approved_config_hash.clone())
    };
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
        firmware: super::firmware::HostFirmware::listed(basis, hostname),
    }
}

/// A preProvisioned host's completions: the record that outlives the NodeSet, else what status
/// held before the record did (an operator upgrade).
fn pre_provisioned_completions(basis: &Basis, hostname: &str) -> Vec<CompletedService> {
    basis
        .recorded
        .get(hostname)
        // A machine's entry (a NodeSet of that name that claimed BareMetalHosts) is not what
        // ran on a preProvisioned host.
        .filter(|e| e.machine.is_none())
        .map(|e| e.completed.clone())
        .filter(|c| !c.is_empty())
        .or_else(|| basis.previous.get(hostname).and_then(|p| p.services_completed.clone()))
        .unwrap_or_default()
}

/// Which BareMetalHost backs each host, and the hosts whose claimed machine dropped out of
/// view: those are held as they are, and get no new claim (`lost`).
#[derive(Default)]
pub(super) struct Claims {
    pub(super) plan: ClaimPlan,
    /// The held hosts, and why.
    pub(super) held: BTreeMap<String, String>,
}

/// The claims of a NodeSet's hosts (none for a preProvisioned NodeSet). Status' last choice
/// per host breaks ties between BareMetalHosts that carry the same host's labels.
pub(super) fn claims(basis: &Basis, facts: &Facts) -> Claims {
    if basis.spec.pre_provisioned() {
        return Claims::default();
    }
    let held = lost::lost_claims(&basis.owner, basis.spec, &basis.previous, &facts.hosts);
    let preferred =
        basis.previous.iter().filter_map(|(h, s)| s.bmh_ref.as_ref().map(|r| (h.clone(), r.name.clone()))).collect();
    let spec = lost::without(basis.spec, &held);
    let plan = plan_claims(&basis.owner, &spec, &facts.hosts, &facts.hardware, &preferred, &facts.lost);
    Claims { plan, held }
}

/// Puts each host where `claims` says it stands (held, being claimed, unmatched, or a claimed
/// machine with its decision), and returns the claims to write: those go first, so a machine is
/// the NodeSet's before anything else is written on it.
pub(super) fn place(basis: &Basis, claims: &Claims, hosts: &mut BTreeMap<String, HostPlan>) -> Vec<HostWrite> {
    for (hostname, why) in &claims.held {
        if let Some(entry) = hosts.get_mut(hostname) {
            entry.phase = HostPhase::Lost(why.clone());
        }
    }
    let mut writes = Vec::new();
    for (hostname, host) in &claims.plan.new {
        let consumer = Consumer::claim(hostname, basis.spec);
        if let (Some(entry), Some(body)) =
            (hosts.get_mut(hostname), apply_body(&basis.owner, host, &consumer, Purpose::Claim))
        {
            entry.phase = HostPhase::Claiming;
            entry.bmh = Some(host.clone());
            writes.push(write(host, hostname, Purpose::Claim, Body::Apply(body)));
        }
    }
    for (hostname, why) in &claims.plan.unmatched {
        if let Some(entry) = hosts.get_mut(hostname) {
            entry.phase = HostPhase::Unclaimed(why.clone());
        }
    }
    for (hostname, host) in &claims.plan.claimed {
        if let Some(entry) = hosts.get_mut(hostname) {
            place_machine(basis, hostname, host, claims.plan.duplicates.get(hostname), entry);
        }
    }
    writes
}

/// A claimed machine's host: the machine, what is decided for it, and what ran on it.
/// `duplicates` are the other BareMetalHosts that carry the host's labels.
fn place_machine(
    basis: &Basis,
    hostname: &str,
    host: &Arc<BareMetalHost>,
    duplicates: Option<&Vec<String>>,
    entry: &mut HostPlan,
) {
    let decision = decide(hostname, host, basis.spec, basis.previous.get(hostname));
    entry.completed = machine_completions(basis, hostname, host, &decision);
    entry.message = decision.message.clone();
    if let Some(others) = duplicates {
        entry.message = Some(format!(
            "BareMetalHosts {} also carry this host's labels; {} is used",
            others.join(", "),
            host.name_any()
        ));
    }
    entry.bmh = Some(host.clone());
    entry.phase = HostPhase::Machine(decision);
}

/// What ran on a claimed machine: nothing once it is reprovisioned. Otherwise the machine's
/// record, else (someone removed it) the NodeSet's record of the same machine in the same
/// epoch, else what status held before the record did: a runOnce service never runs twice.
fn machine_completions(
    basis: &Basis,
    hostname: &str,
    host: &BareMetalHost,
    decision: &Decision,
) -> Vec<CompletedService> {
    if let Action::Reprovision { .. } = decision.action {
        return Vec::new();
    }
    Some(recorded_completions(host))
        .filter(|c| !c.is_empty())
        .or_else(|| {
            basis
                .recorded
                .get(hostname)
                .filter(|e| has_image(host) && e.machine == host.uid() && e.epoch.as_ref() == Some(&decision.epoch))
                .map(|e| e.completed.clone())
        })
        .or_else(|| same_epoch(host, basis.previous.get(hostname)).and_then(|p| p.services_completed.clone()))
        .unwrap_or_default()
}
