//! The record of what ran on a preProvisioned NodeSet's hosts (pure), kept where it outlives
//! the NodeSet.
//!
//! A host backed by a BareMetalHost keeps the services completed on it on the machine itself
//! (an annotation). A preProvisioned host has no such object: its completions lived only in
//! the NodeSet's status, so a NodeSet deleted and recreated (or restored without status) ran
//! every service again on every host at once, `runOnce` ones included, `maxUnavailable` and
//! the Manual gate ignored (every host looked new). So they are also kept in a ConfigMap of
//! the NodeSet's namespace that the NodeSet does not own (garbage collection leaves it), named
//! after the NodeSet: a NodeSet of that name reads it back as a BareMetalHost-backed one reads
//! its machines. The deletion policy decides its fate: `Retain` keeps it, as it keeps
//! machines claimed; `Detach` and `Deprovision` delete it with the NodeSet.

use super::claims::Owner;
use crate::kube::names::{COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, bounded};
use crds::nodeset::{CompletedService, NODESET_LABEL};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

/// The component label of records: what the controller's ConfigMap watch selects.
pub const COMPONENT: &str = "nodeset-record";
/// The key of the completions, by hostname, as JSON.
const KEY: &str = "servicesCompleted";

/// Completions by hostname.
pub type Completions = BTreeMap<String, Vec<CompletedService>>;

/// The record's name: the NodeSet's, so a NodeSet recreated under that name finds it.
pub fn name(owner: &Owner) -> String {
    bounded(&format!("{}-nodeset-record", owner.name), 253)
}

/// The labels of a record.
pub fn labels(owner: &Owner) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (COMPONENT_LABEL.to_string(), COMPONENT.to_string()),
        (NODESET_LABEL.to_string(), owner.label.clone()),
    ])
}

/// The completions a record holds (none for a record that does not parse: the NodeSet's
/// status still has them, and the next write corrects it).
pub fn read(record: &ConfigMap) -> Completions {
    record.data.as_ref().and_then(|d| d.get(KEY)).and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default()
}

/// The record of `completions`, to apply.
pub fn record(owner: &Owner, completions: &Completions) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(owner)),
            namespace: Some(owner.namespace.clone()),
            labels: Some(labels(owner)),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(KEY.to_string(), serde_json::to_string(completions).unwrap_or_default())])),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_round_trip_through_the_record_named_after_the_nodeset() {
        let owner = Owner { namespace: "edge".into(), name: "computes".into(), label: "computes".into() };
        let completions = Completions::from([(
            "edge-0".to_string(),
            vec![CompletedService { name: "bootstrap".into(), config_hash: Some("c".into()), ..Default::default() }],
        )]);
        let written = record(&owner, &completions);
        assert_eq!(written.metadata.name.as_deref(), Some("computes-nodeset-record"));
        assert!(written.metadata.owner_references.is_none(), "it outlives the NodeSet");
        assert_eq!(read(&written), completions);
        let garbled = ConfigMap { data: Some([(KEY.to_string(), "{".to_string())].into()), ..Default::default() };
        assert!(read(&garbled).is_empty());
    }
}
