//! BIOS settings and firmware updates a NodeSet wants on its machines
//! (`baremetalSetTemplate.firmwareSettings` and `.firmwareUpdates`, overridden by the same
//! fields of `nodes.<host>`: settings key by key, updates component by component): applied in
//! place, written into each claimed host's `HostFirmwareSettings` and
//! `HostFirmwareComponents` and applied by servicing, never by a reprovision.

use crate::firmware::{
    FirmwareUpdate, HostFirmwareComponentsSpec, HostFirmwareSettingsSpec, validate_host_firmware_components,
    validate_settings,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::{Schema, SchemaGenerator, json_schema};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// BIOS settings by name, as a `HostFirmwareSettings`' `spec.settings` has them.
pub type FirmwareSettings = BTreeMap<String, IntOrString>;

/// Settings a NodeSet may ask for on one host at most: bounds the objects it writes.
pub const MAX_FIRMWARE_SETTINGS: usize = 128;
/// Updates a NodeSet may ask for on one host at most (one per component).
pub const MAX_FIRMWARE_UPDATES: usize = 16;

/// The schema of a settings map: bounded, values a string or an integer (`check_firmware_settings`
/// bounds a value's length: a structural schema has no anyOf to bound it with).
pub(crate) fn firmware_settings_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "maxProperties": MAX_FIRMWARE_SETTINGS,
        "additionalProperties": {"x-kubernetes-int-or-string": true},
    })
}

/// The schema of an update list: bounded, each a component and a URL.
pub(crate) fn firmware_updates_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<Vec<FirmwareUpdate>>();
    schema.insert("maxItems".into(), MAX_FIRMWARE_UPDATES.into());
    schema.insert("nullable".into(), true.into());
    schema
}

/// A host's wanted updates: the template's, each replaced by the host's own of the same
/// component, then the host's others, in their order.
pub fn host_firmware_updates(
    template: Option<&[FirmwareUpdate]>,
    host: Option<&[FirmwareUpdate]>,
) -> Vec<FirmwareUpdate> {
    let own = host.unwrap_or_default();
    let mut merged: Vec<FirmwareUpdate> = template
        .unwrap_or_default()
        .iter()
        .map(|u| own.iter().find(|o| o.component == u.component).unwrap_or(u).clone())
        .collect();
    let template = template.unwrap_or_default();
    merged.extend(own.iter().filter(|o| !template.iter().any(|t| t.component == o.component)).cloned());
    merged
}

/// A host's wanted settings: the template's, each overridden by the host's own.
pub fn host_firmware_settings(
    template: Option<&FirmwareSettings>,
    host: Option<&FirmwareSettings>,
) -> FirmwareSettings {
    let mut merged = template.cloned().unwrap_or_default();
    merged.extend(host.into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// The hash of a host's wanted settings and updates (`None`: it wants none, so nothing is ever
/// written). An integer and the same digits as a string hash apart: Ironic may type them apart.
pub fn firmware_hash(settings: &FirmwareSettings, updates: &[FirmwareUpdate]) -> Option<String> {
    if settings.is_empty() && updates.is_empty() {
        return None;
    }
    let mut digest = Sha256::new();
    for update in updates {
        for part in ["u", update.component.as_str(), update.url.as_str()] {
            digest.update(part.as_bytes());
            digest.update([0]);
        }
    }
    for (name, value) in settings {
        let (kind, text) = match value {
            IntOrString::Int(n) => ("i", n.to_string()),
            IntOrString::String(s) => ("s", s.clone()),
        };
        for part in [name.as_str(), kind, text.as_str()] {
            digest.update(part.as_bytes());
            digest.update([0]);
        }
    }
    Some(hex::encode(digest.finalize()))
}

/// What the webhook can tell of wanted settings without the host: a name, no password (as
/// `HostFirmwareSettings` refuses one), a bounded value.
pub(crate) fn check_firmware_settings(path: &str, settings: Option<&FirmwareSettings>) -> Vec<crate::FieldError> {
    let Some(settings) = settings else { return Vec::new() };
    let mut errors = Vec::new();
    for name in settings.keys() {
        if name.trim().is_empty() || name.len() > 256 {
            errors.push(crate::FieldError::new(format!("{path}[{name}]"), "a setting name of 1 to 256 characters"));
        }
    }
    for (name, value) in settings {
        if matches!(value, IntOrString::String(s) if s.len() > 256) {
            errors.push(crate::FieldError::new(format!("{path}[{name}]"), "a value of at most 256 characters"));
        }
    }
    let spec = HostFirmwareSettingsSpec { settings: settings.clone() };
    for error in validate_settings(&spec, None, None) {
        let field = error.path.replacen("spec.settings", path, 1);
        errors.push(crate::FieldError::new(field, error.message));
    }
    errors
}

/// What the webhook can tell of wanted updates: as a `HostFirmwareComponents`' (a component
/// Ironic knows, once; a URL it can fetch, without credentials).
pub(crate) fn check_firmware_updates(path: &str, updates: Option<&Vec<FirmwareUpdate>>) -> Vec<crate::FieldError> {
    let Some(updates) = updates else { return Vec::new() };
    let spec = HostFirmwareComponentsSpec { updates: updates.clone() };
    let errors = validate_host_firmware_components(&spec);
    errors.into_iter().map(|e| crate::FieldError::new(e.path.replacen("spec.updates", path, 1), e.message)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, IntOrString)]) -> FirmwareSettings {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn a_hosts_own_settings_override_the_templates_key_by_key() {
        let template = settings(&[
            ("ProcTurboMode", IntOrString::String("Disabled".into())),
            ("L2Cache", IntOrString::String("10x256 KB".into())),
        ]);
        let host = settings(&[("ProcTurboMode", IntOrString::String("Enabled".into()))]);
        let merged = host_firmware_settings(Some(&template), Some(&host));
        assert_eq!(merged["ProcTurboMode"], IntOrString::String("Enabled".into()));
        assert_eq!(merged["L2Cache"], IntOrString::String("10x256 KB".into()));
    }

    #[test]
    fn no_settings_have_no_hash_and_an_integer_hashes_apart_from_its_digits() {
        assert_eq!(firmware_hash(&FirmwareSettings::new(), &[]), None);
        let int = firmware_hash(&settings(&[("Cores", IntOrString::Int(4))]), &[]);
        let text = firmware_hash(&settings(&[("Cores", IntOrString::String("4".into()))]), &[]);
        assert!(int.is_some() && int != text);
        let bios = FirmwareUpdate { component: "bios".into(), url: "http://images/bios.bin".into() };
        assert!(firmware_hash(&FirmwareSettings::new(), std::slice::from_ref(&bios)).is_some());
        assert_ne!(firmware_hash(&settings(&[("Cores", IntOrString::Int(4))]), &[bios]), int);
    }

    #[test]
    fn a_hosts_own_update_replaces_the_templates_of_its_component_and_others_follow() {
        let update = |component: &str, url: &str| FirmwareUpdate { component: component.into(), url: url.into() };
        let template = [update("bios", "http://i/bios-1.bin"), update("bmc", "http://i/bmc-1.bin")];
        let own = [update("nic:1", "http://i/nic.bin"), update("bios", "http://i/bios-2.bin")];
        let merged = host_firmware_updates(Some(&template), Some(&own));
        assert_eq!(
            merged,
            [
                update("bios", "http://i/bios-2.bin"),
                update("bmc", "http://i/bmc-1.bin"),
                update("nic:1", "http://i/nic.bin")
            ]
        );
    }

    #[test]
    fn an_update_of_an_unknown_component_or_with_credentials_is_refused_with_its_path() {
        let updates = vec![
            FirmwareUpdate { component: "cpld".into(), url: "http://i/cpld.bin".into() },
            FirmwareUpdate { component: "bios".into(), url: "http://user:pw@i/bios.bin".into() },
        ];
        let errors = check_firmware_updates("spec.nodes[a].firmwareUpdates", Some(&updates));
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|e| e.contains("spec.nodes[a].firmwareUpdates[0].component")), "{text:?}");
        assert!(text.iter().any(|e| e.contains("spec.nodes[a].firmwareUpdates[1].url")), "{text:?}");
    }

    #[test]
    fn a_password_and_an_empty_name_are_refused_with_their_path() {
        let wanted = settings(&[("AdminPassword", IntOrString::String("x".into())), ("", IntOrString::Int(1))]);
        let errors = check_firmware_settings("spec.baremetalSetTemplate.firmwareSettings", Some(&wanted));
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|e| e.contains("firmwareSettings[AdminPassword]") && e.contains("password")),
            "{text:?}"
        );
        assert!(text.iter().any(|e| e.contains("firmwareSettings[]")), "{text:?}");
    }
}
