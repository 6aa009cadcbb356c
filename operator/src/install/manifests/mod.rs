//! The `config/` tree kubebuilder and kustomize users expect, generated from code:
//!
//! | directory | what |
//! |---|---|
//! | `crd/` | the CRDs |
//! | `rbac/` | the ServiceAccount; the controllers' ClusterRole (Roles, one per watched namespace, when namespaced) and the leader-election Role |
//! | `manager/` | the Namespace, the Deployment, the metrics Service and the NetworkPolicy |
//! | `webhook/` | the webhook Service and ValidatingWebhookConfiguration, and the roles the operator needs to manage its certificate |
//! | `certmanager/` | the webhook Service and configuration for cert-manager (CA injection), its Issuer and Certificate |
//! | `default/` | cluster-wide install with operator-managed webhook certificates |
//! | `cert-manager/` | cluster-wide install with cert-manager issuing the webhook certificate |
//! | `optional/<feature>/` | the roles of an optional feature |
//! | `shards/` | `default/` with the hosts divided into shards: a Deployment of host controllers taking shard Leases, and their Role |
//!
//! A namespaced layout (`--watch-namespaces`) has Roles only, so the operator cannot publish
//! its CA in the cluster-scoped webhook configuration: its `default/` uses cert-manager.

pub(crate) mod args;
pub(crate) mod shards;
pub(crate) mod webhook;
pub(crate) mod workload;

use super::rbac::{Feature, render};
use super::{Error, File, Layout, WebhookCertificates, to_yaml};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The directories `ferrometal manifests` owns below its output directory.
pub(crate) const OWNED_DIRS: &[&str] =
    &["crd", "rbac", "manager", "webhook", "certmanager", "default", "cert-manager", "optional", "shards"];

fn value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn file(path: &str, objects: &[Value]) -> Result<File, Error> {
    Ok(File { path: PathBuf::from(path), content: to_yaml(objects)? })
}

/// A kustomization listing `resources` (files of its directory, or other directories) and
/// strategic-merge `patches`.
fn kustomization(dir: &str, comment: &str, resources: &[&str], patches: &[&str]) -> Result<File, Error> {
    let mut body = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    });
    if !patches.is_empty() {
        body["patches"] = patches.iter().map(|p| json!({"path": p})).collect();
    }
    let yaml = crds::render_value_yaml(&body)?;
    Ok(File { path: PathBuf::from(format!("{dir}/kustomization.yaml")), content: format!("# {comment}\n{yaml}") })
}

/// Every file of the tree for `layout`.
pub(crate) fn tree(layout: &Layout) -> Result<Vec<File>, Error> {
    let mut files = Vec::new();
    crd_dir(&mut files)?;
    rbac_dir(layout, &mut files)?;
    manager_dir(layout, &mut files)?;
    webhook_dirs(layout, &mut files)?;
    optional_dirs(layout, &mut files)?;
    shards_dir(layout, &mut files)?;
    Ok(files)
}

/// `shards/`: `default/` with the hosts divided into shards among the replicas of a second
/// Deployment.
fn shards_dir(layout: &Layout, files: &mut Vec<File>) -> Result<(), Error> {
    if layout.shards.is_empty() {
        return Ok(());
    }
    let (role, binding) = shards::lease_roles(layout);
    files.push(file(
        "shards/hosts.yaml",
        &[value(&shards::hosts_deployment(layout)), value(&shards::network_policy(layout))],
    )?);
    files.push(file("shards/lease_roles.yaml", &[value(&role), value(&binding)])?);
    files.push(file("shards/manager_patch.yaml", &[shards::manager_patch(layout)])?);
    files.push(kustomization(
        "shards",
        &format!(
            "ferrometal with the BareMetalHosts divided into shards ({}), served by the replicas of {} (design/hosts.md, \"Shards\"): kubectl apply -k config/shards",
            layout.shards.join(", "),
            shards::HOSTS
        ),
        &["../default", "hosts.yaml", "lease_roles.yaml"],
        &["manager_patch.yaml"],
    )?);
    Ok(())
}

/// `crd/`: the CustomResourceDefinitions.
fn crd_dir(files: &mut Vec<File>) -> Result<(), Error> {
    let crds = crds::all_crds();
    let mut crd_files = Vec::new();
    for crd in &crds {
        let name = crds::crd_file_name(crd);
        files.push(File { path: PathBuf::from(format!("crd/{name}")), content: crds::render_crd_yaml(crd)? });
        crd_files.push(name);
    }
    let crd_refs: Vec<&str> = crd_files.iter().map(String::as_str).collect();
    files.push(kustomization("crd", "The CustomResourceDefinitions.", &crd_refs, &[])?);

    Ok(())
}

/// `rbac/`: the ServiceAccount and the roles every install grants.
fn rbac_dir(layout: &Layout, files: &mut Vec<File>) -> Result<(), Error> {
    let grantee = layout.grantee();
    files.push(file("rbac/service_account.yaml", &[value(&workload::service_account(layout))])?);
    files.push(file("rbac/roles.yaml", &render::objects(&grantee, Feature::Always))?);
    files.push(kustomization(
        "rbac",
        "The operator's ServiceAccount and the roles every install grants it (operator/src/install/rbac/table.rs).",
        &["service_account.yaml", "roles.yaml"],
        &[],
    )?);
    Ok(())
}

/// `manager/`: the Namespace, Deployment, metrics Service and NetworkPolicy.
fn manager_dir(layout: &Layout, files: &mut Vec<File>) -> Result<(), Error> {
    files.push(file("manager/namespace.yaml", &[value(&workload::namespace(layout))])?);
    let self_managed = workload::deployment(layout, WebhookCertificates::SelfManaged);
    files.push(file("manager/manager.yaml", &[value(&self_managed)])?);
    files.push(file("manager/metrics_service.yaml", &[value(&workload::metrics_service(layout))])?);
    files.push(file("manager/network_policy.yaml", &[value(&workload::network_policy(layout))])?);
    files.push(kustomization(
        "manager",
        "The operator's Namespace, Deployment, metrics Service and NetworkPolicy.",
        &["namespace.yaml", "manager.yaml", "metrics_service.yaml", "network_policy.yaml"],
        &[],
    )?);
    Ok(())
}

/// `certmanager/` always; `webhook/`, `default/` and `cert-manager/` as the layout's scope
/// allows (a self-managed webhook certificate needs cluster-wide grants).
fn webhook_dirs(layout: &Layout, files: &mut Vec<File>) -> Result<(), Error> {
    let grantee = layout.grantee();
    let service = value(&webhook::service(layout));
    files.push(file("certmanager/service.yaml", std::slice::from_ref(&service))?);
    files.push(file(
        "certmanager/validating_webhook_configuration.yaml",
        &[value(&webhook::configuration(layout, true))],
    )?);
    files.push(file("certmanager/certificate.yaml", &webhook::cert_manager_objects(layout))?);
    files.push(kustomization(
        "certmanager",
        "The webhook with a certificate from cert-manager, whose cainjector fills the caBundle (needs cert-manager).",
        &["service.yaml", "validating_webhook_configuration.yaml", "certificate.yaml"],
        &[],
    )?);

    if layout.cluster_wide() {
        files.push(file("webhook/service.yaml", &[service])?);
        files.push(file(
            "webhook/validating_webhook_configuration.yaml",
            &[value(&webhook::configuration(layout, false))],
        )?);
        files.push(file("webhook/roles.yaml", &render::objects(&grantee, Feature::WebhookSelfManaged))?);
        files.push(kustomization(
            "webhook",
            "The webhook with an operator-managed certificate: the operator publishes its CA in the caBundle.",
            &["service.yaml", "validating_webhook_configuration.yaml", "roles.yaml"],
            &[],
        )?);
        files.push(kustomization(
            "default",
            "ferrometal watching the whole cluster, with operator-managed webhook certificates: kubectl apply -k config/default",
            &["../crd", "../rbac", "../manager", "../webhook"],
            &[],
        )?);
        files.push(file("cert-manager/manager_patch.yaml", &[cert_manager_patch(layout)])?);
        files.push(kustomization(
            "cert-manager",
            "ferrometal watching the whole cluster, with cert-manager issuing the webhook certificate.",
            &["../crd", "../rbac", "../manager", "../certmanager"],
            &["manager_patch.yaml"],
        )?);
    } else {
        files.push(file("default/manager_patch.yaml", &[cert_manager_patch(layout)])?);
        files.push(kustomization(
            "default",
            "ferrometal watching its namespaces with Roles only; cert-manager issues the webhook certificate.",
            &["../crd", "../rbac", "../manager", "../certmanager"],
            &["manager_patch.yaml"],
        )?);
    }
    Ok(())
}

/// `optional/<feature>/`: the roles an install adds for one feature.
fn optional_dirs(layout: &Layout, files: &mut Vec<File>) -> Result<(), Error> {
    let grantee = layout.grantee();
    for feature in [Feature::CertManagerTls, Feature::CsrTls, Feature::NodeAddresses] {
        let dir = format!("optional/{}", feature.slug());
        files.push(file(&format!("{dir}/roles.yaml"), &render::objects(&grantee, feature))?);
        files.push(kustomization(&dir, &optional_comment(feature), &["roles.yaml"], &[])?);
    }
    Ok(())
}

fn optional_comment(feature: Feature) -> String {
    match feature {
        Feature::CertManagerTls => "Roles for Ironics with spec.tls.mode CertManager: kubectl apply -k config/optional/cert-manager-tls".into(),
        Feature::CsrTls => "A ClusterRole for Ironics with spec.tls.mode CertificateSigningRequest: kubectl apply -k config/optional/csr-tls".into(),
        Feature::NodeAddresses => "A ClusterRole to list nodes, for a host-network Ironic without a provisioning IP whose certificate covers its nodes' addresses.".into(),
        other => format!("Roles of {}", other.slug()),
    }
}

/// The strategic-merge patch that turns the default Deployment into the cert-manager one:
/// the arguments that read the mounted certificate, and the mount.
pub(crate) fn cert_manager_patch(layout: &Layout) -> Value {
    let deployment = workload::deployment(layout, WebhookCertificates::CertManager);
    let pod = deployment.spec.map(|s| s.template).and_then(|t| t.spec).unwrap_or_default();
    let container = pod.containers.first().cloned().unwrap_or_default();
    let mounts: Vec<_> = container.volume_mounts.iter().flatten().filter(|m| m.name == "webhook-certificate").collect();
    let volumes: Vec<_> = pod.volumes.iter().flatten().filter(|v| v.name == "webhook-certificate").collect();
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": super::NAME, "namespace": layout.namespace},
        "spec": {"template": {"spec": {
            "containers": [{"name": container.name, "args": container.args, "volumeMounts": mounts}],
            "volumes": volumes,
        }}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(files: &[File]) -> Vec<String> {
        files.iter().map(|f| f.path.display().to_string()).collect()
    }

    #[test]
    fn the_tree_has_what_kubebuilder_users_expect() {
        let files = tree(&Layout::default()).expect("tree");
        let paths = paths(&files);
        for dir in ["crd", "rbac", "manager", "webhook", "default", "cert-manager", "certmanager"] {
            assert!(paths.contains(&format!("{dir}/kustomization.yaml")), "{dir}: {paths:?}");
        }
        for file in &files {
            assert!(file.content.starts_with("---\n") || file.content.starts_with("# "), "{}", file.path.display());
        }
    }

    #[test]
    fn a_namespaced_tree_grants_nothing_cluster_wide_by_default() {
        let layout = Layout { watch_namespaces: vec!["a".into(), "b".into()], ..Layout::default() };
        let files = tree(&layout).expect("tree");
        let rbac = files.iter().find(|f| f.path.ends_with("rbac/roles.yaml")).expect("roles");
        assert!(!rbac.content.contains("kind: ClusterRole"), "{}", rbac.content);
        assert!(!paths(&files).iter().any(|p| p.starts_with("webhook/")), "no self-managed certificates");
        let default = files.iter().find(|f| f.path.ends_with("default/kustomization.yaml")).expect("default");
        assert!(default.content.contains("../certmanager"), "{}", default.content);
    }
}
