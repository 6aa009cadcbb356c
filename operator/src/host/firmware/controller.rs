//! Wiring: one controller of `HostFirmwareSettings` per watched scope, woken when a spec
//! changes (a new generation) and by its own requeues, never by its status writes, each of
//! which would cost Ironic a read for nothing.

use super::reconcile::{CONTROLLER, FirmwareReconciler};
use crate::host::context::HostContext;
use crate::kit::backoff::Backoff;
use crate::kit::cache::{lean, paged, within};
use crate::kit::runner::{Runner, Stopped, drive, fan_out};
use crate::kit::{Context, Scope};
use crds::firmware::HostFirmwareSettings;
use futures::StreamExt;
use kube::ResourceExt;
use kube::runtime::controller::{self, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareSettings: List, Watch);

/// Runs the controllers of every scope until `shutdown`.
pub(crate) async fn run(ctx: &Context, hosts: Arc<HostContext>, shutdown: CancellationToken) -> Result<(), Stopped> {
    let reconciler =
        Arc::new(FirmwareReconciler { runner: runner(ctx, CONTROLLER), publisher: ctx.publisher(CONTROLLER), hosts });
    fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let reads = reconciler.hosts.firmware.reads(scope.namespace().map(str::to_string));
        let controller = watch(&scope, &reconciler.hosts, named_after::<HostFirmwareSettings>).reconcile_on(reads);
        drive(controller, reconciler.clone(), shutdown.clone())
    })
    .await
}

/// The runner of a controller beside the host controller's (firmware settings, components, data
/// images): failed reconciles retried from 5 s up to 5 min.
pub(crate) fn runner(ctx: &Context, controller: &'static str) -> Runner {
    Runner {
        controller,
        metrics: ctx.metrics(),
        backoff: Backoff::new(Duration::from_secs(5), Duration::from_secs(300)),
    }
}

/// Woken by a new generation of a spec, and (`reconcile_on`) by the host controller when a
/// host has what it waited for. Shared by the kinds beside a host, each of which names its host
/// (`host_of`): only those of the hosts this replica serves are cached.
pub(crate) fn watch<K>(scope: &Scope, hosts: &HostContext, host_of: fn(&K) -> &str) -> Controller<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let config = hosts.config.clone();
    let served = move |object: &K| config.serves(&object.namespace().unwrap_or_default(), host_of(object));
    let trigger = watcher(scope.api::<K>(), paged().any_semantic())
        .default_backoff()
        .filter_map(move |event| std::future::ready(within(event, &served)))
        .modify(lean::<K>)
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    Controller::for_stream(trigger, store)
        .with_config(controller::Config::default().concurrency(hosts.config.concurrency))
}

/// The host of a kind named after it.
pub(crate) fn named_after<K: kube::Resource>(object: &K) -> &str {
    object.meta().name.as_deref().unwrap_or_default()
}
