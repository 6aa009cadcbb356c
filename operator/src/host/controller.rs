//! Wiring: one kube-runtime controller per watched scope (namespace, or
//! the whole cluster), fed by BareMetalHost events, by changes to the
//! Secrets hosts refer to, and by the bulk poller's wake-ups; and the poller
//! itself, shared by all of them.

use crate::host::Error;
use crate::host::capacity::Capacity;
use crate::host::config::Config;
use crate::host::connection::Provisioner;
use crate::host::metrics::IronicMetricsSync;
use crate::host::poller::Poller;
use crate::host::reconcile::{HostContext, Memory, error_policy, reconcile};
use crate::host::secrets;
use crate::host::wake::Wakeups;
use crate::kube::Context;
use crds::baremetalhost::BareMetalHost;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::controller::{self, Controller};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// What one controller watches: its hosts, the Secrets they may name, and
/// its namespace (`None` for the whole cluster).
type Scope = (Api<BareMetalHost>, Api<PartialObjectMeta<Secret>>, Option<String>);

/// Runs the host controller until `shutdown`.
pub async fn run(ctx: Arc<Context>, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    let wakeups = Arc::new(Wakeups::default());
    let client_metrics = Arc::new(ironic_client::Metrics::new());
    let host_ctx = Arc::new(HostContext {
        kube: ctx.client.clone(),
        metrics: ctx.metrics(),
        provisioner: Provisioner::new(
            config.ironic.clone(),
            ctx.client.clone(),
            config.ironic_timeout,
            client_metrics.clone(),
        ),
        poller: Poller::new(wakeups.clone(), config.fast_poll_interval, config.slow_poll_interval),
        capacity: Capacity::new(config.provisioning_limit, wakeups.clone()),
        events: ctx.events("host"),
        memory: Memory::default(),
        ironic_metrics: IronicMetricsSync::new(client_metrics, ctx.metrics()),
        permits: Semaphore::new(usize::from(config.concurrency.max(1))),
        config: config.clone(),
    });
    tracing::info!(
        ironic = ?config.ironic,
        provisioning_limit = config.provisioning_limit,
        concurrency = config.concurrency,
        "starting the host controller"
    );

    let scopes: Vec<Scope> = if ctx.namespaces.is_empty() {
        vec![(Api::all(ctx.client.clone()), Api::all(ctx.client.clone()), None)]
    } else {
        ctx.namespaces
            .iter()
            .map(|ns| {
                (Api::namespaced(ctx.client.clone(), ns), Api::namespaced(ctx.client.clone(), ns), Some(ns.clone()))
            })
            .collect()
    };

    let mut controllers = Vec::new();
    for (hosts, secret_api, namespace) in scopes {
        let token = shutdown.clone();
        let controller = Controller::new(hosts, watcher::Config::default().any_semantic())
            .with_config(controller::Config::default().concurrency(config.concurrency))
            .reconcile_on(wakeups.subscribe(namespace.clone()))
            .graceful_shutdown_on(async move { token.cancelled_owned().await });
        let store = controller.store();
        host_ctx.capacity.add_store(store.clone());
        // Only Secret metadata is watched: a change of resourceVersion is
        // all it takes to retry registration with fixed credentials.
        let secret_changes = watcher(secret_api, watcher::Config::default()).default_backoff().touched_objects();
        let controller = controller.watches_stream(secret_changes, move |secret| secrets::hosts_using(&store, &secret));
        let scope = namespace.unwrap_or_else(|| "all namespaces".into());
        controllers.push(controller.run(reconcile, error_policy, host_ctx.clone()).for_each(move |result| {
            if let Err(err) = result {
                match err {
                    // Reconcile failures are logged and counted by the error policy.
                    controller::Error::ReconcilerFailed(..) => {}
                    controller::Error::ObjectNotFound(obj) => tracing::debug!(%obj, "woken host is gone"),
                    other => {
                        tracing::warn!(scope = %scope, error = %crate::kube::error::chain(&other), "host controller")
                    }
                }
            }
            std::future::ready(())
        }));
    }

    let poller_ctx = host_ctx.clone();
    let poll = async move {
        poller_ctx
            .poller
            .run(&poller_ctx.provisioner, shutdown.clone(), |succeeded| {
                poller_ctx.ironic_metrics.sync();
                if succeeded {
                    poller_ctx.ironic_metrics.polled();
                }
            })
            .await;
    };
    futures::future::join(futures::future::join_all(controllers), poll).await;
    tracing::info!("the host controller stopped");
    Ok(())
}
