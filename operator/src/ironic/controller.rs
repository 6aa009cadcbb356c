//! The controller: what it watches, and the reconcile and error policy around the pipeline.
//!
//! Besides the Ironics themselves it watches what it creates (Deployments, DaemonSets,
//! Services, Ingresses, Jobs, the managed database's StatefulSet, Secrets, ConfigMaps,
//! through their owner references) and the
//! user's Secrets and ConfigMaps an Ironic refers to, so that a rotated password or
//! certificate is rolled out at once.

use super::error::ReconcileError;
use super::linked::{self, SourceKind};
use super::names::{FINALIZER, IRONIC_LABEL, Names};
use super::reconcile::{self, Ctx};
use crds::ironic::Ironic;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// One Api for the watched namespace, or for all.
fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// The Ironics that `object` (a Secret or ConfigMap) concerns: its controlling Ironic, and
/// every Ironic of its namespace that refers to it by name.
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
            && linked::watched(&ironic.spec, &Names::of(&ironic)).iter().any(|(k, n)| *k == kind && *n == name)
        {
            out.push(ObjectRef::from_obj(ironic.as_ref()));
        }
    }
    out
}

/// Runs the controller over one namespace (or all) until `shutdown`.
pub async fn run_scope(ctx: Arc<Ctx>, namespace: Option<String>, shutdown: CancellationToken) {
    let client = ctx.shared.client.clone();
    let ns = namespace.as_deref();
    let controller = Controller::new(api::<Ironic>(&client, ns), watcher::Config::default());
    let (secret_store, config_map_store) = (controller.store(), controller.store());
    // Owned objects carry the Ironic's name as a label; only those are watched.
    let owned = || watcher::Config::default().labels(IRONIC_LABEL);
    controller
        .owns(api::<Deployment>(&client, ns), owned())
        .owns(api::<DaemonSet>(&client, ns), owned())
        .owns(api::<Service>(&client, ns), owned())
        .owns(api::<Ingress>(&client, ns), owned())
        .owns(api::<Job>(&client, ns), owned())
        // The managed database's StatefulSet: its pod becoming ready moves the sequence on.
        .owns(api::<StatefulSet>(&client, ns), owned())
        .watches(api::<Secret>(&client, ns), watcher::Config::default(), move |secret| {
            concerned(&secret_store, SourceKind::Secret, &secret.metadata)
        })
        .watches(api::<ConfigMap>(&client, ns), watcher::Config::default(), move |config_map| {
            concerned(&config_map_store, SourceKind::ConfigMap, &config_map.metadata)
        })
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %crate::kube::error::chain(&err), "ironic controller event");
            }
        })
        .await;
}

async fn reconcile(ironic: Arc<Ironic>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let metrics = ctx.shared.metrics.clone();
    let _timer = metrics.reconcile("ironic");
    let namespace = ironic.namespace().ok_or(ReconcileError::NoNamespace)?;
    let span =
        tracing::info_span!("reconcile", controller = "ironic", namespace = %namespace, name = %ironic.name_any());
    async move {
        let api: Api<Ironic> = Api::namespaced(ctx.shared.client.clone(), &namespace);
        finalizer(&api, FINALIZER, ironic, |event| async {
            match event {
                Event::Apply(ironic) => reconcile::apply(&ironic, &ctx).await,
                Event::Cleanup(ironic) => reconcile::cleanup(&ironic, &ctx).await,
            }
        })
        .await
        .map_err(|err| ReconcileError::Finalizer(Box::new(err)))
    }
    .instrument(span)
    .await
}

fn error_policy(ironic: Arc<Ironic>, err: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    // The finalizer wraps the pipeline's error; report the pipeline's.
    let inner = match err {
        ReconcileError::Finalizer(inner) => match inner.as_ref() {
            kube::runtime::finalizer::Error::ApplyFailed(e) | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
            _ => err,
        },
        other => other,
    };
    tracing::warn!(
        namespace = ?ironic.namespace(),
        name = %ironic.name_any(),
        error = %crate::kube::error::chain(inner),
        "ironic reconcile failed; retrying"
    );
    ctx.shared.metrics.reconcile_failed("ironic", inner.metric_label());
    Action::requeue(ctx.config.retry_interval)
}
