//! Metadata the controller changes on hosts: its finalizer, and the
//! one-shot annotations it consumes (reboot, inspect, status). Every patch
//! is a merge patch carrying the resourceVersion it was computed from, so
//! the apiserver refuses it (409) rather than overwrite a concurrent change;
//! the next reconcile retries with fresh data.

use crate::kit::KubeError;
use crate::kit::finalizer;
use crate::kit::metadata as kit_metadata;
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::FINALIZER;
use kube::api::Api;
use serde_json::{Map, Value};

/// The patch adding our finalizer.
pub(super) fn add_finalizer_patch(host: &BareMetalHost) -> Value {
    finalizer::adding(host, FINALIZER)
}

/// The patch removing our finalizer.
pub(super) fn remove_finalizer_patch(host: &BareMetalHost) -> Value {
    finalizer::removing(host, FINALIZER)
}

/// The patch removing annotations.
pub(super) fn remove_annotations_patch(host: &BareMetalHost, keys: &[&str]) -> Value {
    let annotations: Map<String, Value> = keys.iter().map(|k| (k.to_string(), Value::Null)).collect();
    kit_metadata::guarded(host, Map::from_iter([("annotations".to_string(), Value::Object(annotations))]))
}

pub(super) fn has_finalizer(host: &BareMetalHost) -> bool {
    finalizer::has(host, FINALIZER)
}

/// Applies a guarded merge patch to a host's metadata, under our field manager.
pub(super) async fn patch(
    api: &Api<BareMetalHost>,
    host: &BareMetalHost,
    patch: Value,
) -> Result<BareMetalHost, KubeError> {
    kit_metadata::patch_metadata(api, host, patch).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;
    use serde_json::json;

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
