//! The TLS the operator sets up for its Ironic, on the real node (`real_ironic`): the Auto CA
//! renewed while a client keeps calling the API, a user's own certificate, and a certificate
//! from a CertificateSigningRequest the test signs as the cluster's external signer would, and
//! one cert-manager issues and renews (`cert_manager`).
//!
//! The client here does what a client of the API does: it trusts the bundle the operator
//! publishes (the `<name>-ca-bundle` ConfigMap), re-read every second, and reaches the API
//! through the Service's ClusterIP by the Service's name. Each call is a new connection, so
//! every call's handshake verifies the certificate a pod serves at that moment against the
//! bundle the client holds at that moment, with rustls' WebPKI verifier.

#[path = "ironic_tls_real/cert_manager.rs"]
mod cert_manager;
mod real_ironic;

use anyhow::Context;
use base64::Engine;
use crds::ironic::Ironic;
use ferrometal_tests::wait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestCondition};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use real_ironic::{API_VERSION, POLL, RealIronic};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NAME: &str = "ironic";
/// How long a CA rotation may take: three rollouts of the one pod (each waits for the probes,
/// 30 to 60 s) and the settle times.
const ROTATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The settle time of each step of the CA's renewal in these tests; the client re-reads the
/// bundle five times within it.
const SETTLE: Duration = Duration::from_secs(5);
/// How often the client calls the API.
const CALL_EVERY: Duration = Duration::from_millis(100);

/// What one call of the API came to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    /// Answered; the issuer of the certificate served, and the HTTP status.
    Answered { issuer: String, status: u16 },
    /// The handshake failed on the certificate: the client's bundle does not trust it.
    Untrusted(String),
    /// No pod took the connection, or it went before an answer (a pod replaced: the
    /// Deployment recreates its one pod, so the Service has no endpoint for a while).
    Unreachable(String),
}

/// One call of `path` on `address` for `host`, trusting exactly `bundle`, with `auth` as basic
/// credentials; a new connection, closed after the answer.
async fn call(address: SocketAddr, host: &str, bundle: &str, path: &str, auth: Option<(&str, &str)>) -> Call {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(bundle.as_bytes()).flatten() {
        if roots.add(ca).is_err() {
            return Call::Untrusted("an unusable CA in the bundle".into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        match rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build() {
            Ok(inner) => Arc::new(Recording { inner, refused: Default::default() }),
            Err(err) => return Call::Untrusted(err.to_string()),
        };
    let config = match rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions() {
        Ok(builder) => builder.dangerous().with_custom_certificate_verifier(verifier.clone()).with_no_client_auth(),
        Err(err) => return Call::Untrusted(err.to_string()),
    };
    let Ok(name) = ServerName::try_from(host.to_string()) else { return Call::Untrusted("a bad name".into()) };
    let connect = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(address)).await;
    let tcp = match connect {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(err)) => return Call::Unreachable(format!("connect: {err}")),
        Err(_) => return Call::Unreachable("connect: timed out".into()),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tls = match tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) if is_untrusted(&err) => {
            // What answered, and what the client trusted (the lead for an UnknownIssuer nobody
            // has explained yet, design/testing.md).
            let presented = verifier.refused.lock().ok().and_then(|r| r.clone()).unwrap_or_default();
            return Call::Untrusted(format!("{err}; presented {presented}; trusted {:?}", subjects(bundle)));
        }
        Ok(Err(err)) => return Call::Unreachable(format!("handshake cut: {err}")),
        Err(_) => return Call::Unreachable("handshake: timed out".into()),
    };
    let issuer = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| issuer(c)).unwrap_or_default();
    let authorization = auth.map_or(String::new(), |(user, password)| {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Authorization: Basic {token}\r\n")
    });
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{}: {}\r\n{authorization}Connection: close\r\n\r\n",
        API_VERSION.0, API_VERSION.1
    );
    let mut answer = Vec::new();
    let exchange = async {
        tls.write_all(request.as_bytes()).await?;
        tls.read_to_end(&mut answer).await
    };
    let outcome = tokio::time::timeout(Duration::from_secs(20), exchange).await;
    match (status(&answer), outcome) {
        (Some(status), _) => Call::Answered { issuer, status },
        (None, Ok(Ok(_))) => Call::Unreachable("closed without an answer".into()),
        (None, Ok(Err(err))) => Call::Unreachable(format!("no answer: {err}")),
        (None, Err(_)) => Call::Unreachable("no answer in time".into()),
    }
}

/// Whether a handshake failed because the certificate is not trusted (or not for this name).
fn is_untrusted(err: &std::io::Error) -> bool {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .is_some_and(|e| matches!(e, rustls::Error::InvalidCertificate(_)))
}

/// The status code of an HTTP/1.1 answer, once its status line came.
fn status(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|b| *b == b'\n').next()?;
    String::from_utf8_lossy(line).split_whitespace().nth(1)?.parse().ok()
}

/// The WebPKI verifier of the client's bundle, which keeps the chain of a certificate it
/// refused: an untrusted handshake then says exactly what the server presented.
#[derive(Debug)]
struct Recording {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    refused: std::sync::Mutex<Option<String>>,
}

impl rustls::client::danger::ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let verdict = self.inner.verify_server_cert(end_entity, intermediates, name, ocsp, now);
        if verdict.is_err() {
            let chain = std::iter::once(end_entity).chain(intermediates).map(describe).collect::<Vec<_>>();
            if let Ok(mut refused) = self.refused.lock() {
                *refused = Some(chain.join(" "));
            }
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A certificate as a line: subject, issuer, serial and start of validity.
fn describe(der: &CertificateDer<'_>) -> String {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, c)) => format!(
            "[{} issued by {}, serial {}, from {}]",
            c.subject(),
            c.issuer(),
            c.raw_serial_as_string(),
            c.validity().not_before
        ),
        Err(err) => format!("[unreadable: {err}]"),
    }
}

/// The issuer's name of a certificate, as text.
fn issuer(der: &CertificateDer<'_>) -> String {
    x509_parser::parse_x509_certificate(der).map(|(_, c)| c.issuer().to_string()).unwrap_or_default()
}

/// The subjects of the certificates of a PEM bundle, in order.
fn subjects(bundle: &str) -> Vec<String> {
    CertificateDer::pem_slice_iter(bundle.as_bytes())
        .flatten()
        .filter_map(|der| x509_parser::parse_x509_certificate(&der).map(|(_, c)| c.subject().to_string()).ok())
        .collect()
}

/// The certificate the pods serve: the first of the chain a handshake trusting `bundle` gets.
async fn served(address: SocketAddr, host: &str, bundle: &str) -> anyhow::Result<CertificateDer<'static>> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
        roots.add(ca?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(host.to_string())?, tcp)
        .await?;
    let chain = tls.get_ref().1.peer_certificates().context("a certificate")?;
    Ok(chain.first().context("a certificate")?.clone().into_owned())
}

/// The content hash of a Deployment's pod template, and whether its one pod runs it and is
/// available.
fn rollout(deployment: &Deployment) -> (String, bool) {
    let template =
        deployment.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).and_then(|m| m.annotations.as_ref());
    let hash = template.and_then(|a| a.get("ironic.ferrometal.io/content-hash")).cloned().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    let current = status.observed_generation == deployment.metadata.generation;
    let one = |n: Option<i32>| n == Some(1);
    (hash, current && one(status.replicas) && one(status.updated_replicas) && one(status.available_replicas))
}

/// An Ironic on the pod network, without the downloader (as `ironic_real`'s), with `tls`.
fn ironic(ns: &str, tls: Value) -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": NAME, "namespace": ns},
        "spec": {"networking": {"disableHostNetwork": true},
                 "deployRamdisk": {"disableDownloader": true},
                 "tls": tls}})
}

/// The API answers the generated credentials on `/v1/nodes`, and refuses a wrong password
/// and no credentials at all.
async fn assert_credentials(env: &RealIronic, address: SocketAddr, host: &str, bundle: &str) -> anyhow::Result<()> {
    let (user, password) = env.credentials(NAME).await?;
    let nodes = "/v1/nodes";
    let answered = |call: Call| match call {
        Call::Answered { status, .. } => status,
        other => panic!("no answer: {other:?}"),
    };
    assert_eq!(answered(call(address, host, bundle, nodes, Some((&user, &password))).await), 200, "the credentials");
    assert_eq!(answered(call(address, host, bundle, nodes, Some((&user, "not-the-password"))).await), 401);
    assert_eq!(answered(call(address, host, bundle, nodes, None).await), 401, "no credentials");
    Ok(())
}

/// What the client saw through the rotation.
#[derive(Debug, Default)]
struct Seen {
    calls: Vec<(Instant, Call)>,
    /// Each bundle the ConfigMap held, in order, as its CAs' subjects.
    bundles: Vec<Vec<String>>,
}

/// Calls `/v1` every [`CALL_EVERY`] until `stop`, re-reading the published bundle every
/// second, and every tenth call `/v1/nodes` with the credentials.
async fn keep_calling(
    config_maps: Api<ConfigMap>,
    address: SocketAddr,
    host: String,
    credentials: (String, String),
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Seen> {
    let mut seen = Seen::default();
    let (mut bundle, mut read) = (String::new(), Instant::now() - Duration::from_secs(2));
    let mut calls = 0u64;
    while !*stop.borrow() {
        if read.elapsed() >= Duration::from_secs(1) {
            let map = config_maps.get_opt(&format!("{NAME}-ca-bundle")).await?;
            bundle = map.and_then(|m| m.data?.get("ca.crt").cloned()).unwrap_or_default();
            read = Instant::now();
            let cas = subjects(&bundle);
            if !cas.is_empty() && seen.bundles.last() != Some(&cas) {
                seen.bundles.push(cas);
            }
        }
        if bundle.is_empty() {
            // Nothing published yet: a client has nothing to trust.
            tokio::time::sleep(CALL_EVERY).await;
            continue;
        }
        calls += 1;
        let (path, auth) = match calls % 10 {
            0 => ("/v1/nodes", Some((credentials.0.as_str(), credentials.1.as_str()))),
            _ => ("/v1", None),
        };
        seen.calls.push((Instant::now(), call(address, &host, &bundle, path, auth).await));
        tokio::time::sleep(CALL_EVERY).await;
    }
    Ok(seen)
}

/// The renewal point that makes a CA of one day (five minutes of it backdated) get its
/// successor `after` its making.
fn renewal_after(after: Duration) -> f64 {
    let backdate = 300.0;
    (backdate + after.as_secs_f64()) / (86_400.0 + backdate)
}

// Not in `make test` until the UnknownIssuer it met in the CI run of 2026-12-03 is explained:
// two handshakes, each at the very moment a new pod became ready (the first pod, and the pod of
// the renewal's last step), met a certificate of no CA the client held, while every other call
// before, between and after was answered (design/testing.md, "Not done yet"; issue 29). Run it
// with `--run-ignored all`.
#[tokio::test]
#[ignore = "an unexplained UnknownIssuer at pod-ready moments (design/testing.md, Not done yet)"]
async fn the_auto_ca_is_renewed_while_a_client_keeps_calling_the_api_and_no_handshake_fails_on_the_certificate()
-> anyhow::Result<()> {
    let started = Instant::now();
    // The first CA lives a day and is renewed two and a half minutes after its making: time for
    // the pod to become Ready and the client to call it first (were it later, the pod of the
    // first step would still serve the first CA's certificate).
    let after = Duration::from_secs(150);
    let renewal = operator::ironic::tls::auto::Renewal { at: renewal_after(after), settle: SETTLE };
    let env = RealIronic::start_with("ironic-tls-rotate", |config| config.auto_ca_renewal = renewal).await?;
    let auto = json!({"auto": {"caValidityDays": 1, "certificateValidityDays": 1}});
    let created = Instant::now();
    env.api::<Ironic>().create(&PostParams::default(), &serde_json::from_value(ironic(&env.ns, auto))?).await?;

    // The first CA, as the operator stored it; then its successor's lifetime goes back to ten
    // years, so that it is not due again within the test.
    let secrets = env.api::<Secret>();
    let first = wait::until("the first CA", Duration::from_secs(60), POLL, || {
        let secrets = secrets.clone();
        async move { secrets.get_opt(&format!("{NAME}-tls-ca")).await.ok().flatten()?.data?.get("ca.crt").cloned() }
    })
    .await?;
    let old_ca = subjects(&String::from_utf8(first.0)?);
    let patch = json!({"spec": {"tls": {"auto": {"caValidityDays": 3650}}}});
    env.api::<Ironic>().patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;

    // The client, from before the pod is Ready until the renewal is over.
    let host = format!("{NAME}.{}.svc", env.ns);
    let address =
        wait::until("the Service", Duration::from_secs(60), POLL, || async { env.service_address(NAME).await.ok() })
            .await?;
    let credentials =
        wait::until("the credentials", Duration::from_secs(60), POLL, || async { env.credentials(NAME).await.ok() })
            .await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let client = tokio::spawn(keep_calling(env.api(), address, host.clone(), credentials, stopped));
    env.until_ready(NAME).await?;
    eprintln!("Ironic Ready {:?} after its creation, {:?} after the start", created.elapsed(), started.elapsed());

    // Until the bundle holds the new CA alone and the pod runs the template of that state:
    // one whose content hash was not seen while the renewal was under way.
    let deployments = env.api::<Deployment>();
    let deadline = Instant::now() + ROTATION_TIMEOUT;
    let mut during = HashSet::new();
    let new_ca = loop {
        anyhow::ensure!(Instant::now() < deadline, "the renewal did not finish: {}", env.pod_report().await);
        let ca = secrets.get(&format!("{NAME}-tls-ca")).await?.data.unwrap_or_default();
        let under_way = ["next-ca.crt", "retired-ca.crt"].iter().any(|k| ca.get(*k).is_some_and(|v| !v.0.is_empty()));
        let (template, rolled_out) = rollout(&deployments.get(&format!("{NAME}-service")).await?);
        let published = subjects(&env.published_ca(NAME).await?);
        if under_way {
            during.insert(template);
        } else if !during.is_empty() && !during.contains(&template) && rolled_out && published != old_ca {
            break published;
        }
        tokio::time::sleep(POLL).await;
    };
    // The last rollout's pod, called for a few seconds more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.send_replace(true);
    let seen = client.await??;
    eprintln!("renewed {:?} after the start", started.elapsed());

    let untrusted: Vec<_> = seen.calls.iter().filter(|(_, c)| matches!(c, Call::Untrusted(_))).collect();
    assert!(untrusted.is_empty(), "handshakes failed on the certificate: {untrusted:?}");
    let refused: Vec<_> =
        seen.calls.iter().filter(|(_, c)| matches!(c, Call::Answered { status, .. } if *status != 200)).collect();
    assert!(refused.is_empty(), "calls answered with an error: {refused:?}");
    // Why calls found no pod, by the first words of the reason ("connect: Connection refused").
    let mut unreachable = std::collections::BTreeMap::<String, usize>::new();
    for (_, call) in &seen.calls {
        if let Call::Unreachable(why) = call {
            *unreachable.entry(why.split(" (").next().unwrap_or(why).to_string()).or_default() += 1;
        }
    }
    let issuers: Vec<&str> = seen
        .calls
        .iter()
        .filter_map(|(_, c)| match c {
            Call::Answered { issuer, .. } => Some(issuer.as_str()),
            _ => None,
        })
        .collect();
    eprintln!(
        "{} calls, {} answered, no pod: {unreachable:?}; bundles {:?}",
        seen.calls.len(),
        issuers.len(),
        seen.bundles
    );
    // The client held the old CA alone, then the old and the new together, then the new alone.
    let expected = vec![old_ca.clone(), [old_ca.clone(), new_ca.clone()].concat(), new_ca.clone()];
    assert_eq!(seen.bundles, expected, "the bundles published, in order");
    // Pods served the old CA's certificate, then the new one's, and nothing else.
    assert_eq!(issuers.first().copied(), Some(old_ca[0].as_str()), "answered before the renewal");
    assert_eq!(issuers.last().copied(), Some(new_ca[0].as_str()), "answered after it, from the new CA");
    let switched = issuers.iter().position(|i| *i == new_ca[0]).context("the new CA served")?;
    assert!(issuers[switched..].iter().all(|i| *i == new_ca[0]), "the old CA's certificate came back");

    let bundle = env.published_ca(NAME).await?;
    assert_eq!(issuer(&served(address, &host, &bundle).await?), new_ca[0], "the pod serves from the new CA");
    assert_credentials(&env, address, &host, &bundle).await?;
    let ca = secrets.get(&format!("{NAME}-tls-ca")).await?.data.unwrap_or_default();
    let empty = |key: &str| ca.get(key).is_none_or(|v| v.0.is_empty());
    assert!(empty("next-ca.crt") && empty("retired-ca.crt"), "the renewal is over");
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn a_users_certificate_is_served_as_it_is_and_the_api_takes_only_the_generated_credentials() -> anyhow::Result<()>
{
    let started = Instant::now();
    let env = RealIronic::start("ironic-tls-user").await?;
    let host = format!("{NAME}.{}.svc", env.ns);
    let authority = ferrometal_tests::pki::Authority::new("a user's CA")?;
    let certificate = authority.server(&[&host], &[])?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "users-tls"},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": certificate.cert_pem, "tls.key": certificate.key_pem}}))?;
    env.api::<Secret>().create(&PostParams::default(), &secret).await?;
    env.create_ready(ironic(&env.ns, json!({"certificateName": "users-tls"}))).await?;
    eprintln!("Ironic Ready {:?} after the start", started.elapsed());

    let address = env.service_address(NAME).await?;
    let ca = authority.cert_pem();
    let served = served(address, &host, ca).await?;
    let users = CertificateDer::from_pem_slice(certificate.cert_pem.as_bytes())?;
    assert_eq!(served, users, "the pod serves exactly the user's certificate");
    assert_credentials(&env, address, &host, ca).await?;
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

/// The signer the test plays: the cluster's external signer for this name.
const SIGNER: &str = "ferrometal.example/ironic-serving";

#[tokio::test]
async fn a_certificate_from_the_clusters_signer_is_served_and_trusted_through_the_signers_ca() -> anyhow::Result<()> {
    let started = Instant::now();
    let env = RealIronic::start("ironic-tls-csr").await?;
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
    let served = served(address, &host, &signer.ca_pem).await?;
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
