//! `BareMetalHost` (`metal3.io/v1alpha1`, short names bmh/bmhost), compatible with metal3's
//! baremetal-operator: spec, status with its exact state strings, annotations, and
//! validation. Inspection data types are shared with [`crate::hardwaredata`].

pub mod annotations;
pub mod bmc;
pub mod hardware;
pub mod spec;
pub mod status;
mod validation;

pub use validation::validate_baremetalhost;
pub(crate) use validation::{validate_image, validate_root_device_hints};

pub use hardware::{Bios, Cpu, DiskType, Firmware, HardwareDetails, Lldp, Nic, Storage, SystemVendor, Vlan};
pub use spec::{
    AutomatedCleaningMode, BareMetalHost, BareMetalHostSpec, BmcDetails, BootMode, ChecksumType, CustomDeploy,
    FirmwareConfig, HardwareRaidVolume, HostNetworkAttachmentRef, Image, ImageFormat, InspectionMode, NetworkInterface,
    RaidConfig, RaidLevel, RootDeviceHints, SoftwareRaidVolume, SwitchPort,
};
pub use status::{
    BareMetalHostStatus, CredentialsStatus, ErrorType, OperationHistory, OperationMetric, OperationalStatus,
    ProvisionStatus, ProvisioningState,
};
