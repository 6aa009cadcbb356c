//! `BareMetalHost.spec`, field for field as baremetal-operator defines it.

use super::status::BareMetalHostStatus;
use k8s_openapi::api::core::v1::{ObjectReference, SecretReference, Taint};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Message shared by the webhook rule and its CEL twin.
pub const BOOT_MAC_IMMUTABLE_MESSAGE: &str = "bootMACAddress can not be changed once it is set";
/// Message shared by the webhook rule and its CEL twin.
pub const POWER_OFF_DISABLED_MESSAGE: &str = "online cannot be false when disablePowerOff is true";

/// Desired state of a bare-metal host, compatible with metal3's baremetal-operator.
///
/// The BMC address scheme selects the Ironic driver: `ipmi://` (or a bare `host[:port]`),
/// `libvirt://`, `redfish://`, `redfish-virtualmedia://`, `redfish-uefihttp://`,
/// `idrac-redfish://`, `idrac-virtualmedia://`, `ilo5-redfish://`, `ilo5-virtualmedia://`
/// (Redfish ones also as `<scheme>+http://` / `<scheme>+https://`), and our `fake://<anything>`,
/// which registers the host with Ironic's `fake-hardware` driver for tests and benchmarks.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "BareMetalHost",
    namespaced,
    status = "BareMetalHostStatus",
    shortname = "bmh",
    shortname = "bmhost",
    derive = "PartialEq",
    derive = "Default",
    doc = "A physical (or fake) machine managed through its BMC and provisioned by Ironic, compatible with metal3's baremetal-operator.",
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.operationalStatus",
        description = "Operational status",
        priority = 1
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.provisioning.state",
        description = "Provisioning status"
    ),
    printcolumn(
        name = "Consumer",
        type_ = "string",
        json_path = ".spec.consumerRef.name",
        description = "Consumer using this host"
    ),
    printcolumn(
        name = "BMC",
        type_ = "string",
        json_path = ".spec.bmc.address",
        description = "Address of management controller",
        priority = 1
    ),
    printcolumn(
        name = "Online",
        type_ = "string",
        json_path = ".spec.online",
        description = "Whether the host is online or not"
    ),
    printcolumn(
        name = "Error",
        type_ = "string",
        json_path = ".status.errorType",
        description = "Type of the most recent error"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of BaremetalHost"
    )
)]
#[serde(rename_all = "camelCase")]
// MACs compare case-insensitively: 00:5C:... and 00:5c:... are the same NIC.
#[x_kube(validation = Rule::new("!has(oldSelf.bootMACAddress) || oldSelf.bootMACAddress == '' || (has(self.bootMACAddress) && self.bootMACAddress.lowerAscii() == oldSelf.bootMACAddress.lowerAscii())").message(BOOT_MAC_IMMUTABLE_MESSAGE))]
#[x_kube(validation = Rule::new("!has(self.disablePowerOff) || !self.disablePowerOff || self.online").message(POWER_OFF_DISABLED_MESSAGE))]
pub struct BareMetalHostSpec {
    /// CPU architecture, e.g. x86_64 or aarch64; filled by inspection when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// metadata (default) wipes disk metadata when provisioning and deprovisioning; disabled
    /// skips cleaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "metadata"))]
    pub automated_cleaning_mode: Option<AutomatedCleaningMode>,
    /// How to reach the BMC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bmc: Option<BmcDetails>,
    /// MAC address of the NIC used for provisioning (the PXE NIC with network boot); never the
    /// BMC's. Cannot be changed once set.
    #[serde(default, rename = "bootMACAddress", skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}"))]
    pub boot_mac_address: Option<String>,
    /// UEFI (default), UEFISecureBoot (secure boot turned on after provisioning) or legacy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<BootMode>,
    /// What uses this host, e.g. a Cluster API Machine or a ferrometal NodeSet; set means
    /// "in use".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_ref: Option<ObjectReference>,
    /// A custom deploy step from a site-specific ramdisk instead of writing an image. Setting
    /// it starts provisioning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_deploy: Option<CustomDeploy>,
    /// Free text identifying the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Reboot instead of powering off (Ironic API 1.95 or newer); forbids online: false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_power_off: Option<bool>,
    /// The host was provisioned by something else: only power is managed, no provisioning and
    /// no inspection. Can be set when the host is created or, later, while it is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub externally_provisioned: Option<bool>,
    /// Deprecated and rejected: use a HostFirmwareSettings resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<FirmwareConfig>,
    /// Deprecated: hardware profiles are no longer used; set architecture and rootDeviceHints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_profile: Option<String>,
    /// Image to provision. Setting it (with online: true) starts provisioning; changing or
    /// removing it on a provisioned host deprovisions it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// disabled, agent (in-band with the ramdisk) or fast (out-of-band via Redfish).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection_mode: Option<InspectionMode>,
    /// Secret (same namespace) with meta_data.json for the config drive; generated by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_data: Option<SecretReference>,
    /// Secret (same namespace) with network_data.json for the config drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_data: Option<SecretReference>,
    /// NICs and their switch ports, for the Ironic Networking Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<NetworkInterface>>,
    /// Desired power state; enforced in stable states.
    pub online: bool,
    /// Secret (same namespace) with network configuration for the ramdisk, also used for the
    /// config drive unless networkData is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preprovisioning_network_data_name: Option<String>,
    /// RAID configuration applied before provisioning: hardwareRAIDVolumes or
    /// softwareRAIDVolumes, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid: Option<RaidConfig>,
    /// Hints selecting the disk the image is written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<RootDeviceHints>,
    /// Deprecated, never implemented: taints for the corresponding Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// Secret (same namespace) with user data for the config drive (e.g. cloud-init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data: Option<SecretReference>,
}

/// BMC connection details.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BmcDetails {
    /// BMC URL; the scheme selects the driver (see the BareMetalHost description).
    pub address: String,
    /// Secret (same namespace) with `username` and `password`.
    pub credentials_name: String,
    /// Do not verify the BMC's TLS certificate (insecure; for self-signed BMC certificates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_certificate_verification: Option<bool>,
}

/// An image to write to the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Checksum of the image (hex digest) or URL of a checksum file. Required except for
    /// live-iso and oci:// images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// md5, sha256, sha512 or auto (detect from the checksum). md5 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
    /// raw, qcow2, vdi, vmdk, or live-iso (boot the ISO instead of writing it to disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ImageFormat>,
    /// Secret (same namespace) with registry credentials for oci:// images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_auth_secret_name: Option<String>,
    /// Location of the image: http(s)://, file:// or oci://.
    pub url: String,
}

impl Image {
    /// True when the image is booted as a live ISO rather than written to disk.
    pub fn is_live_iso(&self) -> bool {
        self.format == Some(ImageFormat::LiveIso)
    }
}

/// A custom deploy procedure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomDeploy {
    /// Name of the deploy step, specific to the ramdisk.
    pub method: String,
}

/// Hints selecting the root disk; every hint given must match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootDeviceHints {
    /// Device name such as /dev/vda or a /dev/disk/by-path link; exact match. Other
    /// /dev/disk links (by-id, by-uuid...) are refused, as baremetal-operator refuses them:
    /// the agent matches this hint against device names and by-path links only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// SCSI address such as 0:0:0:0; exact match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hctl: Option<String>,
    /// Minimum size in GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_size_gigabytes: Option<i32>,
    /// Vendor-specific model; substring match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Spinning (true) or solid-state (false) media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Serial number; exact match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    /// Vendor; substring match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// World Wide Name; exact match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    /// WWN vendor extension; exact match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn_vendor_extension: Option<String>,
    /// WWN with the vendor extension; exact match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwn_with_extension: Option<String>,
}

/// RAID configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RaidConfig {
    /// Hardware RAID volumes; the first is the root volume unless rootDeviceHints is set. An
    /// empty list clears the hardware RAID configuration.
    #[serde(default, rename = "hardwareRAIDVolumes", skip_serializing_if = "Option::is_none")]
    pub hardware_raid_volumes: Option<Vec<HardwareRaidVolume>>,
    /// Software RAID volumes (one or two): the first must be RAID-1, the second RAID-0, 1 or
    /// 1+0. Ignored when hardwareRAIDVolumes is set.
    #[serde(default, rename = "softwareRAIDVolumes", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2))]
    pub software_raid_volumes: Option<Vec<SoftwareRaidVolume>>,
}

/// One hardware RAID volume.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardwareRaidVolume {
    /// RAID controller to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// RAID level: 0, 1, 2, 5, 6, 1+0, 5+0 or 6+0.
    pub level: RaidLevel,
    /// Volume name, unique on the host; generated when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub name: Option<String>,
    /// Number of physical disks; the level's minimum by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub number_of_physical_disks: Option<i32>,
    /// Controller-specific names of the physical disks to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_disks: Option<Vec<String>>,
    /// Use only rotational (true) or only solid-state (false) disks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// Size in GiB; 0 or unset uses the whole capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub size_gibibytes: Option<i32>,
}

/// One software RAID volume.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SoftwareRaidVolume {
    /// Install onto this volume (the root device); at most one volume may set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub root_volume: Option<bool>,
    /// RAID level: 0, 1 or 1+0.
    pub level: RaidLevel,
    /// Hints selecting the member disks; at least two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2))]
    pub physical_disks: Option<Vec<RootDeviceHints>>,
    /// Size in GiB; 0 or unset uses the whole capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub size_gibibytes: Option<i32>,
}

/// RAID levels. Values: "0", "1", "2", "5", "6", "1+0", "5+0", "6+0".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum RaidLevel {
    /// Striping.
    #[serde(rename = "0")]
    Raid0,
    /// Mirroring.
    #[default]
    #[serde(rename = "1")]
    Raid1,
    /// Bit-level striping with parity.
    #[serde(rename = "2")]
    Raid2,
    /// Striping with parity.
    #[serde(rename = "5")]
    Raid5,
    /// Striping with double parity.
    #[serde(rename = "6")]
    Raid6,
    /// Striped mirrors.
    #[serde(rename = "1+0")]
    Raid10,
    /// Striped RAID-5 sets.
    #[serde(rename = "5+0")]
    Raid50,
    /// Striped RAID-6 sets.
    #[serde(rename = "6+0")]
    Raid60,
}

/// Deprecated BIOS settings (rejected by validation; use HostFirmwareSettings).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirmwareConfig {
    /// Simultaneous multithreading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simultaneous_multithreading_enabled: Option<bool>,
    /// SR-IOV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sriov_enabled: Option<bool>,
    /// Hardware virtualization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualization_enabled: Option<bool>,
}

/// A NIC of the host and where it is plugged in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterface {
    /// HostNetworkAttachment describing the port configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network_attachment: Option<HostNetworkAttachmentRef>,
    /// MAC address of the NIC (exactly one of name and macAddress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Name of the NIC (exactly one of name and macAddress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Switch port the NIC is cabled to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_port: Option<SwitchPort>,
}

/// Reference to a HostNetworkAttachment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostNetworkAttachmentRef {
    /// Name.
    pub name: String,
    /// Namespace; the host's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A switch port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwitchPort {
    /// Port on the switch.
    #[serde(rename = "portID")]
    pub port_id: String,
    /// The switch (its BareMetalSwitch name or chassis ID).
    #[serde(rename = "switchID")]
    pub switch_id: String,
}

/// Boot modes. Values: UEFI, UEFISecureBoot, legacy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum BootMode {
    /// UEFI boot (the default).
    #[default]
    #[serde(rename = "UEFI")]
    Uefi,
    /// UEFI with secure boot enabled after provisioning.
    #[serde(rename = "UEFISecureBoot")]
    UefiSecureBoot,
    /// BIOS boot.
    #[serde(rename = "legacy")]
    Legacy,
}

/// Automated cleaning. Values: metadata, disabled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum AutomatedCleaningMode {
    /// Wipe disk metadata.
    #[default]
    Metadata,
    /// No cleaning.
    Disabled,
}

/// Checksum algorithms. Values: md5, sha256, sha512, auto.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ChecksumType {
    /// MD5 (32 hex digits).
    Md5,
    /// SHA-256 (64 hex digits).
    Sha256,
    /// SHA-512 (128 hex digits).
    Sha512,
    /// Detect from the checksum.
    Auto,
}

impl ChecksumType {
    /// Hex digest length of the algorithm; `None` for auto.
    pub fn hex_len(self) -> Option<usize> {
        match self {
            Self::Md5 => Some(32),
            Self::Sha256 => Some(64),
            Self::Sha512 => Some(128),
            Self::Auto => None,
        }
    }
}

/// Image formats. Values: raw, qcow2, vdi, vmdk, live-iso.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ImageFormat {
    /// Raw disk image (streamed).
    Raw,
    /// QEMU copy-on-write.
    Qcow2,
    /// VirtualBox.
    Vdi,
    /// VMware.
    Vmdk,
    /// ISO booted live, not written to disk.
    LiveIso,
}

/// Inspection modes. Values: disabled, agent, fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum InspectionMode {
    /// No inspection.
    Disabled,
    /// In-band inspection by the ramdisk.
    Agent,
    /// Out-of-band inspection through Redfish.
    Fast,
}
