//! `HostFirmwareComponents` (baremetal-operator's): the firmware updates wanted for a host in
//! the spec, and in the status the versions of its components (`bios`, `bmc`, `nic:…`) as
//! Ironic last read them and the updates already handed to Ironic.

use crate::FieldError;
use crate::validation::valid_url;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One firmware image to flash on one component.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirmwareUpdate {
    /// `bios`, `bmc`, or a NIC as Ironic names it (`nic:` and its serial number or id).
    pub component: String,
    /// Where the BMC fetches the image from (`http`, `https` or `oci`).
    pub url: String,
}

/// One component's versions, as Ironic read them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirmwareComponentStatus {
    /// `bios`, `bmc` or `nic:…`.
    pub component: String,
    /// The version Ironic first read.
    #[serde(default)]
    pub initial_version: String,
    /// The version it has now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_version: Option<String>,
    /// The version the last update flashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_version_flashed: Option<String>,
    /// When Ironic last changed this component's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Time>,
}

/// The firmware updates wanted for the host of the same name.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "HostFirmwareComponents",
    plural = "hostfirmwarecomponents",
    namespaced,
    status = "HostFirmwareComponentsStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The firmware updates wanted for the BareMetalHost of the same name, and its components' versions."
)]
#[serde(rename_all = "camelCase")]
pub struct HostFirmwareComponentsSpec {
    /// The updates, flashed in this order.
    #[serde(default)]
    pub updates: Vec<FirmwareUpdate>,
}

/// What the host has.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostFirmwareComponentsStatus {
    /// The updates last handed to Ironic (flashed, or being flashed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<FirmwareUpdate>,
    /// The host's components, as Ironic last read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<FirmwareComponentStatus>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
    /// `ChangeDetected` (the spec's updates differ from those handed to Ironic) and `Valid`, as
    /// in baremetal-operator, and `Ready` (the components were read from Ironic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The generation of the spec the conditions describe (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The prefix of a NIC's component name.
pub const NIC_PREFIX: &str = "nic:";

/// The URL schemes an update may come from, as baremetal-operator allows them.
const SCHEMES: [&str; 3] = ["http", "https", "oci"];

/// Every update that cannot be flashed: a component that is not `bios`, `bmc` or `nic:…`
/// (baremetal-operator's controller checks that; here the webhook does too), or a URL that is
/// not an `http`, `https` or `oci` URL with a host (its webhook's check).
pub fn validate_host_firmware_components(spec: &HostFirmwareComponentsSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, update) in spec.updates.iter().enumerate() {
        let component = update.component.as_str();
        if !(component == "bios" || component == "bmc" || component.starts_with(NIC_PREFIX)) {
            errors.push(FieldError::new(
                format!("spec.updates[{i}].component"),
                format!("component {component:?} is invalid: only \"bmc\", \"bios\", or names starting with \"nic:\" are allowed"),
            ));
        }
        if let Err(problem) = valid_url(&update.url, &SCHEMES) {
            errors.push(FieldError::new(
                format!("spec.updates[{i}].url"),
                format!("invalid URL in the update of component {component:?}: {problem}"),
            ));
        }
    }
    errors
}

/// The updates the spec wants that were not handed to Ironic yet, as baremetal-operator picks
/// them: every update whose component the handed-over list lacks, or names with another URL.
pub fn updates_to_flash(spec: &[FirmwareUpdate], handed: &[FirmwareUpdate]) -> Vec<FirmwareUpdate> {
    spec.iter()
        .filter(|update| !handed.iter().any(|h| h.component == update.component && h.url == update.url))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(component: &str, url: &str) -> FirmwareUpdate {
        FirmwareUpdate { component: component.into(), url: url.into() }
    }

    fn errors(updates: &[FirmwareUpdate]) -> Vec<String> {
        let spec = HostFirmwareComponentsSpec { updates: updates.to_vec() };
        validate_host_firmware_components(&spec).into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn bios_bmc_and_nics_from_web_or_registry_urls_are_valid() {
        let valid = [
            update("bios", "http://192.0.2.1/bios.bin"),
            update("bmc", "https://firmware.example/bmc-2.0.bin"),
            update("nic:NIC.Integrated.1-1", "oci://registry.example/fw/nic:1.2"),
        ];
        assert_eq!(errors(&valid), Vec::<String>::new());
    }

    #[test]
    fn other_components_and_case_are_refused_as_baremetal_operator_refuses_them() {
        for component in ["BMC", "Bios", "nic", "cpld", ""] {
            let found = errors(&[update(component, "http://192.0.2.1/x.bin")]);
            assert_eq!(found.len(), 1, "{component:?}: {found:?}");
            assert!(found[0].contains("spec.updates[0].component"), "{found:?}");
        }
    }

    #[test]
    fn urls_without_a_host_or_of_another_scheme_are_refused() {
        for url in ["", "abc", "file:///firmware/bios.bin", "unix:///run/x", "http:///bios.bin", "ftp://h/x"] {
            let found = errors(&[update("bios", url)]);
            assert_eq!(found.len(), 1, "{url:?}: {found:?}");
            assert!(found[0].contains("spec.updates[0].url"), "{found:?}");
        }
    }

    #[test]
    fn only_updates_not_yet_handed_over_are_flashed() {
        let bios = update("bios", "http://h/bios-2.bin");
        let bmc = update("bmc", "http://h/bmc-3.bin");
        assert_eq!(updates_to_flash(&[bios.clone(), bmc.clone()], &[]), vec![bios.clone(), bmc.clone()]);
        assert_eq!(updates_to_flash(&[bios.clone(), bmc.clone()], std::slice::from_ref(&bios)), vec![bmc.clone()]);
        let newer = update("bios", "http://h/bios-3.bin");
        assert_eq!(updates_to_flash(std::slice::from_ref(&newer), &[bios]), vec![newer]);
    }
}
