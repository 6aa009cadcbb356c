//! Properties of the JSON annotations read as baremetal-operator reads them: the restored
//! status (`baremetalhost.metal3.io/status`) and the supplied inspection data
//! (`inspect.metal3.io/hardwaredetails`). Any text is judged without panicking; a whole status
//! reads back as it was written; a partial one reads with every given field kept and every
//! missing one at its zero value or default, or is refused naming a missing field whose zero
//! value the schema does not allow; an unknown field is refused by its path.

use super::schema::{self, one_in};
use arbitrary::{Result, Unstructured};
use crds::baremetalhost::{
    AnnotationJsonError, BareMetalHostStatus, parse_hardware_details_annotation, parse_status_annotation,
};
use serde::Serialize;
use serde_json::Value;

fn status_schema() -> &'static Value {
    schema::schema_of("BareMetalHost", "/properties/status")
}

fn hardware_schema() -> &'static Value {
    schema::schema_of("BareMetalHost", "/properties/status/properties/hardware")
}

/// Any text: refused with a reason, or read into a value that writes and reads back the same.
pub fn annotation_text(input: &str) {
    if let Ok(status) = parse_status_annotation(input) {
        assert_stable(&status, parse_status_annotation, input);
    }
    if let Ok(details) = parse_hardware_details_annotation(input) {
        assert_stable(&details, parse_hardware_details_annotation, input);
    }
}

/// Written and read again, `value` stays what it is after its first write (the first write
/// may normalise, e.g. timestamps to whole seconds).
fn assert_stable<T: Serialize, E: std::fmt::Debug>(value: &T, parse: impl Fn(&str) -> Result<T, E>, input: &str) {
    let written = serde_json::to_string(value).expect("serializes");
    let again =
        parse(&written).unwrap_or_else(|e| panic!("{input:?} was read, but its rewrite {written} is refused: {e:?}"));
    assert_eq!(serde_json::to_string(&again).expect("serializes"), written, "{input:?}");
}

/// A status the schema admits, whole and then with fields removed anywhere.
pub fn status(u: &mut Unstructured) -> Result<()> {
    let whole = schema::value(u, status_schema(), 1)?;
    let typed: BareMetalHostStatus = serde_json::from_value(whole.clone())
        .unwrap_or_else(|e| panic!("the schema admits a status the type refuses: {e}\n{whole:#}"));
    let parsed = parse_status_annotation(&whole.to_string())
        .unwrap_or_else(|e| panic!("a whole status is refused: {e}\n{whole:#}"));
    assert_eq!(parsed, typed, "a whole status reads as the type reads it");
    let partial = remove_fields(u, &whole)?;
    match parse_status_annotation(&partial.to_string()) {
        Ok(parsed) => {
            let parsed = serde_json::to_value(parsed).expect("serializes");
            assert_defaults(&parsed, Some(&partial), status_schema(), "status");
        }
        Err(AnnotationJsonError::MissingField(path)) => assert_missing(&partial, status_schema(), &path),
        Err(e) => panic!("a partial status is refused: {e}\n{partial:#}"),
    }
    Ok(())
}

/// `path` names a required field that `partial` lacks and whose schema has no zero value: an
/// enum without "", or a timestamp.
fn assert_missing(partial: &Value, schema: &Value, path: &str) {
    let (mut value, mut schema) = (Some(partial), schema);
    let parts: Vec<String> = path.replace('[', ".[").split('.').map(str::to_string).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if let Some(index) = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
            value = value.and_then(|v| v.get(index.parse::<usize>().expect("an index")));
            schema = &schema["items"];
        } else {
            if last {
                assert!(value.is_some_and(|v| v.get(part).is_none_or(Value::is_null)), "{path} is given:\n{partial:#}");
            }
            value = value.and_then(|v| v.get(part));
            schema = &schema["properties"][part];
        }
    }
    let timestamp = schema.get("format") == Some(&Value::from("date-time"));
    let enum_without_zero = schema.get("enum").and_then(Value::as_array).is_some_and(|v| !v.contains(&Value::from("")));
    assert!(timestamp || enum_without_zero, "{path} is refused as missing, but has a zero value: {schema}");
}

/// Inspection data the schema admits, with fields removed anywhere.
pub fn hardware_details(u: &mut Unstructured) -> Result<()> {
    let whole = schema::value(u, hardware_schema(), 2)?;
    let partial = remove_fields(u, &whole)?;
    match parse_hardware_details_annotation(&partial.to_string()) {
        Ok(parsed) => {
            let parsed = serde_json::to_value(parsed).expect("serializes");
            assert_defaults(&parsed, Some(&partial), hardware_schema(), "hardware");
        }
        Err(AnnotationJsonError::MissingField(path)) => assert_missing(&partial, hardware_schema(), &path),
        Err(e) => panic!("partial inspection data is refused: {e}\n{partial:#}"),
    }
    Ok(())
}

/// A status with one unknown field added somewhere is refused, naming that field's path.
pub fn unknown_field(u: &mut Unstructured) -> Result<()> {
    let mut status = schema::value(u, status_schema(), 1)?;
    let mut places = Vec::new();
    closed_objects(&status, status_schema(), String::new(), &mut places);
    let Some(place) = (!places.is_empty()).then(|| u.choose(&places)).transpose()?.cloned() else {
        return Ok(());
    };
    let name = *u.choose(&["poweredon", "stat", "zzUnknown", "ID2"])?;
    let object = if place.is_empty() { Some(&mut status) } else { status.pointer_mut(&place) };
    let Some(Value::Object(fields)) = object else {
        return Ok(());
    };
    if fields.contains_key(name) {
        return Ok(());
    }
    fields.insert(name.to_string(), Value::from(1));
    let path = if place.is_empty() { name.to_string() } else { format!("{}.{name}", dotted(&place)) };
    assert_eq!(parse_status_annotation(&status.to_string()), Err(AnnotationJsonError::UnknownField(path)));
    Ok(())
}

/// `value` with fields removed at any depth (required ones too: that is what partial means).
fn remove_fields(u: &mut Unstructured, value: &Value) -> Result<Value> {
    Ok(match value {
        Value::Object(fields) => {
            let mut kept = serde_json::Map::new();
            for (name, field) in fields {
                if !one_in(u, 3)? {
                    kept.insert(name.clone(), remove_fields(u, field)?);
                }
            }
            Value::Object(kept)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| remove_fields(u, i)).collect::<Result<_>>()?),
        scalar => scalar.clone(),
    })
}

/// Every field of `given` is in `parsed` as it was given; every other field of `parsed` is
/// absent or at its zero value or schema default.
fn assert_defaults(parsed: &Value, given: Option<&Value>, schema: &Value, path: &str) {
    match given {
        None | Some(Value::Null) => {
            assert!(is_zero(parsed, schema), "{path}: missing, but read as {parsed}");
        }
        Some(Value::Object(given)) => {
            let Value::Object(fields) = parsed else {
                panic!("{path}: given an object, read as {parsed}");
            };
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, field) in fields {
                let child = properties.and_then(|p| p.get(name)).or(additional).unwrap_or(&Value::Null);
                assert_defaults(field, given.get(name), child, &format!("{path}.{name}"));
            }
            for (name, value) in given {
                assert!(value.is_null() || fields.contains_key(name), "{path}.{name} was given but is lost");
            }
        }
        Some(Value::Array(given)) => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let Value::Array(parsed) = parsed else {
                panic!("{path}: given a list, read as {parsed}");
            };
            assert_eq!(parsed.len(), given.len(), "{path}");
            for (i, (p, g)) in parsed.iter().zip(given).enumerate() {
                assert_defaults(p, Some(g), items, &format!("{path}[{i}]"));
            }
        }
        Some(given) => assert_eq!(parsed, given, "{path}"),
    }
}

/// The value Go leaves in a field that is absent: its schema default, or the zero of its type
/// (an object of zeros).
fn is_zero(value: &Value, schema: &Value) -> bool {
    if schema.get("default") == Some(value) {
        return true;
    }
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.iter().all(|(name, field)| {
            let child = schema.pointer(&format!("/properties/{}", name.replace('~', "~0").replace('/', "~1")));
            is_zero(field, child.unwrap_or(&Value::Null))
        }),
    }
}

/// JSON pointers of the objects in `value` whose schema allows no other fields.
fn closed_objects(value: &Value, schema: &Value, pointer: String, out: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let open = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_some() && !open && additional.is_none() {
                out.push(pointer.clone());
            }
            // Only through named fields: map keys may hold anything, a pointer's '/' included.
            for (name, field) in fields {
                if let Some(child) = properties.and_then(|p| p.get(name)) {
                    closed_objects(field, child, format!("{pointer}/{name}"), out);
                }
            }
        }
        Value::Array(items) => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            for (i, field) in items.iter().enumerate() {
                closed_objects(field, item, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// `/a/0/b` as the validator names it: `a[0].b`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        if part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}
