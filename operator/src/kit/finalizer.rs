//! Our finalizers, added and removed the same way by every controller: a merge patch of the
//! whole list (merge patches replace lists), guarded and applied as [`super::metadata`] does,
//! so a concurrent change to the list fails it (409) rather than being lost. The next
//! reconcile retries with fresh data.

use super::KubeError;
use super::metadata::{guarded, patch_metadata};
use kube::api::Api;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::fmt::Debug;

/// Whether `object` carries `finalizer`.
pub(crate) fn has<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// The patch adding `finalizer` to the object's list, other finalizers kept.
pub(crate) fn adding<K: Resource>(object: &K, finalizer: &str) -> Value {
    let mut list = object.finalizers().to_vec();
    if !list.iter().any(|f| f == finalizer) {
        list.push(finalizer.to_string());
    }
    guarded(object, Map::from_iter([("finalizers".to_string(), json!(list))]))
}

/// The patch removing `finalizer` from the object's list, other finalizers kept.
pub(crate) fn removing<K: Resource>(object: &K, finalizer: &str) -> Value {
    let rest: Vec<&String> = object.finalizers().iter().filter(|f| f.as_str() != finalizer).collect();
    guarded(object, Map::from_iter([("finalizers".to_string(), json!(rest))]))
}

/// Adds `finalizer` to `object`; the stored object.
pub(crate) async fn add<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<K, KubeError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    patch_metadata(api, object, adding(object, finalizer)).await
}

/// Removes `finalizer` from `object`; the stored object (gone once the list is empty and the
/// object is being deleted: then the apiserver answers with its last state).
pub(crate) async fn remove<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<K, KubeError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    patch_metadata(api, object, removing(object, finalizer)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn object(finalizers: &[&str]) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.resource_version = Some("42".into());
        object.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
        object
    }

    #[test]
    fn patches_are_guarded_by_the_version_they_were_computed_from_and_keep_other_finalizers() {
        assert_eq!(
            adding(&object(&[]), "ours"),
            json!({"metadata": {"resourceVersion": "42", "finalizers": ["ours"]}})
        );
        let both = object(&["other", "ours"]);
        assert!(has(&both, "ours"));
        assert_eq!(removing(&both, "ours")["metadata"]["finalizers"], json!(["other"]));
        assert_eq!(adding(&both, "ours")["metadata"]["finalizers"], json!(["other", "ours"]), "never twice");
        assert!(!has(&object(&["other"]), "ours"));
    }
}
