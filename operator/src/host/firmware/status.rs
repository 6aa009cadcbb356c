//! The status a `HostFirmwareSettings` should have, from what was read of its host: pure, so
//! that what is published is computed from what was read and applied, and the conditions and
//! Events follow from comparing it with what the object showed.

use super::read::Reading;
use super::wanted::Settings;
use crate::kit::Notices;
use crate::kit::condition::{Conditions, set_all};
use crds::condition::{find, is_true};
use crds::firmware::{
    HostFirmwareSettings, HostFirmwareSettingsStatus, SchemaReference, differs, setting_text,
    validate_host_firmware_settings,
};
use crds::validation::summarize;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// baremetal-operator's two conditions, with its reasons.
pub(super) const CHANGE_DETECTED: &str = "ChangeDetected";
pub(super) const VALID: &str = "Valid";
const SUCCESS: &str = "Success";
const CONFIGURATION_ERROR: &str = "ConfigurationError";

/// What the reconcile found of the host's BIOS.
#[derive(Clone, Debug)]
pub(super) enum Observed<'a> {
    /// Nothing could be read; `reason` and `message` say why (no host of that name, not yet
    /// registered, detached, or Ironic has not read the settings yet). What the status held
    /// is kept: a host that cannot be read now has not lost its settings.
    Unread { reason: &'static str, message: String },
    /// The settings Ironic read, and the schema they were published under; for a provisioned
    /// host, whether its policy lets it be serviced for them.
    Read { reading: &'a Reading, schema: SchemaReference, serviced: Option<bool> },
}

/// The new status, when it differs from the object's, and the Events of its transitions.
#[derive(Debug)]
pub(super) struct Outcome {
    pub status: Option<HostFirmwareSettingsStatus>,
    pub notices: Notices,
    /// The wanted settings differ from the host's (the next read comes sooner).
    pub change_detected: bool,
    /// What the host waits for: the wanted values it does not have, when they were checked
    /// against what was read now and are valid; empty otherwise.
    pub waiting: Settings,
}

/// The status of `hfs` after `observed`, at `now`.
pub(super) fn compute(hfs: &HostFirmwareSettings, observed: &Observed<'_>, now: &Time) -> Outcome {
    let old = hfs.status.clone().unwrap_or_default();
    let mut new = old.clone();
    let read = match observed {
        Observed::Read { reading, schema, .. } => {
            new.settings = reading.settings.clone();
            new.firmware_schema = Some(schema.clone());
            Some(*reading)
        }
        Observed::Unread { .. } => None,
    };
    // Against the settings read now, or last; the schema only when read now (while the host
    // cannot be read, a value is refused for what is known of it, and `Ready` says why).
    let change = differs(&hfs.spec, &new.settings);
    let errors = validate_host_firmware_settings(&hfs.spec, &new.settings, read.map(|r| &r.schema));
    let make = Conditions::new(hfs.metadata.generation, now.clone());
    let valid = match errors.is_empty() {
        true => make.make(VALID, true, SUCCESS, ""),
        false => make.make(VALID, false, CONFIGURATION_ERROR, format!("Invalid BIOS setting: {}", summarize(&errors))),
    };
    let ready = match (observed, errors.is_empty(), change) {
        (Observed::Unread { reason, message }, _, _) => {
            make.make(crds::condition::READY, false, reason, message.as_str())
        }
        (_, false, _) => make.make(crds::condition::READY, false, "InvalidSettings", valid.message.as_str()),
        (Observed::Read { serviced, .. }, true, true) => {
            let (reason, message) = waiting(*serviced, &hfs.metadata.name.clone().unwrap_or_default());
            make.make(crds::condition::READY, false, reason, message)
        }
        (_, true, false) => {
            make.make(crds::condition::READY, true, "SettingsMatch", "the host has the wanted BIOS settings")
        }
    };
    set_all(&mut new.conditions, [make.make(CHANGE_DETECTED, change, SUCCESS, ""), valid, ready]);
    new.observed_generation = hfs.metadata.generation;
    let waiting = match (read, errors.is_empty()) {
        (Some(reading), true) => (hfs.spec.settings.iter())
            .map(|(name, value)| (name.clone(), setting_text(value)))
            .filter(|(name, value)| reading.settings.get(name) != Some(value))
            .collect(),
        _ => Settings::new(),
    };
    let notices = transitions(&old, &new);
    let status = (new != old).then(|| HostFirmwareSettingsStatus { last_updated: Some(now.clone()), ..new });
    Outcome { status, notices, change_detected: change, waiting }
}

/// Why valid wanted settings are not the host's yet, and when they will be.
fn waiting(serviced: Option<bool>, name: &str) -> (&'static str, String) {
    match serviced {
        None => ("ChangeDetected", "the wanted settings differ from the host's; they are applied when it is next prepared".into()),
        Some(true) => (
            "AwaitingReboot",
            "the host is provisioned: the wanted settings are applied by servicing at its next reboot (the reboot annotation, or a power off and on)".into(),
        ),
        Some(false) => (
            "ServicingNotAllowed",
            format!(
                "the host is provisioned: the wanted settings are applied by servicing at its next reboot only once a HostUpdatePolicy named {name} says firmwareSettings: onReboot"
            ),
        ),
    }
}

/// The Events of what changed between two statuses.
fn transitions(old: &HostFirmwareSettingsStatus, new: &HostFirmwareSettingsStatus) -> Notices {
    let mut notices = Notices::default();
    if old.settings.is_empty() && !new.settings.is_empty() {
        let schema = new.firmware_schema.as_ref().map(|s| s.name.as_str()).unwrap_or_default();
        notices.normal("SettingsRead", format!("read {} BIOS settings (schema {schema})", new.settings.len()));
    }
    let was_valid = find(&old.conditions, VALID).is_none_or(|c| c.status == crds::condition::TRUE);
    if let Some(valid) = find(&new.conditions, VALID).filter(|c| c.status != crds::condition::TRUE && was_valid) {
        notices.warning("ValidationFailed", valid.message.clone());
    }
    match (is_true(&old.conditions, CHANGE_DETECTED), is_true(&new.conditions, CHANGE_DETECTED)) {
        (false, true) => notices.normal(CHANGE_DETECTED, "the wanted BIOS settings differ from the host's"),
        (true, false) => notices.normal("SettingsMatch", "the host has the wanted BIOS settings"),
        _ => {}
    }
    notices
}

#[cfg(test)]
mod tests;
