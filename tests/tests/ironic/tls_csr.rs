//! The Ironic controller's TLS mode CertificateSigningRequest against the real apiserver, the
//! test playing the cluster's administrator and signer: it approves (or denies) the request
//! through the approval subresource, then signs it with its own CA into `status.certificate`,
//! as an external signer does.

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use ferrometal_tests::wait;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use operator::testing::pki as auto;
use rcgen::{BasicConstraints, CertificateParams, CertificateSigningRequestParams, IsCa, Issuer, KeyPair};
use serde_json::json;

const SIGNER: &str = "pki.example.com/ironic-serving";

/// The cluster's signer: a CA of the test's own.
struct Signer {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Signer {
    fn new() -> anyhow::Result<Self> {
        let now = time::OffsetDateTime::now_utc();
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("test signer {}", now.unix_timestamp()));
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(30);
        let key = KeyPair::generate()?;
        let ca_pem = params.self_signed(&key)?.pem();
        Ok(Self { ca_pem, issuer: Issuer::new(params, key) })
    }

    /// Signs the PKCS#10 `request`, valid from `start` to `end` seconds from now.
    fn sign(&self, request: &[u8], start: i64, end: i64) -> anyhow::Result<String> {
        let now = time::OffsetDateTime::now_utc();
        let mut csr = CertificateSigningRequestParams::from_pem(std::str::from_utf8(request)?)?;
        csr.params.not_before = now + time::Duration::seconds(start);
        csr.params.not_after = now + time::Duration::seconds(end);
        csr.params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        Ok(csr.signed_by(&self.issuer)?.pem())
    }
}

fn csrs(env: &Env) -> Api<CertificateSigningRequest> {
    Api::all(env.client())
}

async fn create_ironic_with_csr(env: &Env) -> anyhow::Result<()> {
    create_ironic(
        env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"tls": {"mode": "CertificateSigningRequest", "certificateSigningRequest": {
                "signerName": SIGNER, "expirationSeconds": 86400,
                "signerCA": {"kind": "ConfigMap", "name": "signer-ca", "key": "ca.crt"}}}}}),
    )
    .await?;
    Ok(())
}

async fn publish_signer_ca(env: &Env, signer: &Signer) -> anyhow::Result<()> {
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some("signer-ca".into()), ..Default::default() },
        data: Some([("ca.crt".to_string(), signer.ca_pem.clone())].into()),
        ..Default::default()
    };
    api::<ConfigMap>(env).create(&PostParams::default(), &config_map).await?;
    Ok(())
}

/// Waits for CertificateReady False with `reason`, and returns the request it names.
async fn wait_request(env: &Env, reason: &str, not: Option<&str>) -> anyhow::Result<(String, String)> {
    let ironic = wait_for(env, "ironic", &format!("CertificateReady {reason}"), STEP, |ironic| {
        let name = ironic.status.as_ref().and_then(|s| s.tls.as_ref()?.certificate_signing_request_name.clone());
        condition_of(ironic, "CertificateReady").is_some_and(|c| c.status == "False" && c.reason == reason)
            && name.is_some_and(|n| Some(n.as_str()) != not)
    })
    .await?;
    let condition = condition_of(&ironic, "CertificateReady").expect("CertificateReady");
    let name = ironic.status.and_then(|s| s.tls?.certificate_signing_request_name).expect("request name");
    Ok((name, condition.message))
}

/// Adds the condition `type_` through the approval subresource, as `kubectl certificate
/// approve|deny` does.
async fn decide(env: &Env, name: &str, type_: &str) -> anyhow::Result<()> {
    let mut csr = csrs(env).get(name).await?;
    let status = csr.status.get_or_insert_with(Default::default);
    status.conditions.get_or_insert_with(Vec::new).push(CertificateSigningRequestCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(format!("Test{type_}")),
        message: Some(format!("{type_} by the test administrator")),
        ..Default::default()
    });
    csrs(env).replace_subresource("approval", name, &PostParams::default(), &csr).await?;
    Ok(())
}

/// Writes `certificate` into the request's status, as its signer does.
async fn issue(env: &Env, name: &str, certificate: &str) -> anyhow::Result<()> {
    let mut csr = csrs(env).get(name).await?;
    csr.status.get_or_insert_with(Default::default).certificate = Some(ByteString(certificate.as_bytes().to_vec()));
    csrs(env).replace_status(name, &PostParams::default(), &csr).await?;
    Ok(())
}

async fn wait_gone(env: &Env, name: &str) -> anyhow::Result<()> {
    wait::until_ok(&format!("CertificateSigningRequest {name} to be deleted"), STEP, POLL, || async {
        Ok(csrs(env).get_opt(name).await?.is_none().then_some(()))
    })
    .await
}

#[tokio::test]
async fn a_request_waits_for_approval_then_serves_the_signed_certificate_and_renews_without_a_gap() -> anyhow::Result<()>
{
    let env = Env::start("ironic-tls-csr").await?;
    let signer = Signer::new()?;
    publish_signer_ca(&env, &signer).await?;
    let operator = start(&env).await?;
    create_ironic_with_csr(&env).await?;

    // Pending: the exact command to run, and nothing mounted yet.
    let (name, message) = wait_request(&env, "CertificateApprovalPending", None).await?;
    assert!(name.starts_with(&format!("ferrometal.{}.ironic.", env.ns)), "{name}");
    assert!(message.contains(&format!("`kubectl certificate approve {name}`")), "{message}");
    let waiting = wait_condition(&env, "ironic", "Progressing", "True", "WaitingForCertificate").await?;
    let ready = condition_of(&waiting, "Ready").expect("Ready");
    assert!(ready.message.contains(&format!("kubectl certificate approve {name}")), "{}", ready.message);
    assert!(api::<k8s_openapi::api::apps::v1::Deployment>(&env).get_opt("ironic-service").await?.is_none());
    let csr = csrs(&env).get(&name).await?;
    assert_eq!(csr.spec.signer_name, SIGNER);
    assert!(csr.spec.usages.clone().unwrap_or_default().contains(&"server auth".to_string()));
    // Kubernetes 1.22 and newer know expirationSeconds: it is sent, at least the API's 600.
    assert!(csr.spec.expiration_seconds.is_some_and(|s| s >= 600), "{:?}", csr.spec.expiration_seconds);
    assert!(csr.metadata.owner_references.is_none(), "a cluster-scoped request has no namespaced owner");
    let ns = &env.ns;
    let names_to_cover = [
        "ironic".to_string(),
        format!("ironic.{ns}"),
        format!("ironic.{ns}.svc"),
        format!("ironic.{ns}.svc.cluster.local"),
    ];

    // Approved and signed, with a lifetime already past two thirds: stored, served, and the
    // request cleaned up; the key never left the cluster.
    decide(&env, &name, "Approved").await?;
    let first = signer.sign(&csr.spec.request.0, -600, 240)?;
    issue(&env, &name, &first).await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let serving = api::<Secret>(&env).get("ironic-tls-csr").await?;
    assert_eq!(secret_text(&serving, "tls.crt"), first);
    assert!(!secret_text(&serving, "tls.key").is_empty());
    assert_eq!(secret_text(&serving, "ca.crt"), signer.ca_pem);
    let info = auto::inspect(&first).expect("parses");
    assert_eq!(info.dns, names_to_cover);
    let bundle = api::<ConfigMap>(&env).get("ironic-ca-bundle").await?;
    assert_eq!(bundle.data.and_then(|d| d.get("ca.crt").cloned()), Some(signer.ca_pem.clone()));
    let status = ironic.status.expect("status");
    assert_eq!(status.ca_ref.and_then(|r| r.name).as_deref(), Some("ironic-ca-bundle"));
    assert_eq!(status.tls.and_then(|t| t.serving_secret_name).as_deref(), Some("ironic-tls-csr"));
    wait_gone(&env, &name).await?;
    wait_event(&env, "ironic", "CertificateIssued").await?;

    // Renewal: a new request while the first certificate still serves.
    let pod = the_one_pod(&env, "ironic").await?;
    let started = reconciles_started(&operator);
    let before = deployment(&env, "ironic-service").await?;
    let (renewal, _) = wait_request(&env, "CertificateApprovalPending", Some(&name)).await?;
    assert_ne!(renewal, name);
    let serving_now = api::<Secret>(&env).get("ironic-tls-csr").await?;
    assert_eq!(secret_text(&serving_now, "tls.crt"), first, "the old certificate serves until the new one is signed");
    let still = ironics(&env).get("ironic").await?;
    assert_eq!(condition_of(&still, "Ready").map(|c| c.status).as_deref(), Some("True"), "no gap in serving");
    assert_eq!(the_one_pod(&env, "ironic").await?, pod);

    decide(&env, &renewal, "Approved").await?;
    let request = csrs(&env).get(&renewal).await?.spec.request.0;
    let second = signer.sign(&request, -60, 30 * 86_400)?;
    issue(&env, &renewal, &second).await?;
    wait::until_ok("the renewed certificate to be stored", STEP, POLL, || async {
        let serving = api::<Secret>(&env).get("ironic-tls-csr").await?;
        Ok((secret_text(&serving, "tls.crt") == second).then_some(()))
    })
    .await?;
    assert_kept(&env, &operator, started, &pod, &before).await?;
    wait_gone(&env, &renewal).await?;
    wait_condition(&env, "ironic", "CertificateReady", "True", "CertificateIssued").await?;
    assert!(api::<Secret>(&env).get_opt("ironic-tls-csr-request").await?.is_none(), "the request's key is gone");
    Ok(())
}

#[tokio::test]
async fn a_denied_request_is_reported_with_the_reason_and_not_retried() -> anyhow::Result<()> {
    let env = Env::start("ironic-tls-csr-denied").await?;
    let signer = Signer::new()?;
    publish_signer_ca(&env, &signer).await?;
    let operator = start(&env).await?;
    create_ironic_with_csr(&env).await?;
    let (name, _) = wait_request(&env, "CertificateApprovalPending", None).await?;
    decide(&env, &name, "Denied").await?;
    let degraded = wait_condition(&env, "ironic", "Degraded", "True", "CertificateDenied").await?;
    let message = condition_of(&degraded, "Degraded").expect("Degraded").message;
    assert!(message.contains("TestDenied") && message.contains(&name), "{message}");
    let (still, _) = wait_request(&env, "CertificateDenied", None).await?;
    assert_eq!(still, name);
    // Later reconciles ask for nothing new: the denied request is the only one. The poll that
    // waits for the request to be deleted is one; an edit of the Ironic's metadata makes one
    // happen at once.
    let since = reconciles_started(&operator);
    let poke = json!({"metadata": {"annotations": {"test.ferrometal.io/poke": "after-denial"}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&poke)).await?;
    wait_for_reconcile_since(&operator, since).await?;
    let ironic = ironics(&env).get("ironic").await?;
    assert_eq!(ironic.status.and_then(|s| s.tls?.certificate_signing_request_name), Some(name.clone()));
    assert!(csrs(&env).get_opt(&name).await?.is_some(), "kept for the administrator to look at");
    wait_event(&env, "ironic", "CertificateDenied").await?;
    Ok(())
}

#[tokio::test]
async fn a_certificate_that_does_not_match_the_key_or_the_names_is_refused() -> anyhow::Result<()> {
    let env = Env::start("ironic-tls-csr-refused").await?;
    let signer = Signer::new()?;
    publish_signer_ca(&env, &signer).await?;
    let _operator = start(&env).await?;
    create_ironic_with_csr(&env).await?;
    let (name, _) = wait_request(&env, "CertificateApprovalPending", None).await?;
    decide(&env, &name, "Approved").await?;

    // Signed for another key and other names.
    let key = auto::request::new_key()?;
    let other = auto::SubjectAltNames { dns: vec!["elsewhere.example.com".into()], ips: vec![] };
    let foreign = signer.sign(auto::request::signing_request(&key, &other)?.as_bytes(), -60, 86_400)?;
    issue(&env, &name, &foreign).await?;
    let refused = wait_condition(&env, "ironic", "Degraded", "True", "CertificateRefused").await?;
    let message = condition_of(&refused, "Degraded").expect("Degraded").message;
    assert!(message.contains("does not match the private key"), "{message}");
    assert!(api::<Secret>(&env).get_opt("ironic-tls-csr").await?.is_none(), "nothing refused is stored");
    assert!(api::<k8s_openapi::api::apps::v1::Deployment>(&env).get_opt("ironic-service").await?.is_none());

    // The way to ask again is to delete the request: the operator makes it anew with the key
    // it keeps. Signed with that key but not for the names: refused too.
    csrs(&env).delete(&name, &Default::default()).await?;
    let again = wait::until_ok("the request to be made again", STEP, POLL, || async {
        Ok(csrs(&env)
            .get_opt(&name)
            .await?
            .filter(|c| c.status.as_ref().and_then(|s| s.certificate.as_ref()).is_none()))
    })
    .await?;
    decide(&env, &name, "Approved").await?;
    let stored_key = secret_text(&api::<Secret>(&env).get("ironic-tls-csr-request").await?, "tls.key");
    let short = auto::SubjectAltNames { dns: vec!["ironic".into()], ips: vec![] };
    let narrow = signer.sign(auto::request::signing_request(&stored_key, &short)?.as_bytes(), -60, 86_400)?;
    assert_ne!(again.metadata.uid, None);
    issue(&env, &name, &narrow).await?;
    wait_for(&env, "ironic", "a refusal for the names", STEP, |ironic| {
        condition_of(ironic, "Degraded")
            .is_some_and(|c| c.reason == "CertificateRefused" && c.message.contains("does not cover"))
    })
    .await?;
    assert!(api::<Secret>(&env).get_opt("ironic-tls-csr").await?.is_none());
    Ok(())
}
