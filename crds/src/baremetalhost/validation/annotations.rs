//! Annotation values that must parse (the JSON ones strictly, as baremetal-operator reads
//! them), inspection data that needs inspection disabled, and an inspect annotation that
//! agrees with spec.inspectionMode.

use crate::baremetalhost::annotations::{
    DETACHED, DetachedAnnotation, HARDWARE_DETAILS, INSPECT, INSPECT_DISABLED, RebootAnnotation, STATUS,
    is_reboot_annotation, parse_hardware_details_annotation, parse_status_annotation,
};
use crate::baremetalhost::spec::{BareMetalHostSpec, InspectionMode};
use crate::validation::Errors;
use std::collections::BTreeMap;

pub(super) fn validate_annotations(
    errors: &mut Errors,
    annotations: Option<&BTreeMap<String, String>>,
    spec: &BareMetalHostSpec,
) {
    let Some(annotations) = annotations else {
        return;
    };
    for (key, value) in annotations {
        let path = format!("metadata.annotations[{key}]");
        let value = value.trim();
        let problem = if is_reboot_annotation(key) {
            parse_optional::<RebootAnnotation>(value)
        } else if key == DETACHED {
            parse_optional::<DetachedAnnotation>(value)
        } else if key == INSPECT {
            inspect_problem(value, spec.inspection_mode)
        } else if key == HARDWARE_DETAILS {
            let inspection_disabled = annotations.get(INSPECT).map(|v| v.trim()) == Some(INSPECT_DISABLED)
                || spec.inspection_mode == Some(InspectionMode::Disabled);
            if inspection_disabled {
                parse_hardware_details_annotation(value).err().map(|e| e.to_string())
            } else {
                Some("requires inspection to be disabled (spec.inspectionMode: disabled)".into())
            }
        } else if key == STATUS {
            parse_status_annotation(value).err().map(|e| e.to_string())
        } else {
            None
        };
        if let Some(message) = problem {
            errors.push(path, message);
        }
    }
}

/// `inspect.metal3.io` is empty (inspect again) or `disabled` (deprecated), and must not
/// contradict `spec.inspectionMode`: either way one of the two would be ignored.
fn inspect_problem(value: &str, mode: Option<InspectionMode>) -> Option<String> {
    match (value, mode) {
        (INSPECT_DISABLED, Some(mode @ (InspectionMode::Agent | InspectionMode::Fast))) => Some(format!(
            "{INSPECT_DISABLED:?} conflicts with spec.inspectionMode: {}; remove the annotation (deprecated) or set inspectionMode: disabled",
            if mode == InspectionMode::Agent { "agent" } else { "fast" }
        )),
        ("", Some(InspectionMode::Disabled)) => {
            Some("requests inspection, which spec.inspectionMode: disabled turns off".into())
        }
        ("" | INSPECT_DISABLED, _) => None,
        _ => Some(format!("must be empty (inspect again) or {INSPECT_DISABLED:?}")),
    }
}

fn parse_optional<T: serde::de::DeserializeOwned>(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    parse_required::<T>(value)
}

fn parse_required<T: serde::de::DeserializeOwned>(value: &str) -> Option<String> {
    serde_json::from_str::<T>(value).err().map(|e| format!("is not valid JSON for this annotation: {e}"))
}
