//! Metadata the controller changes on hosts: its finalizer, and the
//! one-shot annotations it consumes (reboot, inspect, status). Every patch
//! is a merge patch carrying the resourceVersion it was computed from, so
//! the apiserver refuses it (409) rather than overwrite a concurrent change;
//! the next reconcile retries with fresh data.

use crate::kube::{KubeError, Verb};
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::FINALIZER;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value, json};

fn guarded(host: &BareMetalHost, mut metadata: Map<String, Value>) -> Value {
    metadata.insert("resourceVersion".into(), json!(host.resource_version().unwrap_or_default()));
    json!({ "metadata": metadata })
}

/// The patch adding our finalizer (merge patches replace lists whole).
pub fn add_finalizer_patch(host: &BareMetalHost) -> Value {
    let mut list = host.meta().finalizers.clone().unwrap_or_default();
    if !list.iter().any(|f| f == FINALIZER) {
        list.push(FINALIZER.to_string());
    }
    guarded(host, Map::from_iter([("finalizers".to_string(), json!(list))]))
}

/// The patch removing our finalizer.
pub fn remove_finalizer_patch(host: &BareMetalHost) -> Value {
    let rest: Vec<&String> = host.finalizers().iter().filter(|f| f.as_str() != FINALIZER).collect();
    guarded(host, Map::from_iter([("finalizers".to_string(), json!(rest))]))
}

/// The patch removing annotations.
pub fn remove_annotations_patch(host: &BareMetalHost, keys: &[&str]) -> Value {
    let annotations: Map<String, Value> = keys.iter().map(|k| (k.to_string(), Value::Null)).collect();
    guarded(host, Map::from_iter([("annotations".to_string(), Value::Object(annotations))]))
}

pub fn has_finalizer(host: &BareMetalHost) -> bool {
    host.finalizers().iter().any(|f| f == FINALIZER)
}

/// Applies a merge patch to a host's metadata.
pub async fn patch(api: &Api<BareMetalHost>, host: &BareMetalHost, patch: Value) -> Result<BareMetalHost, KubeError> {
    let name = host.name_any();
    api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(KubeError::of::<BareMetalHost>(Verb::Patch, &name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;

    fn host() -> BareMetalHost {
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        host.metadata.resource_version = Some("42".into());
        host
    }

    #[test]
    fn finalizer_patches_are_guarded_and_keep_other_finalizers() {
        let mut h = host();
        assert_eq!(add_finalizer_patch(&h), json!({"metadata": {"resourceVersion": "42", "finalizers": [FINALIZER]}}));
        h.metadata.finalizers = Some(vec!["other".into(), FINALIZER.into()]);
        assert!(has_finalizer(&h));
        assert_eq!(remove_finalizer_patch(&h)["metadata"]["finalizers"], json!(["other"]));
        assert_eq!(add_finalizer_patch(&h)["metadata"]["finalizers"], json!(["other", FINALIZER]));
    }

    #[test]
    fn annotations_are_removed_with_nulls() {
        let patch = remove_annotations_patch(&host(), &["reboot.metal3.io", "baremetalhost.metal3.io/status"]);
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "42",
                "annotations": {"reboot.metal3.io": null, "baremetalhost.metal3.io/status": null}}})
        );
    }
}
