//! What Ironic's BIOS list says of a host, in the two shapes baremetal-operator publishes: the
//! settings (for the `HostFirmwareSettings` status) and their schema (for a `FirmwareSchema`),
//! and the name of that schema, the same for every machine with the same registry.

use crds::firmware::SettingSchema;
use ironic_client::BiosSetting;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A host's BIOS settings as read.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Reading {
    /// Each setting's current value.
    pub settings: BTreeMap<String, String>,
    /// Each setting's schema.
    pub schema: BTreeMap<String, SettingSchema>,
}

impl Reading {
    /// Ironic has read nothing yet (the node is not managed yet, or its driver has no BIOS
    /// interface).
    pub(super) fn is_empty(&self) -> bool {
        self.settings.is_empty()
    }
}

/// Passwords are left out of both, as baremetal-operator leaves them: some BMCs report
/// encrypted password fields, which no status should carry.
fn is_password(setting: &BiosSetting) -> bool {
    setting.name.contains("Password") || setting.attribute_type.as_deref() == Some("Password")
}

/// The settings and schema of Ironic's list.
pub(super) fn reading(bios: &[BiosSetting]) -> Reading {
    let mut reading = Reading::default();
    for setting in bios.iter().filter(|s| !is_password(s)) {
        reading.settings.insert(setting.name.clone(), setting.value.clone().unwrap_or_default());
        reading.schema.insert(
            setting.name.clone(),
            SettingSchema {
                attribute_type: setting.attribute_type.clone(),
                allowable_values: (!setting.allowable_values.is_empty()).then(|| setting.allowable_values.clone()),
                lower_bound: setting.lower_bound,
                upper_bound: setting.upper_bound,
                min_length: setting.min_length,
                max_length: setting.max_length,
                read_only: setting.read_only,
                reset_required: setting.reset_required,
                unique: setting.unique,
            },
        );
    }
    reading
}

/// `schema-` and eight hex digits of a digest of every name, type, allowed value, bound and
/// read-only flag, sorted: baremetal-operator's `GetSchemaName`, so that machines of one model
/// share one schema, under the name baremetal-operator would give it.
pub(super) fn schema_name(schema: &BTreeMap<String, SettingSchema>) -> String {
    let mut keys: Vec<String> = Vec::new();
    for (name, s) in schema {
        keys.push(name.clone());
        keys.push(s.attribute_type.clone().unwrap_or_default());
        keys.extend(s.allowable_values.iter().flatten().cloned());
        let numbers = [s.lower_bound, s.upper_bound, s.min_length, s.max_length];
        keys.extend(numbers.into_iter().flatten().map(|n| n.to_string()));
        keys.extend(s.read_only.map(|r| r.to_string()));
    }
    keys.sort();
    // Go's `fmt.Fprintf(h, "%v", keys)` of a string slice: the items between brackets,
    // separated by spaces.
    let digest = Sha256::digest(format!("[{}]", keys.join(" ")).as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("schema-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(name: &str, value: &str, kind: &str) -> BiosSetting {
        BiosSetting {
            name: name.into(),
            value: Some(value.into()),
            attribute_type: Some(kind.into()),
            ..BiosSetting::default()
        }
    }

    #[test]
    fn passwords_are_neither_settings_nor_schema() {
        let read = reading(&[
            setting("ProcTurboMode", "Enabled", "Enumeration"),
            setting("AdminPassword", "", "String"),
            setting("Secret", "x", "Password"),
        ]);
        assert_eq!(read.settings.keys().collect::<Vec<_>>(), ["ProcTurboMode"]);
        assert_eq!(read.schema.keys().collect::<Vec<_>>(), ["ProcTurboMode"]);
    }

    #[test]
    fn a_setting_without_a_registry_has_an_empty_schema_and_no_value_reads_as_empty() {
        let read = reading(&[BiosSetting { name: "Bare".into(), ..BiosSetting::default() }]);
        assert_eq!(read.settings["Bare"], "");
        assert_eq!(read.schema["Bare"], SettingSchema::default());
    }

    #[test]
    fn machines_with_one_registry_share_a_name_and_any_difference_changes_it() {
        let one = reading(&[setting("ProcTurboMode", "Enabled", "Enumeration"), setting("NumCores", "8", "Integer")]);
        // Values are the machine's, not the model's.
        let other =
            reading(&[setting("ProcTurboMode", "Disabled", "Enumeration"), setting("NumCores", "4", "Integer")]);
        assert_eq!(schema_name(&one.schema), schema_name(&other.schema));
        let name = schema_name(&one.schema);
        assert!(name.starts_with("schema-") && name.len() == 15, "{name}");
        let mut bounded = one.schema.clone();
        if let Some(cores) = bounded.get_mut("NumCores") {
            cores.upper_bound = Some(64);
        }
        assert_ne!(schema_name(&bounded), name);
    }

    #[test]
    fn the_name_is_baremetal_operators_for_the_same_registry() {
        // Go: sort ["A", "Enumeration", "On", "Off"] → "[A Enumeration Off On]", sha256, 8 hex.
        let schema = BTreeMap::from([(
            "A".to_string(),
            SettingSchema {
                attribute_type: Some("Enumeration".into()),
                allowable_values: Some(vec!["On".into(), "Off".into()]),
                ..SettingSchema::default()
            },
        )]);
        let digest = Sha256::digest(b"[A Enumeration Off On]");
        let expected: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        assert_eq!(schema_name(&schema), format!("schema-{expected}"));
    }
}
