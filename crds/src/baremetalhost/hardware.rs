//! Inspection data: `BareMetalHost.status.hardware` and `HardwareData.spec.hardware`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything inspection found on a host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardwareDetails {
    /// The CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Cpu>,
    /// System firmware.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<Firmware>,
    /// Host name reported by the ramdisk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Network interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nics: Option<Vec<Nic>>,
    /// Memory in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_mebibytes: Option<i64>,
    /// Disks and other block devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Vec<Storage>>,
    /// Manufacturer, product and serial number of the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_vendor: Option<SystemVendor>,
}

/// The host's processors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cpu {
    /// Architecture, e.g. x86_64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Clock speed in MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_megahertz: Option<f64>,
    /// Number of logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// CPU flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<Vec<String>>,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// System firmware.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Firmware {
    /// The BIOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bios: Option<Bios>,
}

/// BIOS identification.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bios {
    /// Release date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// System identification.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemVendor {
    /// Manufacturer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    /// Product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_name: Option<String>,
    /// Serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
}

/// One network interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Nic {
    /// IPv4 or IPv6 address; dual-stack interfaces appear twice, once per address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Neighbour information seen over LLDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lldp: Option<Lldp>,
    /// MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Vendor and product IDs, e.g. "0x8086 0x1572".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Interface name, e.g. "eno1".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the interface can PXE boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pxe: Option<bool>,
    /// Speed in Gbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_gbps: Option<i32>,
    /// Untagged VLAN ID.
    #[serde(default, rename = "vlanId", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4094))]
    pub vlan_id: Option<i32>,
    /// VLANs seen on the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlans: Option<Vec<Vlan>>,
}

/// A VLAN.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Vlan {
    /// VLAN ID, 0-4094.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4094))]
    pub id: Option<i32>,
    /// VLAN name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// LLDP neighbour of an interface. Fields beyond the common ones are kept as reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lldp {
    /// Port ID on the switch.
    #[serde(default, rename = "portID", skip_serializing_if = "Option::is_none")]
    pub port_id: Option<String>,
    /// Chassis ID of the switch.
    #[serde(default, rename = "switchID", skip_serializing_if = "Option::is_none")]
    pub switch_id: Option<String>,
    /// System name of the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_system_name: Option<String>,
    /// Other reported LLDP fields.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// One block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Storage {
    /// Other Linux names of the device, e.g. /dev/sda; not necessarily stable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate_names: Option<Vec<String>>,
    /// SCSI address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hctl: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Linux device name, stable across reboots when possible (a by-path link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Spinning media (prefer type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    /// HDD, SSD or NVME.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<DiskType>,
    /// Vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// World Wide Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    /// WWN vendor extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn_vendor_extension: Option<String>,
    /// WWN with the vendor extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn_with_extension: Option<String>,
}

/// Kind of disk. Values: HDD, SSD, NVME.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum DiskType {
    /// Rotational disk.
    #[serde(rename = "HDD")]
    Hdd,
    /// Solid-state disk.
    #[serde(rename = "SSD")]
    Ssd,
    /// NVMe device.
    #[serde(rename = "NVME")]
    Nvme,
}
