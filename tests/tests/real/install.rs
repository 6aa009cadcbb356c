//! Install as users do, on a real node: the operator image built here
//! (`scripts/operator-image.sh`: the operator's binary, here the debug build the other tests
//! run, on a distroless base made from Debian's packages, the Containerfile's layout) and imported into the node, `config/default` applied
//! with `kubectl apply --server-side -k`, and the operator running as the Deployment's pods
//! under its ServiceAccount with the shipped RBAC: its in-cluster configuration reaches the
//! apiserver through the `kubernetes` Service, the apiserver reaches its webhooks through their
//! Service (kube-proxy) with the certificate the operator made itself, and it reconciles
//! BareMetalHosts, a NodeSet and an `Ironic` (as far as the operator goes: no Ironic image can
//! run here). Then the README's uninstall keeps every host as it was.
//!
//! What is still the test's: the Ironic the hosts use is the harness's (on loopback, forwarded
//! to the pods from the bridge), named by an overlay of `config/default` that sets
//! `IRONIC_ENDPOINT` (the README's step for the host controller) and shortens the host
//! controller's polling.

mod cert_manager;
mod olm;
mod shards;

use crate::install_common::workloads::{self, Running, resource};
use crate::install_common::{config_dir, kubectl};
use anyhow::Context as _;
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::operator_process::operator_image;
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, wait};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams};
use operator::testing::install::{DEFAULT_NAMESPACE, NAME};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The operator's pods, by the Deployment's selector.
const SELECTOR: &str = "app.kubernetes.io/name=ferrometal,app.kubernetes.io/component=operator";

/// The operator as the Deployment's pods: a wait fails early when one of them restarted
/// (checked with kubectl at most every few seconds: it costs a process).
struct OperatorPods<'a> {
    kubeconfig: &'a Path,
    namespace: &'a str,
    selector: &'a str,
    checked: Instant,
}

impl<'a> OperatorPods<'a> {
    fn new(kubeconfig: &'a Path, namespace: &'a str) -> Self {
        Self::selected(kubeconfig, namespace, SELECTOR)
    }

    /// The pods of another Deployment of the operator (the sharded host controller's).
    fn selected(kubeconfig: &'a Path, namespace: &'a str, selector: &'a str) -> Self {
        Self { kubeconfig, namespace, selector, checked: Instant::now() }
    }
}

impl Running for OperatorPods<'_> {
    fn ensure_running(&mut self) -> anyhow::Result<()> {
        if self.checked.elapsed() < Duration::from_secs(5) {
            return Ok(());
        }
        self.checked = Instant::now();
        let restarts = kubectl(
            self.kubeconfig,
            &["get", "pods", "-n", self.namespace, "-l", self.selector, "-o", "jsonpath={..restartCount}"],
            None,
        )?;
        if restarts.split_whitespace().any(|r| r != "0") {
            let logs = kubectl(
                self.kubeconfig,
                &["logs", "-n", self.namespace, "-l", self.selector, "--previous", "--tail=40"],
                None,
            )
            .unwrap_or_default();
            anyhow::bail!("an operator pod restarted ({restarts}); its last words:\n{logs}");
        }
        Ok(())
    }
}

/// The user's overlay of `config/default`: which Ironic the host controller uses (the README's
/// step), and the host controller's polling shortened for the test.
fn overlay(dir: &Path, ironic_endpoint: &str) -> anyhow::Result<()> {
    overlay_of(dir, "default", ironic_endpoint, &[NAME])
}

/// [`overlay`] of `config/<base>`, setting the environment of each of `deployments`.
fn overlay_of(dir: &Path, base: &str, ironic_endpoint: &str, deployments: &[&str]) -> anyhow::Result<()> {
    // kustomize takes no absolute path: config/<base> relative to the overlay.
    let up = "../".repeat(dir.components().count().saturating_sub(1));
    let default = format!("{up}{}", config_dir().join(base).display().to_string().trim_start_matches('/'));
    let env = json!([
        {"name": "IRONIC_ENDPOINT", "value": ironic_endpoint},
        {"name": "HOST_FAST_POLL_INTERVAL", "value": "300ms"},
        {"name": "HOST_SLOW_POLL_INTERVAL", "value": "2s"},
    ]);
    let patch: Vec<Value> = env
        .as_array()
        .into_iter()
        .flatten()
        .map(|var| json!({"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": var}))
        .collect();
    let patch = serde_json::to_string(&patch)?;
    let patches: Vec<Value> = deployments
        .iter()
        .map(|name| json!({"target": {"kind": "Deployment", "name": name}, "patch": patch}))
        .collect();
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [default],
        "patches": patches,
    });
    // JSON is YAML.
    std::fs::write(dir.join("kustomization.yaml"), serde_json::to_string_pretty(&kustomization)?)?;
    Ok(())
}

/// A control plane with the real node, the operator image `archive` imported into it, the
/// harness's Ironic, forwarded to the pods, and a namespace for the test's objects.
struct OnTheNode {
    cp: ControlPlane,
    ironic: IronicServer,
    ns: String,
    ironic_for_pods: ferrometal_tests::node::PodForward,
}

impl OnTheNode {
    async fn start(archive: &Path, prefix: &str) -> anyhow::Result<Self> {
        let (mut cp, ironic) = tokio::try_join!(
            ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }),
            IronicServer::start(IronicConfig::default())
        )?;
        let ns = cp.namespace(prefix).await?;
        let node = cp.node().context("a node")?;
        node.import(archive)?;
        let ironic_for_pods = node.forward_from_pods(ironic.socket_addr()?.port())?;
        Ok(Self { cp, ironic, ns, ironic_for_pods })
    }
}

/// The image's configuration, read from the OCI archive (entrypoint, command and user must be
/// the Containerfile's), and the digests of its manifest and its configuration, one of which
/// names the image a container runs.
fn image_config(archive: &Path) -> anyhow::Result<(Value, [String; 2])> {
    let read = |member: &str| -> anyhow::Result<Value> {
        let out = std::process::Command::new("tar").arg("-xOf").arg(archive).arg(member).output()?;
        anyhow::ensure!(out.status.success(), "{member} in {}", archive.display());
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let blob = |digest: &Value| {
        format!("./blobs/sha256/{}", digest.as_str().unwrap_or_default().trim_start_matches("sha256:"))
    };
    let index = read("./index.json")?;
    let manifest = read(&blob(&index["manifests"][0]["digest"]))?;
    let config = read(&blob(&manifest["config"]["digest"]))?;
    let digest = |d: &Value| d.as_str().unwrap_or_default().to_string();
    Ok((config["config"].clone(), [digest(&index["manifests"][0]["digest"]), digest(&manifest["config"]["digest"])]))
}

/// The runtime stage's ENTRYPOINT, CMD and USER of `images/operator/Containerfile`, as an
/// image configuration holds them.
fn containerfile_runtime() -> anyhow::Result<(Value, Value, Value)> {
    let path = ferrometal_tests::operator_process::repo_root().join("images/operator/Containerfile");
    let text = std::fs::read_to_string(&path)?;
    let runtime = text.rsplit("\nFROM ").next().unwrap_or_default();
    let instruction = |name: &str| {
        runtime
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .with_context(|| format!("{name}in {}", path.display()))
    };
    let entrypoint: Value = serde_json::from_str(instruction("ENTRYPOINT ")?)?;
    let cmd: Value = serde_json::from_str(instruction("CMD ")?)?;
    Ok((entrypoint, cmd, Value::from(instruction("USER ")?)))
}

/// Every Ironic node's provision state, by name, as Ironic's API says.
async fn ironic_nodes(ironic: &IronicServer) -> anyhow::Result<Vec<(String, String)>> {
    let url = format!("{}/v1/nodes?fields=name,provision_state", ironic.endpoint());
    let body: Value = ironic.http_client()?.get(url).send().await?.error_for_status()?.json().await?;
    let mut nodes: Vec<(String, String)> = body["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            (
                n["name"].as_str().unwrap_or_default().to_string(),
                n["provision_state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    nodes.sort();
    Ok(nodes)
}

fn available(deployment: &Deployment) -> bool {
    let status = deployment.status.clone().unwrap_or_default();
    deployment.metadata.generation == status.observed_generation
        && status.updated_replicas == Some(2)
        && status.ready_replicas == Some(2)
        && status.replicas == Some(2)
}

/// Waits until the operator's Deployment has its two replicas ready; on a timeout, the pods'
/// last log lines say why.
async fn until_available(deployments: &Api<Deployment>, kubeconfig: &Path) -> anyhow::Result<Deployment> {
    until_available_in(deployments, kubeconfig, DEFAULT_NAMESPACE).await
}

/// [`until_available`] for a Deployment in `namespace` (OLM's install in its own).
async fn until_available_in(
    deployments: &Api<Deployment>,
    kubeconfig: &Path,
    namespace: &str,
) -> anyhow::Result<Deployment> {
    until_named_available(deployments, kubeconfig, namespace, NAME, SELECTOR).await
}

/// [`until_available_in`] for the Deployment `name`, whose pods `selector` selects.
async fn until_named_available(
    deployments: &Api<Deployment>,
    kubeconfig: &Path,
    namespace: &str,
    name: &str,
    selector: &str,
) -> anyhow::Result<Deployment> {
    wait::until(
        &format!("the Deployment {name} 2/2 ready"),
        Duration::from_secs(180),
        Duration::from_millis(500),
        || {
            let deployments = deployments.clone();
            async move { deployments.get_opt(name).await.ok().flatten().filter(available) }
        },
    )
    .await
    .with_context(|| {
        kubectl(kubeconfig, &["logs", "-n", namespace, "-l", selector, "--tail=30"], None).unwrap_or_default()
    })
}

#[tokio::test]
async fn installed_with_kubectl_the_operator_pods_reconcile_and_the_uninstall_keeps_every_host() -> anyhow::Result<()> {
    // The image first, before the node (one per machine) is taken: packed when the binary
    // changed (seconds; the base about 2 minutes on a fresh machine), else a cache hit.
    let started = Instant::now();
    let archive = tokio::task::spawn_blocking(operator_image).await??;
    eprintln!("---- real::install: the operator image ready in {:.1?}", started.elapsed());
    let (config, digests) = image_config(&archive)?;
    let (entrypoint, cmd, user) = containerfile_runtime()?;
    assert_eq!(config["Entrypoint"], entrypoint, "the Containerfile's ENTRYPOINT");
    assert_eq!(config["Cmd"], cmd, "the Containerfile's CMD");
    assert_eq!(config["User"], user, "the Containerfile's USER");

    let phase = Instant::now();
    let OnTheNode { cp, ironic, ns, ironic_for_pods } = OnTheNode::start(&archive, "install-real").await?;
    eprintln!("---- real::install: control plane, node and Ironic up, image imported in {:.1?}", phase.elapsed());
    let node = cp.node().context("a node")?;
    let admin = cp.client();
    let kubeconfig = cp.kubeconfig();

    // The install: config/default with the user's overlay, applied with kubectl.
    let tree = tempfile::tempdir()?;
    overlay(tree.path(), &format!("http://{}", ironic_for_pods.addr()))?;
    kubectl(kubeconfig, &["apply", "--server-side", "-k", &tree.path().display().to_string()], None)?;
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let deployment = deployments.get(NAME).await?;
    let container =
        deployment.spec.as_ref().and_then(|s| s.template.spec.as_ref()).and_then(|s| s.containers.first().cloned());
    let container = container.context("the Deployment's container")?;
    assert_eq!(container.image.as_deref(), Some(operator::testing::install::image(env!("CARGO_PKG_VERSION")).as_str()));
    // A tag the node holds is used as it is: nothing is pulled.
    assert_eq!(container.image_pull_policy.as_deref(), Some("IfNotPresent"));

    // Both replicas Ready: /readyz waits for every watch synced (the leader) or the Lease read
    // (the other), so each reached the apiserver through the `kubernetes` Service with its
    // ServiceAccount's token.
    let mut pods = OperatorPods::new(kubeconfig, DEFAULT_NAMESPACE);
    let wait_start = Instant::now();
    until_available(&deployments, kubeconfig).await?;
    eprintln!("---- real::install: the operator's pods ready in {:.1?}", wait_start.elapsed());
    let pod_api: Api<Pod> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let running = pod_api.list(&ListParams::default().labels(SELECTOR)).await?.items;
    assert_eq!(running.len(), 2, "two replicas");
    for pod in &running {
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.node_name.as_deref(), Some(node.name()), "on the real node");
        assert_eq!(spec.service_account_name.as_deref(), Some(NAME));
        let status = pod.status.clone().unwrap_or_default();
        let containers = status.container_statuses.unwrap_or_default();
        assert!(containers.iter().all(|c| c.ready && c.restart_count == 0), "{containers:?}");
        // The image built and imported here, nothing else.
        assert!(
            containers.iter().all(|c| digests.iter().any(|d| c.image_id.contains(d.as_str()))),
            "{digests:?}: {containers:?}"
        );
    }
    pods.ensure_running()?;

    // The webhooks through their Service: the operator published its CA, and the apiserver
    // asks the webhook (CEL cannot know where Ironics may run).
    let configuration = kubectl(
        kubeconfig,
        &[
            "get",
            "validatingwebhookconfiguration",
            operator::testing::webhook::CONFIGURATION_NAME,
            "-o",
            "jsonpath={.webhooks[0].clientConfig.caBundle}",
        ],
        None,
    )?;
    assert!(!configuration.trim().is_empty(), "the operator published its CA");
    let refused = workloads::webhook_refusal(&admin, &ns).await?;
    assert!(refused.contains("admission webhook \"vironics.ferrometal.io\" denied"), "{refused}");
    assert!(refused.contains("--ironic-namespaces"), "the webhook's own message: {refused}");

    // Hosts and a NodeSet to their steady state, through the harness's Ironic.
    let phase = Instant::now();
    workloads::hosts_steady(&admin, &mut pods, &ns, &ironic).await?;
    workloads::nodeset_steady(&admin, &mut pods, &ns, &ironic).await?;
    eprintln!("---- real::install: hosts and the NodeSet steady in {:.1?}", phase.elapsed());

    // An Ironic in the operator's namespace: the operator renders and applies its Deployment
    // and reports it rolling out. Its pods cannot start (no Ironic image here).
    workloads::apply(&admin, DEFAULT_NAMESPACE, workloads::minimal_ironic()).await?;
    let ironics = resource("ironic.metal3.io", "Ironic");
    let ironic_object =
        workloads::wait_steady(
            &admin,
            &mut pods,
            DEFAULT_NAMESPACE,
            &ironics,
            "ironic",
            "reconciled (its Deployment in progress)",
            |i| {
                i["status"]["observedGeneration"] == i["metadata"]["generation"]
                    && i["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
                        c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "DeploymentInProgress"
                    })
            },
        )
        .await?;
    let uid = ironic_object["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let owned = deployments.list(&ListParams::default()).await?.items.into_iter().find(|d| {
        d.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Ironic" && o.uid == uid && o.controller == Some(true))
    });
    let owned = owned.context("the Ironic's Deployment, owned by it")?;
    let template = owned.spec.and_then(|s| s.template.spec).unwrap_or_default();
    assert!(
        template.containers.iter().any(|c| c.image.as_deref().is_some_and(|i| i.contains("ironic"))),
        "{template:?}"
    );

    // The README's uninstall; every host stays as it is.
    let hosts: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &resource("metal3.io", "BareMetalHost"));
    let before: Vec<Value> = hosts
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    assert_eq!(before.len(), 3, "provisioned-0, available-0 and the NodeSet's pool-0");
    let ironic_before = ironic_nodes(&ironic).await?;
    assert!(ironic_before.iter().any(|(_, state)| state == "active"), "a deployed machine: {ironic_before:?}");
    let phase = Instant::now();
    let root = ferrometal_tests::operator_process::repo_root();
    let tree_dir = |dir: &str| root.join("config").join(dir).display().to_string();
    kubectl(kubeconfig, &["delete", "-k", &tree_dir("webhook")], None)?;
    kubectl(
        kubeconfig,
        &["delete", "-n", DEFAULT_NAMESPACE, "deployment/ferrometal", "service/ferrometal-metrics"],
        None,
    )?;
    kubectl(kubeconfig, &["delete", "-k", &tree_dir("rbac")], None)?;
    wait::until("the operator's pods gone", Duration::from_secs(60), Duration::from_millis(500), || {
        let pod_api = pod_api.clone();
        async move { pod_api.list(&ListParams::default().labels(SELECTOR)).await.ok().filter(|l| l.items.is_empty()) }
    })
    .await?;
    eprintln!("---- real::install: uninstalled in {:.1?}", phase.elapsed());
    // A moment for anything that would act on the hosts once the operator is gone.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(ironic_nodes(&ironic).await?, ironic_before, "every machine where it was, in Ironic");
    for host in &before {
        let name = host["metadata"]["name"].as_str().unwrap_or_default();
        let after = serde_json::to_value(hosts.get(name).await?)?;
        assert!(after["metadata"]["deletionTimestamp"].is_null(), "{name} is not being deleted");
        assert_eq!(after["spec"], host["spec"], "{name}'s spec is as it was");
        assert_eq!(workloads::host_state(&after), workloads::host_state(host), "{name} is where it was");
    }
    let provisioned = serde_json::to_value(hosts.get("provisioned-0").await?)?;
    assert_eq!(workloads::host_state(&provisioned), "provisioned", "nothing deprovisioned");
    let nodesets: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &resource("ferrometal.io", "NodeSet"));
    if workloads::nodeset_controller_exists() {
        let nodeset = serde_json::to_value(nodesets.get("computes").await?)?;
        assert!(nodeset["metadata"]["deletionTimestamp"].is_null());
    }
    let ironic_kept: Api<DynamicObject> = Api::namespaced_with(admin.clone(), DEFAULT_NAMESPACE, &ironics);
    assert!(ironic_kept.get_opt("ironic").await?.is_some(), "the Ironic stays");
    assert!(
        deployments.get_opt(&owned.metadata.name.unwrap_or_default()).await?.is_some(),
        "Ironic's Deployment stays"
    );
    Ok(())
}
