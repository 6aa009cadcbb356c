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
                "rebooted by the NodeSet to be serviced with its new firmware settings or updates; if no servicing \
                 follows (its HostUpdatePolicy changed meanwhile), reboot it with reboot.metal3.io"
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
/// Hosts whose objects already say what they want start first (they finish what they began),
/// then by name.
pub(super) fn plan(hosts: &[FirmwareHost], mut slots: usize, stopped: bool, busy: &BTreeSet<String>) -> FirmwarePlan {
    let mut plan = FirmwarePlan::default();
    let stopped = stopped || hosts.iter().any(FirmwareHost::failed);
    let mut order: Vec<(&FirmwareHost, Option<Stage>)> = hosts.iter().map(|h| (h, progress(h))).collect();
    order.sort_by_key(|(h, stage)| (stage.is_some(), !handed(h), h.name));
    for (host, stage) in order {
        let stage = stage.unwrap_or_else(|| match start(host, &mut slots, stopped) {
            Stage::Written if awaiting_reboot(host) && !busy.contains(host.name) => {
                plan.reboots.push((host.name.to_string(), reboot_patch(host.desired.as_deref().unwrap_or_default())));
                Stage::Rebooting
            }
            other => other,
        });
        plan.writes.extend(stale_writes(host, &stage));
        // The host controller retries a failed servicing by itself, with what the objects want
        // now: a reboot for that hash would service the host twice.
        if matches!(stage, Stage::Failed(_)) && handed(host) && !rebooted(host) {
            plan.marks.push((host.name.to_string(), mark_patch(host.desired.as_deref().unwrap_or_default())));
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

/// The objects of `host` to write at `stage`: those that do not say what the NodeSet wants,
/// when it hands them over now; when it only takes back what it no longer wants (that asks
/// nothing new of the machine); and to a host whose servicing failed, once what it wants now is
/// approved (a fix, which the host controller's retry takes).
fn stale_writes<'a>(host: &'a FirmwareHost, stage: &Stage) -> impl Iterator<Item = ObjectWrite> + 'a {
    let now = match stage {
        Stage::Written | Stage::Settled => true,
        Stage::Failed(_) => !host.serving || host.approved == host.desired,
        _ => false,
    };
    host.parts.iter().filter(move |p| now && p.exists && !p.in_sync).map(move |p| write(host, p))
}

/// Ready reasons of the objects that wait for what only a person can do.
const BLOCKED: [&str; 5] = ["ServicingNotAllowed", "InvalidSettings", "NoSettings", "InvalidComponent", "NoComponents"];

/// Where the machine stands whatever is wanted of it now: one being serviced, failed in a
/// servicing, or rebooting after a reboot the NodeSet asked for is out of service, and counts
/// so against `maxUnavailable`, for whichever hash.
fn machine(host: &FirmwareHost) -> Option<Stage> {
    let status = host.bmh.status.as_ref()?;
    if status.error_type == Some(ErrorType::Servicing) {
        return Some(Stage::Failed(status.error_message.clone()));
    }
    if status.operational_status == OperationalStatus::Servicing {
        return Some(Stage::Servicing);
    }
    let annotations = host.bmh.annotations();
    let rebooting = annotations.contains_key(REBOOT_PREFIX) || (host.bmh.spec.online && !status.powered_on);
    (annotations.contains_key(FIRMWARE_REBOOT_ANNOTATION) && rebooting).then_some(Stage::Rebooting)
}

/// Where a host stands (`None`: what it wants was not handed over, or it waits for the reboot
/// its slot brings).
fn progress(host: &FirmwareHost) -> Option<Stage> {
    if let Some(stage) = machine(host) {
        return Some(stage);
    }
    if host.desired.is_none() {
        return Some(Stage::Settled);
    }
    if !handed(host) {
        return None;
    }
    if !host.parts.iter().all(|p| p.read) {
        return Some(Stage::Written);
    }
    if host.parts.iter().all(|p| p.ready.as_ref().is_some_and(|r| r.0)) {
        return Some(Stage::Settled);
    }
    if let Some((_, _, message)) = waiting(host, &BLOCKED) {
        return Some(Stage::Blocked(message.clone()));
    }
    match waiting(host, &["AwaitingReboot"]) {
        // Asked for before: the servicing follows it (or followed it and is read again).
        Some(_) if rebooted(host) => Some(Stage::Rebooting),
        Some(_) => None,
        None if waiting(host, &["ChangeDetected", "AwaitingProvisioning"]).is_some() => Some(Stage::Preparing),
        None => Some(Stage::Written),
    }
}

/// Every object of `host` exists and says what the NodeSet wants.
fn handed(host: &FirmwareHost) -> bool {
    host.parts.iter().all(|p| p.exists && p.in_sync)
}

/// The first `Ready` of `host`'s objects that is false for one of `reasons`.
fn waiting<'a>(host: &'a FirmwareHost, reasons: &[&str]) -> Option<&'a (bool, String, String)> {
    host.parts.iter().filter_map(|p| p.ready.as_ref()).find(|r| !r.0 && reasons.contains(&r.1.as_str()))
}

/// Handed over and read, its objects wait for the reboot at which it is serviced.
fn awaiting_reboot(host: &FirmwareHost) -> bool {
    handed(host) && host.parts.iter().all(|p| p.read) && progress(host).is_none()
}

/// A host whose wants were not handed over yet (or that waits for its reboot): it starts now if
/// it may.
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
