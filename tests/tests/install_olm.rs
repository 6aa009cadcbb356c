//! An OLM install, done as OLM does it, from the checked-in bundle: the CRDs from
//! `bundle/manifests/`, the ServiceAccount, Roles and bindings from the CSV's permissions (in
//! the operator's namespace and the target namespace, as OLM's OperatorGroup copies them), the
//! webhooks from its webhook definitions with a CA of its own, the certificate mounted where
//! OLM mounts it, and the pod's environment with `olm.targetNamespaces`. The operator runs as
//! a process with that identity, and every `alm-examples` object reaches its steady state.
//!
//! What stands in for OLM's cluster: the pod is the process (its certificate directory is a
//! temporary one instead of `/apiserver.local.config/certificates`); the webhooks are reached
//! at a loopback URL instead of OLM's Service; no namespaceSelector (OLM derives it from the
//! OperatorGroup's labels).

mod install_common;

use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::operator_process::{OperatorProcess, repo_root};
use ferrometal_tests::pki::{Authority, loopback};
use ferrometal_tests::{ControlPlane, PodSimulator, ports};
use install_common::workloads::{self, resource, wait_steady};
use install_common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use std::time::Duration;

const OPERATOR_NAMESPACE: &str = "ferrometal-operators";

fn bundle_objects() -> anyhow::Result<Vec<Value>> {
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("bundle/manifests"))? {
        let text = std::fs::read_to_string(entry?.path())?;
        objects.extend(serde_saphyr::from_multiple::<Value>(&text)?.into_iter().filter(|v| !v.is_null()));
    }
    Ok(objects)
}

/// The Role and RoleBinding OLM makes from a CSV's `permissions` entry in `namespace`.
fn role_and_binding(csv: &str, namespace: &str, account: &str, rules: &Value) -> [Value; 2] {
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": csv, "namespace": namespace}, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": csv, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": csv},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": OPERATOR_NAMESPACE}]}),
    ]
}

/// The ValidatingWebhookConfiguration OLM makes from the CSV's webhook definitions.
fn webhook_configuration(csv: &Value, base: &str, ca_pem: &str) -> Value {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let webhooks: Vec<Value> = csv["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            json!({"name": d["generateName"], "admissionReviewVersions": d["admissionReviewVersions"],
                "sideEffects": d["sideEffects"], "failurePolicy": d["failurePolicy"], "matchPolicy": d["matchPolicy"],
                "timeoutSeconds": d["timeoutSeconds"], "rules": d["rules"],
                "clientConfig": {"url": format!("{base}{}", d["webhookPath"].as_str().unwrap_or_default()), "caBundle": ca}})
        })
        .collect();
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": format!("{}-webhooks", name_of(csv))}, "webhooks": webhooks})
}

/// What an example becomes here: its BMC address and image URLs name no machine reachable
/// from here (and nothing may be sent to them), so the fake hardware and the harness's image
/// server stand in for them.
fn localized(example: &Value, image: &str) -> Value {
    let mut example = example.clone();
    match kind_of(&example) {
        "BareMetalHost" => example["spec"]["bmc"]["address"] = format!("fake://{}", name_of(&example)).into(),
        "NodeSet" => example["spec"]["baremetalSetTemplate"]["image"] = json!({"url": image, "format": "live-iso"}),
        _ => {}
    }
    example
}

#[tokio::test]
async fn an_olm_install_from_the_csv_takes_every_alm_example_to_its_steady_state() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let _sim = PodSimulator::start(cp.client()).await?;
    let ironic_server = IronicServer::start(IronicConfig::default()).await?;
    let objects = bundle_objects()?;
    let crds: Vec<CustomResourceDefinition> = objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
        .map(|o| serde_json::from_value(o.clone()))
        .collect::<Result<_, _>>()?;
    cp.install_crds(&crds).await?;
    let csv = objects.iter().find(|o| kind_of(o) == "ClusterServiceVersion").cloned().expect("one CSV");
    let csv_name = name_of(&csv).to_string();

    // SingleNamespace: the operator in its namespace, watching another.
    cp.create_namespace(OPERATOR_NAMESPACE).await?;
    let target = cp.namespace("olm-target").await?;
    let install = &csv["spec"]["install"]["spec"];
    let mut rbac = Vec::new();
    for permission in install["permissions"].as_array().into_iter().flatten() {
        let account = permission["serviceAccountName"].as_str().unwrap_or_default();
        rbac.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": OPERATOR_NAMESPACE}}));
        for namespace in [OPERATOR_NAMESPACE, target.as_str()] {
            rbac.extend(role_and_binding(&csv_name, namespace, account, &permission["rules"]));
        }
    }
    assert!(install["clusterPermissions"].is_null(), "nothing cluster-wide to grant");
    let webhook_port = ports::free_port()?;
    let ca = Authority::new("olm-test-ca")?;
    let serving = ca.server(&["localhost"], &[loopback()])?;
    rbac.push(webhook_configuration(&csv, &format!("https://127.0.0.1:{webhook_port}"), ca.cert_pem()));
    apply(&cp, &rbac)?;

    // The pod OLM makes from the install strategy's Deployment.
    let deployment = json!({"spec": install["deployments"][0]["spec"]});
    let account = deployment["spec"]["template"]["spec"]["serviceAccountName"].as_str().unwrap_or_default().to_string();
    let (mut args, mut env) =
        pod_command(&deployment, OPERATOR_NAMESPACE, "ferrometal-olm-0", &[("olm.targetNamespaces", &target)])?;
    let certificates = tempfile::tempdir()?;
    std::fs::write(certificates.path().join("apiserver.crt"), &serving.cert_pem)?;
    std::fs::write(certificates.path().join("apiserver.key"), &serving.key_pem)?;
    for arg in &mut args {
        *arg = arg.replace(operator::install::OLM_CERT_DIR, &certificates.path().display().to_string());
    }
    set_flag(&mut args, "webhook-addr", &format!("127.0.0.1:{webhook_port}"));
    env.extend([
        ("CONTROLLERS".to_string(), workloads::controllers()),
        ("IRONIC_ENDPOINT".to_string(), ironic_server.endpoint().to_string()),
        ("HOST_FAST_POLL_INTERVAL".to_string(), "300ms".to_string()),
    ]);
    let kubeconfig = cp.service_account_kubeconfig(OPERATOR_NAMESPACE, &account).await?;
    let mut operator = OperatorProcess::start("ferrometal-olm", &kubeconfig, &args, &env)?;
    operator.wait_leading(Duration::from_secs(120)).await?;

    let admin = cp.client();
    let image = ironic_server.image_server().write_live_iso("olm/live.iso")?;
    let examples: Vec<Value> =
        serde_json::from_str(csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap_or("[]"))?;
    for example in &examples {
        let kind = kind_of(example);
        if kind == "NodeSet" && !workloads::nodeset_controller_exists() {
            continue; // its steady state needs the NodeSet controller
        }
        if kind == "NodeSet" {
            // Hosts for it to claim: one available fake host per hostname.
            let hosts = resource("metal3.io", "BareMetalHost");
            for (i, _) in example["spec"]["nodes"].as_object().into_iter().flatten().enumerate() {
                let name = format!("nodeset-pool-{i}");
                workloads::apply(&admin, &target, workloads::fake_host(&name, false, None, json!({}))).await?;
                wait_steady(&admin, &mut operator, &target, &hosts, &name, "available", |h| {
                    workloads::host_state(h) == "available"
                })
                .await?;
            }
        }
        if kind == "BareMetalHost" {
            let credentials = example["spec"]["bmc"]["credentialsName"].as_str().unwrap_or_default();
            workloads::apply(
                &admin,
                &target,
                json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": credentials}, "stringData": {"username": "admin", "password": "example"}}),
            )
            .await?;
        }
        workloads::apply(&admin, &target, localized(example, &image)).await?;
        let group = example["apiVersion"].as_str().unwrap_or_default().split('/').next().unwrap_or_default();
        let api = resource(group, kind);
        let name = name_of(example);
        match kind {
            "Ironic" | "NodeSet" => {
                wait_steady(&admin, &mut operator, &target, &api, name, "Ready", workloads::ready).await?
            }
            "BareMetalHost" => {
                // online: false and no image: registered, inspected, and then available.
                wait_steady(&admin, &mut operator, &target, &api, name, "available", |h| {
                    workloads::host_state(h) == "available"
                })
                .await?
            }
            // A NodeSetService is a definition NodeSets run; admitted and stored is its steady state.
            _ => {
                wait_steady(&admin, &mut operator, &target, &api, name, "stored", |o| {
                    contains(&o["spec"], &example["spec"])
                })
                .await?
            }
        };
    }

    let identity = ferrometal_tests::control_plane::client_from_kubeconfig(&kubeconfig).await?;
    let denied = [
        ask("get", "", "secrets", Some("default")),
        ask("list", "metal3.io", "baremetalhosts", None),
        // OLM registers the webhooks and provides their certificate.
        ask("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None),
        ask("create", "rbac.authorization.k8s.io", "roles", Some(&target)),
    ];
    let allowed = [ask("watch", "ironic.metal3.io", "ironics", Some(&target))];
    assert_access(&identity, &allowed, &denied).await?;
    let log = operator.log();
    assert!(!log.to_lowercase().contains("forbidden"), "the operator was refused something:\n{log}");
    operator.stop(Duration::from_secs(20)).await?;
    Ok(())
}

#[tokio::test]
async fn every_alm_example_is_accepted_by_a_server_side_dry_run() -> anyhow::Result<()> {
    // Bundle validation's rule that examples are valid objects of their CRDs: here against the
    // bundle's CRDs on a real apiserver, with the operator's validating webhooks registered.
    let mut cp = ControlPlane::start().await?;
    let objects = bundle_objects()?;
    let crds: Vec<CustomResourceDefinition> = objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
        .map(|o| serde_json::from_value(o.clone()))
        .collect::<Result<_, _>>()?;
    cp.install_crds(&crds).await?;
    let ns = cp.namespace("olm-examples").await?;
    let port = ports::free_port()?;
    let mut config = operator::OperatorConfig::minimal("dry-run");
    config.webhook = Some(operator::webhook::Config::new(
        ([127, 0, 0, 1], port).into(),
        operator::webhook::Certificates::SelfManaged { secret_namespace: ns.clone() },
        Some(operator::webhook::ClientConfig::Url(format!("https://127.0.0.1:{port}"))),
    ));
    let _operator = operator::Operator::start(cp.client(), config).await?;
    let csv = objects.iter().find(|o| kind_of(o) == "ClusterServiceVersion").cloned().expect("one CSV");
    let examples: Vec<Value> =
        serde_json::from_str(csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap_or("[]"))?;
    assert_eq!(examples.len(), operator::install::bundle::csv::EXAMPLES.len());
    for example in &examples {
        let group_version = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            cp.client(),
            &ns,
            &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(group, version, kind_of(example))),
        );
        let object: kube::api::DynamicObject = serde_json::from_value(example.clone())?;
        let params = kube::api::PostParams { dry_run: true, ..Default::default() };
        let stored =
            api.create(&params, &object).await.map_err(|e| anyhow::anyhow!("{} refused: {e}", kind_of(example)))?;
        // Kubernetes 1.20 prunes fields its schema does not know without a word: every field
        // of the example must come back.
        let stored = serde_json::to_value(stored)?;
        assert!(contains(&stored["spec"], &example["spec"]), "{} lost fields: {stored:#}", kind_of(example));
        assert!(api.get_opt(name_of(example)).await?.is_none(), "a dry run stores nothing");
    }
    cp.ensure_running()?;
    Ok(())
}

/// True when `outer` has every field of `inner`, with the same values (defaults may be added).
fn contains(outer: &Value, inner: &Value) -> bool {
    match (outer, inner) {
        (Value::Object(o), Value::Object(i)) => i.iter().all(|(k, v)| o.get(k).is_some_and(|ov| contains(ov, v))),
        (Value::Array(o), Value::Array(i)) => o.len() == i.len() && o.iter().zip(i).all(|(a, b)| contains(a, b)),
        _ => outer == inner,
    }
}
