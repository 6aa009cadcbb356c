//! Certificates signed by someone else: a key and a PKCS#10 signing request for the names to
//! cover, and the checks a certificate that comes back must pass before it is stored and
//! served (the Ironic's TLS mode CertificateSigningRequest). The key never leaves the caller.

use super::SubjectAltNames;
use super::certificate::{CertInfo, inspect, named};
use rcgen::{KeyPair, PublicKeyData};
use x509_parser::extensions::ParsedExtension;

/// Why a signing request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot make the key or the signing request")]
    Generate(#[from] rcgen::Error),
}

/// A new private key (ECDSA P-256), PEM.
pub fn new_key() -> Result<String, Error> {
    Ok(KeyPair::generate()?.serialize_pem())
}

/// A short digest of the public half of `key_pem`: it names the request made with that key.
/// `None` for an unreadable key.
pub(crate) fn key_digest(key_pem: &str) -> Option<String> {
    let key = KeyPair::from_pem(key_pem).ok()?;
    Some(crate::kit::digest::short(&key.subject_public_key_info(), 8))
}

/// A PEM `CERTIFICATE REQUEST` for `sans`, signed with `key_pem`.
pub fn signing_request(key_pem: &str, sans: &SubjectAltNames) -> Result<String, Error> {
    let key = KeyPair::from_pem(key_pem)?;
    let params = named(sans)?;
    Ok(params.serialize_request(&key)?.pem()?)
}

/// Why a signed certificate is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("it is not a readable PEM certificate")]
    Unreadable,
    #[error("it does not match the private key the request was made with")]
    KeyMismatch,
    #[error("it does not cover {0}")]
    MissingNames(String),
    #[error("it is not valid yet (from Unix time {0})")]
    NotYetValid(i64),
    #[error("it expired (at Unix time {0})")]
    Expired(i64),
    #[error("it is a CA certificate, not a serving certificate")]
    IsCa,
    #[error("its extended key usage does not allow server auth")]
    NoServerAuth,
}

/// Checks a signed certificate (the first of `cert_pem`, the rest being its chain) against
/// the key it was requested with, the names it must cover and the time (Unix seconds).
pub(crate) fn verify(cert_pem: &str, key_pem: &str, sans: &SubjectAltNames, now: i64) -> Result<CertInfo, Refusal> {
    let info = inspect(cert_pem).ok_or(Refusal::Unreadable)?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|_| Refusal::Unreadable)?;
    let cert = pem.parse_x509().map_err(|_| Refusal::Unreadable)?;
    let key = KeyPair::from_pem(key_pem).map_err(|_| Refusal::KeyMismatch)?;
    if cert.public_key().raw != key.subject_public_key_info().as_slice() {
        return Err(Refusal::KeyMismatch);
    }
    let missing: Vec<String> = sans
        .dns
        .iter()
        .filter(|d| !info.dns.iter().any(|c| c.eq_ignore_ascii_case(d)))
        .cloned()
        .chain(sans.ips.iter().filter(|ip| !info.ips.contains(ip)).map(ToString::to_string))
        .collect();
    if !missing.is_empty() {
        return Err(Refusal::MissingNames(missing.join(", ")));
    }
    if now < info.not_before {
        return Err(Refusal::NotYetValid(info.not_before));
    }
    if now >= info.not_after {
        return Err(Refusal::Expired(info.not_after));
    }
    if info.is_ca {
        return Err(Refusal::IsCa);
    }
    // Without the extension every usage is allowed; with it, server auth must be among them.
    let server_auth = cert.extensions().iter().all(|ext| match ext.parsed_extension() {
        ParsedExtension::ExtendedKeyUsage(eku) => eku.any || eku.server_auth,
        _ => true,
    });
    if !server_auth {
        return Err(Refusal::NoServerAuth);
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::certificate::new_ca;
    use rcgen::{CertificateSigningRequestParams, ExtendedKeyUsagePurpose, Issuer};
    use time::OffsetDateTime;

    fn names() -> SubjectAltNames {
        SubjectAltNames {
            dns: vec!["ironic".into(), "ironic.metal3.svc".into()],
            ips: vec!["192.0.2.2".parse().expect("ip")],
        }
    }

    fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    /// Signs `request` the way an external signer does, for `days`.
    fn sign(request: &str, days: i64, usage: ExtendedKeyUsagePurpose) -> String {
        let ca = new_ca("signer", 10, now()).expect("ca");
        let issuer = Issuer::from_ca_cert_pem(&ca.cert, KeyPair::from_pem(&ca.key).expect("key")).expect("issuer");
        let mut csr = CertificateSigningRequestParams::from_pem(request).expect("parses");
        csr.params.not_before = OffsetDateTime::now_utc() - time::Duration::minutes(5);
        csr.params.not_after = OffsetDateTime::now_utc() + time::Duration::days(days);
        csr.params.extended_key_usages = vec![usage];
        csr.signed_by(&issuer).expect("signs").pem()
    }

    #[test]
    fn a_certificate_signed_from_the_request_passes() {
        let key = new_key().expect("key");
        let request = signing_request(&key, &names()).expect("request");
        assert!(request.contains("BEGIN CERTIFICATE REQUEST"));
        let cert = sign(&request, 30, ExtendedKeyUsagePurpose::ServerAuth);
        let info = verify(&cert, &key, &names(), now()).expect("accepted");
        assert_eq!(info.dns, names().dns);
        assert_eq!(key_digest(&key).map(|d| d.len()), Some(16));
        assert_ne!(key_digest(&key), key_digest(&new_key().expect("key")));
    }

    #[test]
    fn another_key_missing_names_expiry_and_client_only_usage_are_refused() {
        let key = new_key().expect("key");
        let cert = sign(&signing_request(&key, &names()).expect("request"), 30, ExtendedKeyUsagePurpose::ServerAuth);
        assert_eq!(verify(&cert, &new_key().expect("key"), &names(), now()), Err(Refusal::KeyMismatch));
        let mut more = names();
        more.dns.push("ironic.example.com".into());
        assert_eq!(verify(&cert, &key, &more, now()), Err(Refusal::MissingNames("ironic.example.com".into())));
        assert!(matches!(verify(&cert, &key, &names(), now() + 31 * 86_400), Err(Refusal::Expired(_))));
        assert!(matches!(verify(&cert, &key, &names(), now() - 86_400), Err(Refusal::NotYetValid(_))));
        let client = sign(&signing_request(&key, &names()).expect("request"), 30, ExtendedKeyUsagePurpose::ClientAuth);
        assert_eq!(verify(&client, &key, &names(), now()), Err(Refusal::NoServerAuth));
        assert_eq!(verify("garbage", &key, &names(), now()), Err(Refusal::Unreadable));
    }
}
