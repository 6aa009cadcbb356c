//! Operator-made certificates: a CA and serving certificates made with rcgen, what a
//! certificate says about itself, and when to renew (an Ironic's Auto TLS, the managed
//! database's TLS).
//!
//! For [`decide`] (the managed database's TLS) a CA lives as long as it was made for and is
//! replaced only when it expired or is unusable, because clients trust it; an Ironic's Auto CA
//! is renewed before, with an overlap ([`super::rotation`]). A serving certificate is reissued
//! at two thirds of its lifetime (unless it already ends with its CA), when the names it must
//! cover change, or when the CA changed. Times are Unix seconds and their arithmetic
//! saturates: validity days come from specs.

use super::SubjectAltNames;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType, SerialNumber,
};
use std::net::IpAddr;
use time::OffsetDateTime;
use x509_parser::extensions::GeneralName;

/// A certificate and its private key, PEM. Its `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct CertifiedPem {
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for CertifiedPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertifiedPem").field("cert", &self.cert).field("key", &"<redacted>").finish()
    }
}

/// What a certificate says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertInfo {
    /// Unix seconds.
    pub not_before: i64,
    /// Unix seconds.
    pub not_after: i64,
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
    /// DER of the issuer and subject names, to tell which CA signed it.
    pub issuer: Vec<u8>,
    pub subject: Vec<u8>,
    pub is_ca: bool,
}

impl CertInfo {
    /// When to renew: two thirds into the lifetime.
    pub fn renewal_at(&self) -> i64 {
        // In i128: the lifetime of absurd validities does not fit an i64, and a saturated one
        // would put the renewal before the certificate's start.
        let (start, end) = (i128::from(self.not_before), i128::from(self.not_after));
        let at = start + (end - start) / 3 * 2;
        i64::try_from(at).unwrap_or(if at < 0 { i64::MIN } else { i64::MAX })
    }
}

/// Reads the first certificate of a PEM bundle.
pub fn inspect(pem: &str) -> Option<CertInfo> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let cert = pem.parse_x509().ok()?;
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns.push(d.to_string()),
                GeneralName::IPAddress(bytes) => ips.extend(ip_from_bytes(bytes)),
                _ => {}
            }
        }
    }
    dns.sort();
    ips.sort();
    Some(CertInfo {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        dns,
        ips,
        issuer: cert.issuer().as_raw().to_vec(),
        subject: cert.subject().as_raw().to_vec(),
        is_ca: cert.is_ca(),
    })
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

/// What to do with the stored CA and serving certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Both are fine.
    Keep,
    /// Issue a new serving certificate from the stored CA.
    IssueServing { reason: &'static str },
    /// Make a new CA, then a serving certificate from it.
    NewCa { reason: &'static str },
}

/// Decides from the stored material, the names to cover and the time (Unix seconds).
pub(crate) fn decide(
    ca: Option<&CertifiedPem>,
    serving: Option<&CertifiedPem>,
    sans: &SubjectAltNames,
    now: i64,
) -> Decision {
    let Some(ca) = ca else {
        return Decision::NewCa { reason: "there is no CA yet" };
    };
    let ca_info = match inspect(&ca.cert) {
        Some(info) if info.is_ca && KeyPair::from_pem(&ca.key).is_ok() => info,
        _ => return Decision::NewCa { reason: "the stored CA is unreadable" },
    };
    if ca_info.not_after <= now {
        return Decision::NewCa { reason: "the CA expired" };
    }
    match serving_problem(&ca_info, serving, sans, now) {
        Some(reason) => Decision::IssueServing { reason },
        None => Decision::Keep,
    }
}

/// Why `serving` must be re-signed by the CA `ca` describes, if it must: it is missing or
/// unreadable, another CA signed it, its names are not `sans`, or it lapses ([`lapse`]; one
/// that already ends with its CA would only be re-signed ever more often: it waits for the
/// CA's renewal).
pub(crate) fn serving_problem(
    ca: &CertInfo,
    serving: Option<&CertifiedPem>,
    sans: &SubjectAltNames,
    now: i64,
) -> Option<&'static str> {
    let Some(info) = serving.and_then(|s| inspect(&s.cert).filter(|_| KeyPair::from_pem(&s.key).is_ok())) else {
        return Some("there is no usable serving certificate");
    };
    if info.issuer != ca.subject {
        return Some("the serving certificate was signed by another CA");
    }
    if info.dns != sans.dns || info.ips != sans.ips {
        return Some("the names to cover changed");
    }
    lapse(&info, ca, now)
}

/// Why a serving certificate lapses beside its CA, if it does: it ends after the CA, or it is
/// past two thirds of its lifetime while the CA could give it longer.
pub(crate) fn lapse(serving: &CertInfo, ca: &CertInfo, now: i64) -> Option<&'static str> {
    if serving.not_after > ca.not_after {
        return Some("the serving certificate outlives its CA");
    }
    if now >= serving.renewal_at() && serving.not_after < ca.not_after {
        return Some("the serving certificate reached two thirds of its lifetime");
    }
    None
}

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot generate a certificate")]
    Generate(#[from] rcgen::Error),
    #[error("time {0} is out of range")]
    Time(i64),
}

fn at(unix: i64) -> Result<OffsetDateTime, Error> {
    OffsetDateTime::from_unix_timestamp(unix).map_err(|_| Error::Time(unix))
}

fn random_serial() -> SerialNumber {
    // Positive and 16 bytes: unique enough across renewals and CA generations.
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f;
    SerialNumber::from(bytes.to_vec())
}

/// A new self-signed CA valid `days` from `now`. Its name carries the issuing time, so that
/// certificates from an earlier CA of the same Ironic are told apart by their issuer.
pub(crate) fn new_ca(common_name: &str, days: i64, now: i64) -> Result<CertifiedPem, Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::OrganizationName, "ferrometal");
    params.distinguished_name.push(DnType::CommonName, format!("{common_name} {now}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.not_before = at(now.saturating_sub(300))?;
    params.not_after = at(now.saturating_add(days.saturating_mul(86_400)))?;
    params.serial_number = Some(random_serial());
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok(CertifiedPem { cert: cert.pem(), key: key.serialize_pem() })
}

/// Certificate parameters naming `sans`: the first DNS name as the common name, every name
/// and address as a subject alternative name. Shared by issued certificates and requests.
pub(super) fn named(sans: &SubjectAltNames) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, sans.dns.first().map(String::as_str).unwrap_or("ironic"));
    params.subject_alt_names = sans
        .dns
        .iter()
        .map(|d| d.clone().try_into().map(SanType::DnsName))
        .chain(sans.ips.iter().map(|ip| Ok(SanType::IpAddress(*ip))))
        .collect::<Result<_, rcgen::Error>>()?;
    Ok(params)
}

/// A serving certificate for `sans`, signed by `ca`, valid `days` from `now` but never past
/// the CA.
pub fn issue_serving(ca: &CertifiedPem, sans: &SubjectAltNames, days: i64, now: i64) -> Result<CertifiedPem, Error> {
    let ca_key = KeyPair::from_pem(&ca.key)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert, ca_key)?;
    let ca_not_after = inspect(&ca.cert).map(|i| i.not_after).unwrap_or(i64::MAX);
    let mut params = named(sans)?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = at(now.saturating_sub(300))?;
    params.not_after = at(now.saturating_add(days.saturating_mul(86_400)).min(ca_not_after))?;
    params.serial_number = Some(random_serial());
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(CertifiedPem { cert: cert.pem(), key: key.serialize_pem() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn sans(names: &[&str], ips: &[&str]) -> SubjectAltNames {
        SubjectAltNames {
            dns: names.iter().map(|n| n.to_string()).collect(),
            ips: ips.iter().map(|i| i.parse().expect("ip")).collect(),
        }
    }

    fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    #[test]
    fn a_fresh_pair_is_kept_and_covers_its_names() {
        let now = now();
        let names = sans(&["ironic", "ironic.metal3.svc"], &["192.0.2.2"]);
        let ca = new_ca("metal3/ironic", 3650, now).expect("ca");
        let serving = issue_serving(&ca, &names, 365, now).expect("serving");
        let info = inspect(&serving.cert).expect("parses");
        assert_eq!(info.dns, names.dns);
        assert_eq!(info.ips, names.ips);
        assert!(!info.is_ca);
        assert_eq!(decide(Some(&ca), Some(&serving), &names, now), Decision::Keep);
    }

    /// A CA of `ca_days` for `ironic`, and a serving certificate of `cert_days` from it.
    fn issued(ca_days: i64, cert_days: i64, now: i64) -> (SubjectAltNames, CertifiedPem, CertifiedPem) {
        let names = sans(&["ironic"], &[]);
        let ca = new_ca("metal3/ironic", ca_days, now).expect("ca");
        let serving = issue_serving(&ca, &names, cert_days, now).expect("serving");
        (names, ca, serving)
    }

    #[test]
    fn the_serving_certificate_is_renewed_at_two_thirds_of_its_lifetime() {
        let now = now();
        let (names, ca, serving) = issued(3650, 90, now);
        assert_eq!(decide(Some(&ca), Some(&serving), &names, now + 59 * DAY), Decision::Keep);
        assert!(matches!(
            decide(Some(&ca), Some(&serving), &names, now + 61 * DAY),
            Decision::IssueServing { reason } if reason.contains("two thirds")
        ));
    }

    #[test]
    fn changed_names_or_another_ca_reissue_and_a_missing_or_expired_ca_is_replaced() {
        let now = now();
        let names = sans(&["ironic"], &[]);
        let ca = new_ca("metal3/ironic", 10, now).expect("ca");
        let serving = issue_serving(&ca, &names, 365, now).expect("serving");
        let info = inspect(&serving.cert).expect("parses");
        assert!(info.not_after <= inspect(&ca.cert).expect("ca parses").not_after, "capped at the CA's expiry");
        assert!(matches!(
            decide(Some(&ca), Some(&serving), &sans(&["ironic", "other"], &[]), now),
            Decision::IssueServing { .. }
        ));
        let other_ca = new_ca("metal3/ironic", 10, now + 1).expect("ca");
        assert_eq!(
            decide(Some(&other_ca), Some(&serving), &names, now),
            Decision::IssueServing { reason: "the serving certificate was signed by another CA" }
        );
        assert!(matches!(decide(None, Some(&serving), &names, now), Decision::NewCa { .. }));
        assert_eq!(
            decide(Some(&ca), Some(&serving), &names, now + 11 * DAY),
            Decision::NewCa { reason: "the CA expired" }
        );
        assert!(matches!(decide(Some(&serving), None, &names, now), Decision::NewCa { .. }), "not a CA");
    }

    #[test]
    fn a_certificate_that_ends_with_its_ca_is_not_re_signed_by_it_ever_more_often() {
        let now = now();
        let (names, ca, serving) = issued(30, 365, now);
        let (ca_info, info) = (inspect(&ca.cert).expect("ca"), inspect(&serving.cert).expect("serving"));
        assert_eq!(info.not_after, ca_info.not_after, "cut to its CA's end");
        assert_eq!(decide(Some(&ca), Some(&serving), &names, now + 25 * DAY), Decision::Keep, "it waits for the CA");
        let short = issue_serving(&ca, &names, 9, now).expect("serving");
        assert!(matches!(decide(Some(&ca), Some(&short), &names, now + 7 * DAY), Decision::IssueServing { .. }));
    }

    #[test]
    fn absurd_validities_are_refused_instead_of_overflowing() {
        assert!(matches!(new_ca("x", i64::MAX, now()), Err(Error::Time(_))));
        let info = CertInfo { not_before: i64::MIN, not_after: i64::MAX, ..inspect_fixture() };
        let renewal = info.renewal_at();
        assert!(renewal > info.not_before && renewal < info.not_after, "no overflow: {renewal}");
    }

    #[test]
    fn debug_never_shows_the_private_key() {
        let ca = new_ca("x", 1, now()).expect("ca");
        let shown = format!("{ca:?}");
        assert!(!shown.contains("PRIVATE KEY") && shown.contains("<redacted>"), "{shown}");
    }

    fn inspect_fixture() -> CertInfo {
        CertInfo {
            not_before: 0,
            not_after: 0,
            dns: vec![],
            ips: vec![],
            issuer: vec![],
            subject: vec![],
            is_ca: false,
        }
    }
}
