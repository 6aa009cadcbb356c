//! The rustls configuration handed to reqwest.
//!
//! reqwest is built with `rustls-no-provider`, so it has no crypto of its own
//! and would panic without a process-wide default provider. The client
//! therefore always builds its own `ClientConfig` with the ring provider and
//! hands it over preconfigured: it works whether or not the process installed
//! a default, and aws-lc-rs never enters the build.
//!
//! Trust, in order of precedence:
//! - `insecure`: any certificate is accepted (the handshake signature is still
//!   checked against the presented certificate). For labs only.
//! - a CA bundle: only the given CAs are trusted. An operator talking to its
//!   own Ironic knows exactly which CA signed it, and trusting the system store
//!   on top would let any public CA vouch for the Ironic endpoint.
//! - nothing given: the operating system's trust store
//!   (`rustls-native-certs`, which reads files and needs no crypto provider).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::Error;

/// Which server certificates to trust.
#[derive(Debug, Clone, Default)]
pub(crate) enum Trust {
    /// The operating system's trust store.
    #[default]
    System,
    /// Only the CAs in this PEM bundle.
    CaBundle(Vec<u8>),
    /// Anything.
    Insecure,
}

/// Builds the rustls client configuration for `trust`. `https` is false for
/// plain-HTTP endpoints, where the system store is not worth reading.
pub(crate) fn client_config(trust: &Trust, https: bool) -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS protocol versions: {e}")))?;
    let config = match trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate::new(&provider)))
            .with_no_client_auth(),
        Trust::CaBundle(pem) => builder.with_root_certificates(roots_from_pem(pem)?).with_no_client_auth(),
        Trust::System if https => builder.with_root_certificates(system_roots()).with_no_client_auth(),
        Trust::System => builder.with_root_certificates(RootCertStore::empty()).with_no_client_auth(),
    };
    Ok(config)
}

/// A root store holding every certificate of a PEM bundle.
fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Config(format!("cannot parse the CA bundle: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Config("the CA bundle holds no PEM certificate".into()));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| Error::Config(format!("unusable CA certificate: {e}")))?;
    }
    Ok(roots)
}

fn system_roots() -> RootCertStore {
    let found = rustls_native_certs::load_native_certs();
    for err in &found.errors {
        tracing::warn!(error = %err, "could not read part of the system trust store");
    }
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!(
            ignored,
            "no usable certificate in the system trust store; HTTPS to Ironic will fail without a CA bundle"
        );
    }
    roots
}

/// The verifier of insecure mode: trusts every certificate, but still checks
/// that the handshake was signed by the key of the certificate presented.
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl AcceptAnyCertificate {
    fn new(provider: &CryptoProvider) -> Self {
        Self { algorithms: provider.signature_verification_algorithms }
    }
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_a_bundle_without_certificates() {
        let err = client_config(&Trust::CaBundle(b"not a pem".to_vec()), true).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
    }

    #[test]
    fn builds_every_mode_without_a_process_default_provider() {
        // No provider is installed in unit tests: building must not need one.
        assert!(client_config(&Trust::Insecure, true).is_ok());
        assert!(client_config(&Trust::System, false).is_ok());
        assert!(client_config(&Trust::System, true).is_ok());
    }
}
