//! baremetal-operator's BIOS kinds (`metal3.io/v1alpha1`): `FirmwareSchema`, the settings a
//! model of machine has and what each accepts, `HostFirmwareSettings`, a host's wanted and
//! current BIOS settings, `HostFirmwareComponents`, the firmware updates wanted for a host and
//! its components' versions, and `HostUpdatePolicy`, whether a provisioned host may be
//! serviced for them. baremetal-operator's YAML is theirs, field for field; the settings' status adds
//! `observedGeneration` and a `Ready` condition (`design/hosts.md`).
//!
//! The webhook and the firmware controller share the pure checks here: a wanted value against
//! its schema ([`check_setting`]) and every wanted setting of an object ([`validate_settings`]).

mod components;
mod policy;
mod schema;
mod settings;
#[cfg(test)]
mod tests;
mod validate;

pub use components::{
    FirmwareComponentStatus, FirmwareUpdate, HostFirmwareComponents, HostFirmwareComponentsSpec,
    HostFirmwareComponentsStatus, NIC_PREFIX, validate_host_firmware_components,
};
pub use policy::{HostUpdatePolicy, HostUpdatePolicySpec, UpdatePolicy};
pub use schema::{FirmwareSchema, FirmwareSchemaSpec, SettingProblem, SettingSchema, check_setting};
pub use settings::{HostFirmwareSettings, HostFirmwareSettingsSpec, HostFirmwareSettingsStatus, SchemaReference};
pub use validate::{differs, setting_text, validate_host_firmware_settings, validate_settings};
