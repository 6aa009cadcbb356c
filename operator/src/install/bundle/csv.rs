//! The ClusterServiceVersion: the same Deployment and RBAC as `config/`, the owned CRDs, the
//! webhooks, the install modes the operator supports, examples from `crds/samples`, and the
//! listing's metadata.

use super::{Variant, descriptors};
use crate::install::manifests::{shards, workload};
use crate::install::rbac::{Feature, Reach, render};
use crate::install::{Error, Layout, NAME, WEBHOOK_PORT, WebhookCertificates};
use base64::Engine;
use serde_json::{Value, json};

/// The OLM packages (the whole operator, and the one dividing hosts into shards) and their
/// channel.
pub const PACKAGE: &str = "ferrometal";
pub const SHARDED_PACKAGE: &str = "ferrometal-sharded";
pub const CHANNEL: &str = "alpha";
/// The oldest Kubernetes the operator is tested against.
pub(crate) const MIN_KUBE_VERSION: &str = "1.20.0";
/// The samples offered as `alm-examples`, one per kind a user creates.
pub const EXAMPLES: &[&str] = &[
    "ironic-minimal.yaml",
    "baremetalhost-minimal.yaml",
    "hostfirmwaresettings-bmo.yaml",
    "hostfirmwarecomponents-bmo.yaml",
    "hostupdatepolicy-full.yaml",
    "dataimage-bmo.yaml",
    "bmceventsubscription-bmo.yaml",
    "nodeset-minimal.yaml",
    "nodesetservice-minimal.yaml",
];
/// Kinds the operator writes and users do not create: hidden from the console's forms.
pub(crate) const INTERNAL: &[&str] =
    &["hardwaredata.metal3.io", "firmwareschemas.metal3.io", "preprovisioningimages.metal3.io"];
/// The install modes: the operator watches one namespace, a list of them, or all.
pub(crate) const INSTALL_MODES: &[(&str, bool)] =
    &[("OwnNamespace", true), ("SingleNamespace", true), ("MultiNamespace", true), ("AllNamespaces", true)];

const ICON: &str = include_str!("icon.svg");

const DESCRIPTION: &str = "ferrometal runs OpenStack Ironic and the bare-metal machines it provisions.

- **Ironic** (`ironic.metal3.io/v1alpha1`): the YAML ironic-standalone-operator users already have becomes a running Ironic, with TLS, a managed or external MariaDB, and version upgrades.
- **BareMetalHost** (`metal3.io/v1alpha1`): baremetal-operator's hosts, driven through Ironic's API, with each host's BIOS settings read into its **HostFirmwareSettings** and their schema into a **FirmwareSchema**, and its firmware versions into its **HostFirmwareComponents**; a **HostUpdatePolicy** lets a provisioned host be serviced at its next reboot for its settings and firmware updates; a **DataImage** attaches an ISO to a provisioned host's virtual CD at its next power on; a **BMCEventSubscription** subscribes a webhook to a host's Redfish events; with `--build-preprov-image`, each host boots the deploy image of its **PreprovisioningImage**, which the operator makes for it.
- **NodeSet** (`ferrometal.io/v1alpha1`): groups of hosts whose day-2 configuration is edited in place. No machine is ever deprovisioned unless a user explicitly asks for that machine.

Uninstalling the operator leaves BareMetalHosts and machines alone.

Ironics with `spec.tls.mode: CertManager` need cert-manager and the roles in `config/optional/cert-manager-tls` of the source repository; Ironics with `spec.tls.mode: CertificateSigningRequest` need the ClusterRole in `config/optional/csr-tls`.";

/// What the sharded package's description adds, for the shards of `layout`.
fn sharded_description(layout: &Layout) -> String {
    format!("

This package divides the BareMetalHosts into shards ({}, from each host's namespace and name): the replicas of the `ferrometal-hosts` Deployment take one Lease per shard, serve the hosts of the shards they hold, and take over the shards of a replica that stops. The `ferrometal` Deployment runs the Ironic and NodeSet controllers and serves the webhooks. Install either this package or `ferrometal`, not both.", layout.shards.join(", "))
}

/// `X.Y.Z` with numeric parts: what OLM compares versions by.
pub(crate) fn check_version(version: &str) -> Result<(), Error> {
    let parts: Vec<&str> = version.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() == 3 && parts.iter().all(numeric) { Ok(()) } else { Err(Error::Version(version.to_string())) }
}

/// The examples, without namespace: the console creates them where the user is.
pub(crate) fn examples() -> Result<Vec<Value>, Error> {
    EXAMPLES
        .iter()
        .map(|file| {
            let sample = crds::samples::ALL
                .iter()
                .find(|s| s.file == *file)
                .ok_or_else(|| Error::MissingSample(file.to_string()))?;
            let mut object: Value = serde_saphyr::from_str(sample.yaml)
                .map_err(|source| Error::Sample { file: file.to_string(), source: Box::new(source) })?;
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("namespace");
            }
            Ok(object)
        })
        .collect()
}

/// One webhook definition per validated kind, from the same rendering as the
/// ValidatingWebhookConfiguration of `config/`.
fn webhook_definitions() -> Vec<Value> {
    let client = crate::webhook::ClientConfig::Url("https://unused".to_string());
    let configuration = crate::webhook::render_configuration(&client, None);
    configuration
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .map(|webhook| {
            let path = webhook.client_config.url.as_deref().unwrap_or_default().trim_start_matches("https://unused");
            json!({
                "type": "ValidatingAdmissionWebhook",
                "generateName": webhook.name,
                "deploymentName": NAME,
                "containerPort": 443,
                "targetPort": WEBHOOK_PORT,
                "webhookPath": path,
                "admissionReviewVersions": webhook.admission_review_versions,
                "sideEffects": webhook.side_effects,
                "failurePolicy": webhook.failure_policy,
                "matchPolicy": webhook.match_policy,
                "timeoutSeconds": webhook.timeout_seconds,
                "rules": webhook.rules,
            })
        })
        .collect()
}

/// The rules of the CSV's `permissions` (namespaced: OLM grants them in the operator's
/// namespace and every target namespace, or cluster-wide for AllNamespaces) and
/// `clusterPermissions`: what every install grants, without the webhook's self-management
/// (OLM provides the certificate and registers the webhooks).
pub(crate) fn permissions() -> (Vec<Value>, Vec<Value>) {
    let to_values = |rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>| {
        rules.iter().map(|r| serde_json::to_value(r).unwrap_or_default()).collect::<Vec<_>>()
    };
    (
        to_values(render::namespaced_rules(Feature::Always)),
        to_values(render::all_rules(Reach::Cluster, Feature::Always)),
    )
}

/// The install strategy's Deployments: the operator's, and with shards the host controller's
/// beside it (the main one then runs the Ironic and NodeSet controllers only).
fn deployments(layout: &Layout, variant: Variant) -> Vec<Value> {
    let mut main = workload::deployment(layout, WebhookCertificates::Olm);
    let entry = |name: &str, deployment: k8s_openapi::api::apps::v1::Deployment| json!({"name": name, "label": layout.labels(), "spec": deployment.spec});
    if variant == Variant::Whole {
        return vec![entry(NAME, main)];
    }
    let pod = main.spec.as_mut().and_then(|s| s.template.spec.as_mut());
    for container in pod.map(|p| p.containers.iter_mut()).into_iter().flatten() {
        container.args.get_or_insert_with(Vec::new).push(shards::MAIN_CONTROLLERS.to_string());
    }
    vec![entry(NAME, main), entry(shards::HOSTS, shards::olm_hosts_deployment(layout))]
}

/// The ClusterServiceVersion of `variant`'s bundle of `version`.
pub(crate) fn csv(version: &str, variant: Variant) -> Result<Value, Error> {
    check_version(version)?;
    let layout = Layout { image: crate::install::image(version), ..Layout::default() };
    let (mut namespaced, cluster) = permissions();
    if variant == Variant::Sharded {
        // OLM grants these where it grants the rest: the shard Leases live in the operator's
        // namespace, and the rule names them.
        let (role, _) = shards::lease_roles(&layout);
        namespaced.extend(role.rules.unwrap_or_default().iter().map(|r| serde_json::to_value(r).unwrap_or_default()));
    }
    let service_account = NAME;
    let mut install = json!({
        "deployments": deployments(&layout, variant),
        "permissions": [{"serviceAccountName": service_account, "rules": namespaced}],
    });
    if !cluster.is_empty() {
        install["clusterPermissions"] = json!([{"serviceAccountName": service_account, "rules": cluster}]);
    }
    let examples = serde_json::to_string_pretty(&examples()?).unwrap_or_default();
    let package = variant.package();
    let description = if variant == Variant::Sharded {
        format!("{DESCRIPTION}{}", sharded_description(&layout))
    } else {
        DESCRIPTION.to_string()
    };
    Ok(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{package}.v{version}"),
            "namespace": "placeholder",
            "annotations": {
                "alm-examples": examples,
                "capabilities": "Seamless Upgrades",
                "categories": "Cloud Provider",
                "containerImage": layout.image,
                "description": "Runs OpenStack Ironic and the bare-metal machines it provisions: Ironic, BareMetalHosts and NodeSets.",
                "repository": "https://github.com/ferrometal/ferrometal",
                "support": "ferrometal",
                "operatorframework.io/suggested-namespace": crate::install::DEFAULT_NAMESPACE,
                "operators.operatorframework.io/internal-objects": serde_json::to_string(INTERNAL).unwrap_or_default(),
                // The upgrade policy: every earlier version upgrades straight to this one.
                "olm.skipRange": format!("<{version}"),
            },
            "labels": layout.labels(),
        },
        "spec": {
            "displayName": if variant == Variant::Sharded { "ferrometal (sharded hosts)" } else { "ferrometal" },
            "description": description,
            "version": version,
            "minKubeVersion": MIN_KUBE_VERSION,
            "maturity": CHANNEL,
            "provider": {"name": "ferrometal", "url": "https://github.com/ferrometal/ferrometal"},
            "maintainers": [{"name": "ferrometal maintainers", "email": "maintainers@ferrometal.io"}],
            "links": [
                {"name": "Source", "url": "https://github.com/ferrometal/ferrometal"},
                {"name": "Install on a cluster", "url": "https://github.com/ferrometal/ferrometal#install-on-a-cluster"},
            ],
            "keywords": ["ironic", "metal3", "baremetal", "bare metal", "provisioning", "openstack"],
            "icon": [{"base64data": base64::engine::general_purpose::STANDARD.encode(ICON), "mediatype": "image/svg+xml"}],
            "installModes": INSTALL_MODES.iter().map(|(mode, supported)| json!({"type": mode, "supported": supported})).collect::<Vec<_>>(),
            "customresourcedefinitions": {"owned": descriptors::owned()},
            "install": {"strategy": "deployment", "spec": install},
            "webhookdefinitions": webhook_definitions(),
        },
    }))
}
