//! Certificates for the test servers, made with rcgen.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::net::IpAddr;

/// A certificate authority that signs server and client certificates.
pub struct Authority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct CertifiedKey {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Authority {
    /// A fresh self-signed CA named `common_name`.
    pub fn new(common_name: &str) -> crate::Result<Self> {
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name, None);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self { cert_pem: cert.pem(), issuer: Issuer::new(params, key) })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A serving certificate for `dns_names` and `ips`.
    pub fn server(&self, dns_names: &[&str], ips: &[IpAddr]) -> crate::Result<CertifiedKey> {
        let mut params = CertificateParams::new(dns_names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        params.subject_alt_names.extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        params.distinguished_name = name(dns_names.first().copied().unwrap_or("server"), None);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        self.sign(params)
    }

    /// A client certificate with common name `user` and organisation `group`
    /// (Kubernetes reads them as the user name and group).
    pub fn client(&self, user: &str, group: Option<&str>) -> crate::Result<CertifiedKey> {
        let mut params = CertificateParams::default();
        params.distinguished_name = name(user, group);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> crate::Result<CertifiedKey> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertifiedKey { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}

/// A bare key pair as PEM: (private key in PKCS#8, public key in SPKI),
/// e.g. for service-account token signing and verification.
pub fn key_pair_pem() -> crate::Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

fn name(common_name: &str, organisation: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    if let Some(org) = organisation {
        dn.push(DnType::OrganizationName, org);
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

/// The loopback address, the one address every test server binds.
pub fn loopback() -> IpAddr {
    IpAddr::from([127, 0, 0, 1])
}
