//! The controller: what it watches, and the reconcile the kit's runner calls around the
//! finalizer.
//!
//! Besides the Ironics themselves it watches what it creates (Deployments, DaemonSets,
//! Services, Ingresses, Jobs, the managed database's StatefulSet, Secrets, ConfigMaps,
//! through their owner references) and the user's Secrets and ConfigMaps an Ironic refers
//! to, so that a rotated password or certificate is rolled out at once: all by their metadata
//! only (owner references and a new resourceVersion are all a change needs), in pages of
//! `cache::PAGE_SIZE`, and only where an Ironic may run (`--ironic-namespaces`, in the
//! cluster-wide install). The Ironics are watched in the whole scope, so that one elsewhere is
//! told why it does not run.

use super::config::Config;
use super::error::Error;
use super::linked::{self, SourceKind};
use super::names::{FINALIZER, IRONIC_LABEL, Names};
use crate::install::rbac::table::IRONIC;
use crate::kit::backoff::Backoff;
use crate::kit::cache;
use crate::kit::discovery::Discovery;
use crate::kit::runner::{self, Reconcile, Runner};
use crate::kit::{Context, Publisher, Scope, finalizer};
use crds::ironic::Ironic;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The Ironic controller: what every reconcile shares.
pub(crate) struct IronicController {
    runner: Runner,
    pub(super) ctx: Arc<Context>,
    pub(super) config: Config,
    pub(super) publisher: Publisher,
    /// Whether optional APIs (the ServiceMonitor's) are installed, shared by every reconcile.
    pub(super) discovery: Discovery,
}

impl IronicController {
    pub(crate) fn new(ctx: Arc<Context>, config: Config) -> Self {
        let runner = Runner {
            controller: "ironic",
            metrics: ctx.metrics(),
            backoff: Backoff::new(config.retry_interval, config.retry_max_interval),
        };
        let publisher = ctx.publisher("ironic");
        let discovery = Discovery::new(config.api_discovery_refresh);
        Self { runner, ctx, config, publisher, discovery }
    }
}

impl Reconcile for IronicController {
    type Object = Ironic;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, ironic: Arc<Ironic>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move {
            let api: Api<Ironic> = Api::namespaced(self.ctx.client.clone(), &ironic.namespace().unwrap_or_default());
            let ours = finalizer::has(ironic.as_ref(), FINALIZER);
            if ironic.metadata.deletion_timestamp.is_some() {
                // Deleted: the cleanup once, while our finalizer holds the object, then it goes.
                if !ours {
                    return Ok(Action::await_change());
                }
                let action = self.cleanup(&ironic).await?;
                return match finalizer::remove(&api, ironic.as_ref(), FINALIZER).await {
                    Err(err) if !err.is_not_found() => Err(Error::Finalizer(err)),
                    _ => Ok(action),
                };
            }
            if !ours {
                // The patch's own watch event brings the next reconcile, finalizer in place.
                finalizer::add(&api, ironic.as_ref(), FINALIZER).await.map_err(Error::Finalizer)?;
                return Ok(Action::await_change());
            }
            self.apply(&ironic).await
        })
    }
}

/// The Ironics that `object` (a Secret or ConfigMap) concerns: its controlling Ironic, every
/// Ironic of its namespace that refers to it by name, and the one whose own objects take its
/// name.
fn concerned(store: &Store<Ironic>, kind: SourceKind, object: &kube::api::ObjectMeta) -> Vec<ObjectRef<Ironic>> {
    let namespace = object.namespace.clone().unwrap_or_default();
    let name = object.name.clone().unwrap_or_default();
    let mut out: Vec<ObjectRef<Ironic>> = object
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller == Some(true) && o.kind == "Ironic" && o.api_version.starts_with("ironic.metal3.io/"))
        .map(|o| ObjectRef::new(&o.name).within(&namespace))
        .collect();
    for ironic in store.state() {
        if ironic.namespace().as_deref() == Some(namespace.as_str())
            && (linked::watched(&ironic.spec, &Names::of(&ironic)).iter().any(|(k, n)| *k == kind && *n == name)
                || takes_a_name_of(&ironic, &name))
        {
            out.push(ObjectRef::from_obj(ironic.as_ref()));
        }
    }
    out
}

// What the watches below and the finalizer use, checked against the RBAC table at compile time:
// a watch the table does not grant does not build (the writes are checked where they are made).
crate::install::rbac::require_access!(IRONIC, Ironic: Get, List, Watch, Patch);
crate::install::rbac::require_access!(IRONIC, Ironic, status: Patch);
crate::install::rbac::require_access!(
    IRONIC,
    [Deployment, DaemonSet, Service, Ingress, Job, StatefulSet, Secret, ConfigMap]: List, Watch
);

/// True when `name` is one this Ironic's own objects take (`<ironic>-…`): an object of someone
/// else's there is in the way (the Ironic reports it and writes nothing over it), and its change
/// or removal is noticed at once rather than at the next retry, which may be minutes away.
fn takes_a_name_of(ironic: &Ironic, name: &str) -> bool {
    name.strip_prefix(ironic.name_any().as_str()).is_some_and(|rest| rest.starts_with('-'))
}

/// Changes of the `K`s in `scopes`, by their metadata, as one stream (none at all for no scope).
fn changes<K>(scopes: &[Scope], config: &watcher::Config) -> BoxStream<'static, watcher::Result<PartialObjectMeta<K>>>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    if scopes.is_empty() {
        return futures::stream::pending().boxed();
    }
    let each = scopes.iter().map(|scope| {
        watcher(scope.api::<PartialObjectMeta<K>>(), config.clone()).default_backoff().touched_objects().boxed()
    });
    futures::stream::select_all(each).boxed()
}

/// Runs the controller over one scope until `shutdown`.
pub(crate) async fn run_scope(controller: Arc<IronicController>, scope: Scope, shutdown: CancellationToken) {
    let watched = Controller::new(scope.api::<Ironic>(), cache::paged());
    let (secret_store, config_map_store) = (watched.store(), watched.store());
    let within = scope.within(controller.ctx.ironic_namespaces.listed());
    // Owned objects carry the Ironic's name as a label; only those are watched.
    let owned = cache::paged().labels(IRONIC_LABEL);
    // The user's Secrets and ConfigMaps an Ironic names: a new resourceVersion is all a
    // reconcile needs to read the one it refers to, and every Secret's content in the cluster
    // would otherwise stream through the operator and its memory.
    let (secret_changes, config_map_changes) =
        (changes::<Secret>(&within, &cache::paged()), changes::<ConfigMap>(&within, &cache::paged()));
    let watched = watched
        .owns_stream(changes::<Deployment>(&within, &owned))
        .owns_stream(changes::<DaemonSet>(&within, &owned))
        .owns_stream(changes::<Service>(&within, &owned))
        .owns_stream(changes::<Ingress>(&within, &owned))
        .owns_stream(changes::<Job>(&within, &owned))
        // The managed database's StatefulSet: its pod becoming ready moves the sequence on.
        .owns_stream(changes::<StatefulSet>(&within, &owned))
        .watches_stream(secret_changes, move |secret| concerned(&secret_store, SourceKind::Secret, &secret.metadata))
        .watches_stream(config_map_changes, move |config_map| {
            concerned(&config_map_store, SourceKind::ConfigMap, &config_map.metadata)
        });
    runner::drive(watched, controller, shutdown).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_under_a_name_of_the_ironics_own_concerns_it_and_a_mere_prefix_does_not() {
        let ironic = Ironic::new("ironic", Default::default());
        assert!(takes_a_name_of(&ironic, "ironic-htpasswd"));
        assert!(takes_a_name_of(&ironic, "ironic-mariadb-credentials"));
        assert!(!takes_a_name_of(&ironic, "ironicx-htpasswd"));
        assert!(!takes_a_name_of(&ironic, "ironic"));
        assert!(!takes_a_name_of(&ironic, "other-ironic-htpasswd"));
    }
}
