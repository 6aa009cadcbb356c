//! TLS mode CertificateSigningRequest: the operator makes a key, asks the cluster's own
//! signer for a certificate through a `certificates.k8s.io/v1` CertificateSigningRequest, and
//! serves the certificate once an administrator approved the request, the signer signed it and
//! it passed [`crate::pki::request::verify`].
//!
//! The decisions are here and pure: [`resolve`] takes what dereference read (the serving
//! Secret, the Secret with the key of the request in flight, that request) and says what apply
//! writes. CSRs are cluster-scoped and cannot be owned by a namespaced Ironic, so their name
//! carries the namespace, the Ironic and a digest of the key ([`request_name`]): two Ironics
//! never collide, and after a crash the operator finds its request again from the key it
//! stored before creating it.

use crate::ironic::names::Names;
use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL, bounded};
use crate::pki::SubjectAltNames;
use crate::pki::request::{self, Refusal};
use crate::pki::{CertInfo, CertifiedPem};
use crds::ironic::CsrTls;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Key of the request's private key in the request Secret.
pub(crate) const REQUEST_KEY: &str = "tls.key";
/// Key of the digest of what the request asks for (signer, lifetime, names).
pub(crate) const REQUEST_DIGEST_KEY: &str = "request.sha256";
/// Annotation of the serving Secret naming the signer that signed it.
pub(crate) const SIGNER_ANNOTATION: &str = "ironic.ferrometal.io/signer-name";
/// Labels of the CSRs the operator creates: which Ironic asked.
pub(crate) const NAMESPACE_LABEL: &str = "ironic.metal3.io/namespace";
pub(crate) const IRONIC_LABEL: &str = "ironic.metal3.io/ironic";
/// The first Kubernetes minor version whose CSR API has `expirationSeconds`.
pub(crate) const EXPIRATION_SECONDS_SINCE_MINOR: u32 = 22;

/// Condition type reporting the request in flight, in mode CertificateSigningRequest.
pub(crate) const CERTIFICATE_READY: &str = "CertificateReady";

/// Reasons of CertificateReady (and of Progressing/Degraded when nothing can serve yet).
pub(crate) mod reasons {
    pub(crate) const ISSUED: &str = "CertificateIssued";
    pub(crate) const APPROVAL_PENDING: &str = "CertificateApprovalPending";
    pub(crate) const SIGNING: &str = "CertificateSigning";
    pub(crate) const DENIED: &str = "CertificateDenied";
    pub(crate) const FAILED: &str = "CertificateSigningFailed";
    pub(crate) const REFUSED: &str = "CertificateRefused";
}

/// Why the request could not be prepared.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("cannot make the key or the signing request")]
    Request(#[from] request::Error),
}

/// The name of the request made with `key_pem` for the Ironic `names` in `namespace`. A
/// namespace has no dots, so `ferrometal.<namespace>.<ironic>.<digest>` never names two
/// Ironics' requests alike. `None` for an unreadable key.
pub(crate) fn request_name(namespace: &str, names: &Names, key_pem: &str) -> Option<String> {
    let digest = request::key_digest(key_pem)?;
    Some(bounded(&format!("ferrometal.{namespace}.{}.{digest}", names.ironic), 253))
}

/// What dereference read for this mode.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stored {
    /// The Secret the pods mount (`<name>-tls-csr`), when it is this Ironic's.
    pub serving: Option<Secret>,
    /// The Secret with the key of the request in flight (`<name>-tls-csr-request`).
    pub request_key: Option<Secret>,
    /// The request named after that key, when it exists.
    pub request: Option<CertificateSigningRequest>,
    /// The apiserver knows `spec.expirationSeconds` (Kubernetes 1.22 or newer).
    pub supports_expiration: bool,
}

/// Where the request stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// A verified certificate serves and nothing is requested.
    Issued,
    /// The request waits for an administrator.
    Pending { name: String },
    /// Approved; the signer has not signed yet.
    Signing { name: String },
    /// Denied, with the approver's reason and message.
    Denied { name: String, detail: String },
    /// The signer failed, with its reason and message.
    Failed { name: String, detail: String },
    /// Signed, but the certificate fails verification.
    Refused { name: String, refusal: Refusal },
}

impl State {
    /// CertificateReady: status, reason, message. The pending message holds the exact
    /// command to approve, the failures what was refused and how to ask again.
    pub(crate) fn condition(&self, signer: &str) -> (bool, &'static str, String) {
        let again =
            "delete the CertificateSigningRequest (or change spec.tls.certificateSigningRequest) to request again";
        match self {
            Self::Issued => (true, reasons::ISSUED, format!("the serving certificate is signed by {signer}")),
            Self::Pending { name } => (
                false,
                reasons::APPROVAL_PENDING,
                format!(
                    "CertificateSigningRequest {name} for signer {signer} waits for approval: run `kubectl certificate approve {name}`"
                ),
            ),
            Self::Signing { name } => (
                false,
                reasons::SIGNING,
                format!("CertificateSigningRequest {name} is approved; waiting for signer {signer} to sign it"),
            ),
            Self::Denied { name, detail } => {
                (false, reasons::DENIED, format!("CertificateSigningRequest {name} was denied: {detail}; {again}"))
            }
            Self::Failed { name, detail } => (
                false,
                reasons::FAILED,
                format!("signer {signer} failed CertificateSigningRequest {name}: {detail}; {again}"),
            ),
            Self::Refused { name, refusal } => (
                false,
                reasons::REFUSED,
                format!(
                    "the certificate signer {signer} issued for CertificateSigningRequest {name} is refused: {refusal}; {again}"
                ),
            ),
        }
    }

    /// The request this state is about; `None` once issued.
    pub(crate) fn request_name(&self) -> Option<&str> {
        match self {
            Self::Issued => None,
            Self::Pending { name }
            | Self::Signing { name }
            | Self::Denied { name, .. }
            | Self::Failed { name, .. }
            | Self::Refused { name, .. } => Some(name),
        }
    }

    /// Whether the state is one only a person can move on from.
    pub(crate) fn is_failure(&self) -> bool {
        matches!(self, Self::Denied { .. } | Self::Failed { .. } | Self::Refused { .. })
    }
}

/// The key of the request in flight, as apply stores it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RequestKey {
    pub key: String,
    pub digest: String,
}

impl std::fmt::Debug for RequestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestKey").field("key", &"<redacted>").field("digest", &self.digest).finish()
    }
}

/// What apply writes, and where the request stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CsrPlan {
    pub signer: String,
    /// The certificate and key to serve (kept or newly signed); `None` while nothing usable
    /// is signed.
    pub serving: Option<CertifiedPem>,
    /// The key of the request in flight, to store; `None` when nothing is requested.
    pub request_key: Option<RequestKey>,
    /// The request to create (it does not exist yet).
    pub create: Option<CertificateSigningRequest>,
    /// Requests to delete once the Secrets are written: used or abandoned ones.
    pub delete: Vec<String>,
    pub state: State,
    /// Why a certificate was stored during this reconcile.
    pub issued: Option<&'static str>,
}

fn text<'a>(secret: Option<&'a Secret>, key: &str) -> Option<&'a str> {
    let bytes = &secret?.data.as_ref()?.get(key)?.0;
    std::str::from_utf8(bytes).ok().filter(|s| !s.trim().is_empty())
}

/// The digest of what a request asks for: a change of any of it needs a new request (a CSR's
/// spec is immutable).
fn request_digest(settings: &CsrTls, expiration: Option<i32>, sans: &SubjectAltNames) -> String {
    let what = format!("{}\n{expiration:?}\n{}", settings.signer_name, sans.all().join(","));
    hex::encode(Sha256::digest(what.as_bytes()))
}

/// The request's condition of `type_`, as reason and message.
fn condition_of(csr: &CertificateSigningRequest, type_: &str) -> Option<String> {
    let condition =
        csr.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_ && c.status == "True")?;
    let reason = condition.reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("no reason given");
    Some(match condition.message.as_deref().filter(|m| !m.is_empty()) {
        Some(message) => format!("{reason}: {message}"),
        None => reason.to_string(),
    })
}

/// Decides this reconcile's part of mode CertificateSigningRequest; `now` is Unix seconds.
/// Pure but for the key it makes when a new request is needed.
pub(crate) fn resolve(
    names: &Names,
    namespace: &str,
    settings: &CsrTls,
    stored: &Stored,
    sans: &SubjectAltNames,
    now: i64,
) -> Result<CsrPlan, Error> {
    let signer = settings.signer_name.clone();
    let current = stored_serving(stored);
    // Usable: its own key, within validity; complete: it also covers today's names.
    let usable =
        current.as_ref().filter(|c| request::verify(&c.cert, &c.key, &SubjectAltNames::default(), now).is_ok());
    let complete: Option<CertInfo> =
        usable.filter(|_| signed_by(stored, &signer)).and_then(|c| request::verify(&c.cert, &c.key, sans, now).ok());
    let stored_name = text(stored.request_key.as_ref(), REQUEST_KEY).and_then(|k| request_name(namespace, names, k));
    if complete.as_ref().is_some_and(|info| now < info.renewal_at()) {
        // Nothing to request: a request left from before (used, or abandoned) goes.
        let delete = stored_name.into_iter().collect();
        let serving = usable.cloned();
        return Ok(CsrPlan {
            signer,
            serving,
            request_key: None,
            create: None,
            delete,
            state: State::Issued,
            issued: None,
        });
    }
    let expiration = settings.expiration_seconds.filter(|_| stored.supports_expiration);
    let digest = request_digest(settings, expiration, sans);
    let InFlight { key, name, existing, delete } = in_flight(names, namespace, stored, &digest, stored_name)?;
    let mut plan = CsrPlan {
        signer,
        serving: usable.cloned(),
        request_key: Some(RequestKey { key: key.clone(), digest }),
        create: None,
        delete,
        state: State::Pending { name: name.clone() },
        issued: None,
    };
    match existing {
        Some(csr) => follow(&mut plan, csr, name, key, sans, now, current.is_some()),
        None => {
            let pem = request::signing_request(&key, sans)?;
            plan.create = Some(render(&name, namespace, names, settings, expiration, &pem));
        }
    }
    Ok(plan)
}

/// The serving certificate and key stored, when both are there.
fn stored_serving(stored: &Stored) -> Option<CertifiedPem> {
    let serving = stored.serving.as_ref();
    let (cert, key) = (text(serving, "tls.crt")?, text(serving, "tls.key")?);
    Some(CertifiedPem { cert: cert.to_string(), key: key.to_string() })
}

/// Whether the stored serving certificate was issued by `signer`.
fn signed_by(stored: &Stored, signer: &str) -> bool {
    let annotations = stored.serving.as_ref().and_then(|s| s.metadata.annotations.as_ref());
    annotations.and_then(|a| a.get(SIGNER_ANNOTATION)).is_some_and(|s| s == signer)
}

/// The request to follow: the stored one when it asks for what is wanted now, else a new key
/// and name (the abandoned request to delete).
struct InFlight<'s> {
    key: String,
    name: String,
    existing: Option<&'s CertificateSigningRequest>,
    delete: Vec<String>,
}

fn in_flight<'s>(
    names: &Names,
    namespace: &str,
    stored: &'s Stored,
    digest: &str,
    stored_name: Option<String>,
) -> Result<InFlight<'s>, Error> {
    let same_ask = text(stored.request_key.as_ref(), REQUEST_DIGEST_KEY) == Some(digest);
    let stored_key = text(stored.request_key.as_ref(), REQUEST_KEY).filter(|_| same_ask);
    if let Some((key, name)) = stored_key.zip(stored_name.clone()) {
        let existing = stored.request.as_ref().filter(|r| r.metadata.name.as_deref() == Some(name.as_str()));
        return Ok(InFlight { key: key.to_string(), name, existing, delete: Vec::new() });
    }
    // What is asked changed (or nothing was asked): a new key, a new request, and the
    // abandoned one goes.
    let key = request::new_key()?;
    let name = request_name(namespace, names, &key).unwrap_or_default();
    Ok(InFlight { key, name, existing: None, delete: stored_name.into_iter().collect() })
}

/// Where the request `name` stands: denied, failed, signed (and then verified), approved.
fn follow(
    plan: &mut CsrPlan,
    csr: &CertificateSigningRequest,
    name: String,
    key: String,
    sans: &SubjectAltNames,
    now: i64,
    renewing: bool,
) {
    if let Some(detail) = condition_of(csr, "Denied") {
        plan.state = State::Denied { name, detail };
    } else if let Some(detail) = condition_of(csr, "Failed") {
        plan.state = State::Failed { name, detail };
    } else if let Some(cert) = csr.status.as_ref().and_then(|s| s.certificate.as_ref()).filter(|c| !c.0.is_empty()) {
        let cert = String::from_utf8_lossy(&cert.0).into_owned();
        match request::verify(&cert, &key, sans, now) {
            Ok(_) => {
                plan.issued = Some(if renewing {
                    "the signer renewed the certificate"
                } else {
                    "the signer signed the certificate"
                });
                plan.serving = Some(CertifiedPem { cert, key });
                plan.request_key = None;
                plan.delete.push(name);
                plan.state = State::Issued;
            }
            Err(refusal) => plan.state = State::Refused { name, refusal },
        }
    } else if condition_of(csr, "Approved").is_some() {
        plan.state = State::Signing { name };
    }
}

/// The request: the names to cover, `server auth` (with the usages a TLS server key needs),
/// for `signer`; `expirationSeconds` only where the apiserver knows it.
pub(crate) fn render(
    name: &str,
    namespace: &str,
    names: &Names,
    settings: &CsrTls,
    expiration: Option<i32>,
    request_pem: &str,
) -> CertificateSigningRequest {
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (NAMESPACE_LABEL.to_string(), namespace.to_string()),
        (IRONIC_LABEL.to_string(), bounded(&names.ironic, crate::kit::names::MAX_LABEL_VALUE)),
    ]);
    CertificateSigningRequest {
        metadata: ObjectMeta { name: Some(name.to_string()), labels: Some(labels), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.as_bytes().to_vec()),
            signer_name: settings.signer_name.clone(),
            expiration_seconds: expiration,
            usages: Some(["digital signature", "key encipherment", "server auth"].map(String::from).to_vec()),
            ..Default::default()
        },
        status: None,
    }
}

#[cfg(test)]
#[path = "csr_tests.rs"]
mod tests;
