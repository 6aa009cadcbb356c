//! `HostFirmwareSettings` (short name `hfs`, as in baremetal-operator): a host's wanted BIOS
//! settings in the spec, and in the status the settings Ironic read, the schema they follow,
//! and whether the wanted ones are valid and differ.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a host's `FirmwareSchema` is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SchemaReference {
    /// Its namespace (the host's: a schema is never read from another namespace).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// A host's wanted BIOS settings; the object has the host's name.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "HostFirmwareSettings",
    plural = "hostfirmwaresettings",
    namespaced,
    shortname = "hfs",
    status = "HostFirmwareSettingsStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The BIOS settings wanted for the BareMetalHost of the same name, and those it has.",
    printcolumn(
        name = "Valid",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Valid\")].status",
        description = "The wanted settings follow the schema"
    ),
    printcolumn(
        name = "ChangeDetected",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"ChangeDetected\")].status",
        description = "The wanted settings differ from the host's"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HostFirmwareSettingsSpec {
    /// The wanted settings, by name: a string or an integer each.
    #[serde(default)]
    pub settings: BTreeMap<String, IntOrString>,
}

/// What the host has.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostFirmwareSettingsStatus {
    /// The schema the settings follow.
    #[serde(default, rename = "schema", skip_serializing_if = "Option::is_none")]
    pub firmware_schema: Option<SchemaReference>,
    /// The settings Ironic last read from the BMC, by name.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
    /// `ChangeDetected` (the spec differs from the status) and `Valid` (the spec follows the
    /// schema), as in baremetal-operator, and `Ready` (the settings were read from Ironic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The generation of the spec the conditions describe (not in baremetal-operator, whose
    /// conditions alone carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
