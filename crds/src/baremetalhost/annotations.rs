//! Annotations baremetal-operator users put on BareMetalHosts, and the JSON some carry.

use super::hardware::HardwareDetails;
use super::status::BareMetalHostStatus;
use crate::validation::structural::{Nonconforming, conform};
use kube::CustomResourceExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::LazyLock;
use thiserror::Error;

/// Finalizer that blocks deletion until the host is deprovisioned or detached.
pub const FINALIZER: &str = "baremetalhost.metal3.io";
/// Stops reconciliation entirely (deletion still proceeds).
pub const PAUSED: &str = "baremetalhost.metal3.io/paused";
/// Removes the host from Ironic without deprovisioning it. Optional JSON value:
/// [`DetachedAnnotation`].
pub const DETACHED: &str = "baremetalhost.metal3.io/detached";
/// A JSON copy of the status, used to rebuild status after a move between clusters.
pub const STATUS: &str = "baremetalhost.metal3.io/status";
/// Reboot request: `reboot.metal3.io` (one-shot) or `reboot.metal3.io/<key>` (held until
/// removed). Optional JSON value: [`RebootAnnotation`].
pub const REBOOT_PREFIX: &str = "reboot.metal3.io";
/// Inspection request: empty value re-inspects an available host; `disabled` (deprecated, see
/// spec.inspectionMode) turns inspection off.
pub const INSPECT: &str = "inspect.metal3.io";
/// Value of [`INSPECT`] that disables inspection.
pub const INSPECT_DISABLED: &str = "disabled";
/// Inspection data supplied from outside (JSON of `HardwareDetails`); needs inspection
/// disabled.
pub const HARDWARE_DETAILS: &str = "inspect.metal3.io/hardwaredetails";

/// True for `reboot.metal3.io` and `reboot.metal3.io/<key>`.
pub fn is_reboot_annotation(key: &str) -> bool {
    key == REBOOT_PREFIX
        || key.strip_prefix(REBOOT_PREFIX).and_then(|rest| rest.strip_prefix('/')).is_some_and(|k| !k.is_empty())
}

/// Value of a reboot annotation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebootAnnotation {
    /// hard or soft; an empty annotation means soft, then hard if soft fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RebootMode>,
    /// Reboot even if the host is busy.
    #[serde(default)]
    pub force: bool,
}

/// Reboot modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RebootMode {
    /// Power cycle.
    Hard,
    /// ACPI shutdown, then power on.
    Soft,
}

/// Value of the detached annotation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetachedAnnotation {
    /// What deleting a detached host does: delete it at once (default) or delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_action: Option<DetachedDeleteAction>,
    /// Detach even from states where detaching is normally refused.
    #[serde(default)]
    pub force: bool,
}

/// Delete behaviour of a detached host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DetachedDeleteAction {
    /// Wait before deleting.
    Delay,
    /// Delete immediately, skipping deprovisioning.
    Delete,
}

/// Why the JSON of an annotation was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AnnotationJsonError {
    /// Not JSON, or a value of the wrong type.
    #[error("is not valid JSON for this annotation: {0}")]
    Invalid(String),
    /// A field the type does not have (a typing mistake would otherwise be dropped silently).
    #[error("has an unknown field {0:?}")]
    UnknownField(String),
    /// A required field is missing and has no empty value to default to (an enum without
    /// `""`, such as a RAID level; a timestamp): the status it would make is not valid.
    #[error("is missing {0:?}, which is required and has no empty value")]
    MissingField(String),
}

/// The status schema of the BareMetalHost CRD, as the apiserver reads it.
static STATUS_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    let crd = super::BareMetalHost::crd();
    let schema = crd.spec.versions.first().and_then(|v| v.schema.as_ref()).and_then(|s| s.open_api_v3_schema.as_ref());
    schema
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|mut s| s.pointer_mut("/properties/status").map(Value::take))
        .unwrap_or_default()
});

/// Reads the value of [`STATUS`] as baremetal-operator does: a partial status is accepted
/// (`{"operationalStatus":"OK"}`; every missing field takes its zero value or default), an
/// unknown field is refused, and so is a missing required field whose zero value the schema
/// does not allow (a RAID volume's `level`, a condition's `lastTransitionTime`).
pub fn parse_status_annotation(value: &str) -> Result<BareMetalHostStatus, AnnotationJsonError> {
    parse_strict(value, &STATUS_SCHEMA)
}

/// Reads the value of [`HARDWARE_DETAILS`] the same way: partial details are accepted, an
/// unknown field is refused.
pub fn parse_hardware_details_annotation(value: &str) -> Result<HardwareDetails, AnnotationJsonError> {
    parse_strict(value, &STATUS_SCHEMA["properties"]["hardware"])
}

fn parse_strict<T: DeserializeOwned>(text: &str, schema: &Value) -> Result<T, AnnotationJsonError> {
    let mut value: Value = serde_json::from_str(text).map_err(|e| AnnotationJsonError::Invalid(e.to_string()))?;
    if !value.is_object() {
        return Err(AnnotationJsonError::Invalid("expected a JSON object".into()));
    }
    conform(&mut value, schema, "").map_err(|e| match e {
        Nonconforming::Unknown(path) => AnnotationJsonError::UnknownField(path),
        Nonconforming::NoZero(path) => AnnotationJsonError::MissingField(path),
    })?;
    serde_json::from_value(value).map_err(|e| AnnotationJsonError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reboot_annotation_keys() {
        assert!(is_reboot_annotation("reboot.metal3.io"));
        assert!(is_reboot_annotation("reboot.metal3.io/capm3-remediation"));
        assert!(!is_reboot_annotation("reboot.metal3.io/"));
        assert!(!is_reboot_annotation("reboot.metal3.iox"));
    }

    #[test]
    fn annotation_values_parse() {
        let r: RebootAnnotation = serde_json::from_str(r#"{"mode":"hard","force":true}"#).expect("reboot");
        assert_eq!(r.mode, Some(RebootMode::Hard));
        let d: DetachedAnnotation = serde_json::from_str(r#"{"deleteAction":"delay"}"#).expect("detached");
        assert_eq!(d.delete_action, Some(DetachedDeleteAction::Delay));
        assert!(serde_json::from_str::<RebootAnnotation>(r#"{"mode":"gentle"}"#).is_err());
    }

    #[test]
    fn partial_status_annotations_are_accepted_with_defaults() {
        use crate::baremetalhost::status::{OperationalStatus, ProvisioningState};
        let status = parse_status_annotation(r#"{"operationalStatus":"OK"}"#).expect("partial");
        assert_eq!(status.operational_status, OperationalStatus::Ok);
        assert_eq!((status.error_count, status.error_message.as_str(), status.powered_on), (0, "", false));
        assert_eq!(status.provisioning.state, ProvisioningState::None);
        let status = parse_status_annotation(r#"{"provisioning":{"state":"provisioned","image":{"checksum":"abc"}}}"#)
            .expect("nested partial");
        assert_eq!(status.provisioning.state, ProvisioningState::Provisioned);
        assert_eq!(status.provisioning.image.map(|i| i.url), Some(String::new()), "a missing url is empty, as in Go");
        assert!(parse_status_annotation("{}").is_ok());
    }

    #[test]
    fn status_annotations_refuse_unknown_fields_and_wrong_values() {
        let cases = [
            (r#"{"operationalStatus":"OK","poweredon":true}"#, AnnotationJsonError::UnknownField("poweredon".into())),
            (r#"{"provisioning":{"stat":"ready"}}"#, AnnotationJsonError::UnknownField("provisioning.stat".into())),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_status_annotation(text), Err(expected), "{text}");
        }
        for text in [r#"{"operationalStatus":"fine"}"#, "not json", "[]", r#"{"errorCount":"many"}"#] {
            assert!(matches!(parse_status_annotation(text), Err(AnnotationJsonError::Invalid(_))), "{text}");
        }
        let message = parse_status_annotation(r#"{"poweredon":true}"#).expect_err("unknown").to_string();
        assert_eq!(message, r#"has an unknown field "poweredon""#);
    }

    #[test]
    fn status_annotations_name_a_missing_field_that_has_no_empty_value() {
        // Go would leave "" and a zero time, which the apiserver refuses when the status is
        // written back; the annotation is refused at once, naming the field.
        let cases = [
            (
                r#"{"provisioning":{"raid":{"softwareRAIDVolumes":[{}]}}}"#,
                "provisioning.raid.softwareRAIDVolumes[0].level",
            ),
            (
                r#"{"conditions":[{"type":"Ready","status":"True","reason":"R","message":""}]}"#,
                "conditions[0].lastTransitionTime",
            ),
        ];
        for (text, path) in cases {
            assert_eq!(parse_status_annotation(text), Err(AnnotationJsonError::MissingField(path.into())), "{text}");
        }
        let message = parse_status_annotation(cases[0].0).expect_err("missing").to_string();
        assert_eq!(
            message,
            r#"is missing "provisioning.raid.softwareRAIDVolumes[0].level", which is required and has no empty value"#
        );
    }

    #[test]
    fn hardware_details_refuse_unknown_fields() {
        let details =
            parse_hardware_details_annotation(r#"{"ramMebibytes":4096,"nics":[{"mac":"52:54:00:00:00:01"}]}"#)
                .expect("partial details");
        assert_eq!(details.ram_mebibytes, Some(4096));
        assert_eq!(
            parse_hardware_details_annotation(r#"{"cpu":{"arch":"x86_64","cores":8}}"#),
            Err(AnnotationJsonError::UnknownField("cpu.cores".into()))
        );
        let lldp = r#"{"nics":[{"lldp":{"switchID":"leaf-1","vendorTLV":"x"}}]}"#;
        assert!(parse_hardware_details_annotation(lldp).is_ok(), "LLDP keeps what switches report");
    }
}
