//! What the API presents: the serving certificate a TLS handshake with the Ironic's Service
//! gets, verified against the CAs the operator publishes.
//!
//! One pod reloads a renewed certificate in place ([`super::reloaded_in_place`]), so no
//! rollout tells when it serves it: the kubelet refreshes the mounted Secret on its own
//! schedule (a minute by default) and httpd reloads within seconds of that. The CA's renewal
//! asks the API itself before it takes the old CA out of the bundle. The handshake sends
//! nothing: no credentials, no request.

use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How long a look may take: a pod that does not answer within it is not serving.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The leaf certificate (DER) `address` presents for `server_name`, once it verified against
/// `trusted` (PEM); why not, as a sentence, otherwise.
pub(crate) async fn presented(address: SocketAddr, server_name: &str, trusted: &str) -> Result<Vec<u8>, String> {
    let connector = connector(trusted)?;
    let name = ServerName::try_from(server_name.to_string()).map_err(|err| format!("{server_name}: {err}"))?;
    let handshake = async {
        let tcp = TcpStream::connect(address).await?;
        connector.connect(name, tcp).await
    };
    let stream = match tokio::time::timeout(TIMEOUT, handshake).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => return Err(format!("the handshake with {address} failed: {err}")),
        Err(_) => return Err(format!("{address} did not complete a handshake within {TIMEOUT:?}")),
    };
    let (_, connection) = stream.get_ref();
    let leaf = connection.peer_certificates().and_then(|chain| chain.first());
    leaf.map(|der| der.to_vec()).ok_or_else(|| format!("{address} presented no certificate"))
}

fn connector(trusted: &str) -> Result<TlsConnector, String> {
    let mut roots = RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(trusted.as_bytes()) {
        let der = der.map_err(|err| format!("the published CAs do not read: {err}"))?;
        roots.add(der).map_err(|err| format!("a published CA is refused: {err}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|err| format!("no CA to verify with: {err}"))?;
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_webpki_verifier(verifier)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The first certificate of `pem`, DER: what a pod serving it presents.
pub(crate) fn leaf(pem: &str) -> Option<Vec<u8>> {
    CertificateDer::pem_slice_iter(pem.as_bytes()).next()?.ok().map(|der| der.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::SubjectAltNames;
    use crate::pki::certificate::{issue_serving, new_ca};
    use tokio::net::TcpListener;
    use tokio_rustls::TlsAcceptor;

    /// Serves `cert` (with `key`) to one handshake on loopback.
    async fn serve_once(cert: &str, key: &str) -> SocketAddr {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert.as_bytes()).collect::<Result<_, _>>().expect("chain");
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.expect("accept");
            let _ = acceptor.accept(tcp).await;
        });
        address
    }

    fn sans() -> SubjectAltNames {
        SubjectAltNames { dns: vec!["ironic-service.metal3.svc".into()], ..Default::default() }
    }

    #[tokio::test]
    async fn the_served_leaf_is_read_when_a_published_ca_signs_it() {
        let now = jiff::Timestamp::now().as_second();
        let ca = new_ca("test CA", 10, now).expect("ca");
        let serving = issue_serving(&ca, &sans(), 1, now).expect("serving");
        let address = serve_once(&serving.cert, &serving.key).await;
        let got = presented(address, "ironic-service.metal3.svc", &ca.cert).await.expect("presented");
        assert_eq!(Some(got), leaf(&serving.cert));
    }

    #[tokio::test]
    async fn a_certificate_no_published_ca_signs_is_not_taken_as_served() {
        let now = jiff::Timestamp::now().as_second();
        let (ca, other) = (new_ca("test CA", 10, now).expect("ca"), new_ca("other CA", 10, now).expect("ca"));
        let serving = issue_serving(&other, &sans(), 1, now).expect("serving");
        let address = serve_once(&serving.cert, &serving.key).await;
        let refused = presented(address, "ironic-service.metal3.svc", &ca.cert).await;
        assert!(refused.is_err_and(|why| why.contains("handshake")), "an untrusted certificate is not served");
    }

    #[tokio::test]
    async fn nothing_listening_is_said() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        drop(listener);
        let now = jiff::Timestamp::now().as_second();
        let ca = new_ca("test CA", 10, now).expect("ca");
        assert!(presented(address, "ironic-service.metal3.svc", &ca.cert).await.is_err());
    }
}
