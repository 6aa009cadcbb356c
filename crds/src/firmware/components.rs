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
/// (baremetal-operator's controller checks that; here the webhook does too), a URL that is
/// not an `http`, `https` or `oci` URL with a host (its webhook's check), or one that holds
/// credentials, or a component listed twice (neither in baremetal-operator: the first would
/// go into Ironic's node and the status, and the record of what was flashed keeps one image
/// per component).
pub fn validate_host_firmware_components(spec: &HostFirmwareComponentsSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, update) in spec.updates.iter().enumerate() {
        let component = update.component.as_str();
        if spec.updates[..i].iter().any(|u| u.component == update.component) {
            errors.push(FieldError::new(
                format!("spec.updates[{i}].component"),
                format!("component {component:?} is listed twice: one update per component"),
            ));
        }
        if !(component == "bios" || component == "bmc" || component.starts_with(NIC_PREFIX)) {
            errors.push(FieldError::new(
                format!("spec.updates[{i}].component"),
                format!("component {component:?} is invalid: only \"bmc\", \"bios\", or names starting with \"nic:\" are allowed"),
            ));
        }
        let path = format!("spec.updates[{i}].url");
        match valid_url(&update.url, &SCHEMES) {
            Err(problem) => errors.push(FieldError::new(
                path,
                format!("invalid URL in the update of component {component:?}: {problem}"),
            )),
            // The URL goes into Ironic's node and the status, where anyone who may read them
            // would read a password in it.
            Ok(url) if !url.username().is_empty() || url.password().is_some() => errors.push(FieldError::new(
                path,
                format!("the URL of the update of component {component:?} must not hold credentials"),
            )),
            Ok(_) => {}
        }
    }
    errors
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
    fn a_component_listed_twice_is_refused() {
        let found = errors(&[
            update("bios", "http://h/a.bin"),
            update("bmc", "http://h/b.bin"),
            update("bios", "http://h/c.bin"),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("spec.updates[2].component") && found[0].contains("twice"), "{found:?}");
    }

    #[test]
    fn urls_without_a_host_or_of_another_scheme_are_refused() {
        for url in
            ["", "abc", "file:///firmware/bios.bin", "unix:///run/x", "http:///bios.bin", "ftp://h/x", "http://u:p@h/x"]
        {
            let found = errors(&[update("bios", url)]);
            assert_eq!(found.len(), 1, "{url:?}: {found:?}");
            assert!(found[0].contains("spec.updates[0].url"), "{found:?}");
        }
    }
}
