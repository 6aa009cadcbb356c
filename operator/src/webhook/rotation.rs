//! The operator-managed webhook CA and serving certificate, and how they are
//! renewed without a moment in which the apiserver distrusts what is served
//! (the overlap itself is [`crate::pki::rotation`]'s).
//!
//! The apiserver trusts whatever the `caBundle` holds; every replica serves
//! what the shared Secret holds, re-read every refresh period. So the next CA
//! signs only once the ValidatingWebhookConfiguration read back carries it, and
//! the retired CA leaves once a settle time (within which every replica has
//! re-read the Secret) has passed since the re-signing.

use super::Error;
use crate::pki::certificate::inspect;
use crate::pki::rotation::{self, Issuer, Reached, Schedule};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

pub(super) use crate::pki::CertifiedPem as Pair;
pub(super) use crate::pki::rotation::{Bundle, Plan};

pub(super) const CA_LIFETIME: Duration = Duration::from_secs(3650 * 86400);
pub(super) const SERVING_LIFETIME: Duration = Duration::from_secs(365 * 86400);
/// Certificates start this long before they are made, for clocks slightly behind ours;
/// their issue time is read back as `not_before + BACKDATE`.
const BACKDATE: Duration = Duration::from_secs(3600);

/// The webhook's certificates: its CA, and serving certificates for `names`.
struct Webhook<'a> {
    names: &'a [String],
}

impl Issuer for Webhook<'_> {
    type Error = Error;

    fn ca(&self, now: SystemTime) -> Result<Pair, Error> {
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

    fn serving(&self, ca: &Pair, now: SystemTime) -> Result<Pair, Error> {
        serving(ca, self.names, now)
    }

    /// Lapsing, or missing one of the names.
    fn serving_due(&self, serving: &Pair, ca: &Pair, now: SystemTime) -> bool {
        let covered = inspect(&serving.cert)
            .map(|i| i.dns.into_iter().chain(i.ips.iter().map(std::net::IpAddr::to_string)).collect::<Vec<_>>());
        rotation::lapsing(&serving.cert, &ca.cert, now)
            || !self.names.iter().all(|n| covered.as_ref().is_some_and(|c| c.contains(n)))
    }
}

/// The next state of `stored` at `now`. `published` is the caBundle the
/// apiserver has now (`None` when unknown), `settle` how long a change takes to
/// reach every replica.
pub(super) fn plan(
    stored: Option<&Bundle>,
    names: &[String],
    now: SystemTime,
    settle: Duration,
    published: Option<&str>,
) -> Result<Plan, Error> {
    let incoming = stored.and_then(|s| s.next.as_ref());
    let next_trusted = incoming.is_some_and(|n| published.is_some_and(|bundle| bundle.contains(n.cert.trim())));
    // Replicas re-read the Secret within the settle time: time alone tells they all serve it.
    let reached = Reached { next_trusted, serving: true };
    let schedule = Schedule { renewal: 2.0 / 3.0, settle, backdate: BACKDATE };
    rotation::plan(stored, &Webhook { names }, &schedule, now, reached)
}

/// A new CA and a serving certificate signed by it.
pub(super) fn fresh(names: &[String], now: SystemTime) -> Result<Bundle, Error> {
    rotation::fresh(&Webhook { names }, now)
}

/// A serving certificate for `names` signed by `ca`, ending no later than `ca` does.
fn serving(ca: &Pair, names: &[String], now: SystemTime) -> Result<Pair, Error> {
    let signer = issuer(&ca.cert, &ca.key).ok_or_else(|| Error::InvalidCertificate("unusable webhook CA".into()))?;
    let ca_end = inspect(&ca.cert).map_or(now, |i| rotation::at(i.not_after));
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

fn issuer(cert_pem: &str, key_pem: &str) -> Option<rcgen::Issuer<'static, KeyPair>> {
    let key = KeyPair::from_pem(key_pem).ok()?;
    rcgen::Issuer::from_ca_cert_pem(cert_pem, key).ok()
}

fn offset(at: SystemTime) -> OffsetDateTime {
    OffsetDateTime::from(at)
}

#[cfg(test)]
mod tests;
