//! One host's status (pure): what the plan and what applying it did say of the host, and the
//! Events of its transitions (claimed, provisioning, provisioned, lost).

use super::apply::Applied;
use super::machine::{Action, Decision, Phase};
use super::plan::{HostPhase, HostPlan};
use crate::kit::Notices;
use crate::kit::condition::bounded_message;
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{BmhRef, HostStatus, NodeSet};
use kube::ResourceExt;

/// The status of host `name` of `nodeset`, planned as `host`, with what status said of it
/// before (`prev`).
pub(super) fn host_status(
    nodeset: &NodeSet,
    name: &str,
    host: &HostPlan,
    prev: Option<&HostStatus>,
    applied: &Applied,
) -> HostStatus {
    let bmh = applied.written.get(name).or(host.bmh.as_ref()).map(|b| &**b);
    let mut status = base_status(nodeset, name, host, prev);
    match &host.phase {
        HostPhase::Lost(why) => return lost_status(host, prev, why),
        HostPhase::PreProvisioned => {}
        HostPhase::Unclaimed(why) => {
            status.message = (!why.is_empty()).then(|| bounded_message(format!("no BareMetalHost: {why}")));
        }
        HostPhase::Claiming => {
            if applied.claims_won.contains(name) {
                status.bmh_ref = bmh.map(bmh_ref);
                status.provisioning_state = bmh.and_then(|b| b.status.as_ref()).map(|s| s.provisioning.state);
            }
        }
        HostPhase::Machine(decision) => {
            status.bmh_ref = bmh.map(bmh_ref);
            status.provisioning_state = bmh.and_then(|b| b.status.as_ref()).map(|s| s.provisioning.state);
            // What the machine's firmware waits for first: it is what a person may have to do.
            status.message = firmware_message(host).or(decision.message.clone()).or(host.message.clone());
            machine_status(&mut status, decision, name, prev, applied);
        }
    }
    status
}

/// Where the host's BIOS settings stand, when that is worth a message.
fn firmware_message(host: &HostPlan) -> Option<String> {
    host.firmware.stage.as_ref().and_then(super::firmware::Stage::message).map(bounded_message)
}

/// The reference status keeps to a host's BareMetalHost.
fn bmh_ref(b: &BareMetalHost) -> BmhRef {
    BmhRef { name: b.name_any(), namespace: b.namespace().unwrap_or_default(), uid: b.uid() }
}

/// What every host's status says, whatever its phase: its configurations, its reprovision
/// token, and the configuration it was last deployed at.
fn base_status(nodeset: &NodeSet, name: &str, host: &HostPlan, prev: Option<&HostStatus>) -> HostStatus {
    let spec_token = nodeset
        .spec
        .nodes
        .as_ref()
        .and_then(|n| n.get(name))
        .and_then(|s| s.reprovision_token.clone())
        .unwrap_or_default();
    HostStatus {
        approved_config_hash: host.approved.clone(),
        desired_config_hash: Some(host.desired.clone()),
        reprovision_token: prev.and_then(|p| p.reprovision_token.clone()).or(Some(spec_token)),
        // What ran is in the NodeSet's record and on the machines, not here (`record`): status
        // stays bounded at 1000 hosts.
        services_completed: None,
        deployed_config_hash: deployed_config_hash(host, prev),
        desired_firmware_hash: host.firmware.desired.clone(),
        approved_firmware_hash: host.firmware.approved.clone(),
        applied_firmware_hash: host.firmware.applied.clone(),
        ..HostStatus::default()
    }
}

/// The configuration the host was last fully configured at: its desired one once configured,
/// none before it ran anything.
fn deployed_config_hash(host: &HostPlan, prev: Option<&HostStatus>) -> Option<String> {
    if host.configured {
        return Some(host.desired.clone());
    }
    if host.completed.is_empty() {
        return None;
    }
    match prev {
        Some(prev) => prev.deployed_config_hash.clone(),
        // Seen for the first time with completions (a recreated NodeSet, a status lost, a host
        // removed and added back): it ran a configuration, so it is not being brought up, and a
        // rollout keeps it within maxUnavailable.
        None => host.completed.iter().find_map(|c| c.config_hash.clone()),
    }
}

/// A host whose machine dropped out of view: the record stays, since it is what keeps the host
/// held, and what a restore needs.
fn lost_status(host: &HostPlan, prev: Option<&HostStatus>, why: &str) -> HostStatus {
    let mut kept = prev.cloned().unwrap_or_default();
    kept.desired_config_hash = Some(host.desired.clone());
    // A token given meanwhile approved its configuration too.
    kept.approved_config_hash = host.approved.clone();
    kept.message = Some(bounded_message(why.to_string()));
    kept
}

/// What a claimed machine's decision says in its host's status, once acted on: a decision not
/// acted on yet (its write failed or was not made) leaves what status said.
fn machine_status(
    status: &mut HostStatus,
    decision: &Decision,
    name: &str,
    prev: Option<&HostStatus>,
    applied: &Applied,
) {
    status.provisioning_outdated = decision.outdated;
    status.provisioned_hash = decision.provisioned_hash.clone();
    status.reprovision_token = Some(decision.token.clone());
    status.machine_epoch = Some(decision.epoch.clone()).filter(|e| !e.is_empty());
    match &decision.action {
        Action::Provision { .. } if !applied.provisioned.contains(name) => {
            status.provisioned_hash = prev.and_then(|p| p.provisioned_hash.clone());
            status.provisioning_outdated = prev.and_then(|p| p.provisioning_outdated);
        }
        Action::Reprovision { .. } if !applied.reprovisioned.contains(name) => {
            // Not acted on yet: what status said stays, so the next reconcile acts.
            status.reprovision_token = prev.and_then(|p| p.reprovision_token.clone());
            status.deployed_config_hash = prev.and_then(|p| p.deployed_config_hash.clone());
            status.provisioned_hash = prev.and_then(|p| p.provisioned_hash.clone());
            status.machine_epoch = prev.and_then(|p| p.machine_epoch.clone());
        }
        Action::Reprovision { .. } => {
            status.deployed_config_hash = None;
            status.provisioning_outdated = None;
        }
        _ => {}
    }
}

/// The Events of host `name`'s transitions, from its status before (`prev`) and now (`now`).
pub(super) fn host_notices(
    notices: &mut Notices,
    name: &str,
    host: &HostPlan,
    prev: Option<&HostStatus>,
    now: &HostStatus,
    applied: &Applied,
) {
    let prev_bmh = prev.and_then(|p| p.bmh_ref.as_ref()).map(|r| r.name.as_str());
    if let Some(bmh) = now.bmh_ref.as_ref().map(|r| r.name.as_str())
        && prev_bmh != Some(bmh)
    {
        let how = if applied.claims_won.contains(name) { "claimed" } else { "adopted" };
        notices.normal("Claimed", format!("{name}: {how} BareMetalHost {bmh}"));
    }
    let state = |s: Option<&HostStatus>| s.and_then(|s| s.provisioning_state);
    // Written now, or written by a reconcile that ended (a crash, a refused status write)
    // before its status recorded the machine's provisioning hash: the machine's annotation
    // tells, and the status that knew the machine unprovisioned had none. So a crash between
    // the image write and the status loses no Event (Claimed and Provisioned are told from
    // status the same way).
    let recorded_now = prev_bmh.is_some()
        && prev.is_some_and(|p| p.provisioned_hash.is_none())
        && now.provisioned_hash.is_some()
        && state(prev) != Some(crds::baremetalhost::ProvisioningState::Provisioned);
    if applied.provisioned.contains(name) || recorded_now {
        notices.normal(
            "Provisioning",
            format!(
                "{name}: provisioning BareMetalHost {}",
                prev_bmh.or(now.bmh_ref.as_ref().map(|r| r.name.as_str())).unwrap_or("")
            ),
        );
    }
    if applied.reprovisioned.contains(name) {
        notices.normal(
            "Reprovisioning",
            format!("{name}: reprovisioning for reprovisionToken {:?}", now.reprovision_token.as_deref().unwrap_or("")),
        );
    }
    // Only a machine this NodeSet saw before it was provisioned: one adopted already
    // provisioned (a recreated NodeSet) was not provisioned now, and says so as `Claimed`.
    if state(Some(now)) == Some(crds::baremetalhost::ProvisioningState::Provisioned)
        && prev_bmh.is_some()
        && state(prev) != Some(crds::baremetalhost::ProvisioningState::Provisioned)
        && matches!(&host.phase, HostPhase::Machine(d) if d.phase == Phase::Provisioned)
    {
        notices.normal(
            "Provisioned",
            format!(
                "{name}: BareMetalHost {} is provisioned",
                prev_bmh.unwrap_or_else(|| now.bmh_ref.as_ref().map(|r| r.name.as_str()).unwrap_or(""))
            ),
        );
    }
    firmware_notices(notices, name, host, prev, now, applied);
    if let HostPhase::Unclaimed(why) = &host.phase
        && !why.is_empty()
        && prev.and_then(|p| p.message.as_ref()) != now.message.as_ref()
    {
        notices.warning("NoMatchingHost", format!("{name}: {why}"));
    }
    if let HostPhase::Lost(why) = &host.phase
        && prev.and_then(|p| p.message.as_ref()) != now.message.as_ref()
    {
        notices.warning("MachineLost", format!("{name}: {why}"));
    }
}

/// The Events of a host's firmware: handed over, a reboot asked for, applied, failed.
fn firmware_notices(
    notices: &mut Notices,
    name: &str,
    host: &HostPlan,
    prev: Option<&HostStatus>,
    now: &HostStatus,
    applied: &Applied,
) {
    let hash = |h: Option<&String>| h.map(|h| h.get(..12).unwrap_or(h).to_string()).unwrap_or_default();
    if applied.firmware_written.contains(name) {
        notices.normal(
            "FirmwareHandedOver",
            format!("{name}: firmware {} handed over", hash(now.desired_firmware_hash.as_ref())),
        );
    }
    if applied.rebooted.contains(name) {
        notices.normal(
            "FirmwareReboot",
            format!("{name}: rebooted to be serviced with firmware {}", hash(now.desired_firmware_hash.as_ref())),
        );
    }
    if now.applied_firmware_hash.is_some()
        && now.applied_firmware_hash != prev.and_then(|p| p.applied_firmware_hash.clone())
    {
        notices.normal("FirmwareApplied", format!("{name}: has firmware {}", hash(now.applied_firmware_hash.as_ref())));
    }
    if let Some(super::firmware::Stage::Failed(why)) = &host.firmware.stage
        && prev.and_then(|p| p.message.as_ref()) != now.message.as_ref()
    {
        notices.warning(
            "FirmwareFailed",
            format!("{name}: servicing with its firmware settings or updates failed: {why}"),
        );
    }
}
