//! Mode CertificateSigningRequest, with the test as the cluster's external signer.

use super::{NAME, assert_credentials, first_served, ironic};
use crate::real_ironic::{POLL, RealIronic};
use anyhow::Context;
use base64::Engine;
use crds::ironic::Ironic;
use ferrometal_tests::wait;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use std::time::{Duration, Instant};

/// The signer the test plays: the cluster's external signer for this name.
const SIGNER: &str = "ferrometal.example/ironic-serving";

pub async fn a_certificate_from_the_clusters_signer_is_served_and_trusted_through_the_signers_ca(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let signer = Signer::new()?;
    let ca_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "signer-ca"}, "data": {"ca.crt": signer.ca_pem}}))?;
    env.api::<ConfigMap>().create(&PostParams::default(), &ca_map).await?;
    let tls = json!({"certificateSigningRequest": {"signerName": SIGNER, "signerCA": {"kind": "ConfigMap", "name": "signer-ca"}}});
    let ironics = env.api::<Ironic>();
    ironics.create(&PostParams::default(), &serde_json::from_value(ironic(&env.ns, tls))?).await?;

    // As a signer controller: approve the request for this signer, then issue its certificate.
    let requests: Api<CertificateSigningRequest> = Api::all(env.cp.client());
    let selector = format!("ironic.metal3.io/namespace={}", env.ns);
    let request = wait::until("the CertificateSigningRequest", Duration::from_secs(60), POLL, || {
        let (requests, selector) = (requests.clone(), selector.clone());
        async move { requests.list(&ListParams::default().labels(&selector)).await.ok()?.items.into_iter().next() }
    })
    .await?;
    assert_eq!(request.spec.signer_name, SIGNER);
    let name = request.metadata.name.clone().context("the request's name")?;
    let approval = CertificateSigningRequestCondition {
        type_: "Approved".into(),
        status: "True".into(),
        reason: Some("TestSigner".into()),
        message: Some("approved by the test's signer".into()),
        ..Default::default()
    };
    let approved = json!({"status": {"conditions": [approval]}});
    requests.patch_approval(&name, &PatchParams::default(), &Patch::Merge(&approved)).await?;
    let certificate = signer.sign(&String::from_utf8(request.spec.request.0.clone())?)?;
    let issued = json!({"status": {"certificate": base64::engine::general_purpose::STANDARD.encode(&certificate)}});
    requests.patch_status(&name, &PatchParams::default(), &Patch::Merge(&issued)).await?;

    env.until_ready(NAME).await?;
    eprintln!("Ironic Ready {:?} after the start", started.elapsed());
    let host = format!("{NAME}.{}.svc", env.ns);
    let address = env.service_address(NAME).await?;
    let served = first_served(address, &host, &signer.ca_pem).await?;
    assert_eq!(
        served,
        CertificateDer::from_pem_slice(certificate.as_bytes())?,
        "the pod serves the issued certificate"
    );
    assert_eq!(env.published_ca(NAME).await?.trim(), signer.ca_pem.trim(), "the signer's CA is published");
    assert_credentials(&env, address, &host, &signer.ca_pem).await?;
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

/// A signer: its CA, and certificates for the requests it signs.
struct Signer {
    ca_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Signer {
    fn new() -> anyhow::Result<Self> {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, "the cluster's signer");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        let key = rcgen::KeyPair::generate()?;
        let ca_pem = params.self_signed(&key)?.pem();
        Ok(Self { ca_pem, issuer: rcgen::Issuer::new(params, key) })
    }

    /// A serving certificate for what the PEM request asks, valid a day.
    fn sign(&self, request: &str) -> anyhow::Result<String> {
        let mut csr = rcgen::CertificateSigningRequestParams::from_pem(request)?;
        let now = time::OffsetDateTime::now_utc();
        csr.params.not_before = now - time::Duration::minutes(5);
        csr.params.not_after = now + time::Duration::days(1);
        csr.params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        csr.params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment];
        Ok(csr.signed_by(&self.issuer)?.pem())
    }
}
