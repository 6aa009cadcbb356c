//! Wiring: one kube-runtime controller per watched scope, woken by its NodeSets, the
//! NodeSetServices they list, the BareMetalHosts they claim (by label) and the free ones a
//! waiting host could claim, HardwareData, the Jobs and inventory Secrets they own, and the
//! Secrets and ConfigMaps they read (by metadata: `sources`). Every watch but the NodeSets' and
//! the metadata ones feeds a reflector store that reconciles read instead of the API.

use super::claims::Owner;
use super::config::Config;
use super::dereference::Caches;
use super::job::COMPONENT;
use super::memory::Memory;
use super::reconcile::{CONTROLLER, NodeSetReconciler};
use super::record;
use super::service_status::{self, ServiceStatusReconciler};
use super::validate::{Reach, bmh_namespace};
use crate::install::rbac::table::NODESET;
use crate::kit::backoff::Backoff;
use crate::kit::cache::{self, reflected, reflected_with_owners};
use crate::kit::names::COMPONENT_LABEL;
use crate::kit::runner::{Runner, Stopped, drive, fan_out};
use crate::kit::{Context, Scope};
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings};
use crds::hardwaredata::HardwareData;
use crds::nodeset::{NODESET_LABEL, NodeSet, SourceKind, SourceRef};
use crds::nodesetservice::NodeSetService;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::PartialObjectMeta;
use kube::runtime::controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Runs the NodeSet controller until `shutdown`.
pub(crate) async fn run(ctx: Arc<Context>, config: Config, shutdown: CancellationToken) -> Result<(), Stopped> {
    let memory = Arc::new(Memory::default());
    tracing::info!(
        concurrency = config.concurrency,
        job_history = config.job_history,
        "starting the NodeSet controller"
    );
    let watched = Reach { watched: ctx.namespaces.clone(), pools: ctx.host_pools.clone() };
    fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let (ctx, config, memory, watched, shutdown) =
            (ctx.clone(), config.clone(), memory.clone(), watched.clone(), shutdown.clone());
        async move { run_scope(ctx, scope, config, memory, watched, shutdown).await }
    })
    .await?;
    tracing::info!("the NodeSet controller stopped");
    Ok(())
}

// What the watches below and the finalizer use, checked against the RBAC table at compile time.
crate::install::rbac::require_access!(NODESET, NodeSet: Get, List, Watch, Patch);
crate::install::rbac::require_access!(NODESET, NodeSet, status: Patch);
crate::install::rbac::require_access!(NODESET, [BareMetalHost, HardwareData, HostFirmwareSettings, HostFirmwareComponents, NodeSetService, Job, ConfigMap, Secret]: List, Watch);
crate::install::rbac::require_access!(NODESET, [HostFirmwareSettings, HostFirmwareComponents]: Patch);

async fn run_scope(
    ctx: Arc<Context>,
    scope: Scope,
    config: Config,
    memory: Arc<Memory>,
    watched: Reach,
    shutdown: CancellationToken,
) {
    let controller = cache::controller(scope.api::<NodeSet>(), cache::paged().any_semantic())
        .with_config(controller::Config::default().concurrency(config.concurrency));
    let nodesets = controller.store();
    let (hosts, host_events) = reflected(scope.api::<BareMetalHost>(), cache::paged());
    let (hardware, hardware_events) = reflected(scope.api::<HardwareData>(), cache::paged());
    // Who applied what is read from their managed fields (`firmware_parts::owned`).
    let (settings, settings_events) = reflected_with_owners(scope.api::<HostFirmwareSettings>(), cache::paged());
    let (components, components_events) = reflected_with_owners(scope.api::<HostFirmwareComponents>(), cache::paged());
    let (services, service_events) = reflected(scope.api::<NodeSetService>(), cache::paged());
    let owned = cache::paged().labels(&format!("{COMPONENT_LABEL}={COMPONENT}"));
    let (jobs, job_events) = reflected(scope.api::<Job>(), owned.clone());
    // Only the records: written by this controller, read back after a recreate.
    let records_only = cache::paged().labels(&format!("{COMPONENT_LABEL}={}", record::COMPONENT));
    let (records, record_events) = reflected(scope.api::<ConfigMap>(), records_only);
    // Only their metadata: an inventory's content never needs to be cached.
    let secret_events = watcher(scope.api::<PartialObjectMeta<Secret>>(), owned).default_backoff().touched_objects();
    // What variablesFrom and services' Jobs read: by metadata only, every one of the scope, so
    // a change (a new resourceVersion) wakes the NodeSets that name it; only they read it.
    let source_secrets =
        watcher(scope.api::<PartialObjectMeta<Secret>>(), cache::paged()).default_backoff().touched_objects();
    let source_maps =
        watcher(scope.api::<PartialObjectMeta<ConfigMap>>(), cache::paged()).default_backoff().touched_objects();

    let (by_service, by_host, by_hardware) = (nodesets.clone(), nodesets.clone(), nodesets.clone());
    let by_settings = (nodesets.clone(), hosts.clone());
    let by_components = (nodesets.clone(), hosts.clone());
    let (by_secret, by_map) = ((nodesets.clone(), services.clone()), (nodesets.clone(), services.clone()));
    let controller = controller
        .watches_stream(service_events, move |service| listing(&by_service, &service))
        .watches_stream(host_events, move |host| claiming(&by_host, &host))
        .watches_stream(hardware_events, move |data| waiting(&by_hardware, &data.namespace().unwrap_or_default()))
        .watches_stream(settings_events, move |s| claimer(&by_settings.0, &by_settings.1, &s))
        .watches_stream(components_events, move |c| claimer(&by_components.0, &by_components.1, &c))
        .owns_stream(job_events)
        // Polled only to fill the records' cache: this controller writes them, nothing to wake.
        .watches_stream(record_events, |_| Vec::<ObjectRef<NodeSet>>::new())
        .owns_stream::<PartialObjectMeta<Secret>>(secret_events)
        .watches_stream(source_secrets, move |secret| reading(&by_secret.0, &by_secret.1, SourceKind::Secret, &secret))
        .watches_stream(source_maps, move |map| reading(&by_map.0, &by_map.1, SourceKind::ConfigMap, &map));

    let service_status = ServiceStatusReconciler {
        runner: Runner {
            controller: service_status::CONTROLLER,
            metrics: ctx.metrics(),
            backoff: Backoff::new(config.backoff_base, config.backoff_max),
        },
        client: ctx.client.clone(),
        reserved_account: ctx.reserved_account.clone(),
    };
    let service_controller = cache::controller(scope.api::<NodeSetService>(), cache::paged());
    let reconciler = Arc::new(NodeSetReconciler {
        runner: Runner {
            controller: CONTROLLER,
            metrics: ctx.metrics(),
            backoff: Backoff::new(config.backoff_base, config.backoff_max),
        },
        client: ctx.client.clone(),
        caches: Caches {
            nodesets,
            hosts,
            hardware,
            settings,
            components,
            services,
            jobs,
            records,
            reserved_account: ctx.reserved_account.clone(),
        },
        memory,
        publisher: ctx.publisher(CONTROLLER),
        watched,
        config,
    });
    tracing::info!(%scope, "watching NodeSets");
    tokio::join!(
        drive(controller, reconciler, shutdown.clone()),
        drive(service_controller, Arc::new(service_status), shutdown),
    );
}

/// The NodeSets of the service's namespace that list it.
fn listing(nodesets: &Store<NodeSet>, service: &NodeSetService) -> Vec<ObjectRef<NodeSet>> {
    let (namespace, name) = (service.namespace(), service.name_any());
    nodesets
        .state()
        .iter()
        .filter(|n| n.namespace() == namespace && n.spec.services.iter().flatten().any(|s| *s == name))
        .map(|n| ObjectRef::from_obj(n.as_ref()))
        .collect()
}

/// The NodeSets of the object's namespace that read it: their variablesFrom, or a service they
/// list, names it.
fn reading<K: kube::Resource>(
    nodesets: &Store<NodeSet>,
    services: &Store<NodeSetService>,
    kind: SourceKind,
    object: &PartialObjectMeta<K>,
) -> Vec<ObjectRef<NodeSet>> {
    let (namespace, name) = (object.namespace(), object.name_any());
    let source = SourceRef { kind, name };
    let local: Vec<_> = services.state_filter(|s| s.namespace() == namespace);
    nodesets
        .state()
        .iter()
        .filter(|n| n.namespace() == namespace)
        .filter(|n| {
            let lookup = |service: &str| local.iter().find(|s| s.name_any() == service).map(|s| s.as_ref());
            super::sources::referenced(&n.spec, lookup).contains(&source)
        })
        .map(|n| ObjectRef::from_obj(n.as_ref()))
        .collect()
}

/// The NodeSet that claimed `host`, and those waiting for a BareMetalHost in its namespace: a
/// host that becomes available may satisfy them.
fn claiming(nodesets: &Store<NodeSet>, host: &BareMetalHost) -> Vec<ObjectRef<NodeSet>> {
    let namespace = host.namespace().unwrap_or_default();
    let mut refs = waiting(nodesets, &namespace);
    refs.extend(claimed_by(nodesets, host));
    refs.sort_by_key(|r| (r.namespace.clone(), r.name.clone()));
    refs.dedup();
    refs
}

/// The NodeSet that claimed the BareMetalHost of a firmware object's name: what it handed over
/// was read, or the host was serviced.
fn claimer<K: kube::Resource>(
    nodesets: &Store<NodeSet>,
    hosts: &Store<BareMetalHost>,
    object: &K,
) -> Vec<ObjectRef<NodeSet>> {
    let key = ObjectRef::new(&object.name_any()).within(&object.namespace().unwrap_or_default());
    hosts.get(&key).map(|host| claimed_by(nodesets, &host)).unwrap_or_default()
}

/// The NodeSet whose claim `host` carries.
fn claimed_by(nodesets: &Store<NodeSet>, host: &BareMetalHost) -> Vec<ObjectRef<NodeSet>> {
    let Some(label) = host.labels().get(NODESET_LABEL) else { return Vec::new() };
    let namespace = host.namespace().unwrap_or_default();
    let consumer_namespace = host.spec.consumer_ref.as_ref().and_then(|c| c.namespace.clone()).unwrap_or(namespace);
    nodesets
        .state()
        .iter()
        .filter(|n| {
            let owner = Owner::of(n);
            owner.label == *label && owner.namespace == consumer_namespace
        })
        .map(|n| ObjectRef::from_obj(n.as_ref()))
        .collect()
}

/// NodeSets with BareMetalHosts in `namespace` and a host still without one.
fn waiting(nodesets: &Store<NodeSet>, namespace: &str) -> Vec<ObjectRef<NodeSet>> {
    nodesets
        .state()
        .iter()
        .filter(|n| !n.spec.pre_provisioned() && bmh_namespace(n) == namespace)
        .filter(|n| {
            let claimed = n.status.as_ref().and_then(|s| s.hosts.as_ref());
            n.spec
                .nodes
                .iter()
                .flatten()
                .any(|(host, _)| claimed.and_then(|c| c.get(host)).is_none_or(|h| h.bmh_ref.is_none()))
        })
        .map(|n| ObjectRef::from_obj(n.as_ref()))
        .collect()
}
