//! BIOS settings and firmware updates rolled out in place (pure): which claimed hosts get the
//! NodeSet's `firmwareSettings` and `firmwareUpdates` written into their
//! `HostFirmwareSettings` and `HostFirmwareComponents` (`firmware_parts`), which are rebooted so
//! that their BareMetalHost services them, and where each stands.
//!
//! The host controller does the work, as baremetal-operator does it: a host not provisioned yet
//! gets the settings while it is prepared; a provisioned one is serviced at its reboot when its
//! `HostUpdatePolicy` allows (`active` → `servicing` → `active`, never a deprovision). This step
//! only writes the objects and asks for that reboot, at most `maxUnavailable` provisioned hosts
//! at a time (counted with those in service Jobs), one reboot per hash per machine: the hash is
//! written on the machine with the reboot annotation, in one request, so a crash can neither
//! lose nor repeat it. A host is settled once its objects, read for the specs written, say it
//! has what they want.

#[path = "firmware_parts.rs"]
pub(super) mod parts;

use super::basis::Basis;
use crds::baremetalhost::annotations::REBOOT_PREFIX;
use crds::baremetalhost::{BareMetalHost, ErrorType, OperationalStatus};
use crds::nodeset::FIRMWARE_REBOOT_ANNOTATION;
use kube::ResourceExt;
use parts::{Kind, Part};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Where a host's wanted BIOS settings and firmware updates stand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// It wants none, or has them.
    Settled,
    /// Its new settings wait for a new Manual rollout token.
    Pending,
    /// Its new settings wait for a slot (`maxUnavailable`), or for a failed rollout's fix.
    Queued,
    /// Its BareMetalHost has no such object yet (created at registration; a HostFirmwareComponents
    /// only for a driver with a firmware interface).
    NoObject(Kind),
    /// Its objects carry them and were not read for them yet.
    Written,
    /// It is not provisioned: the settings are applied while it is prepared.
    Preparing,
    /// Its reboot was asked for (in this reconcile or before); servicing follows it.
    Rebooting,
    /// Its BareMetalHost is being serviced.
    Servicing,
    /// Waits for what only a person can do: a HostUpdatePolicy, valid settings. Holds the
    /// rollout, with the settings object's words.
    Blocked(String),
    /// Its servicing failed (the BareMetalHost's servicing error). Stops the rollout.
    Failed(String),
}

impl Stage {
    /// The settings are on their way to the host: it counts against `maxUnavailable`.
    pub(super) fn in_flight(&self) -> bool {
        matches!(
            self,
            Self::Written | Self::Preparing | Self::Rebooting | Self::Servicing | Self::Blocked(_) | Self::Failed(_)
        )
    }

    /// What the host's status message says, if anything.
    pub(super) fn message(&self) -> Option<String> {
        match self {
            Self::Settled | Self::Queued | Self::Written | Self::Preparing => None,
            Self::Pending => Some("its new firmware settings or updates wait for a new spec.rollout.token".into()),
            Self::NoObject(kind) => Some(format!("its BareMetalHost has no {} yet", kind.name())),
            Self::Rebooting => Some(
                "its new firmware settings or updates are applied by servicing at the reboot the NodeSet asks for"
                    .into(),
            ),
            Self::Servicing => Some("being serviced with its new firmware settings or updates".into()),
            Self::Blocked(why) => Some(format!("its firmware settings or updates wait: {why}")),
            Self::Failed(why) => Some(format!("servicing with its firmware settings or updates failed: {why}")),
        }
    }
}

/// A host's firmware in the plan: what it wants, what was approved for it, what it has,
/// and where it stands (`None`: no claimed machine to plan for).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct HostFirmware {
    pub desired: Option<String>,
    pub approved: Option<String>,
    pub applied: Option<String>,
    pub stage: Option<Stage>,
}

impl HostFirmware {
    /// A listed host's, before its machine is looked at: approved as the spec asks now for a new
    /// approval, else as before; applied as status said.
    pub(super) fn listed(basis: &Basis, hostname: &str) -> Self {
        let desired = parts::desired(basis.spec, hostname);
        let previous = basis.previous.get(hostname);
        HostFirmware {
            approved: match basis.acknowledged.approve_all {
                true => desired.clone(),
                false => previous.and_then(|p| p.approved_firmware_hash.clone()),
            },
            desired,
            applied: previous.and_then(|p| p.applied_firmware_hash.clone()),
            stage: None,
        }
    }

    /// At the settings approved for it: what a Manual rollout waiting for a token leaves it at.
    pub(super) fn at_approved(&self) -> bool {
        match &self.stage {
            None | Some(Stage::Settled) => true,
            Some(Stage::Pending) => self.applied == self.approved || self.approved.is_none(),
            Some(_) => false,
        }
    }
}

/// A claimed host as this step sees it.
#[derive(Clone, Debug)]
pub(super) struct FirmwareHost<'a> {
    pub name: &'a str,
    pub bmh: &'a BareMetalHost,
    /// The hash of what the NodeSet wants of it (`None`: nothing).
    pub desired: Option<String>,
    /// What a rollout approved for it (`HostStatus::approved_firmware_hash`).
    pub approved: Option<String>,
    /// What it was last seen to have, on this machine.
    pub applied: Option<String>,
    /// Its machine is provisioned: new settings or updates mean a reboot, so they wait for an
    /// approval (Manual) and a slot (`maxUnavailable`); a host not provisioned gets them at once.
    pub serving: bool,
    /// Its firmware objects the NodeSet wants something of, or takes something back from.
    pub parts: Vec<Part>,
}

impl FirmwareHost<'_> {
    /// Its servicing failed.
    pub(super) fn failed(&self) -> bool {
        matches!(progress(self), Some(Stage::Failed(_)))
    }
}

/// An object to write: the NodeSet's fields of its spec, applied with the one field manager.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ObjectWrite {
    pub hostname: String,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub spec: Value,
}

impl ObjectWrite {
    /// The server-side apply body: the NodeSet's fields alone, so a user's others stay.
    pub(super) fn body(&self) -> Value {
        json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": self.kind.name(),
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self.spec,
        })
    }
}

/// What this step does in one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct FirmwarePlan {
    pub stages: BTreeMap<String, Stage>,
    /// Per host, the hash it has after this reconcile.
    pub applied: BTreeMap<String, Option<String>>,
    pub writes: Vec<ObjectWrite>,
    /// Hosts to reboot (the annotation and the hash, in one merge patch), with that patch.
    pub reboots: Vec<(String, Value)>,
    /// Hosts whose failed servicing the host controller retries with what was handed over
    /// since: the hash alone, so that no reboot follows the retry.
    pub marks: Vec<(String, Value)>,
}

impl FirmwarePlan {
    /// Hosts whose servicing failed, and why.
    pub(super) fn failed(&self) -> Vec<(&str, &str)> {
        self.hosts_with(|s| match s {
            Stage::Failed(why) => Some(why),
            _ => None,
        })
    }

    /// Hosts waiting for what only a person can do, and what.
    pub(super) fn blocked(&self) -> Vec<(&str, &str)> {
        self.hosts_with(|s| match s {
            Stage::Blocked(why) => Some(why),
            _ => None,
        })
    }

    fn hosts_with(&self, why: impl Fn(&Stage) -> Option<&String>) -> Vec<(&str, &str)> {
        self.stages.iter().filter_map(|(h, s)| Some((h.as_str(), why(s)?.as_str()))).collect()
    }

    /// Something on its way somewhere.
    pub(super) fn moving(&self) -> bool {
        self.stages.values().any(Stage::in_flight)
    }
}

/// The hosts (by name) whose firmware is on its way, before anything is decided: the service
/// rollout leaves them alone and counts those that serve against `maxUnavailable`.
pub(super) fn started<'a>(hosts: &'a [FirmwareHost<'a>]) -> BTreeSet<&'a str> {
    hosts.iter().filter(|h| progress(h).is_some_and(|s| s.in_flight())).map(|h| h.name).collect()
}

/// Plans the step. `slots`: how many more provisioned hosts may start (`maxUnavailable` less
/// those in service Jobs or with firmware already on its way); `stopped`: a failure stops the
/// rollout (provisioned hosts start nothing new); `busy`: hosts in service Jobs, never rebooted.
pub(super) fn plan(hosts: &[FirmwareHost], mut slots: usize, stopped: bool, busy: &BTreeSet<String>) -> FirmwarePlan {
    let mut plan = FirmwarePlan::default();
    let stopped = stopped || hosts.iter().any(FirmwareHost::failed);
    for host in hosts {
        let stage = progress(host).unwrap_or_else(|| start(host, &mut slots, stopped));
        // Handed over now, or settled with what the objects no longer say as wanted (what the
        // NodeSet takes back from a failed attempt, an object edited by someone): written.
        if matches!(stage, Stage::Written | Stage::Settled) {
            let stale = host.parts.iter().filter(|p| p.exists && !p.in_sync);
            plan.writes.extend(stale.map(|p| write(host, p)));
        }
        let hash = host.desired.as_deref().unwrap_or_default();
        match stage {
            Stage::Rebooting if !rebooted(host) && !busy.contains(host.name) => {
                plan.reboots.push((host.name.to_string(), reboot_patch(hash)));
            }
            // The host controller retries a failed servicing by itself, with what the objects
            // want now: a reboot for the same hash would service the host twice.
            Stage::Failed(_) if !rebooted(host) => plan.marks.push((host.name.to_string(), mark_patch(hash))),
            _ => {}
        }
        let applied = match stage {
            Stage::Settled => host.desired.clone(),
            _ => host.applied.clone(),
        };
        plan.applied.insert(host.name.to_string(), applied);
        plan.stages.insert(host.name.to_string(), stage);
    }
    plan
}

/// Ready reasons of the objects that wait for what only a person can do.
const BLOCKED: [&str; 5] = ["ServicingNotAllowed", "InvalidSettings", "NoSettings", "InvalidComponent", "NoComponents"];

/// Where a host stands when what it wants was already handed over (`None`: it was not, and it
/// is not settled).
fn progress(host: &FirmwareHost) -> Option<Stage> {
    if host.desired.is_none() || host.applied == host.desired {
        return Some(Stage::Settled);
    }
    if !host.parts.iter().all(|p| p.exists && p.in_sync) {
        return None;
    }
    if !host.parts.iter().all(|p| p.read) {
        return Some(Stage::Written);
    }
    let status = host.bmh.status.as_ref();
    if let Some(status) = status.filter(|s| s.error_type == Some(ErrorType::Servicing)) {
        return Some(Stage::Failed(status.error_message.clone()));
    }
    if host.parts.iter().all(|p| p.ready.as_ref().is_some_and(|r| r.0)) {
        return Some(Stage::Settled);
    }
    if status.is_some_and(|s| s.operational_status == OperationalStatus::Servicing) {
        return Some(Stage::Servicing);
    }
    let waiting = |reasons: &[&str]| {
        host.parts.iter().filter_map(|p| p.ready.as_ref()).find(|r| !r.0 && reasons.contains(&r.1.as_str()))
    };
    Some(if let Some((_, _, message)) = waiting(&BLOCKED) {
        Stage::Blocked(message.clone())
    } else if waiting(&["AwaitingReboot"]).is_some() {
        Stage::Rebooting
    } else if waiting(&["ChangeDetected", "AwaitingProvisioning"]).is_some() {
        Stage::Preparing
    } else {
        Stage::Written
    })
}

/// A host whose wants were not handed over yet: handed over now if it may start.
fn start(host: &FirmwareHost, slots: &mut usize, stopped: bool) -> Stage {
    if let Some(missing) = host.parts.iter().find(|p| !p.exists) {
        return Stage::NoObject(missing.kind);
    }
    if !host.serving {
        return Stage::Written;
    }
    if host.approved != host.desired {
        return Stage::Pending;
    }
    if stopped || *slots == 0 {
        return Stage::Queued;
    }
    *slots -= 1;
    Stage::Written
}

fn write(host: &FirmwareHost, part: &Part) -> ObjectWrite {
    ObjectWrite {
        hostname: host.name.to_string(),
        kind: part.kind,
        namespace: host.bmh.namespace().unwrap_or_default(),
        name: host.bmh.name_any(),
        spec: part.wanted.clone(),
    }
}

/// True when this machine was rebooted for this hash: the hash written with the reboot.
fn rebooted(host: &FirmwareHost) -> bool {
    host.bmh.annotations().get(FIRMWARE_REBOOT_ANNOTATION) == host.desired.as_ref()
}

/// The reboot baremetal-operator services a host at, and the hash it is for, in one request.
fn reboot_patch(hash: &str) -> Value {
    json!({"metadata": {"annotations": {REBOOT_PREFIX: "", FIRMWARE_REBOOT_ANNOTATION: hash}}})
}

/// The hash alone: the host is serviced for it without a reboot of the NodeSet's.
fn mark_patch(hash: &str) -> Value {
    json!({"metadata": {"annotations": {FIRMWARE_REBOOT_ANNOTATION: hash}}})
}

#[cfg(test)]
#[path = "firmware_tests.rs"]
mod tests;
