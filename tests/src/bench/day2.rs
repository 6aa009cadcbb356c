//! P4, the day-2 edit, and the hosts both runs create: a NodeSet claims, provisions and
//! configures free hosts, then its MTU is edited. The scale run does it among the hosts of
//! P1, the sharded run among its fleet.

use super::Rollout;
use super::probe::{Scrape, difference, ironic_summed};
use crate::wait;
use crds::baremetalhost::BareMetalHost;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// Hosts and NodeSets are created this many at once, as a client applying a directory would.
pub(super) const CREATORS: usize = 16;

/// A BareMetalHost to create.
pub(super) struct NewHost {
    pub name: String,
    pub spec: Value,
    pub annotations: Value,
}

/// The spec of a `fake://` host named `name`, without inspection or cleaning (the floor does
/// neither), with a live ISO when `image` is given.
pub(super) fn fake_spec(name: &str, image: Option<&str>) -> Value {
    let mut spec = json!({
        "bmc": {"address": format!("fake://{name}"), "credentialsName": "fake-bmc"}, "online": true,
        "inspectionMode": "disabled", "automatedCleaningMode": "disabled",
    });
    if let Some(url) = image {
        spec["image"] = json!({"url": url, "format": "live-iso"});
    }
    spec
}

/// `fake://` hosts named `names` (see [`fake_spec`]).
pub(super) async fn create_hosts(api: &Api<BareMetalHost>, names: &[String], image: Option<&str>) -> crate::Result<()> {
    let hosts =
        names.iter().map(|name| NewHost { name: name.clone(), spec: fake_spec(name, image), annotations: json!({}) });
    create(api, hosts).await
}

/// Creates `hosts`, [`CREATORS`] at a time.
pub(super) async fn create(api: &Api<BareMetalHost>, hosts: impl Iterator<Item = NewHost>) -> crate::Result<()> {
    futures::stream::iter(hosts)
        .map(|NewHost { name, spec, annotations }| {
            let api = api.clone();
            async move {
                let host: BareMetalHost = serde_json::from_value(json!({
                    "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                    "metadata": {"name": name, "annotations": annotations}, "spec": spec,
                }))?;
                api.create(&PostParams::default(), &host).await?;
                Ok::<_, anyhow::Error>(())
            }
        })
        .buffer_unordered(CREATORS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

pub(super) fn nodesets(client: Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ferrometal.io", "v1alpha1", "NodeSet");
    Api::namespaced_with(client, ns, &ApiResource::from_gvk(&gvk))
}

pub(super) fn network(mtu: u16) -> Value {
    json!([{"name": "ctlplane", "interface": "eno1", "mtu": mtu}])
}

fn nodeset_ready(nodeset: &DynamicObject) -> bool {
    let status = &nodeset.data["status"];
    status["observedGeneration"] == json!(nodeset.metadata.generation)
        && status["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// A spawned watch, stopped when the phase that started it ends, failed or not.
pub(super) struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where the edit runs, and whom to ask what it cost.
pub(super) struct Day2<'a> {
    pub client: Client,
    pub ns: &'a str,
    pub iso: &'a str,
    pub timeout: Duration,
    /// The `/metrics` of every process whose Ironic requests and NodeSet reconciles count.
    pub metrics: Vec<String>,
}

/// Ironic requests by operation and NodeSet reconciles, summed over processes.
struct Counts {
    ironic: BTreeMap<String, u64>,
    reconciles: u64,
}

impl Day2<'_> {
    /// A NodeSet of `count` new hosts brought up, then its MTU edited.
    pub(super) async fn rollout(&self, count: usize) -> crate::Result<Rollout> {
        let machines: Vec<String> = (0..count).map(|i| format!("server-{i:03}")).collect();
        create_hosts(&Api::namespaced(self.client.clone(), self.ns), &machines, None).await?;
        self.create_services().await?;
        let api = nodesets(self.client.clone(), self.ns);
        let started = Instant::now();
        api.create(&PostParams::default(), &serde_json::from_value(self.computes(count))?).await?;
        self.wait_ready("computes").await?;
        let bring_up = started.elapsed();

        let (first_job, _watch) = self.watch_first_job().await?;
        let before = self.counts().await?;
        let edited = Instant::now();
        let patch = json!({"spec": {"nodeTemplate": {"networks": network(9000)}}});
        api.patch("computes", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        let first = tokio::time::timeout(self.timeout, first_job).await??;
        let at_first = self.counts().await?;
        self.wait_ready("computes").await?;
        let complete = edited.elapsed();
        let after = self.counts().await?;
        Ok(Rollout {
            hosts: count,
            bring_up,
            first_job: first.duration_since(edited),
            complete,
            ironic_to_first_job: difference(&at_first.ironic, &before.ironic),
            ironic_during: difference(&after.ironic, &before.ironic),
            reconciles: after.reconciles.saturating_sub(before.reconciles),
        })
    }

    async fn create_services(&self) -> crate::Result<()> {
        let gvk = GroupVersionKind::gvk("ferrometal.io", "v1alpha1", "NodeSetService");
        let services: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), self.ns, &ApiResource::from_gvk(&gvk));
        for (name, run_once) in [("bootstrap", true), ("configure-network", false)] {
            let service = json!({
                "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService", "metadata": {"name": name},
                "spec": {"runOnce": run_once, "job": {"image": format!("{name}:1")}}
            });
            services.create(&PostParams::default(), &serde_json::from_value(service)?).await?;
        }
        Ok(())
    }

    /// The NodeSet `computes` of `count` nodes, each with its own control-plane address.
    fn computes(&self, count: usize) -> Value {
        let nodes: serde_json::Map<String, Value> = (0..count)
            .map(|i| {
                let address = format!("10.0.{}.{}/16", i / 250, i % 250 + 1);
                (format!("compute-{i:03}"), json!({"networks": [{"name": "ctlplane", "addresses": [address]}]}))
            })
            .collect();
        json!({
            "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": "computes"},
            "spec": {
                "baremetalSetTemplate": {"image": {"url": self.iso, "format": "live-iso"}, "automatedCleaningMode": "disabled"},
                "nodeTemplate": {"networks": network(1500), "managementNetwork": "ctlplane"},
                "nodes": nodes,
                "services": ["bootstrap", "configure-network"],
                "rollout": {"maxUnavailable": "10%"},
            }
        })
    }

    /// A watch of Jobs that reports when the first Job not there now appears.
    async fn watch_first_job(&self) -> crate::Result<(tokio::sync::oneshot::Receiver<Instant>, AbortOnDrop)> {
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), self.ns);
        let existing: HashSet<String> =
            jobs.list(&Default::default()).await?.items.iter().map(|j| j.name_any()).collect();
        let (first_tx, first_rx) = tokio::sync::oneshot::channel::<Instant>();
        let watch = tokio::spawn(async move {
            let mut first = Some(first_tx);
            let mut events = watcher::watcher(jobs, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                if let Ok(Event::Apply(job) | Event::InitApply(job)) = event
                    && !existing.contains(&job.name_any())
                    && let Some(tx) = first.take()
                {
                    let _ = tx.send(Instant::now());
                }
            }
        });
        // The watch must be established before the edit, or its first event is late.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok((first_rx, AbortOnDrop(watch)))
    }

    async fn counts(&self) -> crate::Result<Counts> {
        let mut scrapes = Vec::new();
        for url in &self.metrics {
            scrapes.push(Scrape::fetch(url).await?);
        }
        let reconciles = scrapes.iter().map(|s| s.reconciles("nodeset")).sum();
        Ok(Counts { ironic: ironic_summed(&scrapes), reconciles })
    }

    async fn wait_ready(&self, name: &str) -> crate::Result<()> {
        let api = nodesets(self.client.clone(), self.ns);
        wait::until_ok(&format!("NodeSet {name} Ready"), self.timeout, Duration::from_millis(250), || async {
            Ok(api.get_opt(name).await?.filter(nodeset_ready).map(|_| ()))
        })
        .await
    }
}
