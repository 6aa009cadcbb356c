//! BIOS settings and their registry (`GET /v1/nodes/{id}/bios?detail=True`, 1.74) and firmware
//! components (`GET /v1/nodes/{id}/firmware`, 1.86), as Ironic cached them from the BMC: the
//! settings when a node is managed and after cleaning or servicing, the components when a
//! node is managed, at inspection, around cleaning and servicing and after a firmware update. Every registry field is optional, since a BMC
//! without an attribute registry gives names and values only.

use serde::{Deserialize, Serialize};

use super::null_as_default;

/// One BIOS setting with what the registry says of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BiosSetting {
    /// The attribute's name (`ProcTurboMode`).
    pub name: String,
    /// Its current value, as text (`Enabled`, `10`, `true`); `None` when the BMC gave none.
    pub value: Option<String>,
    /// `Enumeration`, `String`, `Integer`, `Boolean` or `Password`.
    pub attribute_type: Option<String>,
    /// The values an `Enumeration` accepts.
    #[serde(deserialize_with = "null_as_default")]
    pub allowable_values: Vec<String>,
    /// The least value of an `Integer`.
    pub lower_bound: Option<i64>,
    /// The greatest value of an `Integer`.
    pub upper_bound: Option<i64>,
    /// The least length of a `String`.
    pub min_length: Option<i64>,
    /// The greatest length of a `String`.
    pub max_length: Option<i64>,
    /// True when the setting cannot be changed.
    pub read_only: Option<bool>,
    /// True when a change needs a reboot to apply.
    pub reset_required: Option<bool>,
    /// True when the value must be unique to this machine.
    pub unique: Option<bool>,
}

/// One firmware component and its versions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirmwareComponent {
    /// `bios`, `bmc`, or a NIC's name where Ironic reports NICs.
    pub component: String,
    /// The version Ironic first saw.
    pub initial_version: Option<String>,
    /// The version now.
    pub current_version: Option<String>,
    /// The version of the last update Ironic flashed, if any.
    pub last_version_flashed: Option<String>,
    /// When Ironic last changed this record (RFC 3339); `None` until it first did.
    pub updated_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_setting_with_its_registry_and_one_without_both_parse() {
        let detailed: BiosSetting = serde_json::from_value(json!({
            "name": "NumCores", "value": "10", "attribute_type": "Integer", "allowable_values": null,
            "lower_bound": 10, "upper_bound": 20, "min_length": null, "max_length": null,
            "read_only": true, "reset_required": null, "unique": null, "links": []
        }))
        .expect("parses");
        assert_eq!(detailed.lower_bound, Some(10));
        assert_eq!(detailed.read_only, Some(true));
        assert!(detailed.allowable_values.is_empty());
        let bare: BiosSetting = serde_json::from_value(json!({"name": "BootMode", "value": "Uefi"})).expect("parses");
        assert_eq!(bare.attribute_type, None);
    }

    #[test]
    fn a_component_never_flashed_has_no_last_version() {
        let component: FirmwareComponent = serde_json::from_value(json!({
            "component": "bios", "initial_version": "1.0.0", "current_version": "1.0.0",
            "last_version_flashed": null
        }))
        .expect("parses");
        assert_eq!(component.last_version_flashed, None);
    }
}
