//! What one client can hold of the operator's servers: connections by requests, not bytes;
//! a maximum age; a share per address; reviews bounded in size and memory; the health server
//! built the same way.

use super::*;
use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::{IpAddr, Ipv4Addr};
use tokio::task::JoinHandle;

/// Loopback addresses of their own, so that a test's clients are told apart from the
/// apiserver (127.0.0.1) by the per-address cap.
const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const OTHER_CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// A client trusting `ca`, offering `alpn`.
pub(super) fn tls_config(ca: &str, alpn: Vec<Vec<u8>>) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn;
    Ok(config)
}

async fn tcp_from(local: IpAddr, addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(local, 0))?;
    Ok(socket.connect(addr).await?)
}

/// An HTTP/2 connection from `local`, and a task that ends when the connection closes.
async fn h2(addr: SocketAddr, ca: &str, local: IpAddr) -> anyhow::Result<(SendRequest<Full<Bytes>>, JoinHandle<()>)> {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_config(ca, vec![b"h2".to_vec()])?));
    let tls = connector.connect(ServerName::try_from("127.0.0.1")?.to_owned(), tcp_from(local, addr).await?).await?;
    let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
    // The connection answers the server's pings while it is polled, as any h2 client does.
    let closed = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok((sender, closed))
}

async fn get(sender: &mut SendRequest<Full<Bytes>>, path: &str) -> anyhow::Result<http::StatusCode> {
    sender.ready().await?;
    let request = http::Request::get(format!("https://127.0.0.1{path}")).body(Full::default())?;
    Ok(sender.send_request(request).await?.status())
}

#[tokio::test]
async fn an_h2_client_that_made_one_request_and_idles_is_cut_although_it_answers_pings() -> anyhow::Result<()> {
    let env = Env::start("webhook-idle-h2").await?;
    let limits = Limits { idle_timeout: Duration::from_secs(3), ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;

    let (mut sender, closed) = h2(addr, &ca, CLIENT).await?;
    assert_eq!(get(&mut sender, "/healthz").await?, http::StatusCode::OK);
    let answered = Instant::now();
    // The server pings every second (a third of the idle timeout) and the client answers:
    // bytes flow both ways, and yet no request comes.
    tokio::time::timeout(Duration::from_secs(20), closed)
        .await
        .map_err(|_| anyhow::anyhow!("an HTTP/2 connection without a request for 20 s was not closed"))??;
    let after = answered.elapsed();
    assert!(after >= limits.idle_timeout - Duration::from_millis(500), "cut early: {after:?}");
    assert!(operator.metrics().cut_count("webhook", "idle") >= 1);
    admission_answers(&env.client(), &env.ns).await?;
    operator.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_busy_connection_is_closed_gracefully_at_its_maximum_age() -> anyhow::Result<()> {
    let env = Env::start("webhook-max-age").await?;
    let limits = Limits { max_age: Duration::from_secs(4), ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;

    let opened = Instant::now();
    let (mut sender, closed) = h2(addr, &ca, CLIENT).await?;
    let mut answered = 0;
    // A request every 200 ms until the server's GOAWAY: the client asks no more on it.
    while let Ok(status) = get(&mut sender, "/healthz").await {
        assert_eq!(status, http::StatusCode::OK);
        answered += 1;
        anyhow::ensure!(opened.elapsed() < Duration::from_secs(30), "the connection outlived its maximum age");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::timeout(Duration::from_secs(20), closed).await??;
    let age = opened.elapsed();
    assert!(age >= limits.max_age, "closed before its maximum age: {age:?}");
    assert!(answered >= 10, "only {answered} requests were answered before the close");
    assert!(operator.metrics().cut_count("webhook", "max_age") >= 1);
    operator.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn one_address_holds_no_more_than_its_share_and_others_are_still_served() -> anyhow::Result<()> {
    let env = Env::start("webhook-per-source").await?;
    let limits = Limits { max_connections: 8, max_per_source: 2, ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;

    let mut held = Vec::new();
    for _ in 0..limits.max_per_source {
        let (mut sender, closed) = h2(addr, &ca, CLIENT).await?;
        assert_eq!(get(&mut sender, "/healthz").await?, http::StatusCode::OK);
        held.push((sender, closed));
    }
    // One more from the same address is closed at once, before its TLS handshake ends.
    let refused = Instant::now();
    let third = tokio::time::timeout(Duration::from_secs(5), h2(addr, &ca, CLIENT)).await;
    assert!(
        matches!(third, Ok(Err(_))),
        "a third connection from one address was served: {:?}",
        third.map(|r| r.is_ok())
    );
    assert!(refused.elapsed() < limits.handshake_timeout, "refused only after {:?}", refused.elapsed());
    assert!(operator.metrics().cut_count("webhook", "per_source") >= 1);

    // Another address, and the apiserver, are served; the first two connections still are.
    let (mut other, _closed) = h2(addr, &ca, OTHER_CLIENT).await?;
    assert_eq!(get(&mut other, "/healthz").await?, http::StatusCode::OK);
    admission_answers(&env.client(), &env.ns).await?;
    for (sender, _) in &mut held {
        assert_eq!(get(sender, "/healthz").await?, http::StatusCode::OK);
    }
    operator.shutdown().await?;
    Ok(())
}

/// The peak resident memory of this process (the operator runs in it), in bytes.
fn peak_memory() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).ok_or_else(|| anyhow::anyhow!("no VmHWM"))?;
    let kib: u64 = line.split_whitespace().nth(1).unwrap_or("0").parse()?;
    Ok(kib * 1024)
}

/// A NodeSet review whose spec lists `hosts` empty host sections: each becomes a whole
/// struct, the costliest shape for its text.
fn nodeset_review(hosts: usize) -> Bytes {
    let nodes: Vec<String> = (0..hosts).map(|i| format!("\"h{i:x}\":{{}}")).collect();
    Bytes::from(format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","object":
            {{"apiVersion":"ferrometal.io/v1alpha1","kind":"NodeSet","metadata":{{"name":"a","namespace":"x"}},
              "spec":{{"nodes":{{{}}}}}}}}}}}"#,
        nodes.join(",")
    ))
}

#[tokio::test]
async fn concurrent_large_reviews_stay_within_the_stated_memory() -> anyhow::Result<()> {
    let env = Env::start("webhook-memory").await?;
    // Room for every review to get its turn: this measures memory, not the clock.
    let limits = Limits { request_timeout: Duration::from_secs(120), ..Limits::WEBHOOK };
    let (operator, addr) = operator(&env, limits, Duration::from_secs(30)).await?;
    let ca = webhook_ca(&env).await?;
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes())?)
        .timeout(Duration::from_secs(300))
        .build()?;

    // Just under the parse bound (about 1.1 KiB of cost per host), and the largest body
    // allowed, made of nothing but values; one copy of each, shared by every request.
    let parsed = nodeset_review(operator::testing::webhook::MAX_PARSE_COST / 1200);
    let padding = "[],".repeat((operator::testing::webhook::MAX_REVIEW_BYTES - 200) / 3);
    let large = Bytes::from(format!(r#"{{"request":{{"uid":"u","object":{{"spec":{{"x":[{padding}[]]}}}}}}}}"#));
    assert!(large.len() <= operator::testing::webhook::MAX_REVIEW_BYTES);
    let before = peak_memory()?;
    let reviews = (0..16).map(|i| {
        let body = if i % 2 == 0 { parsed.clone() } else { large.clone() };
        let request = client.post(format!("https://{addr}/validate/nodeset")).body(body);
        async move {
            let answer: serde_json::Value = request.send().await?.error_for_status()?.json().await?;
            anyhow::Ok(answer)
        }
    });
    let answers = futures::future::try_join_all(reviews).await?;
    let grown = peak_memory()?.saturating_sub(before);

    let bound = operator::testing::webhook::MAX_PARSE_COST * operator::testing::webhook::PARSING
        + operator::testing::webhook::BODY_BUDGET;
    println!(
        "16 concurrent reviews ({} and {} bytes): the peak grew by {} MiB (bound {} MiB)",
        parsed.len(),
        large.len(),
        grown >> 20,
        bound >> 20
    );
    for answer in &answers {
        assert_eq!(answer["response"]["allowed"], false, "{answer}");
    }
    assert!(
        answers.iter().any(|a| a["response"]["status"]["message"].as_str().unwrap_or("").contains("spec.")),
        "a review under the bound was parsed and validated"
    );
    assert!(
        answers.iter().any(|a| a["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("more than the webhook parses")),
        "a review over the bound was refused before parsing"
    );
    assert!(grown <= bound as u64, "the peak grew by {} MiB, over the bound of {} MiB", grown >> 20, bound >> 20);
    operator.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn the_health_server_cuts_silent_clients_and_keeps_answering_probes() -> anyhow::Result<()> {
    let env = Env::start("health-bounds").await?;
    let mut config = env.operator_config();
    let health = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), ferrometal_tests::ports::free_port()?);
    config.health_addr = Some(health);
    config.health_limits = Limits { header_timeout: Duration::from_secs(2), max_per_source: 3, ..Limits::HEALTH };
    let operator = env.start_operator(config.clone()).await?;
    let limits = config.health_limits;

    // Ten silent clients from one address: three are held until the header timeout, the
    // other seven are closed at once.
    let started = Instant::now();
    let silent: Vec<_> = (0..10)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = tcp_from(CLIENT, health).await?;
                let mut buf = [0u8; 16];
                let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf)).await;
                anyhow::ensure!(matches!(read, Ok(Ok(0) | Err(_))), "a silent client was still open after 30 s");
                anyhow::Ok(started.elapsed())
            })
        })
        .collect();
    // Meanwhile the kubelet's probe (another address) is answered.
    let probe = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    assert_eq!(probe.get(format!("http://{health}/healthz")).send().await?.text().await?, "ok");

    let mut cuts = Vec::new();
    for client in silent {
        cuts.push(client.await??);
    }
    cuts.sort();
    assert!(cuts[..7].iter().all(|c| *c < limits.header_timeout), "refused late: {cuts:?}");
    assert!(cuts[7..].iter().all(|c| *c >= limits.header_timeout), "held ones cut early: {cuts:?}");
    assert!(cuts[9] < limits.header_timeout + Duration::from_secs(10), "cut late: {cuts:?}");
    let metrics = operator.metrics();
    assert!(metrics.cut_count("health", "per_source") >= 7);
    assert!(metrics.cut_count("health", "no_request") >= 3);
    operator.shutdown().await?;
    Ok(())
}
