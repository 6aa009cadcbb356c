//! Schema tweaks applied through `#[schemars(transform = ...)]`.

/// Removes a type's own description from its schema.
///
/// Used on enums: kube's optional-enum rewrite copies the enum type's schema over the field's,
/// which would replace the field's description (what users read in `kubectl explain`) with the
/// type's generic one. Without a type description, the field's own text stays.
pub(crate) fn drop_description(schema: &mut schemars::Schema) {
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
}
