//! baremetal-operator's BIOS kinds (`metal3.io/v1alpha1`): `FirmwareSchema`, the settings a
//! model of machine has and what each accepts, and `HostFirmwareSettings`, a host's wanted and
//! current BIOS settings. Their YAML is baremetal-operator's, field for field.
//!
//! Not served yet: no CRD is generated for them and no controller reads them
//! (`design/hosts.md`, "Not done yet"); this module holds the types and the pure check of a
//! wanted value against its schema, which the webhook and the controller will share.

mod schema;
mod settings;
#[cfg(test)]
mod tests;

pub use schema::{FirmwareSchema, FirmwareSchemaSpec, SettingProblem, SettingSchema, check_setting};
pub use settings::{HostFirmwareSettings, HostFirmwareSettingsSpec, HostFirmwareSettingsStatus, SchemaReference};
