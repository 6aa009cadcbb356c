//! cert-manager as the release deploys it, on a test's real node: one image of the three
//! programs (static binaries, no base: `/bin/controller`, `/bin/cainjector`, `/bin/webhook`)
//! pushed to a [`Registry`] on loopback, which the node's containerd pulls from; in the namespace
//! `cert-manager`, a ServiceAccount per component bound to `cluster-admin` (test
//! infrastructure: the release's ClusterRoles are long and not what the tests are about), the
//! Deployments `cert-manager`, `cert-manager-cainjector` and `cert-manager-webhook` with the
//! release's labels, arguments (those our programs take: no leader election, ACME or metrics)
//! and security contexts (non-root, no privilege escalation, every capability dropped, a
//! read-only root), the webhook's probes on its health port, and its Service (443 to the
//! webhook's secure port, 10250 as in the release). The programs take the pods' in-cluster
//! configuration (no `--kubeconfig`).
//!
//! Why a registry rather than `RealNode::import` of an archive: the import is a `ctr` run that
//! blocks the test's thread for seconds, and `real::ironic_tls` starts cert-manager in one of four
//! scenarios that share one thread (a client there calls the API every 100 ms); the push runs on
//! a blocking task and the node's containerd pulls beside the test, as it pulls OLM's images.

use super::{BINARIES, NAMESPACE, VERSION, WEBHOOK_SERVICE, apply, cached, webhook_args};
use crate::Result;
use crate::node::RealNode;
use crate::registry::{ImageConfig, Registry};
use crate::workdir::WorkDir;
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerState, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ListParams, LogParams};
use serde_json::{Value, json};
use std::path::Path;

/// One of cert-manager's components, as the release deploys it.
struct Component {
    /// The Deployment's and its ServiceAccount's name.
    name: &'static str,
    /// Its `app` and `app.kubernetes.io/name` label.
    app: &'static str,
    /// Its `app.kubernetes.io/component` label, and the program (`/bin/<component>`).
    component: &'static str,
}

const WEBHOOK: Component = Component { name: WEBHOOK_SERVICE, app: "webhook", component: "webhook" };
const COMPONENTS: [Component; 3] = [
    Component { name: "cert-manager", app: "cert-manager", component: "controller" },
    Component { name: "cert-manager-cainjector", app: "cainjector", component: "cainjector" },
    WEBHOOK,
];

/// The label every pod of this cert-manager carries, as the release's `app.kubernetes.io/instance`.
const INSTANCE: &str = "cert-manager";

/// The webhook's ports in the release: TLS for the apiserver, and plain HTTP for its probes.
const WEBHOOK_SECURE_PORT: u16 = 10250;
const WEBHOOK_HEALTH_PORT: u16 = 6080;

/// The non-root user the pods run as: the image, made of static binaries, names none.
const USER: u32 = 1000;

/// Pushes the image, applies the release's objects with the node `node` for every pod, and
/// returns the pods' handle with the registry (which must serve until the pods pulled: it is
/// dropped with the [`super::CertManager`]) and the work directory of both.
pub(super) async fn start(client: &kube::Client, node: &RealNode) -> Result<(Pods, Registry, WorkDir)> {
    let started = std::time::Instant::now();
    let work = WorkDir::new("cert-manager")?;
    let registry = Registry::start(work.path()).await?;
    let root = work.path().join("rootfs");
    // Packing and compressing some 160 MB takes seconds: on a blocking task, not on the thread
    // the test's other tasks share.
    let (registry, image) = tokio::task::spawn_blocking(move || {
        let image = rootfs(&root)
            .and_then(|()| registry.push(&root, &format!("cert-manager:{VERSION}"), &ImageConfig::default()));
        (registry, image)
    })
    .await
    .context("the task pushing cert-manager's image")?;
    let image = image?;
    eprintln!("---- cert-manager: image pushed to the registry in {:.1?}", started.elapsed());
    for component in &COMPONENTS {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": component.name, "namespace": NAMESPACE, "labels": component.labels()}});
        apply(&Api::<ServiceAccount>::namespaced(client.clone(), NAMESPACE), account).await?;
    }
    apply(&Api::<ClusterRoleBinding>::all(client.clone()), cluster_admin()).await?;
    apply(&Api::<Service>::namespaced(client.clone(), NAMESPACE), webhook_service()).await?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    for component in &COMPONENTS {
        apply(&deployments, component.deployment(&image, node.name())).await?;
    }
    Ok((Pods { client: client.clone(), settled: Vec::new() }, registry, work))
}

/// The image's root: the three programs in `/bin`, linked from the build's cache where the
/// file system allows (copied otherwise).
fn rootfs(root: &Path) -> Result<()> {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin)?;
    let cache = cached()?;
    for binary in BINARIES {
        let (from, to) = (cache.join(binary), bin.join(binary));
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    Ok(())
}

/// Every ServiceAccount of cert-manager bound to `cluster-admin`.
fn cluster_admin() -> Value {
    let subjects: Vec<Value> =
        COMPONENTS.iter().map(|c| json!({"kind": "ServiceAccount", "name": c.name, "namespace": NAMESPACE})).collect();
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "ferrometal-tests-cert-manager"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": subjects})
}

/// The webhook's Service, as the release's `webhook-service.yaml` with its default values.
fn webhook_service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE, "labels": WEBHOOK.labels()},
        "spec": {"type": "ClusterIP", "selector": WEBHOOK.selector(),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "https"}]}})
}

impl Component {
    /// The labels the Deployment selects its pods by.
    fn selector(&self) -> Value {
        json!({"app.kubernetes.io/name": self.app, "app.kubernetes.io/instance": INSTANCE,
            "app.kubernetes.io/component": self.component})
    }

    /// Every label of the component's objects.
    fn labels(&self) -> Value {
        let mut labels = self.selector();
        labels["app"] = json!(self.app);
        labels["app.kubernetes.io/version"] = json!(VERSION);
        labels
    }

    /// The release's arguments of the component, as far as our programs take them, and what its
    /// container has besides (ports, probes).
    fn container_args(&self) -> (Vec<String>, Value) {
        match self.component {
            "controller" => (vec!["--v=2".into(), "--cluster-resource-namespace=$(POD_NAMESPACE)".into()], json!({})),
            "cainjector" => (vec!["--v=2".into()], json!({})),
            _ => {
                let mut args = webhook_args("$(POD_NAMESPACE)", &[]);
                args.push(format!("--secure-port={WEBHOOK_SECURE_PORT}"));
                // The release's probes (values.yaml's defaults): ready once it has a serving
                // certificate, alive while its health server answers.
                let probe = |path: &str, delay: u32, period: u32| {
                    json!({"httpGet": {"path": path, "port": "healthcheck", "scheme": "HTTP"},
                        "initialDelaySeconds": delay, "periodSeconds": period, "timeoutSeconds": 1,
                        "successThreshold": 1, "failureThreshold": 3})
                };
                let extra = json!({
                    "ports": [{"name": "https", "protocol": "TCP", "containerPort": WEBHOOK_SECURE_PORT},
                        {"name": "healthcheck", "protocol": "TCP", "containerPort": WEBHOOK_HEALTH_PORT}],
                    "livenessProbe": probe("/livez", 60, 10),
                    "readinessProbe": probe("/healthz", 5, 5)});
                (args, extra)
            }
        }
    }

    /// The component's Deployment: one pod of `image` on the node `node`.
    fn deployment(&self, image: &str, node: &str) -> Value {
        let (args, extra) = self.container_args();
        let mut container = json!({
            "name": format!("cert-manager-{}", self.component), "image": image, "imagePullPolicy": "IfNotPresent",
            "command": [format!("/bin/{}", self.component)], "args": args,
            "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
                "readOnlyRootFilesystem": true}});
        if let (Some(container), Some(extra)) = (container.as_object_mut(), extra.as_object()) {
            container.extend(extra.clone());
        }
        let labels = self.labels();
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": self.name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": self.selector()},
                "template": {"metadata": {"labels": labels}, "spec": {
                    "serviceAccountName": self.name, "enableServiceLinks": false,
                    // The release's selector, and the real node by name: a pod simulator's node
                    // beside it would otherwise be as good to the scheduler.
                    "nodeSelector": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": node},
                    "securityContext": {"runAsNonRoot": true, "runAsUser": USER, "runAsGroup": USER,
                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container]}}}})
    }
}

/// The pods of the three Deployments, seen through the API.
#[derive(Clone)]
pub(super) struct Pods {
    client: kube::Client,
    /// The pods' names and UIDs once they were all Ready ([`Pods::settle`]): any other pod
    /// after that is a replacement.
    settled: Vec<(String, String)>,
}

impl Pods {
    /// cert-manager's pods, in the order of [`COMPONENTS`].
    async fn list(&self) -> Result<Vec<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), NAMESPACE);
        let selector = format!("app.kubernetes.io/instance={INSTANCE}");
        let mut pods = api.list(&ListParams::default().labels(&selector)).await?.items;
        pods.sort_by_key(|pod| COMPONENTS.iter().position(|c| Some(c.component) == component(pod)));
        Ok(pods)
    }

    /// cert-manager's pods; an error when one is in trouble ([`trouble`]).
    async fn untroubled(&self) -> Result<Vec<Pod>> {
        let pods = self.list().await?;
        match pods.iter().find_map(trouble) {
            Some(trouble) => anyhow::bail!("cert-manager's {trouble}"),
            None => Ok(pods),
        }
    }

    /// Whether each component has its one pod and it is Ready; an error when a pod is in
    /// trouble.
    pub(super) async fn ready(&self) -> Result<bool> {
        let pods = self.untroubled().await?;
        Ok(COMPONENTS.iter().all(|c| {
            let mine: Vec<_> = pods.iter().filter(|pod| component(pod) == Some(c.component)).collect();
            matches!(mine.as_slice(), [pod] if is_ready(pod))
        }))
    }

    /// Records the pods, all Ready, that [`Pods::ensure_running`] then expects.
    pub(super) async fn settle(&mut self) -> Result<()> {
        self.settled = identities(&self.list().await?);
        Ok(())
    }

    /// Fails when a pod is in trouble, or, once settled, is not one of the pods that were
    /// Ready then (one was replaced).
    pub(super) async fn ensure_running(&self) -> Result<()> {
        let now = identities(&self.untroubled().await?);
        let names =
            |pods: &[(String, String)]| pods.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(", ");
        anyhow::ensure!(
            self.settled.is_empty() || now == self.settled,
            "cert-manager's pods were replaced: {} now, {} when they were Ready",
            names(&now),
            names(&self.settled)
        );
        Ok(())
    }

    /// Each pod's state and log (a restarted container's previous log first), through the
    /// apiserver and the kubelet.
    pub(super) async fn log(&self) -> String {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), NAMESPACE);
        let pods = match self.list().await {
            Ok(pods) if pods.is_empty() => return "no pod of cert-manager".into(),
            Ok(pods) => pods,
            Err(err) => return format!("cert-manager's pods could not be listed: {err:#}"),
        };
        let mut text = String::new();
        for pod in &pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let status = pod.status.clone().unwrap_or_default();
            let restarts: i32 = status.container_statuses.iter().flatten().map(|c| c.restart_count).sum();
            let phase = status.phase.unwrap_or_default();
            let ready = if is_ready(pod) { "Ready" } else { "not Ready" };
            text.push_str(&format!("---- pod {name}: {phase}, {ready}, {restarts} restarts\n"));
            if restarts > 0 {
                let previous = LogParams { previous: true, ..Default::default() };
                let said = api.logs(&name, &previous).await.unwrap_or_else(|err| format!("(no log: {err})\n"));
                text.push_str(&format!("-- the previous container:\n{said}-- the current one:\n"));
            }
            text.push_str(
                &api.logs(&name, &LogParams::default()).await.unwrap_or_else(|err| format!("(no log: {err})\n")),
            );
        }
        text
    }
}

/// The component a pod belongs to (its `app.kubernetes.io/component` label).
fn component(pod: &Pod) -> Option<&str> {
    pod.metadata.labels.as_ref()?.get("app.kubernetes.io/component").map(String::as_str)
}

/// Whether the pod's `Ready` condition is true.
fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Each pod's name and UID.
fn identities(pods: &[Pod]) -> Vec<(String, String)> {
    pods.iter()
        .map(|pod| (pod.metadata.name.clone().unwrap_or_default(), pod.metadata.uid.clone().unwrap_or_default()))
        .collect()
}

/// What is wrong with a pod that should run for the whole test: it failed, or a container
/// exited, restarted, or waits for something other than its start (an image it cannot pull,
/// a back-off after a crash). Nothing while it starts.
fn trouble(pod: &Pod) -> Option<String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() == Some("Failed") {
        let why = status.message.clone().or_else(|| status.reason.clone()).unwrap_or_default();
        return Some(format!("pod {name} failed: {why}"));
    }
    for container in status.container_statuses.iter().flatten() {
        let who = format!("pod {name}'s container {}", container.name);
        if container.restart_count > 0 {
            let last = container.last_state.as_ref().map(describe).unwrap_or_default();
            return Some(format!("{who} restarted {} times (last: {last})", container.restart_count));
        }
        match container.state.as_ref() {
            Some(state) if state.terminated.is_some() => return Some(format!("{who} {}", describe(state))),
            Some(state) => {
                let waiting = state.waiting.as_ref().and_then(|w| w.reason.as_deref());
                if waiting.is_some_and(|reason| !matches!(reason, "ContainerCreating" | "PodInitializing")) {
                    return Some(format!("{who} {}", describe(state)));
                }
            }
            None => {}
        }
    }
    None
}

/// A container's state, as a phrase.
fn describe(state: &ContainerState) -> String {
    if let Some(exited) = &state.terminated {
        let reason = exited.reason.as_deref().unwrap_or_default();
        return format!(
            "exited with code {} ({reason}) {}",
            exited.exit_code,
            exited.message.as_deref().unwrap_or_default()
        );
    }
    if let Some(waiting) = &state.waiting {
        let reason = waiting.reason.as_deref().unwrap_or_default();
        return format!("waiting: {reason}: {}", waiting.message.as_deref().unwrap_or_default());
    }
    "running".into()
}
