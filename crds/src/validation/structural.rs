//! JSON read against a structural schema the way Go's `encoding/json` with
//! `DisallowUnknownFields` reads it into a struct: a field the schema does not know is refused,
//! and a required field that is missing gets its zero value (or its schema default). That is
//! how baremetal-operator reads the JSON its users put in annotations, so partial objects work
//! and typing mistakes do not pass silently.

use serde_json::{Map, Value};

/// Checks `value` against `schema` and fills in missing required fields. Returns the dotted
/// path of the first unknown field.
pub(crate) fn conform(value: &mut Value, schema: &Value, path: &str) -> Result<(), String> {
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
                    return Err(child_path);
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
                    fields.insert(name.to_string(), zero(field_schema));
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

/// The value Go gives a field that is absent: its schema default, or the zero of its type.
fn zero(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => {
            let mut object = Value::Object(Map::new());
            // An empty object has no unknown fields; only its own required fields are added.
            let _ = conform(&mut object, schema, "");
            object
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["count", "inner", "name"], "properties": {
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

    fn conformed(mut value: Value) -> Result<Value, String> {
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
        assert_eq!(conformed(json!({"nmae": "x"})), Err("nmae".to_string()));
        assert_eq!(conformed(json!({"inner": {"of": true}})), Err("inner.of".to_string()));
        assert_eq!(conformed(json!({"list": [{"id": "a"}, {"ID": "b"}]})), Err("list[1].ID".to_string()));
    }

    #[test]
    fn maps_and_open_objects_take_any_key() {
        let value = json!({"labels": {"anything": "x"}, "open": {"a": "1", "vendor": {"deep": 1}}});
        assert!(conformed(value).is_ok());
    }
}
