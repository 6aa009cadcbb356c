//! The ledger of one reconcile: every object a controller writes for an owner goes through it.
//!
//! It insists on what every owned object must carry (the namespace, a controller reference to
//! the owner, the managed-by label and the labels of its scope), applies with server-side apply
//! under the one field manager and only over objects the owner controls, creates Jobs once
//! (their pod template is immutable, and an existing Job, finished or not, is what must be
//! observed), remembers what it wrote, and
//! prunes: [`Ledger::prune`] deletes the owned objects of one kind, in its scope, that this
//! reconcile did not write. Only objects the owner controls are ever deleted.

use super::error::{KubeError, Verb};
use super::names::{MANAGED_BY, MANAGED_BY_LABEL, controlled_by};
use crate::FIELD_MANAGER;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

/// The patch parameters of every apply: our one field manager, taking fields back by force.
pub(crate) fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// What a typed owned object must be to go through the ledger.
pub trait Owned:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned
{
}

impl<K> Owned for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned
{
}

/// One object written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Written {
    pub kind: String,
    pub name: String,
}

/// Writes of one reconcile for one owner, within one scope of labels.
#[derive(Clone)]
pub struct Ledger {
    client: Client,
    namespace: String,
    owner: OwnerReference,
    /// The scope: stamped on every object written, and the selector of every prune.
    labels: BTreeMap<String, String>,
    /// Shared by a ledger and its [`Ledger::scoped`] views.
    written: Arc<Mutex<BTreeSet<Written>>>,
}

/// The owner has no namespace or no uid: it was never stored.
#[derive(Debug, thiserror::Error)]
#[error("{kind} {name} has no namespace or uid")]
pub struct Unstored {
    pub kind: String,
    pub name: String,
}

impl Ledger {
    /// A ledger for objects that `owner` controls, in its namespace, labelled `labels`.
    pub fn new<O: Resource<DynamicType = ()>>(
        client: Client,
        owner: &O,
        labels: BTreeMap<String, String>,
    ) -> Result<Self, Unstored> {
        let unstored =
            || Unstored { kind: O::kind(&()).into_owned(), name: owner.meta().name.clone().unwrap_or_default() };
        let namespace = owner.meta().namespace.clone().ok_or_else(unstored)?;
        let owner = owner.controller_owner_ref(&()).ok_or_else(unstored)?;
        let mut labels = labels;
        labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
        Ok(Self { client, namespace, owner, labels, written: Arc::default() })
    }

    /// A view of this ledger for a narrower scope (more labels); what it writes counts as
    /// written by this reconcile, and its prunes select only its own scope.
    pub fn scoped(&self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut view = self.clone();
        view.labels.extend(labels);
        view
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The controller reference every object written here carries.
    pub fn owner_reference(&self) -> &OwnerReference {
        &self.owner
    }

    /// The labels of this scope.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    pub fn api<K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>>(&self) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn dynamic_api(&self, resource: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, resource)
    }

    /// Reads an object of the owner's namespace.
    pub async fn get<K: Owned>(&self, name: &str) -> Result<Option<K>, KubeError> {
        self.api::<K>().get_opt(name).await.map_err(KubeError::of::<K>(Verb::Get, name))
    }

    /// Counts `kind`/`name` as written by this reconcile without writing it (an existing Job
    /// that is observed, not created), so that no prune removes it.
    pub fn keep(&self, kind: &str, name: &str) {
        self.record(kind, name);
    }

    fn record(&self, kind: &str, name: &str) {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written.insert(Written { kind: kind.to_string(), name: name.to_string() });
    }

    fn was_written(&self, kind: &str, name: &str) -> bool {
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written.contains(&Written { kind: kind.to_string(), name: name.to_string() })
    }

    /// Everything written so far, sorted.
    pub fn written(&self) -> Vec<Written> {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// The namespace and this scope's labels, on top of `meta`.
    fn stamp_unowned(&self, meta: &mut ObjectMeta) {
        meta.namespace = Some(self.namespace.clone());
        let labels = meta.labels.get_or_insert_with(BTreeMap::new);
        labels.extend(self.labels.clone());
    }

    /// The namespace, the owner reference and this scope's labels, on top of `meta`.
    fn stamp(&self, meta: &mut ObjectMeta) {
        self.stamp_unowned(meta);
        let owners = meta.owner_references.get_or_insert_with(Vec::new);
        if !owners.iter().any(|o| o.uid == self.owner.uid) {
            owners.push(self.owner.clone());
        }
    }

    /// Applies `object` with server-side apply and returns what the server stored. An object
    /// of that name that the owner does not control is in the way (see
    /// [`KubeError::in_the_way`]): applying by force would take it over, content and all, so
    /// a Secret someone else made is never overwritten with credentials or a certificate.
    pub async fn apply<K: Owned>(&self, mut object: K) -> Result<K, KubeError> {
        self.stamp(object.meta_mut());
        let name = object.name_any();
        let existing = self.api::<K>().get_metadata_opt(&name).await.map_err(KubeError::of::<K>(Verb::Get, &name))?;
        self.ours_or_absent(&K::kind(&()), &name, existing.as_ref().map(|e| &e.metadata))?;
        self.apply_stamped(object).await
    }

    /// Applies `object` like [`Ledger::apply`], and takes it over when someone else made it:
    /// only for what the owner is designed to adopt (the managed database's credentials, which
    /// a person restores by creating the Secret again; design/database.md).
    pub async fn adopt<K: Owned>(&self, mut object: K) -> Result<K, KubeError> {
        self.stamp(object.meta_mut());
        self.apply_stamped(object).await
    }

    /// Applies `object` like [`Ledger::apply`], but without the owner reference: for what the
    /// owner makes yet must outlive it (a volume of backups). Without a controller reference it
    /// is never pruned, and the garbage collector leaves it alone; nor can it be told from one
    /// someone else made, so only what holds nothing secret goes this way.
    pub async fn apply_unowned<K: Owned>(&self, mut object: K) -> Result<K, KubeError> {
        self.stamp_unowned(object.meta_mut());
        self.apply_stamped(object).await
    }

    async fn apply_stamped<K: Owned>(&self, object: K) -> Result<K, KubeError> {
        let name = object.name_any();
        let stored = self
            .api::<K>()
            .patch(&name, &apply_params(), &Patch::Apply(&object))
            .await
            .map_err(KubeError::of::<K>(Verb::Apply, &name))?;
        self.record(&K::kind(&()), &name);
        Ok(stored)
    }

    /// A JSON merge patch of part of an object the owner does not own whole (the size a volume
    /// claim requests, which the claim's provisioner acts on), under the one field manager.
    /// Not recorded as written: the object is not the owner's to prune.
    pub async fn merge_patch<K: Owned>(&self, name: &str, body: &serde_json::Value) -> Result<K, KubeError> {
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
        self.api::<K>().patch(name, &params, &Patch::Merge(body)).await.map_err(KubeError::of::<K>(Verb::Patch, name))
    }

    /// Applies an object of an API the operator has no type for (cert-manager's Certificate).
    pub async fn apply_dynamic(
        &self,
        resource: &ApiResource,
        mut object: DynamicObject,
    ) -> Result<DynamicObject, KubeError> {
        self.stamp(&mut object.metadata);
        let name = object.name_any();
        let api = self.dynamic_api(resource);
        let existing = api
            .get_metadata_opt(&name)
            .await
            .map_err(|source| KubeError::new(Verb::Get, resource.kind.clone(), &name, source))?;
        self.ours_or_absent(&resource.kind, &name, existing.as_ref().map(|e| &e.metadata))?;
        let stored = api
            .patch(&name, &apply_params(), &Patch::Apply(&object))
            .await
            .map_err(|source| KubeError::new(Verb::Apply, resource.kind.clone(), &name, source))?;
        self.record(&resource.kind, &name);
        Ok(stored)
    }

    /// Creates `object` unless an object of that name exists, and returns the object that
    /// exists now and whether this call created it. For Jobs: their pod template cannot change,
    /// and an existing Job, running, finished or failed, is exactly what must be observed.
    pub async fn create_once<K: Owned>(&self, mut object: K) -> Result<(K, bool), KubeError> {
        self.stamp(object.meta_mut());
        let name = object.name_any();
        self.record(&K::kind(&()), &name);
        if let Some(existing) = self.get::<K>(&name).await? {
            return self.controlled(existing).map(|existing| (existing, false));
        }
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
        match self.api::<K>().create(&params, &object).await {
            Ok(created) => Ok((created, true)),
            // Created concurrently (a restarted operator, a second reconcile): the same object.
            Err(kube::Error::Api(status)) if status.code == 409 => match self.get::<K>(&name).await? {
                Some(existing) => self.controlled(existing).map(|existing| (existing, false)),
                None => Err(KubeError::new(Verb::Create, K::kind(&()).into_owned(), name, kube::Error::Api(status))),
            },
            Err(source) => Err(KubeError::new(Verb::Create, K::kind(&()).into_owned(), name, source)),
        }
    }

    /// `object`, when the owner controls it; otherwise it is in the way (see
    /// [`KubeError::in_the_way`]): an object of a predictable name that someone else created is
    /// never taken for the owner's.
    pub fn controlled<K: Owned>(&self, object: K) -> Result<K, KubeError> {
        if controlled_by(object.meta(), &self.owner.uid) {
            return Ok(object);
        }
        Err(self.in_the_way(K::kind(&()).into_owned(), &object.name_any()))
    }

    /// Nothing of that name exists, or the owner controls what does: an apply may go ahead.
    fn ours_or_absent(&self, kind: &str, name: &str, existing: Option<&ObjectMeta>) -> Result<(), KubeError> {
        match existing {
            Some(meta) if !controlled_by(meta, &self.owner.uid) => Err(self.in_the_way(kind.to_string(), name)),
            _ => Ok(()),
        }
    }

    fn in_the_way(&self, kind: String, name: &str) -> KubeError {
        KubeError::in_the_way(kind, name, (&self.owner.kind, &self.owner.name))
    }

    fn selector(&self) -> String {
        self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }

    /// Deletes the objects of kind `K` in this scope that the owner controls and this
    /// reconcile did not write; returns their names.
    pub async fn prune<K: Owned>(&self) -> Result<Vec<String>, KubeError> {
        let kind = K::kind(&()).into_owned();
        let api = self.api::<K>();
        let listed = api
            .list_metadata(&ListParams::default().labels(&self.selector()))
            .await
            .map_err(|source| KubeError::new(Verb::List, kind.clone(), self.selector(), source))?;
        let mut deleted = Vec::new();
        for item in listed.items {
            let name = item.name_any();
            if self.prunable(&kind, &item.metadata) {
                delete(&api, &kind, &name).await?;
                deleted.push(name);
            }
        }
        Ok(deleted)
    }

    /// [`Ledger::prune`] for an API the operator has no type for (an optional one, such as
    /// cert-manager's). An API that is not installed has nothing to prune, and neither has one
    /// the operator may not list: its permission comes with the optional feature that writes
    /// such objects, so none was written without it.
    pub async fn prune_dynamic(&self, resource: &ApiResource) -> Result<Vec<String>, KubeError> {
        let api = self.dynamic_api(resource);
        let listed = match api.list_metadata(&ListParams::default().labels(&self.selector())).await {
            Ok(listed) => listed,
            Err(err) if nothing_to_prune(&err) => return Ok(Vec::new()),
            Err(source) => return Err(KubeError::new(Verb::List, resource.kind.clone(), self.selector(), source)),
        };
        let mut deleted = Vec::new();
        for item in listed.items {
            let name = item.name_any();
            if self.prunable(&resource.kind, &item.metadata) {
                delete(&api, &resource.kind, &name).await?;
                deleted.push(name);
            }
        }
        Ok(deleted)
    }

    fn prunable(&self, kind: &str, meta: &ObjectMeta) -> bool {
        let name = meta.name.as_deref().unwrap_or_default();
        meta.deletion_timestamp.is_none() && controlled_by(meta, &self.owner.uid) && !self.was_written(kind, name)
    }
}

/// A list of an optional API that says there can be nothing to prune: the API is not
/// installed (404), or the operator may not read it (403), so it wrote none.
fn nothing_to_prune(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404 || status.code == 403)
}

async fn delete<K>(api: &Api<K>, kind: &str, name: &str) -> Result<(), KubeError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(KubeError::new(Verb::Delete, kind.to_string(), name, source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn owner() -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("owner".into()),
                namespace: Some("ns".into()),
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    async fn ledger() -> Ledger {
        // A client that is never called: these tests exercise only local bookkeeping.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let client = Client::try_from(config).expect("client");
        Ledger::new(client, &owner(), [("app".to_string(), "x".to_string())].into()).expect("stored owner")
    }

    #[tokio::test]
    async fn every_object_gets_the_namespace_owner_and_scope_labels() {
        let ledger = ledger().await.scoped([("component".to_string(), "db".to_string())]);
        let mut meta = ObjectMeta {
            name: Some("x".into()),
            labels: Some([("app".to_string(), "mine".to_string()), ("own".to_string(), "kept".to_string())].into()),
            ..Default::default()
        };
        ledger.stamp(&mut meta);
        ledger.stamp(&mut meta);
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
        let labels = meta.labels.expect("labels");
        assert_eq!(labels.get("app").map(String::as_str), Some("x"), "the scope wins: prunes select by it");
        assert_eq!(labels.get("own").map(String::as_str), Some("kept"));
        assert_eq!(labels.get(MANAGED_BY_LABEL).map(String::as_str), Some(MANAGED_BY));
        assert_eq!(labels.get("component").map(String::as_str), Some("db"));
        let owners = meta.owner_references.expect("owners");
        assert_eq!(owners.len(), 1, "stamped once");
        assert_eq!((owners[0].uid.as_str(), owners[0].controller), ("uid-1", Some(true)));
    }

    #[test]
    fn an_optional_api_that_is_missing_or_forbidden_has_nothing_to_prune() {
        let status = |code: u16| {
            let status: kube::core::Status =
                serde_json::from_value(serde_json::json!({"code": code, "message": "x"})).expect("a Status");
            kube::Error::Api(Box::new(status))
        };
        assert!(nothing_to_prune(&status(404)));
        assert!(nothing_to_prune(&status(403)));
        assert!(!nothing_to_prune(&status(500)), "a server error is worth retrying");
        assert!(!nothing_to_prune(&status(409)));
    }

    #[tokio::test]
    async fn an_unowned_object_gets_the_scope_but_no_owner_and_is_never_pruned() {
        let ledger = ledger().await;
        let mut meta = ObjectMeta { name: Some("backups".into()), ..Default::default() };
        ledger.stamp_unowned(&mut meta);
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
        assert_eq!(meta.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str), Some("x"));
        assert_eq!(meta.owner_references, None);
        assert!(!ledger.prunable("PersistentVolumeClaim", &meta), "nothing controls it");
    }

    #[tokio::test]
    async fn an_apply_goes_ahead_only_over_nothing_or_what_the_owner_controls() {
        let ledger = ledger().await;
        let meta = |uid: &str| ObjectMeta {
            owner_references: Some(vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(ledger.ours_or_absent("Secret", "x", None).is_ok());
        assert!(ledger.ours_or_absent("Secret", "x", Some(&meta("uid-1"))).is_ok());
        let theirs = ledger.ours_or_absent("Secret", "x", Some(&meta("someone-else"))).expect_err("in the way");
        assert!(theirs.is_in_the_way(), "{theirs}");
        assert!(ledger.ours_or_absent("Secret", "x", Some(&ObjectMeta::default())).is_err(), "nobody's is not ours");
    }

    #[tokio::test]
    async fn only_controlled_objects_not_written_are_pruned() {
        let ledger = ledger().await;
        let view = ledger.scoped([("component".to_string(), "db".to_string())]);
        view.keep("Job", "current");
        let meta = |name: &str, uid: &str| ObjectMeta {
            name: Some(name.into()),
            owner_references: Some(vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(!ledger.prunable("Job", &meta("current", "uid-1")), "written through a view counts");
        assert!(ledger.prunable("Job", &meta("old", "uid-1")));
        assert!(!ledger.prunable("Job", &meta("old", "someone-else")), "never what another owner controls");
        assert!(!ledger.prunable("Secret", &meta("current", "someone-else")));
        assert_eq!(ledger.selector(), "app=x,app.kubernetes.io/managed-by=ferrometal");
        assert_eq!(view.selector(), "app=x,app.kubernetes.io/managed-by=ferrometal,component=db");
    }
}
