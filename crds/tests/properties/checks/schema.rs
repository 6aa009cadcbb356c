//! JSON objects shaped by a CRD's openAPIV3Schema, drawn from fuzzer bytes: what an apiserver
//! could store for a kind, types right and everything else arbitrary (values from
//! [`super::pools`] or raw bytes, any subset of the optional fields, enum values, lists of a
//! few items). [`mutate`] derives a second object that differs from the first in a few
//! places, the shape of an update.
//!
//! With the bytes exhausted every decision takes its first branch (an optional field absent,
//! a list empty, a value kept), so shorter input means smaller objects and shrinking works.

use super::pools;
use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// Below this depth only required fields are generated.
const MAX_DEPTH: usize = 12;
/// Most items in a generated list or map.
const MAX_ITEMS: u32 = 3;

/// True one time in `n` (never with the bytes exhausted).
pub fn one_in(u: &mut Unstructured, n: u32) -> Result<bool> {
    Ok(u.int_in_range(1..=n)? == n)
}

/// One of `items` (the first with the bytes exhausted).
pub fn pick<T: Copy>(u: &mut Unstructured, items: &[T]) -> Result<T> {
    u.choose(items).copied()
}

/// The openAPIV3Schema of every kind, generated once.
static SCHEMAS: LazyLock<Vec<(String, Value)>> = LazyLock::new(|| {
    crds::all_crds()
        .into_iter()
        .map(|crd| {
            let schema = crd.spec.versions.first().and_then(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref());
            let schema = schema.and_then(|s| serde_json::to_value(s).ok()).unwrap_or_default();
            (crd.spec.names.kind, schema)
        })
        .collect()
});

/// The schema of `kind` at a JSON pointer (`/properties/spec`, `""` for the whole object).
pub fn schema_of(kind: &str, pointer: &str) -> &'static Value {
    static NULL: Value = Value::Null;
    SCHEMAS.iter().find(|(k, _)| k == kind).and_then(|(_, s)| s.pointer(pointer)).unwrap_or(&NULL)
}

/// A value of `schema`.
pub fn value(u: &mut Unstructured, schema: &Value, depth: usize) -> Result<Value> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return if u.arbitrary()? {
            Ok(Value::from(integer_in(u, i64::from(i32::MIN), i64::from(i32::MAX))?))
        } else {
            string(u, schema)
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => object(u, schema, depth),
        Some("array") => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let len = u.int_in_range(0..=MAX_ITEMS)?;
            (0..len).map(|_| value(u, items, depth + 1)).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        Some("string") => string(u, schema),
        Some("integer") => integer(u, schema).map(Value::from),
        Some("number") => Ok(Value::from(u.arbitrary::<i32>()? as f64 / 8.0)),
        Some("boolean") => Ok(Value::Bool(u.arbitrary()?)),
        _ if flag(schema, "x-kubernetes-preserve-unknown-fields") => any_json(u, 3),
        _ => Ok(Value::Null),
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name) == Some(&Value::Bool(true))
}

fn object(u: &mut Unstructured, schema: &Value, depth: usize) -> Result<Value> {
    let mut fields = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    for (name, field) in properties.into_iter().flatten() {
        let wanted = required.contains(&name.as_str()) || (depth < MAX_DEPTH && one_in(u, 2 + depth as u32 / 4)?);
        if !wanted {
            continue;
        }
        let generated =
            if flag(field, "nullable") && one_in(u, 16)? { Value::Null } else { value(u, field, depth + 1)? };
        fields.insert(name.clone(), generated);
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        for _ in 0..u.int_in_range(0..=MAX_ITEMS)? {
            let key = key(u)?;
            let generated = value(u, additional, depth + 1)?;
            fields.insert(key, generated);
        }
    } else if properties.is_none() && flag(schema, "x-kubernetes-preserve-unknown-fields") {
        return any_json(u, 3);
    }
    Ok(Value::Object(fields))
}

/// A map key: from the pool, or any text.
pub fn key(u: &mut Unstructured) -> Result<String> {
    if one_in(u, 8)? { Ok(u.arbitrary::<&str>()?.to_string()) } else { Ok(pick(u, pools::KEYS)?.to_string()) }
}

fn string(u: &mut Unstructured, schema: &Value) -> Result<Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array).filter(|v| !v.is_empty()) {
        return Ok(u.choose(values)?.clone());
    }
    match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => {
            let (day, second) = (u.int_in_range(1..=28)?, u.int_in_range(0..=59)?);
            return Ok(Value::String(format!("2026-02-{day:02}T12:34:{second:02}Z")));
        }
        Some("byte") => return Ok(Value::String(pick(u, pools::BASE64)?.to_string())),
        _ => {}
    }
    text(u).map(Value::String)
}

/// A string: mostly from the pool, sometimes raw text, joined or cut.
pub fn text(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=6 => pick(u, pools::STRINGS)?.to_string(),
        7 => u.arbitrary::<&str>()?.to_string(),
        8 => format!("{}{}", pick(u, pools::STRINGS)?, pick(u, pools::STRINGS)?),
        _ => {
            let base = pick(u, pools::STRINGS)?;
            let cut = u.int_in_range(0..=base.len())?;
            let cut = (0..=cut).rev().find(|&i| base.is_char_boundary(i)).unwrap_or(0);
            format!("{}{}", &base[..cut], u.arbitrary::<char>()?)
        }
    })
}

fn integer(u: &mut Unstructured, schema: &Value) -> Result<i64> {
    match schema.get("format").and_then(Value::as_str) {
        Some("int32") => integer_in(u, i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => integer_in(u, i64::MIN, i64::MAX),
    }
}

/// An integer within `[min, max]`: a boundary value from the pool, or any.
pub fn integer_in(u: &mut Unstructured, min: i64, max: i64) -> Result<i64> {
    if u.arbitrary()? {
        return u.int_in_range(min..=max);
    }
    let fitting: Vec<i64> = pools::INTEGERS.iter().copied().filter(|i| (min..=max).contains(i)).collect();
    if fitting.is_empty() { Ok(min) } else { pick(u, &fitting) }
}

/// Any JSON value, nested at most `depth` deep.
pub fn any_json(u: &mut Unstructured, depth: usize) -> Result<Value> {
    let most = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=most)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(integer_in(u, i64::MIN, i64::MAX)?),
        3 => Value::String(text(u)?),
        4 => Value::Array((0..u.int_in_range(0..=MAX_ITEMS)?).map(|_| any_json(u, depth - 1)).collect::<Result<_>>()?),
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=MAX_ITEMS)? {
                let key = key(u)?;
                map.insert(key, any_json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

/// `value` with a few changes of the kinds an update makes: a field or item replaced, removed
/// or added. With the bytes exhausted it is returned unchanged.
pub fn mutate(u: &mut Unstructured, value: &Value, schema: &Value, depth: usize) -> Result<Value> {
    if one_in(u, 16)? {
        return self::value(u, schema, depth);
    }
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut changed = Map::new();
            for (name, field) in fields {
                let child = properties.and_then(|p| p.get(name)).or(additional).unwrap_or(&Value::Null);
                if !required.contains(&name.as_str()) && one_in(u, 16)? {
                    continue;
                }
                changed.insert(name.clone(), mutate(u, field, child, depth + 1)?);
            }
            if one_in(u, 8)? {
                let names: Vec<&String> = properties.into_iter().flat_map(|p| p.keys()).collect();
                if let Some(name) = (!names.is_empty()).then(|| u.choose(&names)).transpose()?.copied() {
                    let child = properties.and_then(|p| p.get(name.as_str())).unwrap_or(&Value::Null);
                    changed.insert(name.clone(), self::value(u, child, depth + 1)?);
                } else if let Some(additional) = additional {
                    let key = key(u)?;
                    changed.insert(key, self::value(u, additional, depth + 1)?);
                }
            }
            Ok(Value::Object(changed))
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            let mut changed = Vec::with_capacity(items.len() + 1);
            for item in items {
                if !one_in(u, 16)? {
                    changed.push(mutate(u, item, item_schema, depth + 1)?);
                }
            }
            if one_in(u, 8)? {
                changed.push(self::value(u, item_schema, depth + 1)?);
            }
            Ok(Value::Array(changed))
        }
        scalar => Ok(scalar.clone()),
    }
}
