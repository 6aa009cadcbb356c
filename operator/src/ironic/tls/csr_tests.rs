use super::*;
use crate::pki::new_ca;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};
use rcgen::{CertificateSigningRequestParams, Issuer, KeyPair};
use time::OffsetDateTime;

const NS: &str = "metal3";

fn names() -> Names {
    Names::of(&crate::ironic::fixtures::ironic(
        "apiVersion: ironic.metal3.io/v1alpha1\nkind: Ironic\nmetadata: {name: ironic, namespace: metal3}\nspec: {}\n",
    ))
}

fn sans() -> SubjectAltNames {
    SubjectAltNames { dns: vec!["ironic".into(), "ironic.metal3.svc".into()], ips: vec![] }
}

fn settings() -> CsrTls {
    CsrTls { signer_name: "example.com/serving".into(), expiration_seconds: Some(86_400), signer_ca: None }
}

fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

fn secret(data: &[(&str, &str)], signer: Option<&str>) -> Secret {
    let mut secret = Secret {
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    };
    if let Some(signer) = signer {
        secret.metadata.annotations = Some(BTreeMap::from([(SIGNER_ANNOTATION.to_string(), signer.to_string())]));
    }
    secret
}

/// Signs `csr` as the cluster's signer does, valid from `start` for `secs`.
fn sign(csr: &CertificateSigningRequest, start: i64, secs: i64) -> String {
    let ca = new_ca("signer", 3650, start - 600).expect("ca");
    let issuer = Issuer::from_ca_cert_pem(&ca.cert, KeyPair::from_pem(&ca.key).expect("key")).expect("issuer");
    let pem = String::from_utf8(csr.spec.request.0.clone()).expect("utf-8");
    let mut params = CertificateSigningRequestParams::from_pem(&pem).expect("parses");
    params.params.not_before = OffsetDateTime::from_unix_timestamp(start).expect("time");
    params.params.not_after = OffsetDateTime::from_unix_timestamp(start + secs).expect("time");
    params.signed_by(&issuer).expect("signs").pem()
}

fn with_status(
    mut csr: CertificateSigningRequest,
    condition: Option<(&str, &str)>,
    cert: Option<&str>,
) -> CertificateSigningRequest {
    csr.status = Some(CertificateSigningRequestStatus {
        certificate: cert.map(|c| ByteString(c.as_bytes().to_vec())),
        conditions: condition.map(|(type_, reason)| {
            vec![CertificateSigningRequestCondition {
                type_: type_.into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some("by the administrator".into()),
                ..Default::default()
            }]
        }),
    });
    csr
}

/// The first pass: a key to store and a request to create, named after both Ironic and key.
fn first(stored: &Stored) -> (CsrPlan, Stored) {
    let plan = resolve(&names(), NS, &settings(), stored, &sans(), now()).expect("plan");
    let key = plan.request_key.clone().expect("a key to store");
    let mut next = stored.clone();
    next.request_key = Some(secret(&[(REQUEST_KEY, &key.key), (REQUEST_DIGEST_KEY, &key.digest)], None));
    next.request = plan.create.clone();
    (plan, next)
}

#[test]
fn a_first_request_is_pending_with_the_approve_command_and_found_again_from_its_key() {
    let (plan, next) = first(&Stored { supports_expiration: true, ..Default::default() });
    let csr = plan.create.clone().expect("a request");
    let name = csr.metadata.name.clone().expect("name");
    assert!(name.starts_with("ferrometal.metal3.ironic."), "{name}");
    assert_eq!(csr.spec.signer_name, "example.com/serving");
    assert_eq!(csr.spec.expiration_seconds, Some(86_400));
    assert!(csr.spec.usages.as_ref().is_some_and(|u| u.contains(&"server auth".to_string())));
    assert!(String::from_utf8_lossy(&csr.spec.request.0).contains("BEGIN CERTIFICATE REQUEST"));
    assert!(plan.serving.is_none() && plan.delete.is_empty());
    let (ready, reason, message) = plan.state.condition("example.com/serving");
    assert!(!ready);
    assert_eq!(reason, reasons::APPROVAL_PENDING);
    assert!(message.contains(&format!("`kubectl certificate approve {name}`")), "{message}");

    // After a crash: the same key names the same request, nothing new is made.
    let again = resolve(&names(), NS, &settings(), &next, &sans(), now()).expect("plan");
    assert_eq!(again.create, None);
    assert_eq!(again.request_key, plan.request_key);
    assert_eq!(again.state, State::Pending { name });
}

#[test]
fn expiration_seconds_is_sent_only_where_the_apiserver_knows_it() {
    let (plan, _) = first(&Stored::default());
    assert_eq!(plan.create.expect("a request").spec.expiration_seconds, None);
}

#[test]
fn a_signed_certificate_is_verified_stored_and_its_request_deleted() {
    let (plan, mut next) = first(&Stored::default());
    let csr = plan.create.expect("a request");
    let name = csr.metadata.name.clone().expect("name");
    let cert = sign(&csr, now() - 60, 3600);
    next.request = Some(with_status(csr, Some(("Approved", "Approved")), Some(&cert)));
    let signed = resolve(&names(), NS, &settings(), &next, &sans(), now()).expect("plan");
    assert_eq!(signed.state, State::Issued);
    assert_eq!(signed.serving.as_ref().map(|s| s.cert.as_str()), Some(cert.as_str()));
    assert_eq!(signed.request_key, None, "the request's key is not kept apart any more");
    assert_eq!(signed.delete, [name]);
    assert!(signed.issued.is_some());
}

#[test]
fn approved_but_unsigned_waits_and_denied_or_failed_are_reported_with_the_signers_reason() {
    let (plan, mut next) = first(&Stored::default());
    let csr = plan.create.expect("a request");
    let name = csr.metadata.name.clone().expect("name");
    for (condition, expected) in [
        ("Approved", State::Signing { name: name.clone() }),
        ("Denied", State::Denied { name: name.clone(), detail: "Denied: by the administrator".into() }),
        ("Failed", State::Failed { name: name.clone(), detail: "Failed: by the administrator".into() }),
    ] {
        next.request = Some(with_status(csr.clone(), Some((condition, condition)), None));
        let plan = resolve(&names(), NS, &settings(), &next, &sans(), now()).expect("plan");
        assert_eq!(plan.state, expected);
        assert_eq!(plan.create, None, "{condition}: nothing is retried");
        assert!(plan.serving.is_none());
    }
}

#[test]
fn a_certificate_for_other_names_or_another_key_is_refused_and_not_served() {
    let (plan, mut next) = first(&Stored::default());
    let csr = plan.create.expect("a request");
    // Signed for a request made with another key and other names.
    let mut other = csr.clone();
    let other_key = request::new_key().expect("key");
    let other_names = SubjectAltNames { dns: vec!["elsewhere".into()], ips: vec![] };
    other.spec.request = ByteString(request::signing_request(&other_key, &other_names).expect("request").into_bytes());
    let wrong = sign(&other, now() - 60, 3600);
    next.request = Some(with_status(csr, Some(("Approved", "Approved")), Some(&wrong)));
    let refused = resolve(&names(), NS, &settings(), &next, &sans(), now()).expect("plan");
    assert!(matches!(&refused.state, State::Refused { refusal: Refusal::KeyMismatch, .. }), "{:?}", refused.state);
    assert!(refused.serving.is_none() && refused.delete.is_empty());
    assert!(refused.state.is_failure());
}

#[test]
fn renewal_starts_at_two_thirds_and_the_old_certificate_serves_until_the_new_one_is_signed() {
    let (plan, mut next) = first(&Stored::default());
    let csr = plan.create.expect("a request");
    let start = now() - 60;
    let cert = sign(&csr, start, 3000);
    next.request = Some(with_status(csr, Some(("Approved", "Approved")), Some(&cert)));
    let signed = resolve(&names(), NS, &settings(), &next, &sans(), now()).expect("plan");
    let serving = signed.serving.clone().expect("serving");
    let stored = Stored {
        serving: Some(secret(&[("tls.crt", &serving.cert), ("tls.key", &serving.key)], Some("example.com/serving"))),
        ..Default::default()
    };
    // Before two thirds: kept, nothing requested.
    let kept = resolve(&names(), NS, &settings(), &stored, &sans(), start + 1000).expect("plan");
    assert_eq!((kept.state, kept.create, kept.serving.as_ref()), (State::Issued, None, Some(&serving)));
    // At two thirds: a new request, and the old certificate still serves.
    let renewing = resolve(&names(), NS, &settings(), &stored, &sans(), start + 2001).expect("plan");
    assert!(renewing.create.is_some());
    assert_eq!(renewing.serving.as_ref(), Some(&serving));
    assert!(matches!(renewing.state, State::Pending { .. }));
    // Another signer: a new request too.
    let other = CsrTls { signer_name: "example.com/other".into(), ..settings() };
    assert!(resolve(&names(), NS, &other, &stored, &sans(), start + 10).expect("plan").create.is_some());
}

#[test]
fn a_change_of_names_abandons_the_request_in_flight() {
    let (plan, next) = first(&Stored::default());
    let old = plan.create.and_then(|c| c.metadata.name).expect("name");
    let more = SubjectAltNames { dns: vec!["ironic".into(), "ironic.example.com".into()], ips: vec![] };
    let replanned = resolve(&names(), NS, &settings(), &next, &more, now()).expect("plan");
    assert_eq!(replanned.delete, std::slice::from_ref(&old));
    let new = replanned.create.and_then(|c| c.metadata.name).expect("a new request");
    assert_ne!(new, old);
}
