//! `spec.baremetalSetTemplate`: which BareMetalHosts a NodeSet claims and how it provisions them.

use crate::baremetalhost::{AutomatedCleaningMode, BootMode, DiskType, Image, RootDeviceHints};
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How hosts are chosen (locked once a host is claimed) and provisioned (used only when a host
/// is provisioned).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BaremetalSetTemplate {
    /// Applied in place: cleaning mode written to every claimed BareMetalHost (affects only
    /// future deprovisioning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automated_cleaning_mode: Option<AutomatedCleaningMode>,
    /// Locked once a host is claimed: labels a BareMetalHost must carry to be claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::selector::bounded_label_selector")]
    pub bmh_label_selector: Option<LabelSelector>,
    /// Locked once a host is claimed: namespace of the BareMetalHosts; the NodeSet's own when
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub bmh_namespace: Option<String>,
    /// Provisioning only: boot mode of provisioned hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<BootMode>,
    /// Applied in place: BIOS settings wanted on every claimed host (a host's own
    /// firmwareSettings override them key by key), written into the HostFirmwareSettings of its
    /// BareMetalHost: applied while a host not yet provisioned is prepared, and on a provisioned
    /// host by servicing at a reboot the NodeSet asks for, maxUnavailable hosts at a time. Never
    /// by a reprovision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::firmware::firmware_settings_schema")]
    pub firmware_settings: Option<super::firmware::FirmwareSettings>,
    /// Applied in place: firmware updates wanted on every claimed host (a host's own
    /// firmwareUpdates replace them component by component), written into the
    /// HostFirmwareComponents of its BareMetalHost and flashed on a provisioned host by
    /// servicing at a reboot the NodeSet asks for, maxUnavailable hosts at a time; each once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::firmware::firmware_updates_schema")]
    pub firmware_updates: Option<Vec<crate::firmware::FirmwareUpdate>>,
    /// Locked once a host is claimed: minimum hardware (from inspection) a BareMetalHost needs
    /// to be claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_reqs: Option<HardwareReqs>,
    /// Provisioning only: the OS image. Editing it never reprovisions; provisioned hosts report
    /// provisioningOutdated until their reprovisionToken changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// Provisioning only: first-boot network data Secret (in bmhNamespace). When unset, it is
    /// generated from each host's effective networks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_data: Option<SecretReference>,
    /// Provisioning only: network settings of the provisioning ramdisk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_network: Option<ProvisioningNetwork>,
    /// Provisioning only: root disk selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<RootDeviceHints>,
    /// Provisioning only: first-boot user data Secret (in bmhNamespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data: Option<SecretReference>,
}

/// Minimum hardware, compared with the BareMetalHost's inspection data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardwareReqs {
    /// Required CPU architecture, e.g. x86_64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_arch: Option<String>,
    /// Required type of at least one disk of minDiskGiB: HDD, SSD or NVME.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_type: Option<DiskType>,
    /// Minimum number of logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_cpu_count: Option<i32>,
    /// Minimum CPU clock in MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_cpu_mhz: Option<i32>,
    /// Minimum size of the largest disk in GiB.
    #[serde(default, rename = "minDiskGiB", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_disk_gib: Option<i32>,
    /// Minimum memory in GiB.
    #[serde(default, rename = "minMemoryGiB", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_memory_gib: Option<i32>,
}

/// Network settings used while a host runs the provisioning ramdisk.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningNetwork {
    /// Secret (in bmhNamespace) with the ramdisk's network configuration, copied to the
    /// BareMetalHost's preprovisioningNetworkDataName.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preprovisioning_network_data_name: Option<String>,
}
