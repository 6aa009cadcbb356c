//! `HostUpdatePolicy` (baremetal-operator's): whether a provisioned host may have its firmware
//! settings and updates applied by servicing at its next reboot. The object has the host's name;
//! without one, changes wait for the host's next `preparing`, as in baremetal-operator. Like
//! baremetal-operator's, it has no status: the host and its `HostFirmwareSettings` report what
//! it made happen.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When changes reach a host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdatePolicy {
    /// Only while the host is prepared, before it is provisioned (the default).
    #[default]
    #[serde(rename = "onPreparing")]
    OnPreparing,
    /// Also on a provisioned host, by servicing at its next reboot.
    #[serde(rename = "onReboot")]
    OnReboot,
}

/// The policy of the host of the same name.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "HostUpdatePolicy",
    plural = "hostupdatepolicies",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    doc = "Whether the BareMetalHost of the same name may be serviced at its next reboot.",
    printcolumn(
        name = "FirmwareSettings",
        type_ = "string",
        json_path = ".spec.firmwareSettings",
        description = "When firmware settings are applied"
    ),
    printcolumn(
        name = "FirmwareUpdates",
        type_ = "string",
        json_path = ".spec.firmwareUpdates",
        description = "When firmware updates are applied"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HostUpdatePolicySpec {
    /// When the host's `HostFirmwareSettings` are applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_settings: Option<UpdatePolicy>,
    /// When the host's `HostFirmwareComponents` updates are applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_updates: Option<UpdatePolicy>,
}

impl HostUpdatePolicySpec {
    /// Firmware settings may be applied to the provisioned host by servicing.
    pub fn settings_on_reboot(&self) -> bool {
        self.firmware_settings == Some(UpdatePolicy::OnReboot)
    }

    /// Firmware updates may be flashed on the provisioned host by servicing.
    pub fn updates_on_reboot(&self) -> bool {
        self.firmware_updates == Some(UpdatePolicy::OnReboot)
    }
}
