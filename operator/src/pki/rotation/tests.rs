//! What every user of the rotation checks: which bundle trusts which served certificate, as a
//! client would decide it. Shared by the webhook's and the Ironic's rotation tests.

use super::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyUsagePurpose};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::Arc;

pub(crate) const DAY: Duration = Duration::from_secs(86400);

/// Whether a client trusting exactly `bundle` accepts `serving` for `name` at `now`, with
/// rustls' WebPKI verifier as a client would.
pub(crate) fn trusts(bundle: &str, serving: &str, name: &str, now: SystemTime) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
        roots.add(ca.expect("CA PEM")).expect("CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().expect("verifier");
    let cert = CertificateDer::from_pem_slice(serving.as_bytes()).expect("serving PEM");
    let name = ServerName::try_from(name.to_string()).expect("name");
    let at = UnixTime::since_unix_epoch(now.duration_since(SystemTime::UNIX_EPOCH).expect("after the epoch"));
    verifier.verify_server_cert(&cert, &[], &name, &[], at).is_ok()
}

/// The bundle a plan writes.
pub(crate) fn written(plan: Plan) -> Bundle {
    match plan {
        Plan::Write(bundle) => bundle,
        Plan::Keep => panic!("expected a change"),
    }
}

/// How many certificates a PEM bundle holds.
pub(crate) fn count(bundle: &str) -> usize {
    bundle.matches("BEGIN CERTIFICATE").count()
}

/// A self-signed CA valid from `from` for `life`.
pub(crate) fn ca_between(from: SystemTime, life: Duration) -> CertifiedPem {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, format!("an older CA {}", unix(from)));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = time::OffsetDateTime::from(from);
    params.not_after = time::OffsetDateTime::from(from + life);
    let key = KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("CA");
    CertifiedPem { cert: cert.pem(), key: key.serialize_pem() }
}

/// Checks a walk through the rotation: between each step and the next, whichever bundle a
/// client holds (the step's or the next's) trusts whichever certificate a server serves (the
/// step's or the next's), for `name`, at the time of the next step.
pub(crate) fn assert_overlaps(steps: &[(&Bundle, SystemTime)], name: &str) {
    for (i, pair) in steps.windows(2).enumerate() {
        let ((before, _), (after, at)) = (pair[0], pair[1]);
        for bundle in [before.trusted(), after.trusted()] {
            for serving in [&before.serving.cert, &after.serving.cert] {
                assert!(trusts(&bundle, serving, name, at), "step {i} to {}: a served certificate is untrusted", i + 1);
            }
        }
    }
}

#[test]
fn the_renewal_point_is_the_scheduled_fraction_of_the_cas_life() {
    let start = SystemTime::UNIX_EPOCH + 1000 * DAY;
    let ca = ca_between(start, 90 * DAY);
    let bundle = Bundle { serving: ca.clone(), ca, next: None, retired: None };
    let schedule = Schedule { renewal: 2.0 / 3.0, settle: Duration::from_secs(60), backdate: Duration::ZERO };
    assert_eq!(renewal_at(&bundle, &schedule), Some(start + 60 * DAY));
    let early = Schedule { renewal: 0.1, ..schedule };
    assert_eq!(renewal_at(&bundle, &early), Some(start + 9 * DAY));
    assert_eq!(step_at(&bundle, &schedule), None, "no step under way");
    let next = Bundle { next: Some(ca_between(start + DAY, 90 * DAY)), ..bundle.clone() };
    assert_eq!(step_at(&next, &schedule), Some(start + DAY + Duration::from_secs(60)));
}

#[test]
fn times_out_of_range_saturate() {
    assert_eq!(at(-5), SystemTime::UNIX_EPOCH);
    assert!(at(i64::MAX) > SystemTime::UNIX_EPOCH);
    assert_eq!(unix(at(1_700_000_000)), 1_700_000_000);
}
