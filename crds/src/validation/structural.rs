//! JSON read against a structural schema the way Go's `encoding/json` with
//! `DisallowUnknownFields` reads it into a struct: a field the schema does not know is refused,
//! and a required field that is missing gets its zero value (or its schema default). That is
//! how baremetal-operator reads the JSON its users put in annotations, so partial objects work
//! and typing mistakes do not pass silently.
//!
//! Where Go's zero value is not a value the schema allows (an enum without `""`, such as a
//! RAID level; a timestamp, which Go writes back as `null`), the apiserver would refuse the
//! object that baremetal-operator builds from it, so the missing field is refused here, by its
//! path, rather than later with a message that names no field.

use serde_json::{Map, Value};

/// Why a value does not conform to its schema; each names a field by its dotted path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Nonconforming {
    /// A field the schema does not know.
    Unknown(String),
    /// A required field that is missing and has no zero value the schema allows.
    NoZero(String),
}

/// Checks `value` against `schema` and fills in missing required fields. Returns the first
/// field that does not conform.
pub(crate) fn conform(value: &mut Value, schema: &Value, path: &str) -> Result<(), Nonconforming> {
    let Some(schema) = schema.as_object() else {
        // No schema to compare with: nothing is unknown.
        return Ok(());
    };
    let open = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    match value {
        Value::Object(fields) => {
            let empty = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_empty() && additional.is_none() && (open || !schema.contains_key("type")) {
                return Ok(());
            }
            let keys: Vec<String> = fields.keys().cloned().collect();
            for key in keys {
                let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                let Some(child_schema) = properties.get(&key).or(additional) else {
                    if open {
                        continue;
                    }
                    return Err(Nonconforming::Unknown(child_path));
                };
                let nullable = child_schema.get("nullable") == Some(&Value::Bool(true));
                if fields.get(&key).is_some_and(Value::is_null) && !nullable {
                    // Go leaves the zero value; the apiserver prunes such nulls.
                    fields.remove(&key);
                    continue;
                }
                if let Some(child) = fields.get_mut(&key) {
                    conform(child, child_schema, &child_path)?;
                }
            }
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                if !fields.contains_key(name)
                    && let Some(field_schema) = properties.get(name)
                {
                    let field_path = if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
                    fields.insert(name.to_string(), zero(field_schema, &field_path)?);
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items") else {
                return Ok(());
            };
            for (i, item) in items.iter_mut().enumerate() {
                conform(item, item_schema, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The value Go gives the field at `path` when it is absent: its schema default, or the zero
/// of its type, when the schema allows that zero.
fn zero(schema: &Value, path: &str) -> Result<Value, Nonconforming> {
    if let Some(default) = schema.get("default") {
        return Ok(default.clone());
    }
    let zero = match schema.get("type").and_then(Value::as_str) {
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => {
            let mut object = Value::Object(Map::new());
            // An empty object has no unknown fields; only its own required fields are added.
            conform(&mut object, schema, path)?;
            object
        }
        _ => Value::Null,
    };
    let timestamp = schema.get("format").and_then(Value::as_str) == Some("date-time");
    let outside_enum = schema.get("enum").and_then(Value::as_array).is_some_and(|values| !values.contains(&zero));
    if timestamp || outside_enum { Err(Nonconforming::NoZero(path.to_string())) } else { Ok(zero) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["count", "inner", "name"], "properties": {
            "level": {"type": "string", "enum": ["0", "1"]},
            "kind": {"type": "string", "enum": ["", "a"]},
            "at": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "default": 3},
            "name": {"type": "string"},
            "note": {"type": "string", "nullable": true},
            "flag": {"type": "boolean"},
            "inner": {"type": "object", "required": ["on"], "properties": {"on": {"type": "boolean"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}}
        }})
    }

    fn conformed(mut value: Value) -> Result<Value, Nonconforming> {
        conform(&mut value, &schema(), "").map(|()| value)
    }

    #[test]
    fn missing_required_fields_get_defaults_or_zero_values() {
        assert_eq!(conformed(json!({})), Ok(json!({"count": 3, "name": "", "inner": {"on": false}})));
        assert_eq!(
            conformed(json!({"name": "x", "inner": {}, "flag": null, "note": null})),
            Ok(json!({"count": 3, "name": "x", "inner": {"on": false}, "note": null})),
            "nulls of non-nullable fields are dropped, nullable ones kept"
        );
    }

    #[test]
    fn unknown_fields_are_refused_with_their_path() {
        let unknown = |path: &str| Err(Nonconforming::Unknown(path.to_string()));
        assert_eq!(conformed(json!({"nmae": "x"})), unknown("nmae"));
        assert_eq!(conformed(json!({"inner": {"of": true}})), unknown("inner.of"));
        assert_eq!(conformed(json!({"list": [{"id": "a"}, {"ID": "b"}]})), unknown("list[1].ID"));
    }

    #[test]
    fn a_missing_field_whose_zero_the_schema_refuses_is_named() {
        let with = |required: &str| {
            let mut schema = schema();
            schema["required"] = json!([required]);
            let mut value = json!({});
            conform(&mut value, &schema, "").map(|()| value)
        };
        assert_eq!(with("level"), Err(Nonconforming::NoZero("level".into())), "an enum without \"\"");
        assert_eq!(with("at"), Err(Nonconforming::NoZero("at".into())), "a timestamp");
        assert_eq!(with("kind"), Ok(json!({"kind": ""})), "an enum that has \"\"");
        let mut nested = json!({"type": "object", "required": ["inner"], "properties": {"inner": {
            "type": "object", "required": ["level"], "properties": {"level": {"type": "string", "enum": ["1"]}}}}});
        assert_eq!(conform(&mut json!({}), &nested, ""), Err(Nonconforming::NoZero("inner.level".into())));
        nested["properties"]["inner"]["properties"]["level"]["default"] = json!("1");
        assert_eq!(conform(&mut json!({}), &nested, ""), Ok(()), "a default is a value");
    }

    #[test]
    fn maps_and_open_objects_take_any_key() {
        let value = json!({"labels": {"anything": "x"}, "open": {"a": "1", "vendor": {"deep": 1}}});
        assert!(conformed(value).is_ok());
    }
}
