//! OLM for real: operator-lifecycle-manager's `olm` and `catalog` operators and operator-registry's
//! `opm`, built from the Go module proxy by `scripts/build-olm.sh`, installed on a test's
//! control plane as upstream's chart installs them (namespaces `olm` and `operators`, OLM's
//! CRDs, its ServiceAccount and ClusterRole, the two operators as Deployments whose pods run on
//! the real node, the `global-operators` OperatorGroup), with every image pulled by the node's
//! containerd from a [`Registry`] on loopback.
//!
//! What is left out, as upstream allows: packageserver (the aggregated PackageManifest API for
//! UIs; subscriptions resolve over gRPC straight from the CatalogSource) and the operatorhub.io
//! catalog.

pub mod images;

pub use crate::registry::{self, ImageConfig, Registry};
pub use images::{Entry, OlmImages, Package, push_bundle, push_catalog};

use crate::control_plane::ControlPlane;
use crate::{Result, env, wait};
use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The OLM release `scripts/build-olm.sh` builds, and the operator-registry (opm) it requires.
pub const VERSION: &str = "v0.38.0";
pub const REGISTRY_VERSION: &str = "v1.61.0";
/// OLM's namespace (its operators, the global catalogs) and the namespace of its
/// all-namespaces OperatorGroup, as upstream names them.
pub const NAMESPACE: &str = "olm";
pub const OPERATORS_NAMESPACE: &str = "operators";
const MANAGER: &str = "ferrometal-tests-olm";

/// Where the build keeps OLM's binaries and CRDs.
pub fn cached() -> Result<PathBuf> {
    let dir = env::cache_dir().join("olm").join(VERSION);
    anyhow::ensure!(
        dir.join("bin/olm").is_file() && dir.join("bin/opm").is_file(),
        "no OLM in {}: run scripts/build-olm.sh (make install)",
        dir.display()
    );
    Ok(dir)
}

/// A binary of the build (`olm`, `catalog`, `cpb`, `cp`, `opm`, `crane`, `grpc_health_probe`).
pub fn bin(name: &str) -> Result<PathBuf> {
    Ok(cached()?.join("bin").join(name))
}

/// OLM's CRDs, as its chart ships them.
pub fn crds() -> Result<Vec<CustomResourceDefinition>> {
    let dir = cached()?.join("crds");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        crds.push(serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?);
    }
    anyhow::ensure!(crds.len() >= 8, "OLM's eight CRDs in {}", dir.display());
    Ok(crds)
}

/// Installs OLM in `cp` with `images`, and waits until both operators' pods are ready.
pub async fn install(cp: &ControlPlane, images: &OlmImages) -> Result<()> {
    cp.install_crds(&crds()?).await?;
    let client = cp.client();
    for object in cluster_objects(images) {
        apply(&client, &object).await?;
    }
    let deployments: Api<Deployment> = Api::namespaced(client, NAMESPACE);
    for name in ["olm-operator", "catalog-operator"] {
        wait::until(&format!("OLM's {name} ready"), Duration::from_secs(180), Duration::from_millis(500), || {
            let deployments = deployments.clone();
            async move {
                let d = deployments.get_opt(name).await.ok().flatten()?;
                (d.status?.ready_replicas == Some(1)).then_some(())
            }
        })
        .await?;
    }
    Ok(())
}

/// Server-side applies `object` (any kind, namespaced or not) as the test's administrator.
pub async fn apply(client: &kube::Client, object: &Value) -> Result<Value> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    let resource = crate::api_resource(group, version, kind);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let applied = api
        .patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(object))
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    Ok(serde_json::to_value(applied)?)
}

/// Upstream's chart, less packageserver and the operatorhub.io catalog.
fn cluster_objects(images: &OlmImages) -> Vec<Value> {
    let account = "olm-operator-serviceaccount";
    let role = "system:controller:operator-lifecycle-manager";
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATORS_NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": NAMESPACE}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "olm-operator-binding-olm"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]}),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"}}),
        operator_deployment("olm-operator", &images.olm, &["/bin/olm", "--namespace", "$(OPERATOR_NAMESPACE)"]),
        operator_deployment(
            "catalog-operator",
            &images.olm,
            &[
                "/bin/catalog",
                "--namespace",
                NAMESPACE,
                "--configmapServerImage",
                &images.olm,
                "--opmImage",
                &images.opm,
                "--util-image",
                &images.olm,
                "--set-workload-user-id=true",
            ],
        ),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "global-operators", "namespace": OPERATORS_NAMESPACE}}),
    ]
}

/// One of OLM's two operators, as the chart deploys it: its ServiceAccount, a read-only root
/// with `/tmp` writable, health on :8080.
fn operator_deployment(name: &str, image: &str, command: &[&str]) -> Value {
    let labels = json!({"app": name});
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate"}, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "serviceAccountName": "olm-operator-serviceaccount",
                "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
                    "command": [command[0]], "args": &command[1..],
                    "env": [{"name": "OPERATOR_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "OPERATOR_NAME", "value": name}],
                    "ports": [{"name": "metrics", "containerPort": 8080}],
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 2},
                    "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                        "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}],
                "volumes": [{"name": "tmp", "emptyDir": {}}]}}}})
}
