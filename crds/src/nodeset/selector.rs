//! The schema of the BareMetalHost selectors a NodeSet carries, with bounds.
//!
//! The CEL locks (`cel.rs`) compare selectors, once per host for the per-host lock. Clusters
//! that evaluate CEL estimate a rule's cost from the schema's bounds, and refuse a CRD whose
//! rules could cost too much; an unbounded list counts as large as a whole request. So every
//! list, map and string of a selector is bounded, with limits far above what a selector of
//! real hosts needs (Kubernetes' own limits for label keys and values).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Value, json};

/// Labels a selector may match on.
pub const MAX_MATCH_LABELS: u64 = 32;
/// Requirements in `matchExpressions`.
pub const MAX_MATCH_EXPRESSIONS: u64 = 16;
/// Values of one requirement.
pub const MAX_REQUIREMENT_VALUES: u64 = 64;
/// A label key: an optional DNS-subdomain prefix (253), a slash, and a name (63).
pub const MAX_LABEL_KEY: u64 = 317;
/// A label value.
pub const MAX_LABEL_VALUE: u64 = 63;

/// `Option<LabelSelector>`'s schema, bounded.
pub(crate) fn bounded_label_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = <Option<LabelSelector>>::json_schema(generator);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        if let Some(labels) = properties.get_mut("matchLabels").and_then(Value::as_object_mut) {
            labels.insert("maxProperties".into(), json!(MAX_MATCH_LABELS));
            if let Some(values) = labels.get_mut("additionalProperties").and_then(Value::as_object_mut) {
                values.insert("maxLength".into(), json!(MAX_LABEL_VALUE));
            }
        }
        if let Some(expressions) = properties.get_mut("matchExpressions").and_then(Value::as_object_mut) {
            expressions.insert("maxItems".into(), json!(MAX_MATCH_EXPRESSIONS));
            let requirement = expressions.get_mut("items").and_then(|i| i.get_mut("properties"));
            if let Some(requirement) = requirement.and_then(Value::as_object_mut) {
                if let Some(key) = requirement.get_mut("key").and_then(Value::as_object_mut) {
                    key.insert("maxLength".into(), json!(MAX_LABEL_KEY));
                }
                if let Some(operator) = requirement.get_mut("operator").and_then(Value::as_object_mut) {
                    operator.insert("enum".into(), json!(["In", "NotIn", "Exists", "DoesNotExist"]));
                }
                if let Some(values) = requirement.get_mut("values").and_then(Value::as_object_mut) {
                    values.insert("maxItems".into(), json!(MAX_REQUIREMENT_VALUES));
                    if let Some(value) = values.get_mut("items").and_then(Value::as_object_mut) {
                        value.insert("maxLength".into(), json!(MAX_LABEL_VALUE));
                    }
                }
            }
        }
    }
    schema
}
