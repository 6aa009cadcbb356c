//! The stand-in for a kubelet, for tests that must decide a pod's fate quickly.
//!
//! The simulator registers one Node, binds every pending pod to it (unless the scheduler did
//! first), and writes the pod status a kubelet would report: Running and Ready for
//! long-running pods, Succeeded or Failed for Job pods, as the test decides,
//! at once or after running for a while ([`PodFate::RunsFor`]).
//! It also completes graceful deletions (a kubelet confirms them; without
//! one, a deleted pod stays Terminating forever and a Recreate rollout never
//! proceeds).
//!
//! It never touches a pod bound to another node (a real node's). No image is ever pulled and no
//! container started, with one exception a
//! test switches on ([`PodSimulator::run_local_exec`]): Job pods of the test
//! image [`LOCAL_EXEC_IMAGE`] are run as local processes, with their command,
//! arguments, environment and Secret and ConfigMap volumes, and report how
//! they really exited (see [`local_exec`]).

pub mod local_exec;
mod node;
mod status;

pub use local_exec::{LOCAL_EXEC_IMAGE, LocalRun};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use local_exec::LocalExec;
use serde_json::{Value, json};
use status::PodView;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::task::{JoinHandle, JoinSet};

/// What becomes of a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodFate {
    /// Running, with every container ready.
    Ready,
    /// Running, but not ready (readiness probes failing).
    Unready,
    /// Left pending, as if no node could take it.
    Pending,
    /// Every container exited 0 (Job pods).
    Succeeded,
    /// The first container exited non-zero with `message` (Job pods).
    Failed { exit_code: i32, message: String },
    /// Running (every container started and ready) for `running`, then `then`: a Job pod
    /// that takes time, so that what happens while it runs can be tested.
    RunsFor { running: Duration, then: Box<PodFate> },
}

type Rule = Arc<dyn Fn(&Pod) -> Option<PodFate> + Send + Sync>;

/// A running simulator. Dropping it stops the simulation and kills every
/// process it runs.
pub struct PodSimulator {
    node: String,
    rules: Arc<RwLock<Vec<Rule>>>,
    local: Arc<LocalExec>,
    task: JoinHandle<()>,
}

/// The simulated node's name.
pub const NODE_NAME: &str = "simulated-node-0";

impl PodSimulator {
    /// Registers the simulated Node and starts simulating pods in every
    /// namespace. By default Job pods succeed and all other pods become ready.
    pub async fn start(client: Client) -> crate::Result<Self> {
        node::register_node(&client).await?;
        let rules: Arc<RwLock<Vec<Rule>>> = Arc::default();
        let local = Arc::new(LocalExec::default());
        let task = tokio::spawn(simulate(client, rules.clone(), local.clone()));
        Ok(Self { node: NODE_NAME.to_string(), rules, local, task })
    }

    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// Adds a rule deciding the fate of matching pods. Rules added later win;
    /// a rule returning `None` leaves the decision to earlier rules, then to
    /// the default. A fate is applied once, when the pod is first scheduled.
    /// A rule's fate also wins over running a pod of [`LOCAL_EXEC_IMAGE`].
    pub fn add_rule(&self, rule: impl Fn(&Pod) -> Option<PodFate> + Send + Sync + 'static) {
        self.rules.write().unwrap_or_else(|e| e.into_inner()).push(Arc::new(rule));
    }

    /// Pods of the Job `namespace/job` get `fate`.
    pub fn set_job_fate(&self, namespace: &str, job: &str, fate: PodFate) {
        let (namespace, job) = (namespace.to_string(), job.to_string());
        self.add_rule(move |pod| {
            (pod.namespace().as_deref() == Some(&namespace) && owner_of_kind(pod, "Job") == Some(job.as_str()))
                .then(|| fate.clone())
        });
    }

    /// Pods whose name starts with `prefix` in `namespace` get `fate`.
    pub fn set_fate_by_prefix(&self, namespace: &str, prefix: &str, fate: PodFate) {
        let (namespace, prefix) = (namespace.to_string(), prefix.to_string());
        self.add_rule(move |pod| {
            (pod.namespace().as_deref() == Some(&namespace) && pod.name_any().starts_with(&prefix))
                .then(|| fate.clone())
        });
    }

    /// Runs Job pods of [`LOCAL_EXEC_IMAGE`] as local processes (`true`), or
    /// completes them like any other Job pod (`false`, the default). Applies
    /// to pods scheduled from now on; a fate set by a rule still wins.
    pub fn run_local_exec(&self, on: bool) {
        self.local.switch(on);
    }

    /// Every pod run as a local process so far, in the order they started.
    pub fn local_runs(&self) -> Vec<LocalRun> {
        self.local.runs()
    }

    /// The pods of the Job `namespace/job` run as local processes so far.
    pub fn local_runs_of_job(&self, namespace: &str, job: &str) -> Vec<LocalRun> {
        self.local.runs().into_iter().filter(|r| r.namespace == namespace && r.job == job).collect()
    }
}

impl Drop for PodSimulator {
    fn drop(&mut self) {
        self.task.abort();
        self.local.shutdown();
    }
}

/// The name of the pod's owner of the given kind.
pub fn owner_of_kind<'a>(pod: &'a Pod, kind: &str) -> Option<&'a str> {
    pod.metadata.owner_references.as_ref()?.iter().find(|o| o.kind == kind).map(|o| o.name.as_str())
}

/// The fate a test's rule gives the pod, if any.
fn ruled(rules: &RwLock<Vec<Rule>>, pod: &Pod) -> Option<PodFate> {
    let rules = rules.read().unwrap_or_else(|e| e.into_inner());
    rules.iter().rev().find_map(|rule| rule(pod))
}

fn default_fate(pod: &Pod) -> PodFate {
    if owner_of_kind(pod, "Job").is_some() { PodFate::Succeeded } else { PodFate::Ready }
}

async fn simulate(client: Client, rules: Arc<RwLock<Vec<Rule>>>, local: Arc<LocalExec>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let ips = AtomicU32::new(2);
    // Pods whose fate was already written; a pod's status is set once.
    let mut handled: HashSet<String> = HashSet::new();
    // The later halves of `RunsFor` fates; they end with the simulation.
    let mut later: JoinSet<()> = JoinSet::new();
    let mut stream = watcher::watcher(pods, watcher::Config::default()).boxed();
    while let Some(event) = stream.next().await {
        let pod = match event {
            Ok(Event::Apply(pod) | Event::InitApply(pod)) => pod,
            Ok(Event::Delete(pod)) => {
                let uid = pod.uid().unwrap_or_default();
                local.stop(&uid);
                handled.remove(&uid);
                continue;
            }
            Ok(_) => continue,
            Err(err) => {
                tracing::debug!(%err, "pod simulator watch error; the watcher retries");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                continue;
            }
        };
        while later.try_join_next().is_some() {}
        if let Err(err) = step(&client, &rules, &local, &ips, &mut handled, &mut later, &pod).await {
            tracing::warn!(pod = %pod.name_any(), namespace = ?pod.namespace(), %err, "pod simulator step failed");
        }
    }
}

async fn step(
    client: &Client,
    rules: &RwLock<Vec<Rule>>,
    local: &Arc<LocalExec>,
    ips: &AtomicU32,
    handled: &mut HashSet<String>,
    later: &mut JoinSet<()>,
    pod: &Pod,
) -> crate::Result<()> {
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let name = pod.name_any();
    let uid = pod.uid().unwrap_or_default();

    if pod.metadata.deletion_timestamp.is_some() {
        // A kubelet kills the containers, then confirms the deletion.
        local.stop(&uid);
        let params = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
        let _ = api.delete(&name, &params).await;
        return Ok(());
    }
    if handled.contains(&uid) {
        return Ok(());
    }
    let ruled = ruled(rules, pod);
    let execute = ruled.is_none() && local.takes(pod);
    let fate = ruled.unwrap_or_else(|| default_fate(pod));
    if fate == PodFate::Pending && !execute {
        return Ok(());
    }
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    if node.as_deref().is_some_and(|n| n != NODE_NAME) {
        // The scheduler put it on another node (a real one): never the simulator's to play.
        return Ok(());
    }
    if node.is_none() {
        let binding = Binding {
            metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
            target: ObjectReference { kind: Some("Node".into()), name: Some(NODE_NAME.into()), ..Default::default() },
        };
        // The pod may be gone already; the next event tells.
        let _: Result<Value, _> = api.create_subresource("binding", &name, &PostParams::default(), &binding).await;
    }
    let ip = format!("10.244.{}.{}", ips.load(Ordering::Relaxed) / 250, ips.fetch_add(1, Ordering::Relaxed) % 250 + 2);
    if execute {
        // The run writes the pod's status itself, as its processes progress.
        local.start(client.clone(), pod.clone(), ip);
        handled.insert(uid);
        return Ok(());
    }
    let view = PodView::for_fate(pod, &fate, &ip);
    let status = view.json();
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status }))).await?;
    handled.insert(uid.clone());
    if let PodFate::RunsFor { running, then } = fate {
        let started = pod.clone();
        later.spawn(async move {
            tokio::time::sleep(running).await;
            // Only the same pod, still there and not being deleted (a deleted pod is gone).
            let Ok(Some(current)) = api.get_opt(&name).await else { return };
            if current.uid().as_deref() != Some(uid.as_str()) || current.metadata.deletion_timestamp.is_some() {
                return;
            }
            let mut ended = PodView::for_fate(&started, &then, &ip);
            ended.started = view.started;
            let status = ended.json();
            if let Err(err) =
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status }))).await
            {
                tracing::warn!(pod = %name, %err, "pod simulator could not end a pod that ran");
            }
        });
    }
    Ok(())
}
