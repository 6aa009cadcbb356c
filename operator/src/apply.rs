//! Server-side apply under the operator's one field manager.
//!
//! Every object the operator owns is applied whole with `force`, so the
//! operator owns exactly the fields it sets and takes them back if someone
//! else changed them. Status goes only through the status subresource.

use crate::FIELD_MANAGER;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::fmt::Debug;

/// The patch parameters of every apply.
pub fn params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// Applies `object` (which must carry its name) and returns what the
/// server stored.
pub async fn apply<K>(api: &Api<K>, object: &K) -> Result<K, kube::Error>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
{
    api.patch(&object.name_any(), &params(), &Patch::Apply(object)).await
}

/// Applies `status` to the status subresource of `name`.
pub async fn apply_status<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
    S: Serialize,
{
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(name, &params(), &Patch::Apply(&body)).await
}

/// The controller owner reference to `owner`, for objects it creates, so
/// that the garbage collector removes them with it.
pub fn owner_reference<K: Resource<DynamicType = ()>>(owner: &K) -> Option<OwnerReference> {
    owner.controller_owner_ref(&())
}
