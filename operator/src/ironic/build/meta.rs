//! Metadata every owned object carries.

use crate::ironic::resolve::Resolved;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

/// Metadata of an owned object.
pub(crate) fn meta(resolved: &Resolved, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(resolved.namespace.clone()),
        labels: Some(labels),
        owner_references: resolved.owner.clone().map(|o| vec![o]),
        ..Default::default()
    }
}
