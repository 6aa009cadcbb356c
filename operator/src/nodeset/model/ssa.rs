//! Server-side apply and JSON merge patch on a JSON object, for the one field manager
//! "ferrometal": the leaf fields its applies set are its own, and a field it applied before and
//! omits now is removed unless another manager owns it too. That rule is what makes an apply that drops `spec.image` deprovision
//! a machine. Objects are granular (each field owned apart), lists and scalars atomic.

use serde_json::Value;
use std::collections::BTreeSet;

/// A field's path from the object's root.
pub(super) type Path = Vec<String>;

/// Fields that name the object rather than set anything.
const IDENTITY: [&str; 5] = ["apiVersion", "kind", "metadata.name", "metadata.namespace", "metadata.resourceVersion"];

/// The leaf fields `body` sets.
pub(super) fn leaves(body: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    collect(body, &mut Vec::new(), &mut out);
    out.retain(|p| !IDENTITY.contains(&p.join(".").as_str()));
    out
}

fn collect(value: &Value, at: &mut Path, out: &mut BTreeSet<Path>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                at.push(key.clone());
                collect(value, at, out);
                at.pop();
            }
        }
        _ => {
            out.insert(at.clone());
        }
    }
}

/// The value at `path`.
pub(super) fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn set(value: &mut Value, path: &[String], leaf: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut at = value;
    for key in parents {
        if !at.get(key).is_some_and(Value::is_object) {
            at[key.as_str()] = Value::Object(Default::default());
        }
        at = &mut at[key.as_str()];
    }
    at[last.as_str()] = leaf;
}

/// Removes the field at `path`, and the objects it leaves empty below the root's own keys.
pub(super) fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut at = &mut *value;
    for key in parents {
        match at.get_mut(key) {
            Some(next) => at = next,
            None => return,
        }
    }
    if let Some(map) = at.as_object_mut() {
        map.remove(last);
    }
    if parents.len() > 1 && get(value, parents).and_then(Value::as_object).is_some_and(|m| m.is_empty()) {
        remove(value, parents);
    }
}

/// Who owns a field: "ferrometal"'s applies, or any other manager (the BareMetalHost's
/// creator, ferrometal's own merge patches, which are updates, not applies).
#[derive(Clone, Debug, Default)]
pub(super) struct Fields {
    pub applied: BTreeSet<Path>,
    pub others: BTreeSet<Path>,
}

/// Server-side apply of `body`, forced: what "ferrometal" applied before and omits now goes
/// unless another manager owns it too; a value it changes is its alone; it owns exactly what
/// it applied.
pub(super) fn apply(object: &mut Value, fields: &mut Fields, body: &Value) {
    let applied = leaves(body);
    for gone in fields.applied.difference(&applied) {
        if !fields.others.contains(gone) {
            remove(object, gone);
        }
    }
    for path in &applied {
        if let Some(leaf) = get(body, path) {
            if get(object, path) != Some(leaf) {
                fields.others.remove(path);
            }
            set(object, path, leaf.clone());
        }
    }
    fields.applied = applied;
}

/// A JSON merge patch (nulls remove) by an update: the fields it removes are nobody's, the
/// ones it changes the update's (no longer the applier's).
pub(super) fn merge(object: &mut Value, fields: &mut Fields, patch: &Value) {
    let before = object.clone();
    json_patch::merge(object, patch);
    for path in leaves(patch) {
        if get(patch, &path).is_some_and(Value::is_null) {
            fields.applied.retain(|p| !p.starts_with(&path));
            fields.others.retain(|p| !p.starts_with(&path));
        } else if get(object, &path) != get(&before, &path) {
            fields.applied.remove(&path);
            fields.others.insert(path);
        }
    }
}

/// A user's update removing the field at `path`: nobody owns it any more.
pub(super) fn user_remove(object: &mut Value, fields: &mut Fields, path: &[String]) {
    remove(object, path);
    fields.applied.remove(path);
    fields.others.remove(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_applied_before_and_omitted_now_is_removed_and_others_stay() {
        let mut object = json!({"metadata": {"name": "x"}, "spec": {"bmc": {"address": "a"}, "online": true}});
        let mut fields = Fields { others: leaves(&object), ..Fields::default() };
        apply(&mut object, &mut fields, &json!({"spec": {"image": {"url": "u", "checksum": "c"}, "online": true}}));
        assert_eq!(object["spec"]["image"]["url"], "u");
        apply(&mut object, &mut fields, &json!({"spec": {"consumerRef": {"name": "n"}}}));
        assert!(object["spec"].get("image").is_none(), "{object}");
        assert_eq!(object["spec"]["bmc"]["address"], "a", "not the applier's");
        assert_eq!(object["spec"]["online"], true, "the creator's too");
    }

    #[test]
    fn a_merge_patch_with_nulls_removes_and_takes_the_fields_away_from_the_applier() {
        let mut object = json!({"spec": {}});
        let mut fields = Fields::default();
        apply(&mut object, &mut fields, &json!({"spec": {"image": {"url": "u"}, "online": true}}));
        merge(&mut object, &mut fields, &json!({"spec": {"image": null, "online": false}}));
        assert_eq!(object, json!({"spec": {"online": false}}));
        assert!(fields.applied.is_empty());
        apply(&mut object, &mut fields, &json!({"spec": {"consumerRef": {"name": "n"}}}));
        assert_eq!(object["spec"]["online"], false, "the update's");
    }
}
