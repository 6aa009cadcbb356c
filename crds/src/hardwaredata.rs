//! `HardwareData` (`metal3.io/v1alpha1`, short name hd): the full inspection data of the
//! BareMetalHost with the same name, compatible with baremetal-operator.

use crate::baremetalhost::HardwareDetails;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Inspection data of one host.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "HardwareData",
    plural = "hardwaredata",
    namespaced,
    shortname = "hd",
    derive = "PartialEq",
    derive = "Default",
    doc = "Hardware details collected by inspection of the BareMetalHost of the same name.",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of HardwareData"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HardwareDataSpec {
    /// CPU, memory, NICs, storage, firmware, system vendor and host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<HardwareDetails>,
}
