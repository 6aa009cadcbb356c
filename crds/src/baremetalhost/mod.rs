//! `BareMetalHost` (`metal3.io/v1alpha1`, short names bmh/bmhost), compatible with metal3's
//! baremetal-operator: spec, status with its exact state strings, annotations, and
//! validation. Inspection data types are shared with [`crate::hardwaredata`]. The rules the
//! webhook and the host controller must decide alike ([`boot_mac_requirement`],
//! [`inspection_disabled`], [`validate_bmc_credentials`], [`parse_status_annotation`]) are
//! public here so both call the same function.

pub mod access;
pub mod annotations;
pub mod bmc;
pub mod credentials;
pub mod hardware;
mod rules;
pub mod spec;
pub mod status;
mod validation;

pub use annotations::{AnnotationJsonError, parse_hardware_details_annotation, parse_status_annotation};
pub use credentials::{BmcCredentialsError, validate_bmc_credentials};
pub use rules::{BootMacRequirement, boot_mac_requirement, inspection_disabled};
pub use validation::{MAX_NODE_NAME, node_name_problem, validate_baremetalhost};
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
