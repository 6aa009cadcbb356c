//! Shared set-up of the NodeSet tests: the host tests' environment (a control plane, a real
//! Ironic, optionally sushy-tools) with the operator running the BareMetalHost and NodeSet
//! controllers (and the webhooks when a test needs them), free fake-hardware hosts for
//! NodeSets to claim, NodeSetServices, and recorders of the Jobs the controller runs.
#![allow(dead_code)]

use crate::common::POLL;
use crate::host_common::{HostEnv, Options, secs, state_of};
use anyhow::Context as _;
use crds::condition::Condition;
use crds::nodeset::{NODESET_LABEL, NodeSet};
use crds::nodesetservice::NodeSetService;
use ferrometal_tests::{PodFate, wait};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use operator::OperatorConfig;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// What a NodeSet test needs started.
pub struct Setup {
    pub sushy_systems: Option<usize>,
    pub webhooks: bool,
    pub nodeset: operator::testing::nodeset::Config,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            sushy_systems: None,
            webhooks: false,
            nodeset: operator::testing::nodeset::Config { backoff_max: Duration::from_secs(5), ..Default::default() },
        }
    }
}

/// The environment of one NodeSet test.
pub struct NodeSetEnv {
    pub t: HostEnv,
    pub nodesets: Api<NodeSet>,
    pub services: Api<NodeSetService>,
    pub jobs: Api<Job>,
    pub setup: Setup,
    /// The live ISO NodeSets provision.
    pub iso: String,
}

impl NodeSetEnv {
    pub async fn start(prefix: &str, setup: Setup) -> anyhow::Result<Self> {
        let t = HostEnv::start(prefix, Options { sushy_systems: setup.sushy_systems, ..Options::default() }).await?;
        let iso = t.ironic.image_server().write_live_iso("live.iso")?;
        let client = t.env.client();
        let ns = t.env.ns.clone();
        let mut env = Self {
            nodesets: Api::namespaced(client.clone(), &ns),
            services: Api::namespaced(client.clone(), &ns),
            jobs: Api::namespaced(client, &ns),
            t,
            setup,
            iso,
        };
        env.start_operator().await?;
        Ok(env)
    }

    /// The operator's configuration: the host and NodeSet controllers, and the webhooks.
    pub fn operator_config(&self) -> anyhow::Result<OperatorConfig> {
        let mut config = self.t.env.operator_config();
        config.host = Some(self.t.host_config());
        config.nodeset = Some(self.setup.nodeset.clone());
        if self.setup.webhooks {
            self.t.env.with_webhooks(&mut config)?;
        }
        Ok(config)
    }

    pub async fn start_operator(&mut self) -> anyhow::Result<()> {
        let config = self.operator_config()?;
        self.t.operator = Some(self.t.env.start_operator(config).await?);
        Ok(())
    }

    /// Stops the operator (and waits for its controllers to finish).
    pub async fn stop_operator(&mut self) -> anyhow::Result<()> {
        if let Some(operator) = self.t.operator.take() {
            operator.shutdown().await?;
        }
        Ok(())
    }

    /// Kills the operator as a crash would: no reconcile finishes, nothing is released.
    pub fn kill_operator(&mut self) {
        if let Some(operator) = self.t.operator.take() {
            operator.abort();
        }
    }

    pub fn ns(&self) -> &str {
        self.t.ns()
    }

    /// Creates fake-hardware hosts without an image (what a NodeSet claims) and waits until
    /// each is available. Inspection and cleaning are off: nothing runs a ramdisk here.
    pub async fn free_hosts(&self, names: &[String], labels: Value) -> anyhow::Result<()> {
        for name in names {
            let mut spec = self.t.fake_spec(name);
            spec["inspectionMode"] = json!("disabled");
            spec["automatedCleaningMode"] = json!("disabled");
            let host: crds::baremetalhost::BareMetalHost = serde_json::from_value(json!({
                "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
            }))?;
            self.t.hosts.create(&PostParams::default(), &host).await?;
        }
        for name in names {
            self.t.wait_state(name, "available", secs(120)).await?;
        }
        Ok(())
    }

    /// A NodeSetService running `image` (the simulator decides how its pods end).
    pub async fn service(&self, name: &str, run_once: bool, image: &str) -> anyhow::Result<NodeSetService> {
        let service: NodeSetService = serde_json::from_value(json!({
            "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
            "metadata": {"name": name},
            "spec": {"runOnce": run_once, "job": {"image": image, "command": ["/bin/configure"]}},
        }))?;
        Ok(self.services.create(&PostParams::default(), &service).await?)
    }

    /// A NodeSetService with this `job` template.
    pub async fn service_with(&self, name: &str, run_once: bool, job: Value) -> anyhow::Result<NodeSetService> {
        let service: NodeSetService = serde_json::from_value(json!({
            "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
            "metadata": {"name": name}, "spec": {"runOnce": run_once, "job": job},
        }))?;
        Ok(self.services.create(&PostParams::default(), &service).await?)
    }

    /// Pods of service Jobs running `image` fail with exit code 3 and `message`.
    pub fn fail_image(&self, image: &str, message: &str) {
        let (image, message) = (image.to_string(), message.to_string());
        self.t.env.sim.add_rule(move |pod| {
            let runs =
                pod.spec.as_ref().is_some_and(|s| s.containers.iter().any(|c| c.image.as_deref() == Some(&image)));
            runs.then(|| PodFate::Failed { exit_code: 3, message: message.clone() })
        });
    }

    /// A NodeSet spec for `hosts`, provisioning the live ISO, with `services`, one address
    /// per host on the ctlplane network.
    pub fn spec(&self, hosts: &[&str], services: &[&str]) -> Value {
        let nodes: serde_json::Map<String, Value> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                (
                    h.to_string(),
                    json!({"networks": [{"name": "ctlplane", "addresses": [format!("192.0.2.{}/24", 10 + i)]}]}),
                )
            })
            .collect();
        json!({
            "baremetalSetTemplate": {
                "image": {"url": self.iso, "format": "live-iso"},
                "automatedCleaningMode": "disabled",
            },
            "nodeTemplate": {
                "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 1500, "gateway": "192.0.2.1"}],
                "dns": {"nameservers": ["192.0.2.53"]},
                "managementNetwork": "ctlplane",
                "variables": {"timezone": "UTC"},
            },
            "nodes": nodes,
            "services": services,
        })
    }

    pub async fn create_nodeset(&self, name: &str, spec: Value) -> anyhow::Result<NodeSet> {
        let nodeset: NodeSet = serde_json::from_value(json!({
            "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": name}, "spec": spec,
        }))?;
        Ok(self.nodesets.create(&PostParams::default(), &nodeset).await?)
    }

    /// A JSON merge patch of a NodeSet's spec, as `kubectl patch --type merge` sends it.
    pub async fn patch_spec(&self, name: &str, spec: Value) -> Result<NodeSet, kube::Error> {
        self.nodesets.patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": spec}))).await
    }

    pub async fn delete_nodeset(&self, name: &str) -> anyhow::Result<()> {
        self.nodesets.delete(name, &DeleteParams::default()).await?;
        wait::until_ok(&format!("NodeSet {name} to be gone"), secs(60), POLL, || async {
            Ok(self.nodesets.get_opt(name).await?.is_none().then_some(()))
        })
        .await
    }

    /// Waits until the NodeSet satisfies `check`.
    pub async fn wait_nodeset(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(&NodeSet) -> bool,
    ) -> anyhow::Result<NodeSet> {
        let check = &check;
        let waited = wait::until_ok(&format!("NodeSet {name}: {what}"), timeout, POLL, || async move {
            Ok(self.nodesets.get_opt(name).await?.filter(|n| check(n)))
        })
        .await;
        match waited {
            Ok(n) => Ok(n),
            Err(err) => {
                let now = self.nodesets.get_opt(name).await.ok().flatten();
                Err(err.context(format!("NodeSet {name} is {}", describe(now.as_ref()))))
            }
        }
    }

    /// Waits until the NodeSet processed its generation and is Ready.
    pub async fn wait_ready(&self, name: &str, timeout: Duration) -> anyhow::Result<NodeSet> {
        self.wait_nodeset(name, "Ready", timeout, |n| processed(n) && condition_is(n, "Ready", "True")).await
    }

    /// Ironic provision-state requests the operator made so far.
    pub fn provision_state_requests(&self) -> anyhow::Result<u64> {
        self.t.ironic_request_count("set_provision_state")
    }

    /// Records every service Job of the namespace created from now on.
    pub async fn record_jobs(&self) -> anyhow::Result<JobRecorder> {
        let existing = self.jobs.list(&ListParams::default()).await?.items.iter().map(|j| j.name_any()).collect();
        Ok(JobRecorder::start(self.jobs.clone(), existing))
    }

    /// Every service Job that exists now.
    pub async fn service_jobs(&self) -> anyhow::Result<Vec<Job>> {
        Ok(self.jobs.list(&ListParams::default().labels(NODESET_LABEL)).await?.items)
    }

    /// Keeps the pods of service Jobs pending for `hold`, then lets the simulator finish them
    /// (as earlier rules decide): long enough that Jobs run at the same time when they may.
    pub fn hold_service_pods(&self, hold: Duration) -> JoinHandle<()> {
        let released: Arc<Mutex<HashSet<String>>> = Arc::default();
        let rule_released = released.clone();
        self.t.env.sim.add_rule(move |pod| {
            let ours = pod.labels().contains_key(NODESET_LABEL);
            let released = rule_released.lock().unwrap_or_else(|e| e.into_inner()).contains(&pod.name_any());
            (ours && !released).then_some(PodFate::Pending)
        });
        let pods: Api<Pod> = Api::namespaced(self.t.env.client(), self.ns());
        tokio::spawn(async move {
            let mut seen: HashSet<String> = HashSet::new();
            let mut events = watcher::watcher(pods.clone(), watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let Ok(Event::Apply(pod) | Event::InitApply(pod)) = event else { continue };
                let name = pod.name_any();
                if !pod.labels().contains_key(NODESET_LABEL) || !seen.insert(name.clone()) {
                    continue;
                }
                let (pods, released) = (pods.clone(), released.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(hold).await;
                    released.lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone());
                    // Any change makes the simulator look at the pod again.
                    let touch = json!({"metadata": {"annotations": {"test.ferrometal.io/released": "true"}}});
                    let _ = pods.patch(&name, &PatchParams::default(), &Patch::Merge(touch)).await;
                });
            }
        })
    }

    /// The BareMetalHost names of the NodeSet's hosts, from its status.
    pub fn bmh_names(nodeset: &NodeSet) -> BTreeMap<String, String> {
        nodeset
            .status
            .iter()
            .flat_map(|s| s.hosts.iter().flatten())
            .filter_map(|(h, s)| s.bmh_ref.as_ref().map(|r| (h.clone(), r.name.clone())))
            .collect()
    }

    /// The provisioning state of every BareMetalHost of the namespace.
    pub async fn host_states(&self) -> anyhow::Result<BTreeMap<String, String>> {
        let hosts = self.t.hosts.list(&ListParams::default()).await?;
        Ok(hosts.items.iter().map(|h| (h.name_any(), state_of(h).to_string())).collect())
    }

    /// Every provision state each BareMetalHost's Ironic node moved to, by host.
    pub async fn node_transitions(&self, hosts: &[String]) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
        let mut out = BTreeMap::new();
        for host in hosts {
            let uuid = self.t.node_uuid(host).await?;
            out.insert(host.clone(), self.t.ironic_transitions(&uuid)?);
        }
        Ok(out)
    }

    /// Waits until every listed host's Ironic node is `active`.
    pub async fn nodes_active(&self, hosts: &[String]) -> anyhow::Result<()> {
        for host in hosts {
            let node = self.t.node(host).await?.with_context(|| format!("{host} has no Ironic node"))?;
            anyhow::ensure!(node["provision_state"] == "active", "{host}'s node is {}", node["provision_state"]);
        }
        Ok(())
    }
}

/// True when the NodeSet's status describes its current generation.
pub fn processed(nodeset: &NodeSet) -> bool {
    nodeset.status.as_ref().and_then(|s| s.observed_generation) == nodeset.meta().generation
}

pub fn condition<'a>(nodeset: &'a NodeSet, type_: &str) -> Option<&'a Condition> {
    nodeset.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

pub fn condition_is(nodeset: &NodeSet, type_: &str, status: &str) -> bool {
    condition(nodeset, type_).is_some_and(|c| c.status == status)
}

/// One line about a NodeSet, for failure messages.
pub fn describe(nodeset: Option<&NodeSet>) -> String {
    let Some(nodeset) = nodeset else { return "gone".into() };
    let conditions: Vec<String> = nodeset
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .map(|c| format!("{}={} ({}: {})", c.type_, c.status, c.reason, c.message))
        .collect();
    let hosts: Vec<String> = nodeset
        .status
        .iter()
        .flat_map(|s| s.hosts.iter().flatten())
        .map(|(h, s)| format!("{h}: {:?} {:?}", s.provisioning_state, s.message))
        .collect();
    format!("generation {:?}, {}; hosts {}", nodeset.meta().generation, conditions.join(", "), hosts.join("; "))
}

/// A service Job as the recorder saw it.
#[derive(Clone, Debug)]
pub struct SeenJob {
    pub service: String,
    pub hosts: Vec<String>,
    pub image: String,
}

#[derive(Default)]
struct JobRecording {
    seen: BTreeMap<String, SeenJob>,
    running: BTreeSet<String>,
    max_running_hosts: usize,
    /// The most running Jobs of one service on one host at once.
    max_same_host_and_service: usize,
}

impl JobRecording {
    /// Hosts in running Jobs now, and the most running Jobs of one service on one host.
    fn now(&self) -> (usize, usize) {
        let running: Vec<&SeenJob> = self.running.iter().filter_map(|j| self.seen.get(j)).collect();
        let hosts: BTreeSet<&String> = running.iter().flat_map(|j| j.hosts.iter()).collect();
        let mut per_pair: BTreeMap<(&String, &String), usize> = BTreeMap::new();
        for job in &running {
            for host in &job.hosts {
                *per_pair.entry((&job.service, host)).or_default() += 1;
            }
        }
        (hosts.len(), per_pair.values().copied().max().unwrap_or(0))
    }
}

/// Watches the service Jobs of a namespace: every Job created since it started, and the most
/// hosts ever in running Jobs at once.
pub struct JobRecorder {
    recording: Arc<Mutex<JobRecording>>,
    task: JoinHandle<()>,
}

fn finished(job: &Job) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.status == "True" && (c.type_ == "Complete" || c.type_ == "Failed"))
}

impl JobRecorder {
    fn start(jobs: Api<Job>, existing: HashSet<String>) -> Self {
        let recording = Arc::new(Mutex::new(JobRecording::default()));
        let sink = recording.clone();
        let task = tokio::spawn(async move {
            let mut events = watcher::watcher(jobs, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                let mut rec = sink.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Apply(job) | Event::InitApply(job) => {
                        let name = job.name_any();
                        if existing.contains(&name) {
                            continue;
                        }
                        let annotations = job.annotations();
                        let Some(service) = annotations.get(operator::testing::nodeset::SERVICE_ANNOTATION).cloned()
                        else {
                            continue;
                        };
                        let hosts: BTreeMap<String, Value> = annotations
                            .get(operator::testing::nodeset::HOSTS_ANNOTATION)
                            .and_then(|h| serde_json::from_str(h).ok())
                            .unwrap_or_default();
                        let image = job
                            .spec
                            .as_ref()
                            .and_then(|s| s.template.spec.as_ref())
                            .and_then(|p| p.containers.first())
                            .and_then(|c| c.image.clone())
                            .unwrap_or_default();
                        rec.seen
                            .insert(name.clone(), SeenJob { service, hosts: hosts.keys().cloned().collect(), image });
                        if finished(&job) {
                            rec.running.remove(&name);
                        } else {
                            rec.running.insert(name);
                        }
                    }
                    Event::Delete(job) => {
                        rec.running.remove(&job.name_any());
                    }
                    Event::Init | Event::InitDone => {}
                }
                let (hosts, same) = rec.now();
                rec.max_running_hosts = rec.max_running_hosts.max(hosts);
                rec.max_same_host_and_service = rec.max_same_host_and_service.max(same);
            }
        });
        Self { recording, task }
    }

    /// Every Job seen, by name.
    pub fn seen(&self) -> BTreeMap<String, SeenJob> {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).seen.clone()
    }

    /// How many times `service` ran on `host`.
    pub fn runs(&self, service: &str, host: &str) -> usize {
        self.seen().values().filter(|j| j.service == service && j.hosts.iter().any(|h| h == host)).count()
    }

    /// The services that ran, with how many host runs each.
    pub fn runs_by_service(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for job in self.seen().values() {
            *out.entry(job.service.clone()).or_default() += job.hosts.len();
        }
        out
    }

    /// The most hosts seen in running Jobs at once.
    pub fn max_running_hosts(&self) -> usize {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).max_running_hosts
    }

    /// The most running Jobs of one service on one host seen at once.
    pub fn max_same_host_and_service(&self) -> usize {
        self.recording.lock().unwrap_or_else(|e| e.into_inner()).max_same_host_and_service
    }

    /// Starts both maxima again (one step of a test at a time) from what runs now: Jobs still
    /// running count without waiting for their next event.
    pub fn reset_maxima(&self) {
        let mut rec = self.recording.lock().unwrap_or_else(|e| e.into_inner());
        (rec.max_running_hosts, rec.max_same_host_and_service) = rec.now();
    }
}

impl Drop for JobRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `n` host names `prefix-0`, `prefix-1`, …
pub fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// A counter or histogram count of the operator's metrics, by its exposition line's start.
fn metric(operator: &operator::Operator, line_start: &str) -> u64 {
    let text = operator.metrics().encode();
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits until the controllers have acted on everything the test did so far, instead of a
/// fixed sleep: a NodeSet reconcile that started after this call has finished (the NodeSets of
/// the namespace are touched to start one; a reconcile of one object never overlaps another
/// of it), and then the host controller has polled Ironic twice more (a host whose spec a
/// NodeSet changed is reconciled on its watch event and at least by the next poll).
pub async fn settle(env: &NodeSetEnv) -> anyhow::Result<()> {
    const FINISHED: &str = "ferrometal_reconcile_duration_seconds_count{controller=\"nodeset\"}";
    const POLLS: &str = "ferrometal_host_bulk_polls_total";
    let operator = env.t.operator.as_ref().context("the operator runs")?;
    // Counted as started, not finished: one in flight now began with an older view.
    let started = operator.metrics().reconcile_count("nodeset");
    let mut touched = false;
    for nodeset in env.nodesets.list(&ListParams::default()).await?.items {
        let touch = json!({"metadata": {"annotations": {"test.ferrometal.io/settle": started.to_string()}}});
        let name = nodeset.name_any();
        touched |= env.nodesets.patch(&name, &PatchParams::default(), &Patch::Merge(&touch)).await.is_ok();
    }
    wait::until("a NodeSet reconcile after the test's last step", secs(60), POLL, || async {
        (!touched || metric(operator, FINISHED) > started).then_some(())
    })
    .await?;
    let polls = metric(operator, POLLS);
    wait::until("two more polls of the host controller", secs(60), POLL, || async {
        (metric(operator, POLLS) >= polls.saturating_add(2)).then_some(())
    })
    .await
}

/// Waits until exactly `n` service Jobs exist per service, and returns all their names.
pub async fn wait_for_jobs(env: &NodeSetEnv, n: usize) -> anyhow::Result<Vec<String>> {
    wait::until_ok(&format!("{n} service Job per service"), secs(60), POLL, || async {
        let jobs = env.service_jobs().await?;
        let mut per_service: BTreeMap<String, usize> = BTreeMap::new();
        for job in &jobs {
            let service =
                job.annotations().get(operator::testing::nodeset::SERVICE_ANNOTATION).cloned().unwrap_or_default();
            *per_service.entry(service).or_default() += 1;
        }
        let mut names: Vec<String> = jobs.iter().map(|j| j.name_any()).collect();
        names.sort();
        Ok(per_service.values().all(|c| *c == n).then_some(names))
    })
    .await
}
