//! The stand-in for a kubelet and scheduler.
//!
//! No container runtime can run on our machines, so no kubelet can either.
//! The simulator registers one Node, binds every pending pod to it, and
//! writes the pod status a kubelet would report: Running and Ready for
//! long-running pods, Succeeded or Failed for Job pods, as the test decides.
//! It also completes graceful deletions (a kubelet confirms them; without
//! one, a deleted pod stays Terminating forever and a Recreate rollout never
//! proceeds). No container is ever started: images, commands, probes and
//! hooks are not executed.

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use tokio::task::JoinHandle;

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
}

type Rule = Arc<dyn Fn(&Pod) -> Option<PodFate> + Send + Sync>;

/// A running simulator. Dropping it stops the simulation.
pub struct PodSimulator {
    node: String,
    rules: Arc<RwLock<Vec<Rule>>>,
    task: JoinHandle<()>,
}

/// The simulated node's name.
pub const NODE_NAME: &str = "simulated-node-0";

impl PodSimulator {
    /// Registers the simulated Node and starts simulating pods in every
    /// namespace. By default Job pods succeed and all other pods become ready.
    pub async fn start(client: Client) -> crate::Result<Self> {
        register_node(&client).await?;
        let rules: Arc<RwLock<Vec<Rule>>> = Arc::default();
        let task = tokio::spawn(simulate(client, rules.clone()));
        Ok(Self { node: NODE_NAME.to_string(), rules, task })
    }

    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// Adds a rule deciding the fate of matching pods. Rules added later win;
    /// a rule returning `None` leaves the decision to earlier rules, then to
    /// the default. A fate is applied once, when the pod is first scheduled.
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
}

impl Drop for PodSimulator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The name of the pod's owner of the given kind.
pub fn owner_of_kind<'a>(pod: &'a Pod, kind: &str) -> Option<&'a str> {
    pod.metadata.owner_references.as_ref()?.iter().find(|o| o.kind == kind).map(|o| o.name.as_str())
}

fn decide(rules: &RwLock<Vec<Rule>>, pod: &Pod) -> PodFate {
    let rules = rules.read().unwrap_or_else(|e| e.into_inner());
    if let Some(fate) = rules.iter().rev().find_map(|rule| rule(pod)) {
        return fate;
    }
    if owner_of_kind(pod, "Job").is_some() { PodFate::Succeeded } else { PodFate::Ready }
}

async fn register_node(client: &Client) -> crate::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = Node {
        metadata: ObjectMeta {
            name: Some(NODE_NAME.to_string()),
            labels: Some(
                [
                    ("kubernetes.io/hostname", NODE_NAME),
                    ("kubernetes.io/os", "linux"),
                    ("kubernetes.io/arch", "amd64"),
                    ("ferrometal.io/simulated", "true"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    if nodes.get_opt(NODE_NAME).await?.is_none() {
        nodes.create(&PostParams::default(), &node).await?;
    }
    let now = Time(jiff::Timestamp::now());
    let status = json!({"status": {
        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"},
        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"},
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": NODE_NAME}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated by ferrometal-tests", "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.20.2",
            "kubeProxyVersion": "v1.20.2", "containerRuntimeVersion": "simulated://1", "osImage": "simulated",
            "kernelVersion": "simulated", "machineID": "", "systemUUID": "", "bootID": ""}
    }});
    nodes.patch_status(NODE_NAME, &PatchParams::default(), &Patch::Merge(&status)).await?;
    // The apiserver taints new nodes not-ready; the node lifecycle
    // controller, which we do not run, would lift the taint once the kubelet
    // reports Ready. DaemonSet pods do not tolerate it.
    nodes.patch(NODE_NAME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"taints": null}}))).await?;
    Ok(())
}

async fn simulate(client: Client, rules: Arc<RwLock<Vec<Rule>>>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let ips = AtomicU32::new(2);
    // Pods whose fate was already written; a pod's status is set once.
    let mut handled: HashSet<String> = HashSet::new();
    let mut stream = watcher::watcher(pods, watcher::Config::default()).boxed();
    while let Some(event) = stream.next().await {
        let pod = match event {
            Ok(Event::Apply(pod) | Event::InitApply(pod)) => pod,
            Ok(Event::Delete(pod)) => {
                handled.remove(&pod.uid().unwrap_or_default());
                continue;
            }
            Ok(_) => continue,
            Err(err) => {
                tracing::debug!(%err, "pod simulator watch error; the watcher retries");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                continue;
            }
        };
        if let Err(err) = step(&client, &rules, &ips, &mut handled, &pod).await {
            tracing::warn!(pod = %pod.name_any(), namespace = ?pod.namespace(), %err, "pod simulator step failed");
        }
    }
}

async fn step(
    client: &Client,
    rules: &RwLock<Vec<Rule>>,
    ips: &AtomicU32,
    handled: &mut HashSet<String>,
    pod: &Pod,
) -> crate::Result<()> {
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let name = pod.name_any();
    let uid = pod.uid().unwrap_or_default();

    if pod.metadata.deletion_timestamp.is_some() {
        // Finish the graceful deletion a kubelet would confirm.
        let params = DeleteParams { grace_period_seconds: Some(0), ..Default::default() };
        let _ = api.delete(&name, &params).await;
        return Ok(());
    }
    if handled.contains(&uid) {
        return Ok(());
    }
    let fate = decide(rules, pod);
    if fate == PodFate::Pending {
        return Ok(());
    }
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    if node.is_none() {
        let binding = Binding {
            metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
            target: ObjectReference { kind: Some("Node".into()), name: Some(NODE_NAME.into()), ..Default::default() },
        };
        // The pod may be gone already; the next event tells.
        let _: Result<Value, _> = api.create_subresource("binding", &name, &PostParams::default(), &binding).await;
    }
    let ip = format!("10.244.{}.{}", ips.load(Ordering::Relaxed) / 250, ips.fetch_add(1, Ordering::Relaxed) % 250 + 2);
    let status = pod_status(pod, &fate, &ip);
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({ "status": status }))).await?;
    handled.insert(uid);
    Ok(())
}

fn pod_status(pod: &Pod, fate: &PodFate, ip: &str) -> Value {
    let now = Time(jiff::Timestamp::now());
    let spec = pod.spec.clone().unwrap_or_default();
    let running = matches!(fate, PodFate::Ready | PodFate::Unready);
    let ready = *fate == PodFate::Ready;
    let container_state = |index: usize| match fate {
        PodFate::Ready | PodFate::Unready | PodFate::Pending => json!({"running": {"startedAt": now}}),
        PodFate::Succeeded => {
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}})
        }
        PodFate::Failed { exit_code, message } if index == 0 => json!({"terminated": {
            "exitCode": exit_code, "reason": "Error", "message": message, "startedAt": now, "finishedAt": now}}),
        PodFate::Failed { .. } => {
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}})
        }
    };
    let containers: Vec<Value> = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "simulated://",
                "containerID": format!("simulated://{}", c.name), "ready": ready, "started": running,
                "restartCount": 0, "state": container_state(i)})
        })
        .collect();
    let init_containers: Vec<Value> = spec
        .init_containers
        .unwrap_or_default()
        .iter()
        .map(|c| {
            json!({"name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "simulated://",
                "containerID": format!("simulated://{}", c.name), "ready": true, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}})
        })
        .collect();
    let phase = match fate {
        PodFate::Ready | PodFate::Unready | PodFate::Pending => "Running",
        PodFate::Succeeded => "Succeeded",
        PodFate::Failed { .. } => "Failed",
    };
    let flag = |b: bool| if b { "True" } else { "False" };
    json!({
        "phase": phase,
        "hostIP": "127.0.0.1",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": flag(ready), "lastTransitionTime": now},
            {"type": "Ready", "status": flag(ready), "lastTransitionTime": now},
        ],
        "containerStatuses": containers,
        "initContainerStatuses": init_containers,
    })
}
