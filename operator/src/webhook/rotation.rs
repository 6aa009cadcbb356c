//! The operator-managed webhook CA and serving certificate, and how they are
//! renewed without a moment in which the apiserver distrusts what is served.
//!
//! The apiserver trusts whatever the `caBundle` holds; every replica serves
//! what the shared Secret holds, re-read every refresh period. So a new CA is
//! introduced in three steps, each written to the Secret and published before
//! the next, and each next one taken only once the previous has reached
//! everyone:
//!
//! 1. At two-thirds of the CA's life a `next` CA is made and added to the
//!    bundle; the serving certificate is still signed by the current CA.
//! 2. Once the bundle with both has been published (read back from the
//!    ValidatingWebhookConfiguration) and a settle time has passed, the next CA
//!    becomes the signing CA and the serving certificate is re-signed by it;
//!    the old CA stays in the bundle, `retired`.
//! 3. A settle time after that re-signing, every replica serves the new
//!    certificate, and the retired CA leaves the bundle.
//!
//! A serving certificate never outlives the CA that signed it. A CA that has
//! already expired (an operator that was down for years) cannot be overlapped
//! with: it is replaced at once.

use super::Error;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use std::fmt;
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

pub const CA_LIFETIME: Duration = Duration::from_secs(3650 * 86400);
pub const SERVING_LIFETIME: Duration = Duration::from_secs(365 * 86400);
/// Certificates start this long before they are made, for clocks slightly behind ours;
/// their issue time is read back as `not_before + BACKDATE`.
const BACKDATE: Duration = Duration::from_secs(3600);

/// A certificate and its key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Pair {
    pub cert: String,
    pub key: String,
}

/// What the Secret holds.
#[derive(Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The CA that signs the serving certificate.
    pub ca: Pair,
    /// The serving certificate.
    pub serving: Pair,
    /// A CA published but not yet signing (step 1).
    pub next: Option<Pair>,
    /// A CA no longer signing but still published (step 2).
    pub retired: Option<String>,
}

impl fmt::Debug for Pair {
    /// The certificate's subject, never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pair").field("subject", &subject(&self.cert)).finish_non_exhaustive()
    }
}

impl fmt::Debug for Bundle {
    /// Never the keys: only which certificates there are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bundle")
            .field("ca", &subject(&self.ca.cert))
            .field("serving", &subject(&self.serving.cert))
            .field("next", &self.next.as_ref().map(|p| subject(&p.cert)))
            .field("retired", &self.retired.as_deref().map(subject))
            .finish_non_exhaustive()
    }
}

impl Bundle {
    /// The `caBundle` to publish: every CA a replica may be serving from, or soon will.
    pub fn trusted(&self) -> String {
        let cas = [self.retired.as_deref(), Some(self.ca.cert.as_str()), self.next.as_ref().map(|p| p.cert.as_str())];
        cas.into_iter().flatten().map(|pem| format!("{}\n", pem.trim_end())).collect()
    }
}

/// What the refresh should do with the Secret.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    Keep,
    Write(Bundle),
}

/// The next state of `stored` at `now`. `published` is the caBundle the
/// apiserver has now (`None` when unknown), `settle` how long a change takes to
/// reach every replica.
pub fn plan(
    stored: Option<&Bundle>,
    names: &[String],
    now: SystemTime,
    settle: Duration,
    published: Option<&str>,
) -> Result<Plan, Error> {
    let Some(stored) = stored else { return fresh(names, now).map(Plan::Write) };
    let mut next = stored.clone();
    let usable = |pem: &str, key: &str| Validity::of(pem).is_some_and(|v| v.covers(now)) && issuer(pem, key).is_some();

    if !usable(&next.ca.cert, &next.ca.key) {
        // The signing CA is gone or broken: a published next CA takes over at once, or
        // a new one is made. Nothing can overlap with a CA that no longer works.
        match next.next.take().filter(|p| usable(&p.cert, &p.key)) {
            Some(incoming) => next.ca = incoming,
            None => return fresh(names, now).map(Plan::Write),
        }
        next.retired = None;
        next.serving = serving(&next.ca, names, now)?;
    }
    if next.next.as_ref().is_some_and(|p| !usable(&p.cert, &p.key)) {
        next.next = None;
    }
    if next.retired.as_deref().is_some_and(|pem| !Validity::of(pem).is_some_and(|v| v.covers(now))) {
        next.retired = None;
    }

    // Step 3: the retired CA leaves once every replica serves from the new one.
    if next.retired.is_some() && settled(&next.serving.cert, now, settle) {
        next.retired = None;
    }
    // Step 2: the next CA signs once the bundle holding it is published everywhere.
    if let Some(incoming) = next.next.clone()
        && next.retired.is_none()
        && settled(&incoming.cert, now, settle)
        && published.is_some_and(|bundle| bundle.contains(incoming.cert.trim()))
    {
        next.retired = Some(std::mem::replace(&mut next.ca, incoming).cert);
        next.next = None;
        next.serving = serving(&next.ca, names, now)?;
    }
    // Step 1: a CA past two-thirds of its life gets a successor.
    if next.next.is_none() && next.retired.is_none() && Validity::of(&next.ca.cert).is_some_and(|v| v.due(now)) {
        next.next = Some(ca(now)?);
    }
    if serving_due(&next.serving.cert, &next.ca.cert, names, now) {
        next.serving = serving(&next.ca, names, now)?;
    }
    Ok(if &next == stored { Plan::Keep } else { Plan::Write(next) })
}

/// A new CA and a serving certificate signed by it.
pub fn fresh(names: &[String], now: SystemTime) -> Result<Bundle, Error> {
    let ca = ca(now)?;
    let serving = serving(&ca, names, now)?;
    Ok(Bundle { ca, serving, next: None, retired: None })
}

/// Whether a serving certificate must be re-signed: unreadable, missing one
/// of `names`, ending after its CA, or past two-thirds of its life while its CA
/// could give it longer (one that already ends with its CA waits for the next CA).
fn serving_due(cert: &str, ca: &str, names: &[String], now: SystemTime) -> bool {
    let (Some(validity), Some(ca)) = (Validity::of(cert), Validity::of(ca)) else { return true };
    let extendable = validity.not_after < ca.not_after;
    (validity.due(now) && extendable)
        || validity.not_after > ca.not_after
        || !names.iter().all(|n| covered(cert).contains(n))
}

/// Whether the certificate was issued at least `settle` ago.
fn settled(cert: &str, now: SystemTime, settle: Duration) -> bool {
    Validity::of(cert).is_some_and(|v| v.not_before + BACKDATE + settle <= now)
}

/// A certificate's validity, in seconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Validity {
    not_before: SystemTime,
    not_after: SystemTime,
}

impl Validity {
    fn of(pem: &str) -> Option<Self> {
        let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
        let cert = pem.parse_x509().ok()?;
        let at = |t: i64| SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(t).ok()?));
        Some(Self {
            not_before: at(cert.validity().not_before.timestamp())?,
            not_after: at(cert.validity().not_after.timestamp())?,
        })
    }

    fn covers(&self, now: SystemTime) -> bool {
        self.not_before <= now && now < self.not_after
    }

    /// Past two-thirds of its life.
    fn due(&self, now: SystemTime) -> bool {
        let life = self.not_after.duration_since(self.not_before).unwrap_or_default();
        now >= self.not_before + life * 2 / 3
    }
}

fn ca(now: SystemTime) -> Result<Pair, Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, "ferrometal-webhook-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = offset(now - BACKDATE);
    params.not_after = offset(now + CA_LIFETIME);
    let key = KeyPair::generate().map_err(Error::Generate)?;
    let cert = params.self_signed(&key).map_err(Error::Generate)?;
    Ok(Pair { cert: cert.pem(), key: key.serialize_pem() })
}

/// A serving certificate for `names` signed by `ca`, ending no later than `ca` does.
fn serving(ca: &Pair, names: &[String], now: SystemTime) -> Result<Pair, Error> {
    let signer = issuer(&ca.cert, &ca.key).ok_or_else(|| Error::InvalidCertificate("unusable webhook CA".into()))?;
    let ca_end = Validity::of(&ca.cert).map_or(now, |v| v.not_after);
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, names.first().map(String::as_str).unwrap_or("ferrometal"));
    params.subject_alt_names = names
        .iter()
        .map(|n| match n.parse::<std::net::IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => n.clone().try_into().map(SanType::DnsName),
        })
        .collect::<Result<_, _>>()
        .map_err(Error::Generate)?;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = offset(now - BACKDATE);
    params.not_after = offset((now + SERVING_LIFETIME).min(ca_end));
    let key = KeyPair::generate().map_err(Error::Generate)?;
    let cert = params.signed_by(&key, &signer).map_err(Error::Generate)?;
    Ok(Pair { cert: cert.pem(), key: key.serialize_pem() })
}

fn issuer(cert_pem: &str, key_pem: &str) -> Option<Issuer<'static, KeyPair>> {
    let key = KeyPair::from_pem(key_pem).ok()?;
    Issuer::from_ca_cert_pem(cert_pem, key).ok()
}

fn offset(at: SystemTime) -> OffsetDateTime {
    OffsetDateTime::from(at)
}

fn subject(pem: &str) -> String {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .ok()
        .and_then(|(_, pem)| pem.parse_x509().ok().map(|c| c.subject().to_string()))
        .unwrap_or_else(|| "<unreadable>".to_string())
}

/// The DNS names and IP addresses a certificate covers.
fn covered(pem: &str) -> Vec<String> {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else { return Vec::new() };
    let Ok(cert) = pem.parse_x509() else { return Vec::new() };
    cert.subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    x509_parser::extensions::GeneralName::IPAddress(ip) => ip_text(ip),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => Some(std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string()),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| std::net::Ipv6Addr::from(b).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
