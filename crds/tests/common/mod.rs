//! Helpers shared by the integration tests: fixtures, JSON patching, the validation-test
//! runners (rejected cases, accepted cases, update rules) and the CEL checks, so every test
//! file states only its cases.
#![allow(dead_code)]

use crds::FieldError;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses YAML into JSON.
pub fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("valid YAML")
}

/// Parses `value` as `T`: a fixture that does not parse is a broken test.
pub fn typed<T: DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("the test object does not parse: {e}"))
}

/// Runs a kind's validation on JSON objects: `value` is the new object, `old` the stored one
/// on update.
pub fn validate_as<T: DeserializeOwned>(
    value: &Value,
    old: Option<&Value>,
    validate: impl Fn(&T, Option<&T>) -> Vec<FieldError>,
) -> Vec<FieldError> {
    let old = old.map(typed::<T>);
    validate(&typed(value), old.as_ref())
}

/// Makes numbers compare by value: 2000 and 2000.0 are the same number in YAML and JSON.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
        other => other.clone(),
    }
}

/// Parses `value` as `T`, serializes it back, and asserts nothing was lost or added.
pub fn assert_lossless<T: Serialize + DeserializeOwned>(value: &Value, what: &str) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{what} does not parse: {e}"));
    let back = serde_json::to_value(&typed).expect("serialize");
    pretty_assertions::assert_eq!(normalize(&back), normalize(value), "{what} round trip");
    typed
}

/// Deep-merges `overlay` into `base` (objects merge key by key, anything else replaces).
pub fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The CRD of a kind, as `crds::all_crds` serves it.
pub fn crd_of(kind: &str) -> CustomResourceDefinition {
    crds::all_crds().into_iter().find(|c| c.spec.names.kind == kind).expect("a CRD of this kind")
}

/// The openAPIV3Schema of a CRD, as JSON.
pub fn openapi_schema(crd: &CustomResourceDefinition) -> Value {
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("every CRD has a schema");
    serde_json::to_value(schema).expect("schema to JSON")
}

/// The openAPIV3Schema of a kind.
pub fn schema_of(kind: &str) -> Value {
    openapi_schema(&crd_of(kind))
}

/// Applies an RFC 7386 JSON merge patch (null deletes a key).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (_, Some(p)) => {
            let mut fresh = Value::Object(Default::default());
            merge_patch(&mut fresh, &Value::Object(p.clone()));
            *target = fresh;
        }
        _ => *target = patch.clone(),
    }
}

/// `base` with `patch` applied.
pub fn patched(base: &Value, patch: &Value) -> Value {
    let mut value = base.clone();
    merge_patch(&mut value, patch);
    value
}

/// Asserts that `errors` has one at `path` whose message contains `fragment`.
pub fn assert_rejects(errors: &[FieldError], path: &str, fragment: &str, case: &str) {
    assert!(
        errors.iter().any(|e| e.path == path && e.message.contains(fragment)),
        "{case}: expected {path}: …{fragment}…, got {errors:#?}"
    );
}

/// A rule test: (case, base object, merge patch breaking one rule, path, message fragment).
pub type Case = (&'static str, fn() -> Value, Value, &'static str, &'static str);

/// Runs each case through `validate` and asserts the expected violation.
pub fn assert_cases(cases: Vec<Case>, validate: impl Fn(&Value) -> Vec<FieldError>) {
    for (case, base, patch, path, fragment) in cases {
        assert_rejects(&validate(&patched(&base(), &patch)), path, fragment, case);
    }
}

/// Input a rule must let through: (case, object, the stored object on update).
pub type Accepted = (&'static str, Value, Option<Value>);

/// Asserts that every case passes `validate` without a single violation.
pub fn assert_accepted(
    cases: impl IntoIterator<Item = Accepted>,
    validate: impl Fn(&Value, Option<&Value>) -> Vec<FieldError>,
) {
    for (case, value, old) in cases {
        let errors = validate(&value, old.as_ref());
        assert!(errors.is_empty(), "{case}: {errors:#?}");
    }
}

/// An update rule test: (merge patch applied to the stored object, path, message fragment).
pub type UpdateCase = (Value, &'static str, &'static str);

/// Applies each patch to `old` and asserts that the update is refused at the path with the
/// message.
pub fn assert_update_cases(
    old: &Value,
    cases: impl IntoIterator<Item = UpdateCase>,
    validate: impl Fn(&Value, Option<&Value>) -> Vec<FieldError>,
) {
    for (patch, path, fragment) in cases {
        let new = patched(old, &patch);
        assert_rejects(&validate(&new, Some(old)), path, fragment, &format!("{path} after {patch}"));
    }
}

/// Evaluates the CEL rules of `kind`'s generated schema client-side.
pub fn cel_check(kind: &str, new: &Value, old: Option<&Value>) -> Result<(), String> {
    kube::core::cel::Validator::new().validate(&schema_of(kind), new, old).map_err(|e| e.to_string())
}

/// Asserts that the CEL rules of `kind` refuse `new` with a message containing `fragment`.
pub fn assert_cel_rejects(kind: &str, new: &Value, old: Option<&Value>, fragment: &str, case: &str) {
    match cel_check(kind, new, old) {
        Err(message) => assert!(message.contains(fragment), "{case}: expected …{fragment}…, got {message}"),
        Ok(()) => panic!("{case}: the CEL rules of {kind} accepted it"),
    }
}

/// Asserts that the CEL rules of `kind` accept `new`.
pub fn assert_cel_accepts(kind: &str, new: &Value, old: Option<&Value>, case: &str) {
    if let Err(message) = cel_check(kind, new, old) {
        panic!("{case}: the CEL rules of {kind} refused it: {message}");
    }
}
