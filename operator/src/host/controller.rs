//! Wiring: one kube-runtime controller per watched scope (a namespace, or the whole cluster),
//! run by the kit's runner and fed by BareMetalHost events, by changes to the Secrets hosts
//! refer to, by the changes of their `PreprovisioningImage`s (with image building on), and by
//! the wake-ups of the bulk poller and the capacity limiter; the poller and the watch on the
//! limiter's promised slots, shared by all of them; and the controllers of the kinds beside
//! the host (firmware, data images, event subscriptions, our image builder), through the same
//! Ironic connection.

use crate::host::capacity::Capacity;
use crate::host::config::Config;
use crate::host::connection::Provisioner;
use crate::host::context::{CONTROLLER, HostContext};
use crate::host::index::HostIndex;
use crate::host::memory::Memory;
use crate::host::metrics::IronicMetricsSync;
use crate::host::poller::Poller;
use crate::host::shard::Shards;
use crate::host::trouble::Troubles;
use crate::host::wake::{Cause, Wakeups};
use crate::install::rbac::table::HOST;
use crate::kit::backoff::Backoff;
use crate::kit::cache;
use crate::kit::runner::{Runner, Stopped, drive, fan_out};
use crate::kit::{Context, Scope};
use crds::baremetalhost::BareMetalHost;
use crds::preprovisioningimage::PreprovisioningImage;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::PartialObjectMeta;
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Runs the host controller until `shutdown`.
pub(crate) async fn run(ctx: Arc<Context>, config: Config, shutdown: CancellationToken) -> Result<(), Stopped> {
    let wakeups = Arc::new(Wakeups::exported(&ctx.metrics()));
    let client_metrics = Arc::new(ironic_client::Metrics::new());
    // A failed reconcile (Ironic unreachable or locked, a conflict) is retried after about a
    // fast poll interval, doubling while it keeps failing, up to a slow one.
    let retry = config.fast_poll_interval.max(Duration::from_secs(1));
    let host_ctx = Arc::new(HostContext {
        runner: Runner {
            controller: CONTROLLER,
            metrics: ctx.metrics(),
            backoff: Backoff::new(retry, config.slow_poll_interval.max(retry)),
        },
        kube: ctx.client.clone(),
        provisioner: Provisioner::new(
            config.ironic.clone(),
            ctx.client.clone(),
            config.ironic_timeout,
            client_metrics.clone(),
        ),
        poller: Poller::new(wakeups.clone(), config.fast_poll_interval, config.slow_poll_interval)
            .of_shards(config.shards.as_ref().map(Shards::served).unwrap_or_default()),
        capacity: Capacity::new(config.own_provisioning_limit(), wakeups.clone()),
        publisher: ctx.publisher(CONTROLLER),
        memory: Memory::default(),
        troubles: Troubles::new(retry, config.slow_poll_interval.max(retry).saturating_mul(5)),
        ironic_metrics: IronicMetricsSync::new(client_metrics, ctx.metrics()),
        firmware: crate::host::firmware::Wanted::new(wakeups.clone(), Cause::Settings),
        components: crate::host::firmware::WantedUpdates::new(wakeups.clone(), Cause::Components),
        permits: Semaphore::new(usize::from(config.concurrency.max(1))),
        wakeups: wakeups.clone(),
        config: config.clone(),
    });
    tracing::info!(
        ironic = ?config.ironic,
        provisioning_limit = config.own_provisioning_limit(),
        shards = ?config.shards.as_ref().map(Shards::served),
        concurrency = config.concurrency,
        "starting the host controller"
    );

    let controllers = fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let controller = watch(&host_ctx, &wakeups, &scope);
        drive(controller, host_ctx.clone(), shutdown.clone())
    });
    let (poller_ctx, poller_shutdown) = (host_ctx.clone(), shutdown.clone());
    let poll = async move {
        poller_ctx
            .poller
            .run(&poller_ctx.provisioner, poller_shutdown, |succeeded| {
                poller_ctx.ironic_metrics.sync();
                if succeeded {
                    poller_ctx.ironic_metrics.polled();
                    // Slots held by hosts whose node rests are free for others until they ask again.
                    poller_ctx.capacity.rest(|counted| poller_ctx.poller.resting(counted));
                }
            })
            .await;
    };
    let (promises_ctx, promises_shutdown) = (host_ctx.clone(), shutdown.clone());
    let promises = async move { promises_ctx.capacity.watch_promises(promises_shutdown).await };
    let firmware = crate::host::firmware::run(&ctx, host_ctx.clone(), shutdown.clone());
    let components = crate::host::components::run(&ctx, host_ctx.clone(), shutdown.clone());
    let data_images = crate::host::dataimage::run(&ctx, host_ctx.clone(), shutdown.clone());
    let subscriptions = crate::host::subscription::run(&ctx, host_ctx.clone(), shutdown.clone());
    let images = crate::host::preprov::run(&ctx, host_ctx.clone(), shutdown.clone());
    let (controllers, ((), ()), firmware, components, (data_images, subscriptions, images)) = futures::future::join5(
        controllers,
        futures::future::join(poll, promises),
        firmware,
        components,
        futures::future::join3(data_images, subscriptions, images),
    )
    .await;
    controllers?;
    firmware?;
    components?;
    data_images?;
    subscriptions?;
    images?;
    tracing::info!("the host controller stopped");
    Ok(())
}

// What the watches below and the finalizer use, checked against the RBAC table at compile time.
crate::install::rbac::require_access!(HOST, BareMetalHost: Get, List, Watch, Patch);
crate::install::rbac::require_access!(HOST, BareMetalHost, status: Patch);
crate::install::rbac::require_access!(HOST, Secret: List, Watch);
crate::install::rbac::require_access!(HOST, PreprovisioningImage: List, Watch);

/// The controller of one scope: its hosts, woken by their events, by the poller and the
/// capacity limiter, and by changes to the Secrets they name. Its cache of hosts, and the index
/// kept from the same events (busy hosts, the Secrets each names), join the capacity count
/// before anything runs.
fn watch(ctx: &Arc<HostContext>, wakeups: &Wakeups, scope: &Scope) -> Controller<BareMetalHost> {
    let index = Arc::new(HostIndex::default());
    let observed = index.clone();
    let api = scope.api::<BareMetalHost>();
    let (writer, config, watched) = (ctx.clone(), ctx.clone(), ctx.clone());
    let controller = cache::observed_controller(
        api,
        cache::paged().any_semantic(),
        move |host: &BareMetalHost| config.config.serves(&host.namespace().unwrap_or_default(), &host.name_any()),
        move |e| {
            observed.apply(e);
            // A live event is in the store now; a relist's objects only once it is done.
            if let watcher::Event::Apply(host) = e {
                watched.memory.cached(host);
            }
        },
        move |host| writer.memory.own.claims(host),
    )
    .with_config(controller::Config::default().concurrency(ctx.config.concurrency))
    .reconcile_on(wakeups.subscribe(scope.namespace().map(str::to_string)));
    ctx.capacity.add_scope(controller.store(), index.clone());
    // Only Secret metadata is watched: a change of resourceVersion is
    // all it takes to retry registration with fixed credentials.
    let secret_changes =
        watcher(scope.api::<PartialObjectMeta<Secret>>(), cache::paged()).default_backoff().touched_objects();
    let controller = controller.watches_stream(secret_changes, move |secret| {
        index.using(&secret.namespace().unwrap_or_default(), &secret.name_any())
    });
    // A host waiting for its deploy image (`--build-preprov-image`) is woken by any change of
    // the image named for it (a builder writing its status): metadata is all it takes to know
    // one happened. Watched with image building off too, where images are few or none: the
    // replica's readiness waits for every watch of the component.
    let image_changes = watcher(scope.api::<PartialObjectMeta<PreprovisioningImage>>(), cache::paged())
        .default_backoff()
        .touched_objects();
    controller.watches_stream(image_changes, |image| {
        Some(ObjectRef::<BareMetalHost>::new(&image.name_any()).within(&image.namespace().unwrap_or_default()))
    })
}
