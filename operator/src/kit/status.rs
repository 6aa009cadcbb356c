//! Status writes, only through the status subresource and under the one field manager.

use super::error::{KubeError, Verb};
use super::events::{Notices, Publisher};
use super::ledger::apply_params;
use crate::FIELD_MANAGER;
use crate::metrics::Metrics;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

/// Applies the whole `status` of `name` with server-side apply: every status field is the
/// operator's, so what it leaves out is removed.
pub(crate) async fn apply<K, S>(api: &Api<K>, name: &str, status: &S) -> Result<K, KubeError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
    S: Serialize,
{
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(name, &apply_params(), &Patch::Apply(&body))
        .await
        .map_err(KubeError::of::<K>(Verb::WriteStatus, name))
}

/// The tail every controller's reconcile ends with, one way: the status written when it
/// changed (counted for the controller), then the reconcile's Events published, after the
/// write and also when it failed (what the reconcile did was done; the retry will not see it
/// again). The stored object when status was written.
pub(crate) struct Commit<'a> {
    pub controller: &'static str,
    pub metrics: &'a Metrics,
    pub publisher: &'a Publisher,
}

impl Commit<'_> {
    pub(crate) async fn write<K, S>(
        &self,
        api: &Api<K>,
        object: &K,
        status: Option<&S>,
        notices: Notices,
    ) -> Result<Option<K>, KubeError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
        S: Serialize,
    {
        let name = object.meta().name.clone().unwrap_or_default();
        let written = match status {
            Some(status) => apply(api, &name, status).await.map(Some),
            None => Ok(None),
        };
        if matches!(written, Ok(Some(_))) {
            self.metrics.status_written(self.controller);
        }
        self.publisher.publish(object, notices).await;
        written
    }
}

/// Merges `body` (`{"status": {...}}`) into the status of `name`: for a part of status that
/// must be recorded at once, whatever else the reconcile writes later.
pub(crate) async fn merge<K>(api: &Api<K>, name: &str, body: &Value) -> Result<K, KubeError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug,
{
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
    api.patch_status(name, &params, &Patch::Merge(body)).await.map_err(KubeError::of::<K>(Verb::WriteStatus, name))
}
