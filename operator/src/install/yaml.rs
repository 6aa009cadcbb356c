//! Deterministic YAML for generated files: keys sorted at every level, documents separated
//! by `---`.

use serde_json::Value;

/// Objects as one multi-document YAML stream, each document starting with `---`.
pub(crate) fn to_yaml(objects: &[Value]) -> Result<String, serde_saphyr::SerializeError> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&crds::render_value_yaml(object)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_separated_and_keys_sorted() {
        let yaml = to_yaml(&[json!({"kind": "A", "apiVersion": "v1"}), json!({"b": 1, "a": 2})]).expect("yaml");
        assert_eq!(yaml, "---\napiVersion: v1\nkind: A\n---\na: 2\nb: 1\n");
    }
}
