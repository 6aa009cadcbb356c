//! `shards/`: an install whose BareMetalHosts are divided into shards (`--shards`, design/hosts.md
//! "Shards"): on top of `default/`, a second Deployment, `ferrometal-hosts`, whose replicas run
//! the host controller alone with one Lease per shard (`--shard-leases`) and divide the shards
//! among them; the main Deployment runs the Ironic and NodeSet controllers only, and serves the
//! webhooks; a Role lets the ServiceAccount hold the shard Leases, by name.

use super::workload;
use crate::install::rbac::table::LEADER_LEASE;
use crate::install::{Layout, NAME, WebhookCertificates};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// The shards `ferrometal manifests` divides the hosts into unless told otherwise.
pub(crate) const DEFAULT_SHARDS: [&str; 4] = ["0", "1", "2", "3"];
/// The Deployment of the sharded host controller.
pub(crate) const HOSTS: &str = "ferrometal-hosts";
/// The Role and RoleBinding of the shard Leases.
const LEASES_ROLE: &str = "ferrometal-shard-leases";

/// The labels selecting the sharded host controller's pods: not the operator's, so that
/// neither the webhook Service nor the metrics Service sends them anything.
fn selector() -> std::collections::BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name".to_string(), NAME.to_string()),
        ("app.kubernetes.io/component".to_string(), "hosts".to_string()),
    ]
    .into()
}

/// The flag that leaves the main Deployment the Ironic and NodeSet controllers.
pub(crate) const MAIN_CONTROLLERS: &str = "--controllers=ironic,nodeset";

/// The host controller's Deployment: the operator's, with its own name and pod labels, no
/// webhook, and the flags that divide the shards by Lease.
pub(crate) fn hosts_deployment(layout: &Layout) -> Deployment {
    hosts_deployment_with(layout, WebhookCertificates::SelfManaged)
}

/// The same for the OLM bundle: the namespaces to watch read from the annotation OLM puts on
/// every pod of the CSV (`olm.targetNamespaces`), as the main Deployment reads them.
pub(crate) fn olm_hosts_deployment(layout: &Layout) -> Deployment {
    hosts_deployment_with(layout, WebhookCertificates::Olm)
}

/// The host controller's Deployment, its environment that of `certificates`' install (the
/// certificate flags themselves are replaced: it serves no webhook).
fn hosts_deployment_with(layout: &Layout, certificates: WebhookCertificates) -> Deployment {
    let mut deployment = workload::deployment(layout, certificates);
    deployment.metadata.name = Some(HOSTS.to_string());
    let Some(spec) = deployment.spec.as_mut() else { return deployment };
    let (selector, mut labels) = (selector(), layout.labels());
    labels.extend(selector.clone());
    spec.selector.match_labels = Some(selector.clone());
    if let Some(meta) = spec.template.metadata.as_mut() {
        meta.labels = Some(labels);
    }
    if let Some(pod) = spec.template.spec.as_mut() {
        let affinity = pod.affinity.as_mut().and_then(|a| a.pod_anti_affinity.as_mut());
        for term in
            affinity.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_mut()).into_iter().flatten()
        {
            term.pod_affinity_term.label_selector =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(selector.clone()),
                    match_expressions: None,
                });
        }
        for container in &mut pod.containers {
            container.args = Some(host_args(layout));
            container.ports.get_or_insert_with(Vec::new).retain(|p| p.name.as_deref() != Some("webhook"));
        }
    }
    deployment
}

fn host_args(layout: &Layout) -> Vec<String> {
    vec![
        "run".to_string(),
        "--leader-elect".to_string(),
        "--controllers=host".to_string(),
        format!("--shards={}", layout.shards.join(",")),
        "--shard-leases".to_string(),
        // The main Deployment serves the webhooks; these pods are outside their Service.
        "--disable-webhooks".to_string(),
    ]
}

/// The NetworkPolicy of the host controller's pods: the operator's, without the webhook port
/// (they serve none): only their metrics, to the namespaces labelled to scrape them.
pub(crate) fn network_policy(layout: &Layout) -> k8s_openapi::api::networking::v1::NetworkPolicy {
    let mut policy = workload::network_policy(layout);
    policy.metadata.name = Some(HOSTS.to_string());
    if let Some(spec) = policy.spec.as_mut() {
        spec.pod_selector = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(selector()),
            match_expressions: None,
        });
        spec.ingress.get_or_insert_with(Vec::new).retain(|rule| rule.from.is_some());
    }
    policy
}

/// The strategic-merge patch that leaves the main Deployment the Ironic and NodeSet
/// controllers (and the webhooks) only.
pub(crate) fn manager_patch(layout: &Layout) -> Value {
    let certificates =
        if layout.cluster_wide() { WebhookCertificates::SelfManaged } else { WebhookCertificates::CertManager };
    let mut args = workload::args(layout, certificates);
    args.push(MAIN_CONTROLLERS.to_string());
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": layout.namespace},
        "spec": {"template": {"spec": {"containers": [{"name": workload::CONTAINER, "args": args}]}}},
    })
}

/// The Lease of each shard, as the runtime names it.
pub(crate) fn lease_names(layout: &Layout) -> Vec<String> {
    layout.shards.iter().map(|shard| crate::runtime::shard_lease_name(LEADER_LEASE, shard)).collect()
}

/// The Role that lets the ServiceAccount watch and hold the shard Leases (creating any Lease is
/// granted already: creation cannot be limited by name), and its binding.
pub(crate) fn lease_roles(layout: &Layout) -> (Role, RoleBinding) {
    let meta = ObjectMeta {
        name: Some(LEASES_ROLE.to_string()),
        namespace: Some(layout.namespace.clone()),
        labels: Some(layout.labels()),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["coordination.k8s.io".to_string()]),
            resources: Some(vec!["leases".to_string()]),
            resource_names: Some(lease_names(layout)),
            // Watched one by one (a field selector on the name, which a rule by name allows):
            // a replica sees another's renewal as it is written, and takes its shard the moment
            // its term ends. Taken and asked for with a replace (update) carrying the
            // resourceVersion read; renewed, released, and a request withdrawn, with a JSON patch
            // tested on the holder or requester (patch), which others' writes in between do not
            // fail.
            verbs: ["get", "list", "watch", "update", "patch"].map(String::from).to_vec(),
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "Role".to_string(),
            name: LEASES_ROLE.to_string(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: NAME.to_string(),
            namespace: Some(layout.namespace.clone()),
            ..Default::default()
        }]),
    };
    (role, binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout { shards: vec!["east".into(), "west".into()], ..Layout::default() }
    }

    #[test]
    fn the_host_deployment_takes_shard_leases_and_serves_no_webhook() {
        let deployment = hosts_deployment(&layout());
        let spec = deployment.spec.expect("spec");
        let pod = spec.template.spec.expect("pod");
        let args = pod.containers[0].args.clone().unwrap_or_default();
        assert_eq!(
            args,
            [
                "run",
                "--leader-elect",
                "--controllers=host",
                "--shards=east,west",
                "--shard-leases",
                "--disable-webhooks"
            ]
        );
        let ports = pod.containers[0].ports.clone().unwrap_or_default();
        assert!(ports.iter().all(|p| p.name.as_deref() != Some("webhook")));
        let labels = spec.selector.match_labels.expect("selector");
        assert_eq!(labels.get("app.kubernetes.io/component").map(String::as_str), Some("hosts"));
        assert_ne!(labels, layout().selector(), "the webhook and metrics Services select none of its pods");
    }

    #[test]
    fn under_olm_the_host_pods_watch_the_namespaces_olm_targets() {
        let deployment = olm_hosts_deployment(&layout());
        let pod = deployment.spec.and_then(|s| s.template.spec).expect("pod");
        let env = pod.containers[0].env.clone().unwrap_or_default();
        let watch = env.iter().find(|e| e.name == "WATCH_NAMESPACE").expect("WATCH_NAMESPACE");
        let from = watch.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
        assert_eq!(from, Some("metadata.annotations['olm.targetNamespaces']"));
        let args = pod.containers[0].args.clone().unwrap_or_default();
        assert!(args.contains(&"--shard-leases".to_string()) && args.contains(&"--disable-webhooks".to_string()));
        assert!(!args.iter().any(|a| a.starts_with("--webhook")), "no certificate flags: {args:?}");
    }

    #[test]
    fn the_host_pods_admit_only_scrapers_of_their_metrics() {
        let policy = network_policy(&layout());
        let spec = policy.spec.expect("spec");
        let selected = spec.pod_selector.and_then(|s| s.match_labels).unwrap_or_default();
        assert_eq!(selected.get("app.kubernetes.io/component").map(String::as_str), Some("hosts"));
        let ingress = spec.ingress.unwrap_or_default();
        assert_eq!(ingress.len(), 1, "the metrics port only: {ingress:?}");
        assert!(ingress[0].from.is_some(), "from labelled namespaces only");
    }

    #[test]
    fn the_main_deployment_keeps_the_ironic_and_nodeset_controllers() {
        let patch = manager_patch(&layout());
        let args = &patch["spec"]["template"]["spec"]["containers"][0]["args"];
        assert!(args.as_array().expect("args").iter().any(|a| a == "--controllers=ironic,nodeset"));
        assert!(args.as_array().expect("args").iter().any(|a| a == "--leader-elect"));
    }

    #[test]
    fn the_role_names_each_shard_lease_the_runtime_takes() {
        let (role, binding) = lease_roles(&layout());
        let rule = &role.rules.expect("rules")[0];
        assert_eq!(
            rule.resource_names.clone().unwrap_or_default(),
            ["ferrometal-leader-shard-east", "ferrometal-leader-shard-west"]
        );
        assert_eq!(rule.verbs, ["get", "list", "watch", "update", "patch"]);
        assert_eq!(binding.role_ref.name, role.metadata.name.unwrap_or_default());
    }
}
