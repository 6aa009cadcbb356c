//! `config/cert-manager` as users apply it, on the real node, with cert-manager's controller
//! (`ferrometal_tests::cert_manager`) issuing the webhook's certificate from the overlay's own
//! Issuer, and the operator's pods serving it from the Secret cert-manager wrote.
//!
//! cert-manager's cainjector is not here: the Go module proxy serves no version of its module
//! (`github.com/cert-manager/cert-manager/cmd/cainjector`). The test does what it does for the
//! `cert-manager.io/inject-ca-from` annotation: it copies the Certificate's CA (`ca.crt` of its
//! Secret) into every webhook's `caBundle` of the annotated configuration.

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
use kube::api::{Api, PostParams};
use operator::install::DEFAULT_NAMESPACE;
use std::time::{Duration, Instant};

/// The overlay's Certificate and the Secret cert-manager writes for it.
const CERTIFICATE: &str = "ferrometal-serving-cert";
const SECRET: &str = "ferrometal-webhook-server-cert";

/// What cainjector does for `inject-ca-from: <namespace>/<certificate>`: the CA of that
/// Certificate's Secret into each webhook's `caBundle`. Returns the CA injected.
async fn inject_ca(admin: &kube::Client) -> anyhow::Result<String> {
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let name = operator::webhook::CONFIGURATION_NAME;
    let configuration = configurations.get(name).await?;
    let annotations = configuration.metadata.annotations.clone().unwrap_or_default();
    let from = annotations.get("cert-manager.io/inject-ca-from").context("the inject-ca-from annotation")?;
    assert_eq!(from, &format!("{DEFAULT_NAMESPACE}/{CERTIFICATE}"), "the overlay's Certificate");
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let secret = secrets.get(SECRET).await?;
    let ca = secret.data.unwrap_or_default().get("ca.crt").context("ca.crt in the Secret")?.0.clone();
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca);
    let mut configuration = configuration;
    for webhook in configuration.webhooks.iter_mut().flatten() {
        webhook.client_config.ca_bundle = Some(k8s_openapi::ByteString(ca.clone()));
    }
    configurations.replace(name, &PostParams::default(), &configuration).await?;
    Ok(bundle)
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
    let injected = inject_ca(&admin).await?;

    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), DEFAULT_NAMESPACE);
    let mut pods = OperatorPods { kubeconfig, checked: Instant::now() };
    until_available(&deployments, kubeconfig).await?;
    pods.ensure_running()?;
    eprintln!("---- install_real: the operator's pods ready in {:.1?}", started.elapsed());

    // The apiserver reaches the webhook through its Service and trusts the certificate
    // cert-manager issued through the CA injected: the webhook's own refusal comes back.
    let refused = workloads::apply(&admin, &ns, workloads::minimal_ironic()).await.expect_err("refused");
    let refused = format!("{refused:#}");
    assert!(refused.contains("admission webhook \"vironics.ferrometal.io\" denied"), "{refused}");
    // With a certificate from files the operator makes no CA of its own: the bundle stays
    // the one injected.
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
