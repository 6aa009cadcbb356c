//! Annotation values that must parse, and inspection data that needs inspection disabled.

use crate::baremetalhost::annotations::{
    DETACHED, DetachedAnnotation, HARDWARE_DETAILS, INSPECT, INSPECT_DISABLED, RebootAnnotation, STATUS,
    is_reboot_annotation,
};
use crate::baremetalhost::hardware::HardwareDetails;
use crate::baremetalhost::spec::{BareMetalHostSpec, InspectionMode};
use crate::baremetalhost::status::BareMetalHostStatus;
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
            (!value.is_empty() && value != INSPECT_DISABLED)
                .then(|| format!("must be empty (inspect again) or {INSPECT_DISABLED:?}"))
        } else if key == HARDWARE_DETAILS {
            let inspection_disabled = annotations.get(INSPECT).map(|v| v.trim()) == Some(INSPECT_DISABLED)
                || spec.inspection_mode == Some(InspectionMode::Disabled);
            if inspection_disabled {
                parse_required::<HardwareDetails>(value)
            } else {
                Some("requires inspection to be disabled (spec.inspectionMode: disabled)".into())
            }
        } else if key == STATUS {
            parse_required::<BareMetalHostStatus>(value)
        } else {
            None
        };
        if let Some(message) = problem {
            errors.push(path, message);
        }
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
