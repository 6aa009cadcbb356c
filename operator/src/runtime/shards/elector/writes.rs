//! The elector's writes to one shard's Lease: take, renew, release, ask for it, withdraw a
//! request. A take or a request is a replace with the resourceVersion read, so two replicas
//! racing for a Lease cannot both win; a renewal or a release is a JSON patch the apiserver
//! applies only while we hold the Lease (a `test` of the holder), and a withdrawal one applied
//! only while the request is ours, so a request another replica writes onto the Lease between
//! our read and our write cannot make it fail.

use super::{Elector, WANTED_AT, WANTED_BY};
use crate::kit::error::{KubeError, Verb};
use crate::runtime::lease::{claim, patch_params, post_params, release_patch, renewal};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch};
use tokio::time::Instant;

impl Elector {
    /// Takes (or renews) `shard`'s Lease; a take clears our own request on it.
    pub(super) async fn write_claim(
        &mut self,
        shard: &str,
        current: Option<Lease>,
        taking: bool,
    ) -> Result<(), KubeError> {
        let sent = Instant::now();
        let name = self.name(shard);
        let renewing = current.is_some() && !taking;
        let attempt = if renewing { "renewal" } else { "take" };
        let claimed = |lease: Option<&Lease>| {
            Some(claim(lease.and_then(|l| l.spec.as_ref()), &self.identity, &self.timing, Timestamp::now()))
        };
        let (verb, result) = match current {
            None => {
                let metadata = ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() };
                let lease = Lease { metadata, spec: claimed(None) };
                (Verb::Create, self.api.create(&post_params(), &lease).await.map(|_| ()))
            }
            // A renewal patches, tested on the holder: a request written since our read stays.
            Some(_) if renewing => {
                let patch = Patch::Json::<()>(renewal(&self.identity, &self.timing, Timestamp::now()));
                (Verb::Patch, self.api.patch(&name, &patch_params(), &patch).await.map(|_| ()))
            }
            Some(mut lease) => {
                lease.spec = claimed(Some(&lease));
                clear_request(&mut lease, &self.identity);
                (Verb::Replace, self.api.replace(&name, &post_params(), &lease).await.map(|_| ()))
            }
        };
        match result {
            Ok(()) => {
                if taking {
                    tracing::info!(shard, "took a shard lease");
                }
                let deadline = self.timing.deadline_after(sent);
                let known = self.known.entry(shard.to_string()).or_default();
                known.deadline = Some(deadline);
                known.asked = None;
                Ok(())
            }
            // Someone wrote it between our read and our take (409), or took or released it
            // before our renewal (422: the holder tested); the next attempt reads theirs.
            Err(kube::Error::Api(status)) if status.code == 409 || (renewing && status.code == 422) => {
                tracing::debug!(shard, code = status.code, message = %status.message, "a shard lease write lost a race");
                self.metrics.shard_lease_failed(attempt);
                Ok(())
            }
            Err(err) => self.failed(shard, attempt, KubeError::new(verb, "Lease", &name, err)),
        }
    }

    /// Hands `shard`'s Lease back: no controller serves it any more. A patch tested on the
    /// holder, so that a request written onto the Lease since our read does not refuse it.
    pub(super) async fn release(&mut self, shard: &str) -> Result<(), KubeError> {
        let name = self.name(shard);
        let patch = Patch::Json::<()>(release_patch(&self.identity, Timestamp::now()));
        match self.api.patch(&name, &patch_params(), &patch).await {
            Ok(_) => {
                tracing::info!(shard, "released a shard lease");
                self.forget(shard);
                Ok(())
            }
            // No longer ours (or gone): the next look reads whose it is.
            Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409 | 422) => Ok(()),
            Err(err) => self.failed(shard, "release", KubeError::new(Verb::Patch, "Lease", &name, err)),
        }
    }

    /// Asks for `shard`: annotates its Lease (made, holding nobody, if there is none yet),
    /// again once half a term has passed. Returns false when another write to the Lease came
    /// between our read and ours.
    pub(super) async fn ask(&mut self, shard: &str, current: Option<Lease>) -> Result<bool, KubeError> {
        let now = Instant::now();
        let half = self.timing.duration / 2;
        let known = self.known.entry(shard.to_string()).or_default();
        if known.asked.is_some_and(|at| now.saturating_duration_since(at) < half) {
            return Ok(true);
        }
        let name = self.name(shard);
        let exists = current.is_some();
        let mut lease = current.unwrap_or_else(|| Lease {
            metadata: ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() },
            spec: None,
        });
        let annotations = lease.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert(WANTED_BY.into(), self.identity.clone());
        annotations.insert(WANTED_AT.into(), Timestamp::now().to_string());
        let (verb, written) = match exists {
            true => (Verb::Replace, self.api.replace(&name, &post_params(), &lease).await),
            false => (Verb::Create, self.api.create(&post_params(), &lease).await),
        };
        match written {
            Ok(_) => {
                tracing::info!(shard, "asked for a shard");
                if let Some(known) = self.known.get_mut(shard) {
                    known.asked = Some(now);
                }
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.metrics.shard_lease_failed("request");
                Ok(false)
            }
            Err(err) => self.failed(shard, "request", KubeError::new(verb, "Lease", &name, err)).map(|()| true),
        }
    }

    /// Removes our request from `lease`, if it carries one: a patch tested on the requester,
    /// so that a renewal landing since our read does not refuse it, and another's request
    /// written since is left alone. One that fails leaves it to go stale (the replica is
    /// stopping).
    pub(super) async fn withdraw(&self, shard: &str, lease: &Lease) {
        if !requested_by(lease, &self.identity) {
            return;
        }
        let dated = lease.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(WANTED_AT));
        let patch = Patch::Json::<()>(withdrawal(&self.identity, dated));
        match self.api.patch(&self.name(shard), &patch_params(), &patch).await {
            Ok(_) => tracing::info!(shard, "withdrew the request for a shard"),
            // Another replica's request replaced ours since our read: nothing of ours is left.
            Err(kube::Error::Api(status)) if status.code == 422 => {
                tracing::debug!(shard, "the request for a shard was another's by then");
            }
            Err(err) => tracing::warn!(shard, error = %err, "cannot withdraw the request for a shard"),
        }
    }
}

/// The JSON patch that removes `identity`'s request (its time too when `dated`: a request
/// always carries one, but a patch removing a missing key fails), applied only while it is
/// `identity`'s.
fn withdrawal(identity: &str, dated: bool) -> json_patch::Patch {
    use json_patch::{PatchOperation, RemoveOperation, TestOperation, jsonptr::PointerBuf};
    let at = |key: &str| PointerBuf::from_tokens(["metadata", "annotations", key]);
    let mut operations = vec![
        PatchOperation::Test(TestOperation { path: at(WANTED_BY), value: identity.into() }),
        PatchOperation::Remove(RemoveOperation { path: at(WANTED_BY) }),
    ];
    if dated {
        operations.push(PatchOperation::Remove(RemoveOperation { path: at(WANTED_AT) }));
    }
    json_patch::Patch(operations)
}

pub(super) fn holds(lease: &Lease, identity: &str) -> bool {
    lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(identity)
}

/// Whether `lease` carries `identity`'s request.
fn requested_by(lease: &Lease, identity: &str) -> bool {
    lease.metadata.annotations.as_ref().and_then(|a| a.get(WANTED_BY)).map(String::as_str) == Some(identity)
}

/// Removes a request on `lease` when it is `identity`'s.
fn clear_request(lease: &mut Lease, identity: &str) {
    if requested_by(lease, identity)
        && let Some(annotations) = lease.metadata.annotations.as_mut()
    {
        annotations.remove(WANTED_BY);
        annotations.remove(WANTED_AT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requested_by(who: &str) -> serde_json::Value {
        serde_json::json!({ "metadata": { "name": "fm-shard-a", "annotations": {
            WANTED_BY: who, WANTED_AT: "2026-12-07T18:00:00Z", "other": "kept" } } })
    }

    #[test]
    fn a_withdrawal_removes_our_request_and_refuses_to_touch_anothers() {
        let mut ours = requested_by("r3");
        json_patch::patch(&mut ours, &withdrawal("r3", true)).expect("our request withdrawn");
        assert_eq!(ours["metadata"]["annotations"], serde_json::json!({ "other": "kept" }));
        let mut theirs = requested_by("r1");
        assert!(json_patch::patch(&mut theirs, &withdrawal("r3", true)).is_err(), "another's request stays");
        assert_eq!(theirs, requested_by("r1"));
    }
}
