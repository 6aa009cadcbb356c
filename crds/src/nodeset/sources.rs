//! `variablesFrom`: variables read from the Secrets and ConfigMaps of the NodeSet's own
//! namespace, and the content of those sources as the controller read it.
//!
//! A source's content reaches services only through the inventory Secret. Everything else sees
//! its digest: the config hash covers each source by kind, name and a SHA-256 of its data, so a
//! content change moves the hash (and reruns what depends on it) without the content ever
//! reaching status, Events or logs. [`SourceData`]'s `Debug` prints key names only.

use super::config::Variables;
use super::hash::hash_of;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Sources listed at most, per `variablesFrom` list: bounds the reads of one reconcile and the
/// schema's cost estimate.
pub const MAX_VARIABLES_FROM: usize = 16;

/// One source of variables: every key of a Secret or of a ConfigMap of the NodeSet's namespace
/// becomes a variable with the key's value as a string. Exactly one of secretRef and
/// configMapRef.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariablesFromSource {
    /// A ConfigMap of the NodeSet's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<SourceName>,
    /// When true, a source that does not exist is skipped; otherwise the NodeSet waits for it
    /// (a condition names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// A Secret of the NodeSet's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SourceName>,
}

/// The name of a Secret or ConfigMap of the NodeSet's namespace (never another's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceName {
    /// Name of the object.
    #[schemars(length(max = 253))]
    pub name: String,
}

impl VariablesFromSource {
    /// What it names; `None` unless exactly one of secretRef and configMapRef is set.
    pub fn source(&self) -> Option<SourceRef> {
        match (&self.secret_ref, &self.config_map_ref) {
            (Some(s), None) => Some(SourceRef::secret(&s.name)),
            (None, Some(c)) => Some(SourceRef::config_map(&c.name)),
            _ => None,
        }
    }

    pub fn optional(&self) -> bool {
        self.optional.unwrap_or(false)
    }
}

/// The kind of a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SourceKind {
    Secret,
    ConfigMap,
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Secret => "Secret",
            Self::ConfigMap => "ConfigMap",
        })
    }
}

/// A Secret or ConfigMap of the NodeSet's namespace, by kind and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SourceRef {
    pub kind: SourceKind,
    pub name: String,
}

impl SourceRef {
    pub fn secret(name: &str) -> Self {
        Self { kind: SourceKind::Secret, name: name.to_string() }
    }

    pub fn config_map(name: &str) -> Self {
        Self { kind: SourceKind::ConfigMap, name: name.to_string() }
    }
}

impl fmt::Display for SourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// The content of one source: its keys and their values. The values may be secrets: `Debug`
/// prints the keys only, and nothing else of this crate or the operator prints the values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SourceData {
    /// Key -> value, each value valid UTF-8.
    pub data: BTreeMap<String, String>,
    /// Keys whose value is not UTF-8 text (a Secret's bytes, a ConfigMap's binaryData): they
    /// cannot be variables.
    pub binary: Vec<String>,
}

impl fmt::Debug for SourceData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceData")
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .field("binary", &self.binary)
            .finish_non_exhaustive()
    }
}

impl SourceData {
    /// SHA-256 of the content: what hashes and status may carry instead of the content.
    pub fn digest(&self) -> String {
        hash_of(&serde_json::json!({"data": self.data, "binary": self.binary}))
    }
}

/// The sources read for a NodeSet: each that exists, with its content. One missing here does
/// not exist (or was not read: it is not referenced).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources(pub BTreeMap<SourceRef, SourceData>);

impl Sources {
    pub fn get(&self, source: &SourceRef) -> Option<&SourceData> {
        self.0.get(source)
    }

    /// What a config hash records of `source`: its digest, or that it is absent.
    pub fn digest(&self, source: &SourceRef) -> String {
        self.get(source).map(SourceData::digest).unwrap_or_else(|| "absent".to_string())
    }
}

/// The sources a `variablesFrom` list names, in order (those naming exactly one source).
pub fn listed(list: Option<&Vec<VariablesFromSource>>) -> impl Iterator<Item = SourceRef> + '_ {
    list.into_iter().flatten().filter_map(VariablesFromSource::source)
}

/// Adds the variables of every source of `list` that exists to `variables`, in list order (a
/// later source wins a key). Keys that are not valid variable names, and binary values, are
/// left out here; validation blocks the NodeSet on them.
pub fn merge_from(variables: &mut Variables, list: Option<&Vec<VariablesFromSource>>, sources: &Sources) {
    for source in listed(list) {
        for (key, value) in sources.get(&source).map(|d| &d.data).into_iter().flatten() {
            if is_variable_name(key) {
                variables.insert(key.clone(), serde_json::Value::String(value.clone()));
            }
        }
    }
}

/// The digest record of a `variablesFrom` list: kind, name and digest of each source, in order.
pub fn digests(list: Option<&Vec<VariablesFromSource>>, sources: &Sources) -> Vec<(SourceRef, String)> {
    listed(list).map(|s| (s.clone(), sources.digest(&s))).collect()
}

/// A variable name: a letter or '_', then letters, digits and '_'.
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What is wrong with `list` at `path` given what was read (`sources`): a non-optional source
/// that does not exist, keys that cannot be variables. Messages name the field and the source,
/// and a key's name, never a value.
pub fn check_sources(path: &str, list: Option<&Vec<VariablesFromSource>>, sources: &Sources) -> Vec<crate::FieldError> {
    let mut errors = Vec::new();
    for (i, entry) in list.into_iter().flatten().enumerate() {
        let Some(source) = entry.source() else { continue };
        let at = format!("{path}[{i}]");
        match sources.get(&source) {
            None if !entry.optional() => errors.push(crate::FieldError::new(
                at,
                format!("{source} does not exist in this namespace; create it, or set optional: true"),
            )),
            None => {}
            Some(data) => {
                let bad: Vec<&str> = data.data.keys().map(String::as_str).filter(|k| !is_variable_name(k)).collect();
                if !bad.is_empty() {
                    errors.push(crate::FieldError::new(
                        at.clone(),
                        format!(
                            "{source} has keys that are not variable names (a letter or '_', then letters, digits \
                             and '_'): {}",
                            bad.join(", ")
                        ),
                    ));
                }
                if !data.binary.is_empty() {
                    errors.push(crate::FieldError::new(
                        at,
                        format!("{source} has values that are not text: {}", data.binary.join(", ")),
                    ));
                }
            }
        }
    }
    errors
}
