//! A CA renewed with an overlap: the webhook's CA and an Ironic's Auto CA rotate by this one
//! decision.
//!
//! Clients trust a published bundle of CAs; servers serve the certificate stored beside it.
//! Neither sees a change at once: a bundle reaches clients later (the apiserver's caBundle, a
//! ConfigMap clients re-read) and a serving certificate reaches servers later (a refresh
//! period, a rollout of pods). So a new CA comes in three steps, each taken only once the one
//! before has reached everyone, and at every moment every certificate a server may serve is
//! trusted by every bundle a client may hold:
//!
//! 1. At the renewal point of the CA's life a next CA is made and published beside it; the
//!    serving certificate stays.
//! 2. Once the bundle holding the next CA has reached every client and a settle time has
//!    passed since that CA was made, it signs: the serving certificate is re-signed by it, and
//!    the old CA stays in the bundle, retired.
//! 3. Once every server serves the re-signed certificate and a settle time has passed since its
//!    signing, the retired CA leaves the bundle.
//!
//! A CA that already expired (an operator stopped for longer than the overlap) cannot be
//! overlapped with: a published next CA takes over at once, or a new CA replaces it. Pure: what
//! has reached whom is the caller's to find out ([`Reached`]).

use super::certificate::{CertInfo, CertifiedPem, inspect};
use rcgen::{Issuer as Signer, KeyPair};
use std::fmt;
use std::time::{Duration, SystemTime};

/// What the operator keeps of one rotating CA.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Bundle {
    /// The CA that signs the serving certificate.
    pub ca: CertifiedPem,
    /// The serving certificate.
    pub serving: CertifiedPem,
    /// A CA published but not yet signing (step 1).
    pub next: Option<CertifiedPem>,
    /// A CA no longer signing but still published (step 2).
    pub retired: Option<String>,
}

impl fmt::Debug for Bundle {
    /// Only which certificates there are: never a key.
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
    /// The CAs to publish: every CA a server may be serving from, or soon will.
    pub(crate) fn trusted(&self) -> String {
        let cas = [self.retired.as_deref(), Some(self.ca.cert.as_str()), self.next.as_ref().map(|p| p.cert.as_str())];
        cas.into_iter().flatten().map(|pem| format!("{}\n", pem.trim_end())).collect()
    }
}

/// Keys of the Secret holding a rotating CA, beside [`super::CA_CERT_KEY`] and
/// [`super::CA_KEY_KEY`] (the signing CA): the incoming and the outgoing CA. Always written,
/// empty between rotations: an apply that merely leaves a key out does not remove it when
/// another field manager (whoever created the Secret) co-owns `data`, as Kubernetes 1.20 shows.
pub(crate) const NEXT_CA_CERT_KEY: &str = "next-ca.crt";
pub(crate) const NEXT_CA_KEY_KEY: &str = "next-ca.key";
pub(crate) const RETIRED_CA_CERT_KEY: &str = "retired-ca.crt";

/// The CAs of `bundle` as Secret data.
pub(crate) fn ca_data(bundle: &Bundle) -> [(&'static str, String); 5] {
    let next = bundle.next.as_ref();
    [
        (super::CA_CERT_KEY, bundle.ca.cert.clone()),
        (super::CA_KEY_KEY, bundle.ca.key.clone()),
        (NEXT_CA_CERT_KEY, next.map(|p| p.cert.clone()).unwrap_or_default()),
        (NEXT_CA_KEY_KEY, next.map(|p| p.key.clone()).unwrap_or_default()),
        (RETIRED_CA_CERT_KEY, bundle.retired.clone().unwrap_or_default()),
    ]
}

/// The bundle whose CAs `get` reads from Secret data (empty values are absent), with its
/// serving certificate; `None` without a signing CA.
pub(crate) fn from_data(get: impl Fn(&str) -> Option<String>, serving: CertifiedPem) -> Option<Bundle> {
    let get = |key: &str| get(key).filter(|v| !v.is_empty());
    let pair = |cert: &str, key: &str| Some(CertifiedPem { cert: get(cert)?, key: get(key)? });
    Some(Bundle {
        ca: pair(super::CA_CERT_KEY, super::CA_KEY_KEY)?,
        serving,
        next: pair(NEXT_CA_CERT_KEY, NEXT_CA_KEY_KEY),
        retired: get(RETIRED_CA_CERT_KEY),
    })
}

/// How one user of the rotation makes its certificates.
pub(crate) trait Issuer {
    type Error;
    /// A new CA, valid from `now`.
    fn ca(&self, now: SystemTime) -> Result<CertifiedPem, Self::Error>;
    /// A serving certificate signed by `ca`, ending no later than `ca` does.
    fn serving(&self, ca: &CertifiedPem, now: SystemTime) -> Result<CertifiedPem, Self::Error>;
    /// Whether `serving` must be re-signed by `ca` (a usable CA) at `now`.
    fn serving_due(&self, serving: &CertifiedPem, ca: &CertifiedPem, now: SystemTime) -> bool;
}

/// When the steps are taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Schedule {
    /// How far into its life a CA gets a successor, from 0 to 1 (two thirds).
    pub renewal: f64,
    /// How long a step waits, at least, after the certificate the step before made.
    pub settle: Duration,
    /// How long before their making the issuer's certificates start (for clocks behind ours):
    /// a certificate's making is read back as its start plus this.
    pub backdate: Duration,
}

/// What the caller has seen reach everyone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reached {
    /// Every client holds a bundle with the stored next CA.
    pub next_trusted: bool,
    /// Every server serves the stored serving certificate.
    pub serving: bool,
}

/// What to do with the stored bundle.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Keep,
    Write(Bundle),
}

/// A new CA and a serving certificate signed by it.
pub(crate) fn fresh<I: Issuer>(issuer: &I, now: SystemTime) -> Result<Bundle, I::Error> {
    let ca = issuer.ca(now)?;
    let serving = issuer.serving(&ca, now)?;
    Ok(Bundle { ca, serving, next: None, retired: None })
}

/// The next state of `stored` at `now`, given what has `reached` everyone.
pub(crate) fn plan<I: Issuer>(
    stored: Option<&Bundle>,
    issuer: &I,
    schedule: &Schedule,
    now: SystemTime,
    reached: Reached,
) -> Result<Plan, I::Error> {
    let Some(stored) = stored else { return fresh(issuer, now).map(Plan::Write) };
    let mut next = stored.clone();
    if !usable(&next.ca, now) {
        // The signing CA is gone or broken: a published next CA takes over at once, or a new
        // one is made. Nothing can overlap with a CA that no longer works.
        match next.next.take().filter(|p| usable(p, now)) {
            Some(incoming) => next.ca = incoming,
            None => return fresh(issuer, now).map(Plan::Write),
        }
        next.retired = None;
        next.serving = issuer.serving(&next.ca, now)?;
    }
    if next.next.as_ref().is_some_and(|p| !usable(p, now)) {
        next.next = None;
    }
    if next.retired.as_deref().is_some_and(|pem| !inspect(pem).is_some_and(|i| covers(&i, now))) {
        next.retired = None;
    }
    let settled =
        |pem: &str| inspect(pem).is_some_and(|i| at(i.not_before) + schedule.backdate + schedule.settle <= now);

    // Step 3: the retired CA leaves once every server serves from the new one.
    if next.retired.is_some() && reached.serving && settled(&next.serving.cert) {
        next.retired = None;
    }
    // Step 2: the next CA signs once the bundle holding it has reached every client.
    if let Some(incoming) = next.next.clone()
        && next.retired.is_none()
        && reached.next_trusted
        && settled(&incoming.cert)
    {
        next.retired = Some(std::mem::replace(&mut next.ca, incoming).cert);
        next.next = None;
        next.serving = issuer.serving(&next.ca, now)?;
    }
    // Step 1: a CA past its renewal point gets a successor.
    if next.next.is_none() && next.retired.is_none() && inspect(&next.ca.cert).is_some_and(|i| due(&i, schedule, now)) {
        next.next = Some(issuer.ca(now)?);
    }
    if issuer.serving_due(&next.serving, &next.ca, now) {
        next.serving = issuer.serving(&next.ca, now)?;
    }
    Ok(if &next == stored { Plan::Keep } else { Plan::Write(next) })
}

/// When the CA of `bundle` reaches its renewal point.
pub(crate) fn renewal_at(bundle: &Bundle, schedule: &Schedule) -> Option<SystemTime> {
    inspect(&bundle.ca.cert).map(|i| renewal_point(&i, schedule))
}

/// When the step under way may be taken, if one is under way: a settle time after the
/// certificate the step before made.
pub(crate) fn step_at(bundle: &Bundle, schedule: &Schedule) -> Option<SystemTime> {
    let made = match (&bundle.next, &bundle.retired) {
        (Some(next), _) => &next.cert,
        (None, Some(_)) => &bundle.serving.cert,
        (None, None) => return None,
    };
    inspect(made).map(|i| at(i.not_before) + schedule.backdate + schedule.settle)
}

/// Whether a serving certificate lapses beside its CA at `now` ([`super::certificate::lapse`]),
/// or cannot be read.
pub(crate) fn lapsing(serving: &str, ca: &str, now: SystemTime) -> bool {
    let (Some(serving), Some(ca)) = (inspect(serving), inspect(ca)) else { return true };
    super::certificate::lapse(&serving, &ca, unix(now)).is_some()
}

/// Whether `pair` is a CA that can sign at `now`.
fn usable(pair: &CertifiedPem, now: SystemTime) -> bool {
    let Some(info) = inspect(&pair.cert) else { return false };
    let signer = KeyPair::from_pem(&pair.key).ok().and_then(|key| Signer::from_ca_cert_pem(&pair.cert, key).ok());
    info.is_ca && covers(&info, now) && signer.is_some()
}

fn covers(info: &CertInfo, now: SystemTime) -> bool {
    let now = unix(now);
    info.not_before <= now && now < info.not_after
}

fn due(info: &CertInfo, schedule: &Schedule, now: SystemTime) -> bool {
    now >= renewal_point(info, schedule)
}

fn renewal_point(info: &CertInfo, schedule: &Schedule) -> SystemTime {
    let life = info.not_after.saturating_sub(info.not_before).max(0);
    // A fraction of whole seconds: f64 is exact for lifetimes of up to 285 million years.
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let into = (life as f64 * schedule.renewal.clamp(0.0, 1.0)) as i64;
    at(info.not_before.saturating_add(into))
}

/// Unix seconds of `time` (0 before the epoch).
pub(crate) fn unix(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The time of Unix seconds `secs`: the epoch before it, the year 9999 after that.
pub(crate) fn at(secs: i64) -> SystemTime {
    let last = Duration::from_secs(253_402_300_799);
    let since = Duration::from_secs(u64::try_from(secs).unwrap_or(0)).min(last);
    SystemTime::UNIX_EPOCH.checked_add(since).unwrap_or(SystemTime::UNIX_EPOCH)
}

fn subject(pem: &str) -> String {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .ok()
        .and_then(|(_, pem)| pem.parse_x509().ok().map(|c| c.subject().to_string()))
        .unwrap_or_else(|| "<unreadable>".to_string())
}

#[cfg(test)]
pub(crate) mod tests;
