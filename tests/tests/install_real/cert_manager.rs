//! `config/cert-manager` as users apply it, on the real node, with cert-manager's controller
//! (`ferrometal_tests::cert_manager`) issuing the webhook's certificate from the overlay's own
//! Issuer, its cainjector filling the webhooks' `caBundle` from the Certificate named by the
//! `cert-manager.io/inject-ca-from` annotation, and the operator's pods serving the certificate
//! from the Secret cert-manager wrote.

use super::{OperatorPods, until_available};
use crate::install_common::workloads::{self, Running as _};
use crate::install_common::{config_dir, kubectl};
use anyhow::Context as _;
use base64::Engine as _;
use ferrometal_tests::cert_manager::CertManager;
use ferrometal_tests::operator_process::operator_image;
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, wait};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use operator::install::DEFAULT_NAMESPACE;
use std::time::{Duration, Instant};

/// The overlay's Certificate and the Secret cert-manager writes for it.
const CERTIFICATE: &str = "ferrometal-serving-cert";
const SECRET: &str = "ferrometal-webhook-server-cert";

/// The CA cainjector put in every webhook of the annotated configuration once it equals the
/// `ca.crt` of the Certificate's Secret, which the annotation names.
async fn injected_ca(admin: &kube::Client) -> anyhow::Result<Option<String>> {
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let configuration = configurations.get(operator::webhook::CONFIGURATION_NAME).await?;
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
    eprintln!("---- install_real: control plane, node and cert-manager up in {:.1?}", started.elapsed());

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
    cert_manager.ensure_running()?;
    issued.with_context(|| format!("cert-manager's log:\n{}", cert_manager.log()))?;
    let injected = wait::until("cainjector's caBundle", Duration::from_secs(60), Duration::from_millis(500), || {
        let admin = admin.clone();
        async move { injected_ca(&admin).await.ok().flatten() }
    })
    .await;
    cert_manager.ensure_running()?;
    let injected = injected.with_context(|| format!("cert-manager's log:\n{}", cert_manager.log()))?;

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let mut pods = OperatorPods { kubeconfig, checked: Instant::now() };
    until_available(&deployments, kubeconfig).await?;
    pods.ensure_running()?;
    eprintln!("---- install_real: the operator's pods ready in {:.1?}", started.elapsed());

    // The apiserver reaches the webhook through its Service and trusts the certificate
    // cert-manager issued through the CA cainjector injected: the webhook's own refusal comes back.
    let refused = workloads::apply(&admin, &ns, workloads::minimal_ironic()).await.expect_err("refused");
    let refused = format!("{refused:#}");
    assert!(refused.contains("admission webhook \"vironics.ferrometal.io\" denied"), "{refused}");
    // With a certificate from files the operator makes no CA of its own: the bundle stays
    // the one cainjector injected.
    let configuration: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let webhooks = configuration.get(operator::webhook::CONFIGURATION_NAME).await?.webhooks.unwrap_or_default();
    for webhook in &webhooks {
        let bundle =
            webhook.client_config.ca_bundle.as_ref().map(|b| base64::engine::general_purpose::STANDARD.encode(&b.0));
        assert_eq!(bundle.as_deref(), Some(injected.as_str()), "{}: the injected CA", webhook.name);
    }
    eprintln!("---- install_real: done in {:.1?}", started.elapsed());
    Ok(())
}
