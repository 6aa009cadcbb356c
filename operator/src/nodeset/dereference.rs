//! Dereference: what a NodeSet depends on, read from the watch caches (BareMetalHosts,
//! HardwareData, NodeSetServices, Jobs), never with a request per host. The only requests are
//! a list of a failed Job's pods, once per failed Job, to quote the container's failure.

use super::claims::Owner;
use super::facts::Facts;
use super::job;
use super::memory::Memory;
use super::record;
use super::validate::bmh_namespace;
use crate::kit::error::{KubeError, Verb};
use crate::kit::names::controlled_by;
use crate::kit::observe::failure_message;
use crds::FieldError;
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings};
use crds::hardwaredata::HardwareData;
use crds::nodeset::{NodeSet, Sources};
use crds::nodesetservice::{NodeSetService, ReservedAccount, validate_nodeset_service, validate_service_account};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a reconcile waits for the caches to hold their first list.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The watch caches of one scope.
#[derive(Clone)]
pub(super) struct Caches {
    pub nodesets: Store<NodeSet>,
    pub hosts: Store<BareMetalHost>,
    pub hardware: Store<HardwareData>,
    /// The BareMetalHosts' BIOS settings objects, which NodeSets with firmwareSettings write.
    pub settings: Store<HostFirmwareSettings>,
    /// Their firmware components objects, which NodeSets with firmwareUpdates write.
    pub components: Store<HostFirmwareComponents>,
    pub services: Store<NodeSetService>,
    pub jobs: Store<Job>,
    /// The records of what ran on preProvisioned NodeSets' hosts (`record`).
    pub records: Store<ConfigMap>,
    /// The operator's own ServiceAccount, which no service may run as.
    pub reserved_account: Option<ReservedAccount>,
}

/// Why the facts could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    /// A cache has not listed its objects yet: acting on an empty cache would, for one, report
    /// every claimed host as unclaimed.
    #[error("the {0} watch cache is not ready")]
    NotReady(&'static str),
    #[error(transparent)]
    Kube(#[from] KubeError),
}

impl Caches {
    /// Waits until every cache holds its first list.
    pub(super) async fn ready(&self) -> Result<(), Error> {
        let all = async {
            self.nodesets.wait_until_ready().await.map_err(|_| "NodeSet")?;
            self.hosts.wait_until_ready().await.map_err(|_| "BareMetalHost")?;
            self.hardware.wait_until_ready().await.map_err(|_| "HardwareData")?;
            self.settings.wait_until_ready().await.map_err(|_| "HostFirmwareSettings")?;
            self.components.wait_until_ready().await.map_err(|_| "HostFirmwareComponents")?;
            self.services.wait_until_ready().await.map_err(|_| "NodeSetService")?;
            self.jobs.wait_until_ready().await.map_err(|_| "Job")?;
            self.records.wait_until_ready().await.map_err(|_| "ConfigMap")?;
            Ok::<(), &'static str>(())
        };
        match tokio::time::timeout(READY_TIMEOUT, all).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(what)) => Err(Error::NotReady(what)),
            Err(_) => Err(Error::NotReady("NodeSet controller's")),
        }
    }

    /// The NodeSetServices of `namespace` by name, each with what its rules find wrong with
    /// it (checked here too: it may have got in while the webhook was down).
    pub(super) fn services_of(&self, namespace: &str) -> BTreeMap<String, Vec<FieldError>> {
        self.services
            .state()
            .iter()
            .filter(|s| s.namespace().as_deref() == Some(namespace))
            .map(|s| (s.name_any(), self.problems(s)))
            .collect()
    }

    /// What a service's rules find wrong with it: its own, and the account it may not use.
    fn problems(&self, service: &NodeSetService) -> Vec<FieldError> {
        let namespace = service.namespace().unwrap_or_default();
        let mut problems = validate_nodeset_service(&service.spec);
        problems.extend(validate_service_account(&service.spec, &namespace, self.reserved_account.as_ref()));
        problems
    }
}

/// The BareMetalHosts of `namespace`, each the freshest copy known.
pub(super) fn hosts(caches: &Caches, memory: &Memory, namespace: &str) -> Vec<std::sync::Arc<BareMetalHost>> {
    let cached = caches.hosts.state_filter(|h| h.namespace().as_deref() == Some(namespace));
    let mut hosts: Vec<_> = cached.into_iter().map(|h| memory.hosts.freshest(h)).collect();
    hosts.sort_by_key(|h| h.name_any());
    hosts
}

/// Reads the facts of `nodeset`.
pub(super) async fn run(
    caches: &Caches,
    memory: &Memory,
    client: &Client,
    nodeset: &NodeSet,
    now: &Time,
) -> Result<Facts, Error> {
    let namespace = nodeset.namespace().unwrap_or_default();
    let uid = nodeset.uid().unwrap_or_default();
    let bmh_namespace = bmh_namespace(nodeset);
    let mut facts = Facts { bmh_namespace: bmh_namespace.clone(), ..Facts::default() };
    if !nodeset.spec.pre_provisioned() {
        facts.hosts = hosts(caches, memory, &bmh_namespace);
        for host in &facts.hosts {
            let name = host.name_any();
            let data = caches.hardware.get(&ObjectRef::new(&name).within(&bmh_namespace));
            let hardware = data
                .and_then(|d| d.spec.hardware.clone())
                .or_else(|| host.status.as_ref().and_then(|s| s.hardware.clone()));
            if let Some(hardware) = hardware {
                facts.hardware.insert(name, hardware);
            }
        }
        facts.lost = memory.still_lost(&facts.hosts);
        for settings in caches.settings.state_filter(|s| s.namespace().as_deref() == Some(bmh_namespace.as_str())) {
            facts.firmware.insert(settings.name_any(), memory.settings.freshest(settings));
        }
        for components in caches.components.state_filter(|c| c.namespace().as_deref() == Some(bmh_namespace.as_str())) {
            facts.components.insert(components.name_any(), memory.components.freshest(components));
        }
    }
    for name in record::names(&Owner::of(nodeset)) {
        let cached = caches.records.get(&ObjectRef::new(&name).within(&namespace));
        if let Some(found) = memory.records.latest(&namespace, &name, cached) {
            facts.records.insert(name, record::read(&found));
        }
    }
    let listed: BTreeSet<&String> = nodeset.spec.services.iter().flatten().collect();
    for service in caches.services.state() {
        // An invalid service is not run: as for a missing one, nothing new runs.
        if service.namespace().as_deref() == Some(namespace.as_str())
            && listed.contains(&service.name_any())
            && caches.problems(&service).is_empty()
        {
            facts.services.insert(service.name_any(), service);
        }
    }
    let cached = caches
        .jobs
        .state_filter(|j| j.namespace().as_deref() == Some(namespace.as_str()) && controlled_by(&j.metadata, &uid));
    let jobs = memory.jobs.overlay(cached, &namespace, |j| controlled_by(&j.metadata, &uid));
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    for job in jobs {
        let failed = job
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Failed" && c.status == "True");
        let failure = if failed { Some(failure(&pods, memory, &job).await?) } else { None };
        if let Some(observed) = job::observe(&job, failure.as_deref(), now) {
            facts.jobs.push(observed);
        }
    }
    Ok(facts)
}

/// The Secrets and ConfigMaps the NodeSet's variablesFrom and its listed services name, read
/// by GET in its own namespace (`sources`).
pub(super) async fn sources(caches: &Caches, client: &Client, nodeset: &NodeSet) -> Result<Sources, Error> {
    let namespace = nodeset.namespace().unwrap_or_default();
    let services = caches.services.state_filter(|s| s.namespace().as_deref() == Some(namespace.as_str()));
    let wanted = super::sources::referenced(&nodeset.spec, |name| {
        services.iter().find(|s| s.name_any() == name).map(|s| s.as_ref())
    });
    Ok(super::sources::read(client, nodeset, &wanted).await?)
}

/// The failure of a failed Job, quoting its container.
async fn failure(pods: &Api<Pod>, memory: &Memory, job: &Job) -> Result<String, KubeError> {
    let uid = job.uid().unwrap_or_default();
    if let Some(message) = memory.failure(&uid) {
        return Ok(message);
    }
    let selector = format!("job-name={}", job.name_any());
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(KubeError::of::<Pod>(Verb::List, &selector))?;
    let message = failure_message(job, &listed.items);
    memory.remember_failure(&uid, &message);
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;

    fn caches(services: Vec<NodeSetService>, reserved: Option<ReservedAccount>) -> Caches {
        let mut writer: Writer<NodeSetService> = Writer::default();
        let store = writer.as_reader();
        writer.apply_watcher_event(&Event::Init);
        for service in services {
            writer.apply_watcher_event(&Event::InitApply(service));
        }
        writer.apply_watcher_event(&Event::InitDone);
        Caches {
            nodesets: Writer::default().as_reader(),
            hosts: Writer::default().as_reader(),
            hardware: Writer::default().as_reader(),
            settings: Writer::default().as_reader(),
            components: Writer::default().as_reader(),
            services: store,
            jobs: Writer::default().as_reader(),
            records: Writer::default().as_reader(),
            reserved_account: reserved,
        }
    }

    fn service(namespace: &str, name: &str, account: &str) -> NodeSetService {
        serde_json::from_value(serde_json::json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"job": {"image": "registry.local/x:1", "serviceAccountName": account}}}))
        .expect("a service")
    }

    #[test]
    fn a_service_running_as_the_operators_account_is_invalid_without_any_webhook() {
        let reserved = ReservedAccount { namespace: "ops".into(), name: "ferrometal".into() };
        let caches = caches(
            vec![service("ops", "as-operator", "ferrometal"), service("ops", "netconf", "netconf")],
            Some(reserved),
        );
        let problems = caches.services_of("ops");
        assert!(problems["as-operator"].iter().any(|e| e.to_string().contains("operator's own ServiceAccount")));
        assert!(problems["netconf"].is_empty());
    }
}
