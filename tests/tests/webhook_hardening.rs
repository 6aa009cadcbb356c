//! The webhook server against slow and hostile clients, and the rotation of
//! its operator-managed CA, with the real apiserver calling it throughout.

#[path = "webhook_hardening/bounds.rs"]
mod bounds;
mod common;

use common::{Env, POLL};
use crds::ironic::Ironic;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use operator::testing::webhook::{CONFIGURATION_NAME, Limits};
use operator::{Operator, OperatorConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const SECRET: &str = "ferrometal-webhook-tls";

/// The operator with its webhooks registered, these limits, and the given refresh period.
async fn operator(env: &Env, limits: Limits, refresh: Duration) -> anyhow::Result<(Operator, SocketAddr)> {
    let mut config: OperatorConfig = env.operator_config();
    env.with_webhooks(&mut config)?;
    let webhook = config.webhook.as_mut().expect("webhooks on");
    webhook.limits = limits;
    webhook.refresh = refresh;
    let addr = webhook.addr;
    Ok((env.start_operator(config).await?, addr))
}

/// The CA the webhook's certificate is signed by, from its Secret.
async fn webhook_ca(env: &Env) -> anyhow::Result<String> {
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    let secret = secrets.get(SECRET).await?;
    let data = secret.data.unwrap_or_default();
    Ok(String::from_utf8(data.get("ca.crt").map(|b| b.0.clone()).unwrap_or_default())?)
}

/// Asks the apiserver to create an invalid Ironic: the webhook must answer with the field path.
async fn admission_answers(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let ironics: Api<Ironic> = Api::namespaced(client.clone(), namespace);
    let bad: Ironic = serde_json::from_value(json!({
        "apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "bad"},
        "spec": {"networking": {"dhcp": {"networkCIDR": "192.0.2.0/24", "rangeBegin": "192.0.2.200",
            "rangeEnd": "192.0.2.10"}, "ipAddress": "192.0.2.2"}}}))?;
    match ironics.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(status)) if status.code == 400 && status.message.contains("spec.networking.dhcp") => {
            Ok(())
        }
        other => anyhow::bail!("the webhook did not answer the admission: {other:?}"),
    }
}

/// `GET /healthz` on a new connection, trusting `ca`.
async fn healthz(addr: SocketAddr, ca: &str, within: Duration) -> anyhow::Result<String> {
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes())?)
        .timeout(within)
        .build()?;
    Ok(client.get(format!("https://{addr}/healthz")).send().await?.error_for_status()?.text().await?)
}

/// How long until the server closes a TCP connection on which nothing is sent.
async fn silent_tcp(addr: SocketAddr, give_up: Duration) -> anyhow::Result<Duration> {
    // Timed from before the connect: the server's clock starts at its accept, which
    // cannot come earlier, while a time taken after `connect` returns can come later
    // than the accept when this task is not scheduled at once (a busy CI machine).
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).await?;
    let mut buf = [0u8; 16];
    match tokio::time::timeout(give_up, stream.read(&mut buf)).await {
        Ok(Ok(0) | Err(_)) => Ok(start.elapsed()),
        Ok(Ok(_)) => anyhow::bail!("the server sent data to a client that never said hello"),
        Err(_) => anyhow::bail!("a silent connection was still open after {give_up:?}"),
    }
}

/// How long until the server closes a connection that completes TLS (offering `alpn`)
/// and then sends nothing.
fn silent_tls(addr: SocketAddr, ca: String, alpn: Vec<Vec<u8>>, give_up: Duration) -> anyhow::Result<Duration> {
    let config = bounds::tls_config(&ca, alpn)?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("127.0.0.1")?.to_owned())?;
    let mut sock = std::net::TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(give_up))?;
    // Timed from before the last handshake step, which sends the client's Finished: the
    // server's clock starts once it has read that, so it cannot start earlier, while a
    // time taken after the step can be later if this thread is preempted in between.
    let mut start = Instant::now();
    while conn.is_handshaking() {
        start = Instant::now();
        conn.complete_io(&mut sock)?;
    }
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let mut buf = [0u8; 256];
    loop {
        match tls.read(&mut buf) {
            Ok(0) => return Ok(start.elapsed()),
            // An HTTP/2 server speaks first (its SETTINGS); keep listening.
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                anyhow::bail!("a connection that sent no request was still open after {give_up:?}")
            }
            Err(_) => return Ok(start.elapsed()),
        }
    }
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_cut_off_after_the_timeout_and_others_are_still_served() -> anyhow::Result<()> {
    let env = Env::start("webhook-silent").await?;
    let limits =
        Limits { handshake_timeout: Duration::from_secs(2), header_timeout: Duration::from_secs(2), ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;
    let give_up = Duration::from_secs(30);

    // Ten clients that connect and never say hello, and two that finish TLS (one
    // offering HTTP/2, one HTTP/1.1) and never send a request.
    let silent: Vec<_> = (0..10).map(|_| tokio::spawn(silent_tcp(addr, give_up))).collect();
    let quiet: Vec<_> = [vec![b"h2".to_vec()], vec![b"http/1.1".to_vec()]]
        .into_iter()
        .map(|alpn| {
            let ca = ca.clone();
            tokio::task::spawn_blocking(move || silent_tls(addr, ca, alpn, give_up))
        })
        .collect();

    // Meanwhile the apiserver's admissions, and any other client, are served.
    admission_answers(&env.client(), &env.ns).await?;
    assert_eq!(healthz(addr, &ca, Duration::from_secs(10)).await?, "ok");

    for client in silent {
        let cut = client.await??;
        assert!(cut >= limits.handshake_timeout, "cut before the handshake timeout: {cut:?}");
        assert!(cut < limits.handshake_timeout + Duration::from_secs(10), "cut late: {cut:?}");
    }
    for client in quiet {
        let cut = client.await??;
        assert!(cut >= limits.header_timeout, "cut before the header timeout: {cut:?}");
        assert!(cut < limits.header_timeout + Duration::from_secs(10), "cut late: {cut:?}");
    }
    let metrics = operator.metrics();
    assert!(metrics.cut_count("webhook", "handshake_timeout") >= 10);
    assert!(metrics.cut_count("webhook", "no_request") >= 1, "the HTTP/2 client was cut by the first-request rule");
    admission_answers(&env.client(), &env.ns).await?;
    operator.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn the_connection_cap_holds_and_a_slot_frees_when_a_silent_client_is_cut_off() -> anyhow::Result<()> {
    let env = Env::start("webhook-cap").await?;
    let limits = Limits { max_connections: 4, handshake_timeout: Duration::from_secs(4), ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;
    let metrics = operator.metrics();
    let baseline = metrics.open_connections("webhook");

    // The highest number of connections the server held at once, sampled.
    let sampler = {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut most = 0;
            for _ in 0..1000 {
                most = most.max(metrics.open_connections("webhook"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            most
        })
    };

    let holders: Vec<_> =
        (0..limits.max_connections).map(|_| tokio::spawn(silent_tcp(addr, Duration::from_secs(60)))).collect();
    let full = Instant::now();
    while metrics.open_connections("webhook") < baseline + 4 {
        anyhow::ensure!(full.elapsed() < Duration::from_secs(10), "the silent clients were not accepted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A fifth client waits: not refused, not served, while all four slots are held.
    let waiting = healthz(addr, &ca, Duration::from_secs(1)).await;
    assert!(waiting.is_err(), "a fifth connection was served beyond the cap: {waiting:?}");
    // Once the silent clients are cut off, a client is served again.
    let served = Instant::now();
    assert_eq!(healthz(addr, &ca, Duration::from_secs(30)).await?, "ok");
    assert!(served.elapsed() <= limits.handshake_timeout + Duration::from_secs(10));
    for holder in holders {
        holder.await??;
    }
    let most = sampler.await?;
    assert!(most <= 4, "the server held {most} connections at once with a cap of 4");
    assert_eq!(most, 4, "the sampler saw the cap reached");
    admission_answers(&env.client(), &env.ns).await?;
    operator.shutdown().await?;
    Ok(())
}

/// A CA that started `age` ago and ends `left` from now, with a serving certificate for
/// 127.0.0.1 that ends with it: the Secret an older operator left behind.
fn aging_secret(namespace: &str, age: Duration, left: Duration) -> anyhow::Result<(Secret, String)> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
    let now = SystemTime::now();
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, "ferrometal-webhook-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = (now - age).into();
    params.not_after = (now + left).into();
    let ca_key = KeyPair::generate()?;
    let ca = params.self_signed(&ca_key)?;
    let issuer = Issuer::new(params, KeyPair::from_pem(&ca_key.serialize_pem())?);
    let mut serving = CertificateParams::default();
    serving.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
    serving.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_before = (now - age).into();
    serving.not_after = (now + left).into();
    let key = KeyPair::generate()?;
    let cert = serving.signed_by(&key, &issuer)?;
    let data = [
        ("ca.crt", ca.pem()),
        ("ca.key", ca_key.serialize_pem()),
        ("tls.crt", cert.pem()),
        ("tls.key", key.serialize_pem()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), k8s_openapi::ByteString(v.into_bytes())))
    .collect();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(SECRET.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    };
    Ok((secret, ca.pem()))
}

async fn published_bundle(env: &Env) -> anyhow::Result<String> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let configuration = api.get(CONFIGURATION_NAME).await?;
    let first = configuration.webhooks.unwrap_or_default().into_iter().next();
    Ok(first
        .and_then(|w| w.client_config.ca_bundle)
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .unwrap_or_default())
}

fn certificates(bundle: &str) -> Vec<String> {
    CertificateDer::pem_slice_iter(bundle.as_bytes())
        .filter_map(Result::ok)
        .map(|der| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der.as_ref()))
        .collect()
}

/// Whether a client trusting `bundle` accepts `serving` for 127.0.0.1 now.
fn trusts(bundle: &str, serving: &str) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(bundle.as_bytes()).filter_map(Result::ok) {
        let _ = roots.add(ca);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(verifier) = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()
    else {
        return false;
    };
    let Ok(cert) = CertificateDer::from_pem_slice(serving.as_bytes()) else { return false };
    let name = ServerName::try_from("127.0.0.1").expect("an IP address");
    rustls::client::danger::ServerCertVerifier::verify_server_cert(&*verifier, &cert, &[], &name, &[], UnixTime::now())
        .is_ok()
}

#[tokio::test]
async fn a_ca_near_its_end_is_rotated_with_both_cas_in_the_bundle_and_admission_keeps_working() -> anyhow::Result<()> {
    let env = Env::start("webhook-rotate").await?;
    // Ten minutes into a twelve-minute life: past two-thirds, two minutes left.
    let (secret, old_ca) = aging_secret(&env.ns, Duration::from_secs(600), Duration::from_secs(120))?;
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    secrets.create(&PostParams::default(), &secret).await?;
    let old = certificates(&old_ca);

    let refresh = Duration::from_secs(1);
    let (operator, _) = operator(&env, Limits::WEBHOOK, refresh).await?;
    let start = Instant::now();
    while admission_answers(&env.client(), &env.ns).await.is_err() {
        anyhow::ensure!(start.elapsed() < Duration::from_secs(30), "the webhook never answered");
        tokio::time::sleep(POLL).await;
    }

    // Admissions all along the rotation, and every caBundle the apiserver is given.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let admissions = {
        let (client, namespace) = (env.client(), env.ns.clone());
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let mut answered = 0usize;
            let mut failures = Vec::new();
            while !*stopped.borrow_and_update() {
                match admission_answers(&client, &namespace).await {
                    Ok(()) => answered += 1,
                    Err(err) => failures.push(err.to_string()),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (answered, failures)
        })
    };

    let mut saw_both = false;
    let new = loop {
        anyhow::ensure!(start.elapsed() < Duration::from_secs(90), "the rotation did not finish");
        let published = certificates(&published_bundle(&env).await?);
        if published.len() == 2 && published.contains(&old[0]) {
            saw_both = true;
        }
        if published.len() == 1 && published[0] != old[0] {
            break published;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // A few more refresh periods on the new CA alone.
    tokio::time::sleep(refresh * 4).await;
    stop.send_replace(true);
    let (answered, failures) = admissions.await?;

    assert!(saw_both, "the old and the new CA were published together");
    assert!(failures.is_empty(), "admissions failed during the rotation: {failures:?}");
    assert!(answered >= 10, "only {answered} admissions were answered");

    let stored = secrets.get(SECRET).await?.data.unwrap_or_default();
    // Absent or empty: the operator writes the rotation's keys empty between rotations.
    let text =
        |key: &str| stored.get(key).map(|b| String::from_utf8_lossy(&b.0).into_owned()).filter(|t| !t.is_empty());
    let (ca, serving) = (text("ca.crt").unwrap_or_default(), text("tls.crt").unwrap_or_default());
    assert_eq!(certificates(&ca), new, "the Secret's signing CA is the published one");
    let keys: Vec<_> = stored.keys().collect();
    assert!(text("next-ca.crt").is_none() && text("retired-ca.crt").is_none(), "the rotation is over: {keys:?}");
    assert!(trusts(&ca, &serving), "the serving certificate is signed by the new CA");
    assert!(!trusts(&old_ca, &serving), "and not by the old one");
    let end = |pem: &str| {
        let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("PEM");
        pem.parse_x509().expect("certificate").validity().not_after.timestamp()
    };
    assert!(end(&serving) <= end(&ca), "the serving certificate ends no later than its CA");
    operator.shutdown().await?;
    Ok(())
}
