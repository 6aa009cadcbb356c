//! The AdmissionReview envelope, read without building a tree of its objects.
//!
//! A review carries up to two whole objects (an update's new and old), each as large as etcd
//! keeps (1.5 MiB). Parsed into `serde_json::Value`s, a review of small nested values costs
//! tens of times its size; here the objects stay slices of the request body (`RawValue`)
//! until they are parsed straight into our typed kinds, whose parsers skip what they do not
//! know without allocating it.

use k8s_openapi::api::authentication::v1::UserInfo;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// An `admission.k8s.io/v1` AdmissionReview as the apiserver sends it.
#[derive(Deserialize)]
pub(super) struct Review<'a> {
    #[serde(borrow)]
    pub request: Request<'a>,
}

/// The parts of a request the webhook reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request<'a> {
    pub uid: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub user_info: UserInfo,
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub old_object: Option<&'a RawValue>,
}

/// One object of a review, split at its top level and its metadata's, the values left as
/// slices of the body.
pub(super) struct Object<'a> {
    fields: BTreeMap<Cow<'a, str>, &'a RawValue>,
    metadata: BTreeMap<Cow<'a, str>, &'a RawValue>,
}

/// Metadata the rules never read and the typed parse skips: server-side apply's record of
/// every field's manager, as large as the object itself.
const SKIPPED_METADATA: &str = "managedFields";

impl<'a> Object<'a> {
    pub(super) fn of(raw: &'a RawValue) -> Result<Self, String> {
        let unreadable = |e: serde_json::Error| format!("cannot parse the object: {e}");
        let fields: BTreeMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(raw.get()).map_err(unreadable)?;
        let metadata = match fields.get("metadata") {
            Some(metadata) if metadata.get() != "null" => serde_json::from_str(metadata.get()).map_err(unreadable)?,
            _ => BTreeMap::new(),
        };
        Ok(Self { fields, metadata })
    }

    /// The spec's text. The apiserver encodes both objects of a review the same way (custom
    /// resources as maps, keys sorted), so equal specs are equal text.
    pub(super) fn spec(&self) -> Option<&str> {
        self.fields.get("spec").map(|s| s.get())
    }

    pub(super) fn annotations(&self) -> Result<Option<BTreeMap<String, String>>, String> {
        self.metadata
            .get("annotations")
            .map(|a| serde_json::from_str(a.get()))
            .transpose()
            .map(Option::flatten)
            .map_err(|e| format!("cannot parse metadata.annotations: {e}"))
    }

    pub(super) fn deleting(&self) -> bool {
        self.metadata.get("deletionTimestamp").is_some_and(|t| t.get() != "null")
    }

    /// What building the object's types would cost, counted in its text.
    pub(super) fn weight(&self) -> Weight {
        let fields = self.fields.iter().filter(|(k, _)| *k != "metadata").map(|(_, v)| *v);
        let metadata = self.metadata.iter().filter(|(k, _)| *k != SKIPPED_METADATA).map(|(_, v)| *v);
        fields.chain(metadata).map(|v| Weight::of(v.get())).fold(Weight::default(), Weight::plus)
    }

    /// The object's JSON without the metadata the rules never read.
    pub(super) fn trimmed(&self) -> Result<String, String> {
        let metadata: BTreeMap<&str, &RawValue> =
            self.metadata.iter().filter(|(k, _)| *k != SKIPPED_METADATA).map(|(k, v)| (k.as_ref(), *v)).collect();
        let metadata = serde_json::value::to_raw_value(&metadata).map_err(|e| e.to_string())?;
        let mut fields: BTreeMap<&str, &RawValue> = self.fields.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        fields.insert("metadata", &metadata);
        serde_json::to_string(&fields).map_err(|e| e.to_string())
    }
}

/// How many objects and values a JSON text holds, and its length: what parsing it into
/// typed values can cost. An empty object where a struct is expected builds the whole struct
/// (hundreds of bytes from two), so objects are counted apart from the other values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Weight {
    pub objects: usize,
    pub values: usize,
    pub bytes: usize,
}

/// The most one JSON object costs once parsed: our largest repeated struct (a NodeSet's
/// per-host section) with its map entry takes about 640 bytes.
const OBJECT_COST: usize = 1024;
/// The most any other value costs: a slot of a struct, a vector or a map.
const VALUE_COST: usize = 48;

impl Weight {
    /// Counts in valid JSON text (a `RawValue`'s): one, plus every container opened and every
    /// separator, is as many values as it holds or a few more (an empty container counts two).
    pub(super) fn of(json: &str) -> Self {
        let mut weight = Weight { objects: 0, values: 1, bytes: json.len() };
        let mut in_string = false;
        let mut escaped = false;
        for byte in json.bytes() {
            if in_string {
                match (escaped, byte) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' => weight.objects += 1,
                b'[' | b',' => weight.values += 1,
                _ => {}
            }
        }
        weight.values = weight.values.saturating_add(weight.objects);
        weight
    }

    pub(super) fn plus(self, other: Weight) -> Weight {
        Weight {
            objects: self.objects.saturating_add(other.objects),
            values: self.values.saturating_add(other.values),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }

    /// Bytes that parsing it into typed values may take, at most: every object a struct,
    /// every value a slot, every byte of text copied once (strings).
    pub(super) fn cost(self) -> usize {
        self.objects
            .saturating_mul(OBJECT_COST)
            .saturating_add(self.values.saturating_mul(VALUE_COST))
            .saturating_add(self.bytes)
    }
}

/// The answer, as an `admission.k8s.io/v1` AdmissionReview.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Answer {
    api_version: &'static str,
    kind: &'static str,
    pub response: Response,
    /// Allowed only if this author may create Jobs there: asked of the apiserver before the
    /// answer goes out (`server.rs`).
    #[serde(skip)]
    pub requires: Option<JobAuthor>,
    /// Allowed only if the wanted BIOS settings follow this schema: read from the apiserver
    /// before the answer goes out (`firmware.rs`).
    #[serde(skip)]
    pub schema: Option<SchemaCheck>,
}

/// Wanted BIOS settings to check against the `FirmwareSchema` of the host's model.
#[derive(Clone, Debug)]
pub(crate) struct SchemaCheck {
    /// The settings object's namespace: the only one the schema is read from.
    pub namespace: String,
    pub name: String,
    pub spec: crds::firmware::HostFirmwareSettingsSpec,
    /// The host's settings as last read.
    pub current: std::collections::BTreeMap<String, String>,
}

/// Who wrote an object that makes the operator run Jobs, and where they would run.
#[derive(Clone, Debug)]
pub(crate) struct JobAuthor {
    pub user: UserInfo,
    pub namespace: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct Response {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// Why a request was refused. The apiserver answers its client with `code` (400 or more).
#[derive(Debug, Serialize)]
pub(crate) struct Status {
    pub code: u16,
    pub message: String,
}

impl Answer {
    pub(crate) fn allow(uid: &str) -> Self {
        Self::new(uid, true, None)
    }

    pub(crate) fn deny(uid: &str, message: impl Into<String>) -> Self {
        Self::new(uid, false, Some(Status { code: 400, message: message.into() }))
    }

    fn new(uid: &str, allowed: bool, status: Option<Status>) -> Self {
        Self {
            api_version: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: Response { uid: uid.to_string(), allowed, status },
            requires: None,
            schema: None,
        }
    }

    /// The refusal's message; empty when allowed.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        self.response.status.as_ref().map_or("", |s| s.message.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_counts_objects_and_values_outside_strings() {
        let json = r#"{"a": [1, 2, {}], "b": "{[,]}"}"#;
        assert_eq!(Weight::of(json), Weight { objects: 2, values: 7, bytes: json.len() });
        assert_eq!(Weight::of(r#""x\"{""#), Weight { objects: 0, values: 1, bytes: 6 });
    }

    #[test]
    fn managed_fields_are_neither_weighed_nor_kept() {
        let raw = RawValue::from_string(
            r#"{"metadata": {"name": "a", "managedFields": [{"fieldsV1": {"f:spec": {}}}]}, "spec": {"x": 1}}"#.into(),
        )
        .expect("valid");
        let object = Object::of(&raw).expect("parses");
        assert_eq!(object.weight(), Weight { objects: 1, values: 3, bytes: r#"{"x": 1}"#.len() + r#""a""#.len() });
        let trimmed: serde_json::Value = serde_json::from_str(&object.trimmed().expect("trims")).expect("json");
        assert_eq!(trimmed, serde_json::json!({"metadata": {"name": "a"}, "spec": {"x": 1}}));
    }
}
