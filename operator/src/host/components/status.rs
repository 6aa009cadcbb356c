//! The status a `HostFirmwareComponents` should have, from what was read of its host: pure, so
//! that what is published follows from what Ironic showed, and the conditions and Events from
//! comparing it with what the object showed.

use crate::kit::Notices;
use crate::kit::condition::{Conditions, set_all};
use crds::condition::{READY, find, is_true};
use crds::firmware::{
    FirmwareComponentStatus, FirmwareUpdate, HostFirmwareComponents, HostFirmwareComponentsStatus, NIC_PREFIX,
    validate_host_firmware_components,
};
use crds::validation::summarize;
use ironic_client::FirmwareComponent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// baremetal-operator's two conditions, with its reasons.
pub(super) const CHANGE_DETECTED: &str = "ChangeDetected";
pub(super) const VALID: &str = "Valid";
const OK: &str = "OK";
const INVALID_COMPONENT: &str = "InvalidComponent";

/// Where the host is, for its updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moment {
    /// Not provisioned: updates wait for it to be.
    NotProvisioned,
    /// Provisioned, and its `HostUpdatePolicy` lets it be serviced for updates (`true`) or not.
    Provisioned { on_reboot: bool },
    /// Being serviced now.
    Servicing,
    /// Its last servicing failed.
    ServicingFailed,
}

/// What the reconcile found of the host's firmware.
#[derive(Clone, Debug)]
pub(super) enum Observed<'a> {
    /// Nothing could be read; `reason` and `message` say why. What the status held is kept.
    Unread { reason: &'static str, message: String },
    /// The components Ironic read, the updates it was handed, and where the host is.
    Read { components: &'a [FirmwareComponent], handed: Vec<FirmwareUpdate>, moment: Moment },
}

/// The new status, when it differs from the object's, and the Events of its transitions.
#[derive(Debug)]
pub(super) struct Outcome {
    pub status: Option<HostFirmwareComponentsStatus>,
    pub notices: Notices,
    /// The spec's updates differ from those handed over (the next read comes sooner).
    pub change_detected: bool,
    /// What the host waits for: the spec's updates, when valid and not handed over (as read
    /// now); empty otherwise.
    pub waiting: Vec<FirmwareUpdate>,
}

/// The components baremetal-operator publishes: `bios`, `bmc` and NICs, others left out.
fn published(components: &[FirmwareComponent]) -> Vec<FirmwareComponentStatus> {
    let wanted = |name: &str| name == "bios" || name == "bmc" || name.starts_with(NIC_PREFIX);
    (components.iter().filter(|c| wanted(&c.component)))
        .map(|c| FirmwareComponentStatus {
            component: c.component.clone(),
            initial_version: c.initial_version.clone().unwrap_or_default(),
            current_version: c.current_version.clone(),
            last_version_flashed: c.last_version_flashed.clone(),
            updated_at: c.updated_at.as_deref().and_then(ironic_time),
        })
        .collect()
}

/// Ironic's times are RFC 3339, with or without an offset (UTC either way).
fn ironic_time(text: &str) -> Option<Time> {
    use k8s_openapi::jiff::{Timestamp, civil::DateTime, tz::TimeZone};
    let parsed = text.parse::<Timestamp>().ok();
    let naive = || text.parse::<DateTime>().ok().and_then(|d| d.to_zoned(TimeZone::UTC).ok()).map(|z| z.timestamp());
    parsed.or_else(naive).map(Time)
}

/// The status of `hfc` after `observed`, at `now`.
pub(super) fn compute(hfc: &HostFirmwareComponents, observed: &Observed<'_>, now: &Time) -> Outcome {
    let old = hfc.status.clone().unwrap_or_default();
    let mut new = old.clone();
    let moment = match observed {
        Observed::Read { components, handed, moment } => {
            new.components = published(components);
            new.updates = handed.clone();
            Some(*moment)
        }
        Observed::Unread { .. } => None,
    };
    let wanted = &hfc.spec.updates;
    let change = *wanted != new.updates && !(wanted.is_empty() && new.updates.is_empty());
    let errors = validate_host_firmware_components(&hfc.spec);
    let make = Conditions::new(hfc.metadata.generation, now.clone());
    let valid = match errors.is_empty() {
        true => make.make(VALID, true, OK, ""),
        false => {
            make.make(VALID, false, INVALID_COMPONENT, format!("Invalid Firmware Components: {}", summarize(&errors)))
        }
    };
    let ready = match (observed, errors.is_empty(), moment) {
        (Observed::Unread { reason, message }, _, _) => make.make(READY, false, reason, message.as_str()),
        (_, false, _) => make.make(READY, false, INVALID_COMPONENT, valid.message.as_str()),
        (_, true, Some(Moment::Servicing)) => {
            make.make(READY, false, "Servicing", "Ironic is servicing the host; its components are read again after")
        }
        (Observed::Read { components, .. }, true, Some(_)) if change && components.is_empty() => make.make(
            READY,
            false,
            "NoComponents",
            "Ironic reports no firmware components for the host (no firmware interface, or fake hardware): no update can be flashed",
        ),
        (_, true, Some(moment)) if change => {
            let (reason, message) = waiting(moment, &hfc.metadata.name.clone().unwrap_or_default());
            make.make(READY, false, reason, message)
        }
        _ => make.make(READY, true, "UpToDate", "no firmware update waits to be flashed"),
    };
    set_all(&mut new.conditions, [make.make(CHANGE_DETECTED, change, OK, ""), valid, ready]);
    new.observed_generation = hfc.metadata.generation;
    let flashable = matches!(observed, Observed::Read { components, .. } if !components.is_empty());
    let waiting = match flashable && errors.is_empty() && change {
        true => wanted.clone(),
        false => Vec::new(),
    };
    let notices = transitions(&old, &new);
    let status = (new != old).then(|| HostFirmwareComponentsStatus { last_updated: Some(now.clone()), ..new });
    Outcome { status, notices, change_detected: change, waiting }
}

/// Why valid updates were not flashed yet, and when they will be.
fn waiting(moment: Moment, name: &str) -> (&'static str, String) {
    match moment {
        Moment::NotProvisioned => (
            "AwaitingProvisioning",
            "the host is not provisioned: updates are flashed by servicing once it is (flashing while it is prepared, which boots the deploy ramdisk, is not done yet)".into(),
        ),
        Moment::ServicingFailed => (
            "ServicingFailed",
            "the host's last servicing failed (its status says why): it is tried again after a while while updates wait and its HostUpdatePolicy allows them, and ended otherwise".into(),
        ),
        Moment::Provisioned { on_reboot: true } | Moment::Servicing => (
            "AwaitingReboot",
            "the updates are flashed by servicing at the host's next reboot (the reboot annotation, or a power off and on)".into(),
        ),
        Moment::Provisioned { on_reboot: false } => (
            "ServicingNotAllowed",
            format!(
                "the updates are flashed by servicing at the host's next reboot only once a HostUpdatePolicy named {name} says firmwareUpdates: onReboot"
            ),
        ),
    }
}

/// The Events of what changed between two statuses.
fn transitions(old: &HostFirmwareComponentsStatus, new: &HostFirmwareComponentsStatus) -> Notices {
    let mut notices = Notices::default();
    if old.components.is_empty() && !new.components.is_empty() {
        let names: Vec<&str> = new.components.iter().map(|c| c.component.as_str()).collect();
        notices.normal("ComponentsRead", format!("read the firmware components {}", names.join(", ")));
    }
    let was_valid = find(&old.conditions, VALID).is_none_or(|c| c.status == crds::condition::TRUE);
    if let Some(valid) = find(&new.conditions, VALID).filter(|c| c.status != crds::condition::TRUE && was_valid) {
        notices.warning("ValidationFailed", valid.message.clone());
    }
    if new.updates != old.updates && !new.updates.is_empty() {
        let names: Vec<&str> = new.updates.iter().map(|u| u.component.as_str()).collect();
        notices.normal("UpdatesHandedOver", format!("Ironic was handed the updates of {}", names.join(", ")));
    }
    match (is_true(&old.conditions, CHANGE_DETECTED), is_true(&new.conditions, CHANGE_DETECTED)) {
        (false, true) => notices.normal(CHANGE_DETECTED, "the wanted firmware updates were not flashed yet"),
        (true, false) => notices.normal("UpToDate", "every wanted firmware update was handed to Ironic"),
        _ => {}
    }
    notices
}

#[cfg(test)]
mod tests;
