use super::*;
use crate::pki::rotation::tests::{DAY, assert_overlaps, ca_between, count, written};

const SETTLE: Duration = Duration::from_secs(60);

fn names() -> Vec<String> {
    vec!["fm.ops.svc".to_string(), "127.0.0.1".to_string()]
}

/// Whether a client trusting exactly `bundle` (a caBundle) accepts `serving` for
/// `fm.ops.svc` at `now`, as the apiserver would.
fn trusts(bundle: &str, serving: &str, now: SystemTime) -> bool {
    crate::pki::rotation::tests::trusts(bundle, serving, "fm.ops.svc", now)
}

fn not_after(pem: &str) -> i64 {
    inspect(pem).expect("a certificate").not_after
}

/// A CA made `age` before `now` with `life` in all, and a serving certificate from it.
fn aged(now: SystemTime, age: Duration, life: Duration) -> Bundle {
    let made = now - age;
    let ca = ca_between(made, life);
    let serving = serving(&ca, &names(), made + BACKDATE).expect("serving");
    Bundle { ca, serving, next: None, retired: None }
}

#[test]
fn a_fresh_bundle_is_kept_and_trusted() {
    let now = SystemTime::now();
    let bundle = fresh(&names(), now).expect("bundle");
    assert!(trusts(&bundle.trusted(), &bundle.serving.cert, now));
    assert_eq!(count(&bundle.trusted()), 1);
    assert_eq!(plan(Some(&bundle), &names(), now, SETTLE, None).expect("plan"), Plan::Keep);
    assert!(matches!(plan(None, &names(), now, SETTLE, None), Ok(Plan::Write(_))));
}

#[test]
fn the_serving_certificate_is_renewed_after_two_thirds_of_its_life_by_the_same_ca() {
    let now = SystemTime::now();
    let bundle = fresh(&names(), now).expect("bundle");
    assert_eq!(plan(Some(&bundle), &names(), now + 200 * DAY, SETTLE, None).expect("plan"), Plan::Keep);
    let later = now + 250 * DAY;
    let renewed = written(plan(Some(&bundle), &names(), later, SETTLE, None).expect("plan"));
    assert_eq!(renewed.ca, bundle.ca);
    assert_ne!(renewed.serving, bundle.serving);
    assert!(trusts(&bundle.trusted(), &renewed.serving.cert, later), "the published bundle still verifies it");
}

#[test]
fn a_serving_certificate_is_renewed_when_a_name_is_missing() {
    let now = SystemTime::now();
    let bundle = fresh(&["other.svc".to_string()], now).expect("bundle");
    let renewed = written(plan(Some(&bundle), &names(), now, SETTLE, None).expect("plan"));
    assert_eq!(renewed.ca, bundle.ca);
    assert!(trusts(&renewed.trusted(), &renewed.serving.cert, now));
}

#[test]
fn a_serving_certificate_never_outlives_its_ca() {
    let now = SystemTime::now();
    // A CA with 30 days left: the serving certificate is cut to end with it.
    let bundle = aged(now, 10 * DAY, 40 * DAY);
    let ca_end = not_after(&bundle.ca.cert);
    assert!(not_after(&bundle.serving.cert) <= ca_end);

    // One that ends after its CA (made by someone else) is re-signed.
    let mut params = CertificateParams::new(names()).expect("params");
    params.not_before = offset(now - DAY);
    params.not_after = offset(rotation::at(ca_end) + 100 * DAY);
    let key = KeyPair::generate().expect("key");
    let signer = issuer(&bundle.ca.cert, &bundle.ca.key).expect("issuer");
    let long = Pair { cert: params.signed_by(&key, &signer).expect("cert").pem(), key: key.serialize_pem() };
    let stored = Bundle { serving: long, ..bundle.clone() };
    let fixed = written(plan(Some(&stored), &names(), now, SETTLE, None).expect("plan"));
    assert!(not_after(&fixed.serving.cert) <= ca_end);
}

#[test]
fn a_ca_is_rotated_with_overlap_and_every_step_is_trusted_by_the_bundles_on_either_side() {
    // A CA 10 days into an 11-day life: past two-thirds, a day before its end.
    let start = SystemTime::now();
    let old = aged(start, 10 * DAY, 11 * DAY);

    // Step 1: a next CA, published beside the current; the serving certificate stays.
    let step1 = written(plan(Some(&old), &names(), start, SETTLE, Some(&old.trusted())).expect("plan"));
    assert_eq!(step1.ca, old.ca);
    assert_eq!(step1.serving, old.serving);
    assert!(step1.next.is_some());
    assert_eq!(count(&step1.trusted()), 2);

    // Not signing before it has settled, nor before the bundle holding it is published.
    let settled = start + SETTLE;
    assert_eq!(
        plan(Some(&step1), &names(), start + SETTLE / 2, SETTLE, Some(&step1.trusted())).expect("plan"),
        Plan::Keep
    );
    assert_eq!(plan(Some(&step1), &names(), settled, SETTLE, Some(&old.trusted())).expect("plan"), Plan::Keep);
    assert_eq!(plan(Some(&step1), &names(), settled, SETTLE, None).expect("plan"), Plan::Keep);

    // Step 2: the next CA signs; the old one stays in the bundle.
    let step2 = written(plan(Some(&step1), &names(), settled, SETTLE, Some(&step1.trusted())).expect("plan"));
    assert_eq!(Some(&step2.ca), step1.next.as_ref());
    assert_eq!(step2.retired.as_deref(), Some(old.ca.cert.as_str()));
    assert_eq!(count(&step2.trusted()), 2);
    assert_eq!(
        plan(Some(&step2), &names(), settled + SETTLE / 2, SETTLE, Some(&step2.trusted())).expect("plan"),
        Plan::Keep
    );

    // Step 3: the old CA leaves once every replica serves the new certificate.
    let done = settled + SETTLE;
    let step3 = written(plan(Some(&step2), &names(), done, SETTLE, Some(&step2.trusted())).expect("plan"));
    assert_eq!(step3.ca, step2.ca);
    assert_eq!(step3.serving, step2.serving);
    assert_eq!(count(&step3.trusted()), 1);
    assert!(!step3.trusted().contains(old.ca.cert.trim()));
    assert_eq!(plan(Some(&step3), &names(), done, SETTLE, Some(&step3.trusted())).expect("plan"), Plan::Keep);

    // At every step, whichever bundle the apiserver has (this step's or the last) trusts
    // whichever certificate a replica serves (this step's or the last).
    assert_overlaps(&[(&old, start), (&step1, start), (&step2, settled), (&step3, done)], "fm.ops.svc");
    // And the new CA lasts its full life.
    let life = rotation::at(not_after(&step3.ca.cert));
    assert!(life >= done + CA_LIFETIME - DAY);
}

#[test]
fn an_expired_ca_is_replaced_at_once() {
    let now = SystemTime::now();
    let dead = aged(now, 20 * DAY, 10 * DAY);
    let replaced = written(plan(Some(&dead), &names(), now, SETTLE, Some(&dead.trusted())).expect("plan"));
    assert_ne!(replaced.ca, dead.ca);
    assert_eq!((replaced.next.as_ref(), replaced.retired.as_ref()), (None, None));
    assert!(trusts(&replaced.trusted(), &replaced.serving.cert, now));
}

#[test]
fn a_published_next_ca_takes_over_at_once_when_the_current_one_expires() {
    let start = SystemTime::now();
    let old = aged(start, 10 * DAY, 11 * DAY);
    let step1 = written(plan(Some(&old), &names(), start, SETTLE, None).expect("plan"));
    // The operator was down until after the old CA's end.
    let late = start + 2 * DAY;
    let next = written(plan(Some(&step1), &names(), late, SETTLE, None).expect("plan"));
    assert_eq!(Some(&next.ca), step1.next.as_ref());
    assert_eq!(next.retired, None, "an expired CA is no use in the bundle");
    assert!(trusts(&next.trusted(), &next.serving.cert, late));
}

#[test]
fn debug_shows_no_key() {
    let bundle = fresh(&names(), SystemTime::now()).expect("bundle");
    let debug = format!("{bundle:?}");
    assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    assert!(debug.contains("ferrometal-webhook-ca"), "{debug}");
}
