//! Hardware inventory (`GET /v1/nodes/{id}/inventory`, 1.81), in the format
//! of ironic-python-agent, which out-of-band (redfish) inspection also uses.
//! Fields vary by inspector, so all are optional and the rest is kept in
//! `other`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// What the inventory endpoint returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeInventory {
    /// The hardware found.
    pub inventory: Inventory,
    /// Data the inspection plugins derived (`all_interfaces`, `macs`…).
    pub plugin_data: Value,
}

/// The hardware of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inventory {
    /// Processors.
    pub cpu: Option<Cpu>,
    /// Memory.
    pub memory: Option<Memory>,
    /// Network interfaces.
    pub interfaces: Vec<NetworkInterface>,
    /// Block devices.
    pub disks: Vec<Disk>,
    /// The machine's make.
    pub system_vendor: Option<SystemVendor>,
    /// How it booted.
    pub boot: Option<BootInfo>,
    /// The BMC's IPv4 address.
    pub bmc_address: Option<String>,
    /// The BMC's IPv6 address.
    pub bmc_v6address: Option<String>,
    /// The host name the ramdisk saw.
    pub hostname: Option<String>,
    /// Everything else (`storage_controllers`…), verbatim.
    #[serde(flatten)]
    pub other: JsonObject,
}

/// Processors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// Model name.
    pub model_name: Option<String>,
    /// Logical CPU count.
    pub count: Option<u64>,
    /// Architecture (`x86_64`, `aarch64`).
    pub architecture: Option<String>,
    /// Frequency in MHz (a string from the agent, a number elsewhere).
    pub frequency: Option<Value>,
    /// CPU flags.
    pub flags: Vec<String>,
}

/// Memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    /// Total usable bytes.
    pub total: Option<u64>,
    /// Installed MiB.
    pub physical_mb: Option<u64>,
}

/// A network interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkInterface {
    /// Interface name (the MAC for out-of-band inspection).
    pub name: Option<String>,
    /// MAC address.
    pub mac_address: Option<String>,
    /// IPv4 address.
    pub ipv4_address: Option<String>,
    /// IPv6 address.
    pub ipv6_address: Option<String>,
    /// Whether a link is up.
    pub has_carrier: Option<bool>,
    /// Link speed.
    pub speed_mbps: Option<u64>,
    /// NIC vendor id.
    pub vendor: Option<String>,
    /// NIC product id.
    pub product: Option<String>,
    /// BIOS device name.
    pub biosdevname: Option<String>,
    /// LLDP TLVs as `[type, hex value]` pairs.
    pub lldp: Option<Value>,
}

/// A block device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disk {
    /// Device name (`/dev/sda`, or the BMC's name).
    pub name: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Size in bytes.
    pub size: Option<u64>,
    /// Whether it spins.
    pub rotational: Option<bool>,
    /// Vendor.
    pub vendor: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// World wide name.
    pub wwn: Option<String>,
    /// SCSI address.
    pub hctl: Option<String>,
    /// `/dev/disk/by-path` link.
    pub by_path: Option<String>,
}

/// The machine's make.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemVendor {
    /// Manufacturer.
    pub manufacturer: Option<String>,
    /// Product name.
    pub product_name: Option<String>,
    /// Serial number.
    pub serial_number: Option<String>,
    /// SMBIOS system UUID.
    pub system_uuid: Option<String>,
    /// Firmware details.
    pub firmware: Option<Value>,
}

/// How the machine booted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BootInfo {
    /// `uefi` or `bios`.
    pub current_boot_mode: Option<String>,
    /// The interface it PXE booted from.
    pub pxe_interface: Option<String>,
}
