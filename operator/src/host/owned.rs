//! The metadata the controllers beside the host controller write on objects that point at a
//! host (a `DataImage`, a `BMCEventSubscription`): their finalizer, and the host as an owner.
//! One merge patch at the version read, since both lists are written whole.

use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::baremetalhost::BareMetalHost;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

/// Adds `finalizer`, and `owner` as an owner unless it is one already: the garbage collector
/// then deletes the object with its host, as baremetal-operator's are. Another controller may
/// control the object already: the host is then a plain owner.
pub(crate) async fn adopt<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    owner: Option<&BareMetalHost>,
) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let mut finalizers = object.finalizers().to_vec();
    let mut owners = object.owner_references().to_vec();
    let owner = owner.and_then(|h| h.controller_owner_ref(&())).filter(|o| !owners.iter().any(|r| r.uid == o.uid));
    let has_finalizer = finalizers.iter().any(|f| f == finalizer);
    if has_finalizer && owner.is_none() {
        return Ok(());
    }
    if !has_finalizer {
        finalizers.push(finalizer.to_string());
    }
    let controlled = owners.iter().any(|r| r.controller == Some(true));
    // blockOwnerDeletion would need the right to update the host's finalizers where owner
    // references are enforced (OpenShift), for nothing this object needs.
    owners.extend(owner.map(|o| OwnerReference { controller: Some(!controlled), block_owner_deletion: None, ..o }));
    patch_metadata(api, object, json!({ "finalizers": finalizers, "ownerReferences": owners })).await
}

/// Removes `finalizer`.
pub(crate) async fn release<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let kept: Vec<&String> = object.finalizers().iter().filter(|f| *f != finalizer).collect();
    if kept.len() == object.finalizers().len() {
        return Ok(());
    }
    patch_metadata(api, object, json!({ "finalizers": kept })).await
}

/// A merge patch of `metadata`, refused if the object changed since it was read.
async fn patch_metadata<K>(api: &Api<K>, object: &K, mut metadata: serde_json::Value) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let name = object.name_any();
    metadata["resourceVersion"] = json!(object.resource_version());
    let params = PatchParams { field_manager: Some(crate::FIELD_MANAGER.into()), ..Default::default() };
    api.patch(&name, &params, &Patch::Merge(json!({ "metadata": metadata })))
        .await
        .map_err(KubeError::of::<K>(Verb::Patch, &name))?;
    Ok(())
}
