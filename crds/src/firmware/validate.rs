//! The wanted settings of a `HostFirmwareSettings` against what the host has, as
//! baremetal-operator's `validateHostFirmwareSettings` checks them.

use super::schema::{SettingSchema, check_setting};
use super::settings::HostFirmwareSettingsSpec;
use crate::FieldError;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// Every wanted setting that cannot be set: a name with `Password` in it (such values would sit
/// in the spec for anyone who reads it), one the host's settings lack (`current`, once Ironic
/// has read them), one the schema refuses (`schema`, once known). Without the current settings
/// or the schema, only what can be told without them is checked: a host's settings are read
/// after it is registered, and its settings object may be written before that.
pub fn validate_settings(
    spec: &HostFirmwareSettingsSpec,
    current: Option<&BTreeMap<String, String>>,
    schema: Option<&BTreeMap<String, SettingSchema>>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (name, value) in &spec.settings {
        let path = format!("spec.settings[{name}]");
        if name.contains("Password") {
            errors.push(FieldError::new(path, "a password cannot be set through HostFirmwareSettings"));
            continue;
        }
        if current.is_some_and(|settings| !settings.contains_key(name)) {
            errors.push(FieldError::new(path, format!("{name:?} is not among the host's BIOS settings")));
            continue;
        }
        if let Some(Err(problem)) = schema.map(|schema| check_setting(schema, name, value)) {
            errors.push(FieldError::new(path, problem.to_string()));
        }
    }
    errors
}

/// A wanted value as the status shows values: text.
pub fn setting_text(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// Some wanted setting is not what the host has (or the host's settings are not read yet).
pub fn differs(spec: &HostFirmwareSettingsSpec, current: &BTreeMap<String, String>) -> bool {
    spec.settings.iter().any(|(name, value)| current.get(name) != Some(&setting_text(value)))
}

/// The check the webhook and the controller make, as baremetal-operator's controller makes it:
/// the wanted settings are checked when some differ from the host's (a wanted value that is
/// already the host's needs no change, read-only or not). `current` is empty until Ironic has
/// read the host's settings; `schema` is known once they were read.
pub fn validate_host_firmware_settings(
    spec: &HostFirmwareSettingsSpec,
    current: &BTreeMap<String, String>,
    schema: Option<&BTreeMap<String, SettingSchema>>,
) -> Vec<FieldError> {
    if !differs(spec, current) {
        return Vec::new();
    }
    validate_settings(spec, (!current.is_empty()).then_some(current), schema)
}
