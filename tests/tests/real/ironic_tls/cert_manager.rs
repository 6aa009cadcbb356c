//! TLS mode CertManager with cert-manager itself (`ferrometal_tests::cert_manager`): a user's
//! CA chain of cert-manager Issuers signs the Certificate the operator asks for, the pod
//! serves what cert-manager wrote, and the same pod reloads each certificate cert-manager
//! renews at the `renewBefore` the Ironic names.

use super::{NAME, assert_credentials, first_served, ironic, served};
use crate::real_ironic::{POLL, RealIronic};
use anyhow::Context;
use ferrometal_tests::cert_manager::CertManager;
use ferrometal_tests::wait;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use std::time::{Duration, Instant};

/// A certificate of one hour renewed two minutes after its issuance: cert-manager's shortest
/// lifetime, and time for the first pod to become Ready before the renewal.
const DURATION: &str = "1h";
const RENEW_BEFORE: &str = "58m";
/// The renewal (two minutes after the first issuance), the kubelet's refresh of the mounted
/// Secret (a minute or so), httpd's reload and a margin.
const RENEWAL_TIMEOUT: Duration = Duration::from_secs(420);

fn api(env: &RealIronic, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("cert-manager.io", "v1", kind), plural);
    Api::namespaced_with(env.cp.client(), &env.ns, &resource)
}

/// The chain a user sets up: a SelfSigned Issuer signs the CA's Certificate, and the Issuer
/// `metal3-ca` signs with that CA.
async fn create_issuers(env: &RealIronic) -> anyhow::Result<()> {
    let objects = [
        ("Issuer", "issuers", json!({"metadata": {"name": "bootstrap"}, "spec": {"selfSigned": {}}})),
        (
            "Certificate",
            "certificates",
            json!({"metadata": {"name": "metal3-ca"}, "spec": {
                "isCA": true, "commonName": "metal3 CA", "secretName": "metal3-ca",
                "privateKey": {"algorithm": "ECDSA", "size": 256},
                "issuerRef": {"name": "bootstrap", "kind": "Issuer", "group": "cert-manager.io"}}}),
        ),
        ("Issuer", "issuers", json!({"metadata": {"name": "metal3-ca"}, "spec": {"ca": {"secretName": "metal3-ca"}}})),
    ];
    for (kind, plural, mut object) in objects {
        object["apiVersion"] = json!("cert-manager.io/v1");
        object["kind"] = json!(kind);
        api(env, kind, plural).create(&PostParams::default(), &serde_json::from_value(object)?).await?;
    }
    Ok(())
}

/// The `Ready` condition's status of a cert-manager object.
fn ready(object: &DynamicObject) -> bool {
    let conditions = object.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
    conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The serving certificate in the Secret cert-manager writes.
async fn issued(env: &RealIronic) -> Option<CertificateDer<'static>> {
    let secret = env.api::<Secret>().get_opt("ironic-tls").await.ok()??;
    let pem = secret.data?.get("tls.crt")?.0.clone();
    CertificateDer::pem_slice_iter(&pem).next()?.ok()
}

pub async fn a_certificate_cert_manager_issues_from_a_users_ca_is_served_and_its_renewal_reloaded_in_place(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut cert_manager = CertManager::start(&env.cp).await?;
    create_issuers(&env).await?;
    let issuers = api(&env, "Issuer", "issuers");
    let outcome = wait::until("the Issuer metal3-ca Ready", Duration::from_secs(120), POLL, || {
        let issuers = issuers.clone();
        async move { issuers.get_opt("metal3-ca").await.ok().flatten().filter(ready) }
    })
    .await;
    cert_manager.checked(outcome).await?;

    let tls = json!({"mode": "CertManager", "certManager": {
        "issuerRef": {"name": "metal3-ca", "kind": "Issuer"}, "duration": DURATION, "renewBefore": RENEW_BEFORE}});
    env.create_ready(ironic(&env.ns, tls)).await?;
    eprintln!("Ironic Ready {:?} after the start", started.elapsed());
    // cert-manager renews two minutes after each issuance: on a loaded machine the first
    // renewal may come before the first handshake, so "first" is the issuance seen at Ready.
    let first_issued = issued(&env).await.context("cert-manager's first certificate")?;

    // The CA a client trusts is the users' CA, published by the operator from what
    // cert-manager wrote; the pod serves the certificate in the Secret.
    let ca = env.api::<Secret>().get("metal3-ca").await?.data.unwrap_or_default();
    let ca = String::from_utf8(ca.get("tls.crt").context("the CA's certificate")?.0.clone())?;
    let bundle = env.published_ca(NAME).await?;
    assert_eq!(bundle.trim(), ca.trim(), "the published bundle is the Issuer's CA");
    let host = format!("{NAME}.{}.svc", env.ns);
    let address = env.service_address(NAME).await?;
    let first = first_served(address, &host, &bundle).await?;
    let latest = issued(&env).await;
    assert!(first == first_issued || Some(&first) == latest.as_ref(), "the pod serves what cert-manager issued");
    assert_credentials(&env, address, &host, &bundle).await?;

    // cert-manager renews at `renewBefore`: the same pod serves the new certificate, which the
    // same bundle trusts.
    let pods = env.incarnations().await?;
    let renewed = wait::until("the renewed certificate served", RENEWAL_TIMEOUT, POLL, || async {
        let served = served(address, &host, &bundle).await.ok()?;
        (served != first_issued && Some(&served) == issued(&env).await.as_ref()).then_some(served)
    })
    .await;
    cert_manager.checked(renewed).await?;
    let certificate = api(&env, "Certificate", "certificates").get("ironic-tls").await?;
    let revision = certificate.data["status"]["revision"].as_u64().unwrap_or_default();
    assert!(revision >= 2, "cert-manager counts its issuances: {}", certificate.data["status"]);
    assert_eq!(env.incarnations().await?, pods, "the same pod reloaded it: never replaced, never restarted");
    env.until_ready(NAME).await?;
    assert_credentials(&env, address, &host, &bundle).await?;
    eprintln!("renewed and served {:?} after the start", started.elapsed());
    Ok(())
}
