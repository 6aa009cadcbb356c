//! `FirmwareSchema` (short name none, as in baremetal-operator): for one hardware vendor and
//! model, every BIOS setting's type and limits, as Ironic reads them from the BMC's attribute
//! registry. The operator writes it; users read it.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;

/// What the registry says of one setting (its field names are Ironic's, as in
/// baremetal-operator).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SettingSchema {
    /// `Enumeration`, `String`, `Integer`, `Boolean` or `Password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute_type: Option<String>,
    /// The values an `Enumeration` accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowable_values: Option<Vec<String>>,
    /// The least value of an `Integer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_bound: Option<i64>,
    /// The greatest value of an `Integer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_bound: Option<i64>,
    /// The least length of a `String`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<i64>,
    /// The greatest length of a `String`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    /// True when the setting cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// True when a change needs a reset to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_required: Option<bool>,
    /// True when the value is unique to the machine (a serial number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique: Option<bool>,
}

/// The settings of one vendor's model.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "FirmwareSchema",
    plural = "firmwareschemas",
    namespaced,
    derive = "PartialEq",
    derive = "Default",
    doc = "The BIOS settings of a hardware model and what each accepts.",
    printcolumn(
        name = "Vendor",
        type_ = "string",
        json_path = ".spec.hardwareVendor",
        description = "Hardware vendor"
    ),
    printcolumn(name = "Model", type_ = "string", json_path = ".spec.hardwareModel", description = "Hardware model"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FirmwareSchemaSpec {
    /// The hardware vendor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_vendor: Option<String>,
    /// The hardware model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_model: Option<String>,
    /// Each setting's schema, by name.
    #[serde(default)]
    pub schema: BTreeMap<String, SettingSchema>,
}

/// Why a wanted value cannot be set.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SettingProblem {
    /// The schema does not know the setting.
    #[error("{0:?} is not a setting of this host's firmware")]
    Unknown(String),
    /// Read-only in the registry.
    #[error("{0:?} is read-only")]
    ReadOnly(String),
    /// Not one of an enumeration's values.
    #[error("{name:?} must be one of {allowed}, not {value:?}")]
    NotAllowed { name: String, value: String, allowed: String },
    /// Not an integer.
    #[error("{name:?} must be an integer, not {value:?}")]
    NotInteger { name: String, value: String },
    /// Outside its bounds.
    #[error("{name:?} must be an integer from {lower} to {upper}, not {value:?}")]
    OutOfBounds { name: String, value: String, lower: i64, upper: i64 },
    /// A string of the wrong length.
    #[error("{name:?} must be {min} to {max} characters long, not {length}")]
    BadLength { name: String, length: usize, min: i64, max: i64 },
    /// Not `true` or `false`.
    #[error("{name:?} must be true or false, not {value:?}")]
    NotBoolean { name: String, value: String },
    /// Passwords are never set through the API (they would sit in the spec).
    #[error("{0:?} is a password, which cannot be set this way")]
    Password(String),
    /// A type the operator does not know.
    #[error("{name:?} has the unknown type {kind:?}")]
    UnknownType { name: String, kind: String },
}

/// Checks a wanted value against the schema as baremetal-operator's `CheckSettingIsValid`
/// does, saying why when it cannot be set. One difference: an `Integer` that is not an
/// integer is refused (baremetal-operator reads it as 0 and compares that with the bounds, or
/// accepts it when the registry gives none).
pub fn check_setting(
    schemas: &BTreeMap<String, SettingSchema>,
    name: &str,
    value: &IntOrString,
) -> Result<(), SettingProblem> {
    let schema = schemas.get(name).ok_or_else(|| SettingProblem::Unknown(name.into()))?;
    if schema.read_only == Some(true) {
        return Err(SettingProblem::ReadOnly(name.into()));
    }
    let text = match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    match schema.attribute_type.as_deref().unwrap_or_default() {
        "Enumeration" => check_enumeration(schema, name, text),
        "Integer" => check_integer(schema, name, text),
        "String" => check_length(schema, name, &text),
        "Boolean" if text == "true" || text == "false" => Ok(()),
        "Boolean" => Err(SettingProblem::NotBoolean { name: name.into(), value: text }),
        "Password" => Err(SettingProblem::Password(name.into())),
        // The registry may not have been read: the BMC then decides.
        "" => Ok(()),
        other => Err(SettingProblem::UnknownType { name: name.into(), kind: other.into() }),
    }
}

fn check_enumeration(schema: &SettingSchema, name: &str, value: String) -> Result<(), SettingProblem> {
    let allowed = schema.allowable_values.as_deref().unwrap_or_default();
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(SettingProblem::NotAllowed { name: name.into(), value, allowed: allowed.join(", ") })
}

fn check_integer(schema: &SettingSchema, name: &str, value: String) -> Result<(), SettingProblem> {
    let Ok(n) = value.trim().parse::<i64>() else {
        return Err(SettingProblem::NotInteger { name: name.into(), value });
    };
    match (schema.lower_bound, schema.upper_bound) {
        (Some(lower), Some(upper)) if !(lower..=upper).contains(&n) => {
            Err(SettingProblem::OutOfBounds { name: name.into(), value, lower, upper })
        }
        // Within its bounds, or no bounds to check against (the BMC then decides, as in
        // baremetal-operator).
        _ => Ok(()),
    }
}

fn check_length(schema: &SettingSchema, name: &str, value: &str) -> Result<(), SettingProblem> {
    let (Some(min), Some(max)) = (schema.min_length, schema.max_length) else { return Ok(()) };
    // In bytes, as baremetal-operator counts (Go's len); compared as i128, so that no bound a
    // BMC reports can overflow.
    let length = value.len();
    if (i128::from(min)..=i128::from(max)).contains(&i128::try_from(length).unwrap_or(i128::MAX)) {
        return Ok(());
    }
    Err(SettingProblem::BadLength { name: name.into(), length, min, max })
}
