//! Changes to an object's metadata (finalizers, one-shot annotations): a merge patch carrying
//! the resourceVersion it was computed from, so the apiserver refuses it (409) rather than
//! overwrite a concurrent change, under the operator's field manager.

use super::{KubeError, Verb};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::fmt::Debug;

/// `metadata` as a merge patch guarded by the object's resourceVersion.
pub(crate) fn guarded<K: Resource>(object: &K, mut metadata: Map<String, Value>) -> Value {
    metadata.insert("resourceVersion".into(), json!(object.resource_version().unwrap_or_default()));
    json!({ "metadata": metadata })
}

/// Applies a guarded metadata merge patch under our field manager.
pub(crate) async fn patch_metadata<K>(api: &Api<K>, object: &K, patch: Value) -> Result<K, KubeError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned,
{
    let name = object.name_any();
    let params = PatchParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() };
    api.patch(&name, &params, &Patch::Merge(&patch)).await.map_err(KubeError::of::<K>(Verb::Patch, &name))
}
