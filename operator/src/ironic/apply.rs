//! The apply step: server-side apply under the operator's one field manager, creation of
//! upgrade Jobs (whose pod template is immutable), and removal of objects the spec no longer
//! asks for. Only objects this Ironic controls are ever deleted.

use super::names::controlled_by;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PostParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Why an object could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot apply {kind} {name}")]
    Apply {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot delete {kind} {name}")]
    Delete {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// The apiserver's refusal, when it refused the object itself (invalid, or an API that
    /// does not exist) rather than failing to answer.
    pub fn refusal(&self) -> Option<(u16, String)> {
        match self {
            Self::Apply { kind, name, source } => refusal(kind, name, source),
            Self::Delete { .. } => None,
        }
    }

    /// The kind of object involved.
    pub fn kind(&self) -> &str {
        match self {
            Self::Apply { kind, .. } | Self::Delete { kind, .. } => kind,
        }
    }

    /// The name of the object involved.
    pub fn name(&self) -> &str {
        match self {
            Self::Apply { name, .. } | Self::Delete { name, .. } => name,
        }
    }

    /// What the apiserver answered.
    pub fn cause(&self) -> &kube::Error {
        match self {
            Self::Apply { source, .. } | Self::Delete { source, .. } => source,
        }
    }
}

/// The apiserver's refusal of an applied object (invalid: 400 or 422; an API that does not
/// exist: 404), as its code and a message naming the object; `None` for any other failure.
pub fn refusal(kind: &str, name: &str, source: &kube::Error) -> Option<(u16, String)> {
    match source {
        kube::Error::Api(status) if matches!(status.code, 400 | 404 | 422) => {
            Some((status.code, format!("the apiserver refused {kind} {name}: {}", status.message)))
        }
        _ => None,
    }
}

/// Applies a typed object and returns what the server stored.
pub async fn object<K>(api: &Api<K>, object: &K) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Debug,
{
    crate::apply::apply(api, object).await.map_err(|source| Error::Apply {
        kind: K::kind(&()).to_string(),
        name: object.name_any(),
        source,
    })
}

/// Applies a custom object of an API the crate has no type for (cert-manager's Certificate).
pub async fn dynamic(api: &Api<DynamicObject>, object: &DynamicObject) -> Result<DynamicObject, Error> {
    let kind = object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
    api.patch(&object.name_any(), &crate::apply::params(), &Patch::Apply(object)).await.map_err(|source| Error::Apply {
        kind,
        name: object.name_any(),
        source,
    })
}

/// Creates an upgrade Job unless it exists. A Job's pod template cannot change, and an
/// existing Job (running, finished or failed) is exactly what the sequence must observe.
pub async fn job(api: &Api<Job>, job: &Job) -> Result<bool, Error> {
    let name = job.name_any();
    let error = |source| Error::Apply { kind: "Job".into(), name: name.clone(), source };
    if api.get_opt(&name).await.map_err(error)?.is_some() {
        return Ok(false);
    }
    match api
        .create(&PostParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() }, job)
        .await
    {
        Ok(_) => Ok(true),
        // Created concurrently (a restarted operator): the same Job.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(source) => Err(error(source)),
    }
}

/// Deletes `name` if it exists and this Ironic controls it; returns whether it did.
pub async fn delete_owned<K>(api: &Api<K>, name: &str, owner_uid: &str) -> Result<bool, Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
{
    let error = |source| Error::Delete { kind: K::kind(&()).to_string(), name: name.to_string(), source };
    let Some(existing) = api.get_opt(name).await.map_err(error)? else {
        return Ok(false);
    };
    if !controlled_by(existing.meta(), owner_uid) {
        return Ok(false);
    }
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(error(source)),
    }
}

/// Deletes the Certificate `name` if this Ironic controls it. A missing cert-manager API
/// means there is nothing to delete, and so does a refusal to read it: the permission comes
/// with the optional cert-manager TLS feature, without which no Certificate was written.
pub async fn delete_owned_dynamic(api: &Api<DynamicObject>, name: &str, owner_uid: &str) -> Result<bool, Error> {
    let error = |source| Error::Delete { kind: "Certificate".into(), name: name.to_string(), source };
    let existing = match api.get_opt(name).await {
        Ok(existing) => existing,
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 403 => None,
        Err(source) => return Err(error(source)),
    };
    match existing {
        Some(object) if controlled_by(&object.metadata, owner_uid) => {
            api.delete(name, &DeleteParams::background()).await.map_err(error)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}
