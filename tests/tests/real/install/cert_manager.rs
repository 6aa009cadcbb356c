//! `config/cert-manager` as users apply it, on the real node, with cert-manager
//! (`ferrometal_tests::cert_manager`: its controller, cainjector and webhook as the release's
//! pods on the same node) issuing the webhook's certificate from the overlay's own Issuer, its
//! cainjector filling the webhooks' `caBundle` from the Certificate named by the
//! `cert-manager.io/inject-ca-from` annotation, and the operator's pods serving the certificate
//! from the Secret cert-manager wrote. cert-manager's webhook, called through its Service,
//! validates every cert-manager object of the test, and a test of its own (without a node,
//! cert-manager as processes) shows what it does.

use super::{OperatorPods, until_available};
use crate::install_common::workloads::{self, Running as _};
use crate::install_common::{config_dir, kubectl};
use anyhow::Context as _;
use base64::Engine as _;
use ferrometal_tests::cert_manager::{self as cm, CertManager};
use ferrometal_tests::operator_process::operator_image;
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, wait};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use operator::testing::install::DEFAULT_NAMESPACE;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The overlay's Certificate and the Secret cert-manager writes for it.
const CERTIFICATE: &str = "ferrometal-serving-cert";
const SECRET: &str = "ferrometal-webhook-server-cert";

/// The CA cainjector put in every webhook of the annotated configuration once it equals the
/// `ca.crt` of the Certificate's Secret, which the annotation names.
async fn injected_ca(admin: &kube::Client) -> anyhow::Result<Option<String>> {
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let configuration = configurations.get(operator::testing::webhook::CONFIGURATION_NAME).await?;
    let annotations = configuration.metadata.annotations.clone().unwrap_or_default();
    let from = annotations.get("cert-manager.io/inject-ca-from").context("the inject-ca-from annotation")?;
    assert_eq!(from, &format!("{DEFAULT_NAMESPACE}/{CERTIFICATE}"), "the overlay's Certificate");
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let secret = secrets.get(SECRET).await?;
    let ca = secret.data.unwrap_or_default().get("ca.crt").context("ca.crt in the Secret")?.0.clone();
    let webhooks = configuration.webhooks.unwrap_or_default();
    let filled =
        !webhooks.is_empty() && webhooks.iter().all(|w| w.client_config.ca_bundle.as_ref().is_some_and(|b| b.0 == ca));
    Ok(filled.then(|| base64::engine::general_purpose::STANDARD.encode(&ca)))
}

#[tokio::test]
async fn installed_with_cert_manager_the_webhooks_serve_the_certificate_cert_manager_issued() -> anyhow::Result<()> {
    let started = Instant::now();
    let archive = tokio::task::spawn_blocking(operator_image).await??;
    let mut cp = ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }).await?;
    let ns = cp.namespace("install-cert-manager").await?;
    cp.node().context("a node")?.import(&archive)?;
    let mut cert_manager = CertManager::start(&cp).await?;
    let (admin, kubeconfig) = (cp.client(), cp.kubeconfig());
    eprintln!("---- real::install: control plane, node and cert-manager up in {:.1?}", started.elapsed());
    // cert-manager as in a cluster: its three pods on the node, its webhook called through its
    // Service.
    let node = cp.node().context("a node")?.name().to_string();
    let pods = Api::<Pod>::namespaced(admin.clone(), cm::NAMESPACE).list(&Default::default()).await?.items;
    let mut running: Vec<_> = pods
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()) == Some(&node))
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| p.metadata.labels.as_ref()?.get("app.kubernetes.io/component").cloned())
        .collect();
    running.sort();
    assert_eq!(running, ["cainjector", "controller", "webhook"], "cert-manager's pods running on the node");
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let webhooks = configurations.get(cm::WEBHOOK_CONFIGURATION).await?.webhooks.unwrap_or_default();
    let service = webhooks.first().and_then(|w| w.client_config.service.clone()).context("the webhook's Service")?;
    assert_eq!((service.name.as_str(), service.namespace.as_str()), (cm::WEBHOOK_SERVICE, cm::NAMESPACE));

    kubectl(
        kubeconfig,
        &["apply", "--server-side", "-k", &config_dir().join("cert-manager").display().to_string()],
        None,
    )?;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let issued = wait::until("cert-manager's Secret", Duration::from_secs(60), Duration::from_millis(500), || {
        let secrets = secrets.clone();
        async move { secrets.get_opt(SECRET).await.ok().flatten().filter(|s| s.data.is_some()) }
    })
    .await;
    cert_manager.checked(issued).await?;
    let injected = wait::until("cainjector's caBundle", Duration::from_secs(60), Duration::from_millis(500), || {
        let admin = admin.clone();
        async move { injected_ca(&admin).await.ok().flatten() }
    })
    .await;
    let injected = cert_manager.checked(injected).await?;

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let mut pods = OperatorPods::new(kubeconfig, DEFAULT_NAMESPACE);
    until_available(&deployments, kubeconfig).await?;
    pods.ensure_running()?;
    eprintln!("---- real::install: the operator's pods ready in {:.1?}", started.elapsed());

    // The apiserver reaches the webhook through its Service and trusts the certificate
    // cert-manager issued through the CA cainjector injected: the webhook's own refusal comes back.
    let refused = workloads::webhook_refusal(&admin, &ns).await?;
    assert!(refused.contains("admission webhook \"vironics.ferrometal.io\" denied"), "{refused}");
    // With a certificate from files the operator makes no CA of its own: the bundle stays
    // the one cainjector injected.
    let configuration: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let webhooks =
        configuration.get(operator::testing::webhook::CONFIGURATION_NAME).await?.webhooks.unwrap_or_default();
    for webhook in &webhooks {
        let bundle =
            webhook.client_config.ca_bundle.as_ref().map(|b| base64::engine::general_purpose::STANDARD.encode(&b.0));
        assert_eq!(bundle.as_deref(), Some(injected.as_str()), "{}: the injected CA", webhook.name);
    }
    eprintln!("---- real::install: done in {:.1?}", started.elapsed());
    Ok(())
}

/// A Certificate in `namespace` of the given `duration`, otherwise valid.
fn certificate(name: &str, namespace: &str, duration: &str) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"dnsNames": ["ironic.example.com"], "secretName": name, "duration": duration,
                 "issuerRef": {"name": "some-issuer", "kind": "Issuer", "group": "cert-manager.io"}}
    }))?)
}

/// cert-manager's webhook runs and is registered as cert-manager's release registers it: the
/// apiserver refuses, with the webhook's own message, a Certificate the CRD's schema lets
/// through but cert-manager refuses (a duration under its one-hour minimum), stores the same
/// Certificate in a namespace that opts out of validation (the release's namespaceSelector),
/// stores a valid one, and stores a CertificateRequest with the identity of the user who
/// created it in place of the one it claimed (the mutating webhook). The webhook serves a
/// certificate of its own CA, which cainjector put in both configurations. No node: only the
/// control plane and cert-manager's processes.
#[tokio::test]
async fn cert_managers_webhook_refuses_what_cert_manager_refuses_and_records_who_asks_for_a_certificate()
-> anyhow::Result<()> {
    let started = Instant::now();
    let mut cp = ControlPlane::start().await?;
    let ns = cp.namespace("cert-manager-webhook").await?;
    let mut cert_manager = CertManager::start(&cp).await?;
    let admin = cp.client();
    eprintln!("---- cert-manager's webhook answering the apiserver after {:.1?}", started.elapsed());

    // The apiserver calls the webhook on loopback and trusts it through the CA the webhook
    // keeps in its Secret, which cainjector copied into every webhook of both configurations.
    assert!(cm::webhook_ca_injected(&admin).await?, "cainjector injected the webhook's CA");
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let validating = configurations.get(cm::WEBHOOK_CONFIGURATION).await?.webhooks.unwrap_or_default();
    let url = validating.first().and_then(|w| w.client_config.url.clone()).context("the webhook's URL")?;
    assert!(url.starts_with("https://localhost:") && url.ends_with("/validate"), "{url}");

    let resource = cm::certificate_resource();
    let certificates: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &resource);
    let refused = certificates
        .create(&PostParams::default(), &certificate("too-short", &ns, "30m")?)
        .await
        .expect_err("a Certificate of 30 minutes is refused");
    let refused = format!("{refused:#}");
    eprintln!("refused: {refused}");
    assert!(refused.contains("admission webhook \"webhook.cert-manager.io\" denied the request"), "{refused}");
    assert!(refused.contains("spec.duration") && refused.contains("certificate duration must be greater than 1h0m0s"));

    // The release's namespaceSelector: a namespace labelled cert-manager.io/disable-validation
    // is not validated, so the same Certificate is stored there.
    let unvalidated = format!("{ns}-unvalidated");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {
        "name": unvalidated, "labels": {"cert-manager.io/disable-validation": "true"}}}))?;
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &namespace).await?;
    Api::<DynamicObject>::namespaced_with(admin.clone(), &unvalidated, &resource)
        .create(&PostParams::default(), &certificate("too-short", &unvalidated, "30m")?)
        .await
        .context("a Certificate where validation is disabled")?;

    let stored = certificates.create(&PostParams::default(), &certificate("valid", &ns, "2h")?).await?;
    assert_eq!(stored.data["spec"]["duration"], "2h", "a valid Certificate is stored as it is");

    // A request that claims to come from someone else: the mutating webhook records who
    // created it (the test's admin: user `admin`, group `system:masters`).
    let key = rcgen::KeyPair::generate()?;
    let csr = rcgen::CertificateParams::new(vec!["ironic.example.com".to_string()])?.serialize_request(&key)?.pem()?;
    let requests: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        &ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cert-manager.io", "v1", "CertificateRequest"),
            "certificaterequests",
        ),
    );
    let request: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
        "metadata": {"name": "claims-to-be-someone-else", "namespace": ns},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(csr),
                 "username": "someone-else", "groups": ["forged"],
                 "issuerRef": {"name": "some-issuer", "kind": "Issuer", "group": "cert-manager.io"}}
    }))?;
    let stored = requests.create(&PostParams::default(), &request).await?;
    let spec = &stored.data["spec"];
    assert_eq!(spec["username"], "admin", "{spec}");
    let groups = spec["groups"].as_array().cloned().unwrap_or_default();
    assert!(groups.contains(&Value::from("system:masters")) && !groups.contains(&Value::from("forged")), "{spec}");

    cert_manager.ensure_running().await?;
    eprintln!("---- done in {:.1?}", started.elapsed());
    Ok(())
}
