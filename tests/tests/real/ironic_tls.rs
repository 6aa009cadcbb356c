//! The TLS the operator sets up for its Ironic, on the real node (`real_ironic`), as four
//! scenarios run at once by one test, each in its namespace: the Auto CA renewed while a client
//! keeps calling the API (`auto_renewal`), a user's own certificate and its renewal, a
//! certificate from a CertificateSigningRequest the test signs as the cluster's external signer
//! would (`csr`), and one cert-manager issues and renews (`cert_manager`). Each renewal is
//! served by the same pod, which reloads it in place.
//!
//! The client here does what a client of the API does: it trusts the bundle the operator
//! publishes (the `<name>-ca-bundle` ConfigMap), re-read every second, and reaches the API
//! through the Service's ClusterIP by the Service's name. Each call is a new connection, so
//! every call's handshake verifies the certificate a pod serves at that moment against the
//! bundle the client holds at that moment, with rustls' WebPKI verifier.

mod auto_renewal;
mod cert_manager;
mod csr;

use crate::real_ironic::{API_VERSION, POLL, RealIronic, all_pass, scenario};
use anyhow::Context;
use base64::Engine;
use ferrometal_tests::wait;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NAME: &str = "ironic";

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

/// The certificate the pods serve, once the Service answers: its endpoint reaches kube-proxy a
/// moment after the pod is Ready (the EndpointSlice, then kube-proxy's next sync), and until
/// then connections are refused.
async fn first_served(address: SocketAddr, host: &str, bundle: &str) -> anyhow::Result<CertificateDer<'static>> {
    let answered = wait::until("the Service answers", Duration::from_secs(30), POLL, || async {
        served(address, host, bundle).await.ok()
    })
    .await;
    match answered {
        Ok(der) => Ok(der),
        // The handshake's own error says more than the timeout.
        Err(_) => served(address, host, bundle).await,
    }
}

/// An Ironic on the pod network, without the downloader (as `real::ironic`'s), with `tls`.
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

/// How long a renewed certificate may take to be served: the kubelet's refresh of the mounted
/// Secret (a minute or so), then httpd's reload.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(180);

async fn a_users_certificate_is_served_as_it_is_and_reloaded_in_place_when_the_user_renews_it(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let host = format!("{NAME}.{}.svc", env.ns);
    let authority = ferrometal_tests::pki::Authority::new("a user's CA")?;
    let certificate = authority.server(&[&host], &[])?;
    let secret = |certificate: &ferrometal_tests::pki::CertifiedKey| {
        serde_json::from_value::<Secret>(json!({
            "metadata": {"name": "users-tls"},
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": certificate.cert_pem, "tls.key": certificate.key_pem}}))
    };
    env.api::<Secret>().create(&PostParams::default(), &secret(&certificate)?).await?;
    env.create_ready(ironic(&env.ns, json!({"certificateName": "users-tls"}))).await?;
    eprintln!("Ironic Ready {:?} after the start", started.elapsed());

    let address = env.service_address(NAME).await?;
    let ca = authority.cert_pem();
    let users = CertificateDer::from_pem_slice(certificate.cert_pem.as_bytes())?;
    assert_eq!(first_served(address, &host, ca).await?, users, "the pod serves exactly the user's certificate");
    assert_credentials(&env, address, &host, ca).await?;

    // The user renews: the same pod serves the new certificate, without a restart.
    let pods = env.incarnations().await?;
    let renewed = authority.server(&[&host], &[])?;
    env.api::<Secret>().replace("users-tls", &PostParams::default(), &secret(&renewed)?).await?;
    let new = CertificateDer::from_pem_slice(renewed.cert_pem.as_bytes())?.into_owned();
    wait::until("the renewed certificate served", RELOAD_TIMEOUT, POLL, || async {
        (served(address, &host, ca).await.ok()? == new).then_some(())
    })
    .await?;
    assert_eq!(env.incarnations().await?, pods, "the same pod reloaded it: never replaced, never restarted");
    assert_credentials(&env, address, &host, ca).await?;
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}

/// Every TLS mode on one node at once, each scenario in its own namespace of one control plane
/// and operator: each waits minutes for pods (probes, rollouts, a renewal), which one after the
/// other took about twelve minutes of the real node, and together about as long as the Auto
/// CA's renewal alone. Every failing scenario is reported, by its name.
#[tokio::test]
async fn each_tls_mode_serves_its_certificate_on_the_real_node_and_renews_it() -> anyhow::Result<()> {
    let prefixes = ["ironic-tls-rotate", "ironic-tls-user", "ironic-tls-csr", "ironic-tls-cm"];
    let envs = RealIronic::start_many(&prefixes, |config| config.auto_ca_renewal = auto_renewal::renewal()).await?;
    let [rotate, user, csr, cert_manager]: [RealIronic; 4] =
        envs.try_into().map_err(|_| anyhow::anyhow!("four namespaces"))?;
    let outcomes = [
        scenario(
            "the_auto_ca_is_renewed_while_a_client_keeps_calling_the_api_and_the_one_pod_answers_every_call",
            auto_renewal::the_auto_ca_is_renewed_while_a_client_keeps_calling_the_api_and_the_one_pod_answers_every_call(rotate),
        ),
        scenario(
            "a_users_certificate_is_served_as_it_is_and_reloaded_in_place_when_the_user_renews_it",
            a_users_certificate_is_served_as_it_is_and_reloaded_in_place_when_the_user_renews_it(user),
        ),
        scenario(
            "a_certificate_from_the_clusters_signer_is_served_and_trusted_through_the_signers_ca",
            csr::a_certificate_from_the_clusters_signer_is_served_and_trusted_through_the_signers_ca(csr),
        ),
        scenario(
            "a_certificate_cert_manager_issues_from_a_users_ca_is_served_and_its_renewal_reloaded_in_place",
            cert_manager::a_certificate_cert_manager_issues_from_a_users_ca_is_served_and_its_renewal_reloaded_in_place(cert_manager),
        ),
    ];
    all_pass(outcomes).await
}
