use super::*;
use crate::pki::rotation::tests::{DAY, assert_overlaps, count, trusts};
use std::collections::BTreeMap;

const NAME: &str = "ironic.metal3.svc";
const SETTLE: Duration = Duration::from_secs(60);
const RENEWAL: Renewal = Renewal { at: 2.0 / 3.0, settle: SETTLE };

fn sans() -> SubjectAltNames {
    SubjectAltNames { dns: vec![NAME.to_string()], ips: vec!["192.0.2.2".parse().expect("ip")] }
}

fn issuer(sans: &SubjectAltNames, ca_days: i64) -> Auto<'_> {
    Auto { common_name: "metal3/ironic Ironic CA".into(), ca_days, cert_days: 365, sans }
}

/// A bundle whose CA was made `age` before `now` for `days`.
fn aged(sans: &SubjectAltNames, now: SystemTime, age: Duration, days: i64) -> Bundle {
    rotation::fresh(&issuer(sans, days), now - age).expect("bundle")
}

/// The Ironic's pods: they serve the serving certificate (and trust the bundle) of the state
/// whose rollout finished last; a step's state reaches them when its rollout is done.
struct Pods {
    running: Bundle,
}

#[test]
fn a_fresh_ca_is_made_once_and_kept() {
    let (sans, now) = (sans(), SystemTime::now());
    let made = decide(None, &issuer(&sans, 3650), RENEWAL, false, now).expect("decided");
    assert_eq!(made.issued, Some("there is no CA yet"));
    assert!(trusts(&made.bundle.trusted(), &made.bundle.serving.cert, NAME, now));
    let again = decide(Some(&made.bundle), &issuer(&sans, 3650), RENEWAL, true, now).expect("decided");
    assert_eq!((again.bundle, again.issued, again.step), (made.bundle, None, None));
}

#[test]
fn the_ca_is_renewed_with_an_overlap_that_waits_for_the_pods_rollout_at_every_step() {
    let (sans, start) = (sans(), SystemTime::now());
    // A CA of 30 days, 21 days into its life: past two thirds.
    let old = aged(&sans, start, 21 * DAY, 30);
    let auto = issuer(&sans, 3650);
    let mut pods = Pods { running: old.clone() };
    let decide_at = |stored: &Bundle, served: bool, at: SystemTime| decide(Some(stored), &auto, RENEWAL, served, at);

    // Step 1: a next CA beside the current one; the serving certificate stays.
    let step1 = decide_at(&old, true, start).expect("decided");
    assert_eq!(step1.step, Some("made the next CA and published it beside the current one"));
    assert_eq!(step1.issued, None);
    let step1 = step1.bundle;
    assert_eq!((step1.ca.clone(), step1.serving.clone()), (old.ca.clone(), old.serving.clone()));
    assert_eq!(count(&step1.trusted()), 2);

    // The next CA does not sign while the pods still run the state before it (a crash
    // between the Secrets and the workload reads the same), however long that takes, nor
    // before the settle time once they do.
    let later = start + SETTLE * 10;
    assert_eq!(decide_at(&step1, false, later).expect("decided").bundle, step1);
    assert_eq!(decide_at(&step1, true, start + SETTLE / 2).expect("decided").bundle, step1);
    pods.running = step1.clone();

    // Step 2: the next CA signs; the old one stays published, retired.
    let step2 = decide_at(&step1, true, later).expect("decided");
    assert_eq!(step2.issued, Some("the CA is renewed: the next CA signs"));
    assert!(step2.step.is_some_and(|s| s.starts_with("the next CA signs")));
    let step2 = step2.bundle;
    assert_eq!(Some(&step2.ca), step1.next.as_ref());
    assert_eq!(step2.retired.as_deref(), Some(old.ca.cert.as_str()));
    // While the pods roll, an old pod serves the old certificate, a new one the new: both
    // bundles a client may hold trust both, and so does the bundle in either pod.
    for bundle in [step1.trusted(), step2.trusted(), pods.running.trusted()] {
        for serving in [&pods.running.serving.cert, &step2.serving.cert] {
            assert!(trusts(&bundle, serving, NAME, later), "a pod's certificate is untrusted mid-rollout");
        }
    }

    // Step 3 waits for every pod to serve the new certificate, then for the settle time.
    let much_later = later + SETTLE * 10;
    assert_eq!(decide_at(&step2, false, much_later).expect("decided").bundle, step2);
    assert_eq!(decide_at(&step2, true, later + SETTLE / 2).expect("decided").bundle, step2);
    pods.running = step2.clone();
    let step3 = decide_at(&step2, true, much_later).expect("decided");
    assert_eq!(step3.issued, None, "the serving certificate stays");
    assert!(step3.step.is_some_and(|s| s.contains("the old CA left the bundle")));
    let step3 = step3.bundle;
    assert_eq!(count(&step3.trusted()), 1);
    assert!(!step3.trusted().contains(old.ca.cert.trim()));
    assert_eq!(decide_at(&step3, true, much_later).expect("decided").bundle, step3, "done");

    assert_overlaps(&[(&old, start), (&step1, start), (&step2, later), (&step3, much_later)], NAME);
    // The new CA has the spec's lifetime, so it is not due again for years.
    assert!(inspect(&step3.ca.cert).expect("CA").not_after >= rotation::unix(start + 3649 * DAY));
}

#[test]
fn the_renewal_point_is_configurable() {
    let (sans, now) = (sans(), SystemTime::now());
    let young = aged(&sans, now, 4 * DAY, 10);
    let auto = issuer(&sans, 10);
    assert_eq!(decide(Some(&young), &auto, RENEWAL, true, now).expect("decided").step, None);
    let early = Renewal { at: 0.3, ..RENEWAL };
    assert!(decide(Some(&young), &auto, early, true, now).expect("decided").step.is_some());
}

#[test]
fn an_expired_ca_is_replaced_and_a_published_next_one_takes_over() {
    let (sans, now) = (sans(), SystemTime::now());
    let auto = issuer(&sans, 10);
    let dead = aged(&sans, now, 20 * DAY, 10);
    let replaced = decide(Some(&dead), &auto, RENEWAL, false, now).expect("decided");
    assert_eq!(replaced.issued, Some("the CA expired or is unusable: a new CA replaced it"));
    assert_ne!(replaced.bundle.ca, dead.ca);

    let ending = aged(&sans, now - 5 * DAY, 8 * DAY, 10);
    let step1 = decide(Some(&ending), &auto, RENEWAL, true, now - 5 * DAY).expect("decided").bundle;
    let late = decide(Some(&step1), &auto, RENEWAL, false, now).expect("decided");
    assert_eq!(Some(&late.bundle.ca), step1.next.as_ref(), "the published next CA, not a new one");
    assert!(trusts(&step1.trusted(), &late.bundle.serving.cert, NAME, now));
}

#[test]
fn a_missing_serving_certificate_is_signed_by_the_stored_ca() {
    let (sans, now) = (sans(), SystemTime::now());
    let bundle = aged(&sans, now, DAY, 3650);
    let ca_data: BTreeMap<String, Vec<u8>> =
        rotation::ca_data(&bundle).into_iter().map(|(k, v)| (k.to_string(), v.into_bytes())).collect();
    let ca = Source { kind: SourceKind::Secret, name: "ironic-tls-ca".into(), data: ca_data };
    let read = stored(Some(&ca), None).expect("the CA reads back");
    assert_eq!((&read.ca, &read.next, &read.retired), (&bundle.ca, &None, &None));
    let decided = decide(Some(&read), &issuer(&sans, 3650), RENEWAL, false, now).expect("decided");
    assert_eq!(decided.issued, Some("there is no usable serving certificate"));
    assert_eq!(decided.bundle.ca, bundle.ca);
    assert_eq!(stored(None, None), None);
}

/// A day-old bundle, another Secret the pods mount, and the serving Secret stored from the bundle.
fn rollout_fixture() -> (Bundle, Source, Source) {
    let bundle = aged(&sans(), SystemTime::now(), DAY, 3650);
    let others = Source { kind: SourceKind::Secret, name: "ironic-htpasswd".into(), data: BTreeMap::new() };
    let serving = serving_source("ironic-tls-auto", &bundle);
    (bundle, others, serving)
}

#[test]
fn pods_serve_the_stored_secrets_once_their_template_carries_its_hash_and_the_rollout_is_done() {
    let (_, others, serving) = rollout_fixture();
    let hash = hash::content_hash([&others, &serving]);
    let rolled = Rollout { content_hash: Some(hash.clone()), done: true, ..Rollout::default() };
    assert!(served(Some(&rolled), Some(&serving), &[&others]));
    // A key someone else added changes nothing the pods mount from us.
    let mut extended = serving.clone();
    extended.data.insert("extra".into(), b"x".to_vec());
    assert!(served(Some(&rolled), Some(&extended), &[&others]));

    let rolling = Rollout { done: false, ..rolled.clone() };
    let older = Rollout { content_hash: Some("an older template".into()), done: true, ..Rollout::default() };
    assert!(!served(Some(&rolling), Some(&serving), &[&others]), "pods still rolling");
    assert!(!served(Some(&older), Some(&serving), &[&others]), "the workload not yet applied");
    assert!(!served(None, Some(&serving), &[&others]));
    assert!(!served(Some(&rolled), None, &[&others]));
}

#[test]
fn the_one_pod_that_reloads_serves_the_stored_secrets_once_its_api_presents_the_stored_certificate() {
    let (bundle, others, serving) = rollout_fixture();
    let stored = super::super::presented::leaf(&bundle.serving.cert);
    // Its template carries everything but the certificate, which it reloads in place.
    let template = Some(hash::content_hash([&others]));
    let reloaded = Rollout { content_hash: template.clone(), done: true, reloads: true, presented: stored.clone() };
    assert!(served(Some(&reloaded), Some(&serving), &[&others]));

    let (sans, now) = (sans(), SystemTime::now());
    let renewed = aged(&sans, now, Duration::ZERO, 3650);
    let older = super::super::presented::leaf(&renewed.serving.cert);
    let not_yet = Rollout { presented: older, ..reloaded.clone() };
    assert!(!served(Some(&not_yet), Some(&serving), &[&others]), "the pod still presents another certificate");
    let unreachable = Rollout { presented: None, ..reloaded.clone() };
    assert!(!served(Some(&unreachable), Some(&serving), &[&others]), "nothing presented");
    let rolling = Rollout { done: false, ..reloaded.clone() };
    assert!(!served(Some(&rolling), Some(&serving), &[&others]), "a change of something else still rolling");

    // Only a renewal under way waits on it, and only for a pod that reloads.
    assert!(!awaits_reload(Some(&not_yet), &bundle, false), "no renewal under way");
    let step1 = decide(Some(&bundle), &issuer(&sans, 3650), RENEWAL, true, now + 2500 * DAY).expect("decided").bundle;
    assert!(step1.next.is_some(), "the renewal began");
    assert!(awaits_reload(Some(&not_yet), &step1, false));
    assert!(!awaits_reload(Some(&reloaded), &step1, true));
    let rolls = Rollout { reloads: false, ..not_yet };
    assert!(!awaits_reload(Some(&rolls), &step1, false), "a rollout is watched");
}

#[test]
fn the_next_look_is_the_earliest_renewal_still_ahead() {
    let (sans, now) = (sans(), SystemTime::now());
    let bundle = aged(&sans, now, DAY, 30);
    let ca_point = rotation::unix(now - DAY + 20 * DAY);
    let at = renewal_at(&bundle, RENEWAL, rotation::unix(now)).expect("a time");
    assert!((at - ca_point).abs() <= 300, "the CA's renewal point ({at} against {ca_point})");
    let renewing = decide(Some(&bundle), &issuer(&sans, 30), RENEWAL, true, now + 20 * DAY).expect("decided").bundle;
    let step = renewal_at(&renewing, RENEWAL, rotation::unix(now + 20 * DAY)).expect("a time");
    assert_eq!(step, rotation::unix(now + 20 * DAY + SETTLE), "the next step of the renewal");
}

#[test]
fn the_serving_secret_carries_every_ca_to_trust() {
    let (sans, now) = (sans(), SystemTime::now());
    let old = aged(&sans, now, 21 * DAY, 30);
    let step1 = decide(Some(&old), &issuer(&sans, 30), RENEWAL, true, now).expect("decided").bundle;
    let source = serving_source("ironic-tls-auto", &step1);
    assert_eq!(source.text(CA_CERT_KEY), Some(step1.trusted().as_str()));
    assert_eq!(count(source.text(CA_CERT_KEY).expect("ca.crt")), 2);
}
