//! TLS for the API and the image server, in four modes:
//! - `Secret`: the user's Secret (`tls.certificateName`);
//! - `Auto`: a CA and serving certificate the operator makes and renews, the CA with an
//!   overlap ([`auto`]);
//! - `CertManager`: a cert-manager Certificate ([`cert_manager`]); the operator waits for the
//!   Secret cert-manager writes;
//! - `CertificateSigningRequest`: a key the operator makes and a Kubernetes CSR the cluster's
//!   own signer signs once an administrator approved it ([`csr`]).
//!
//! Whatever the mode, the pods mount one Secret with `tls.crt` and `tls.key` (and `ca.crt`
//! when known). The one pod of a Deployment reloads a new certificate in place; a DaemonSet's
//! pods roll for it ([`reloaded_in_place`]).

pub(crate) mod auto;
pub(crate) mod cert_manager;
pub(crate) mod csr;
pub(crate) mod presented;
pub(crate) mod sans;

use super::linked::{Linked, Source, SourceKind, fields};
use super::names::Names;
use crate::kit::names::controlled_by;
use crds::ironic::status::TlsStatus;
use crds::ironic::{IronicSpec, TlsMode};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub(crate) use crate::pki::{CA_CERT_KEY, CertifiedPem, SubjectAltNames};
pub(crate) use cert_manager::CertificateRequest;

/// Why TLS could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("Secret {name} exists but is not managed by this Ironic; delete it or choose another TLS mode")]
    Conflict { name: String },
    #[error("cannot make the Auto TLS certificates")]
    Generate(#[from] crate::pki::certificate::Error),
    #[error("cannot prepare the CertificateSigningRequest")]
    Request(#[from] csr::Error),
}

/// Whether the pods serve a new certificate without restarting, so that its content stays out
/// of the pod template's content hash. The one pod of a Deployment does: its httpd terminates
/// TLS and reloads a renewed certificate gracefully (as metal3's ironic-image does), where a
/// roll would leave the API without a pod (`Recreate`) and lose an in-pod SQLite database.
/// A DaemonSet's Ironic serves JSON RPC over TLS itself and reads its certificate once, at
/// start: its pods roll, one node at a time.
pub(crate) fn reloaded_in_place(high_availability: bool) -> bool {
    !high_availability
}

/// The serving certificate the pods mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TlsMaterial {
    /// Secret with `tls.crt`, `tls.key` and maybe `ca.crt`.
    pub secret_name: String,
    /// Its content.
    pub source: Source,
    /// The CA that signs it, when known; published and given to Ironic for JSON RPC.
    pub ca_pem: Option<String>,
    /// Expiry of the serving certificate, Unix seconds.
    pub not_after: Option<i64>,
    /// When it is renewed, Unix seconds (Auto; cert-manager's comes from the Certificate).
    pub renewal_at: Option<i64>,
}

/// The Auto CA, the serving certificate it signs, and the CAs of a renewal under way, to store.
pub(crate) use crate::pki::rotation::Bundle as AutoSecrets;

/// TLS as resolved for one reconcile.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TlsPlan {
    /// The mode; `None` is plain HTTP.
    pub mode: Option<TlsMode>,
    /// The certificate to mount; `None` without TLS or while waiting for cert-manager.
    pub material: Option<TlsMaterial>,
    /// Why the certificate is not there yet.
    pub pending: Option<String>,
    /// Why it will not come without a person: reason and message.
    pub failed: Option<(&'static str, String)>,
    /// Auto: the CA and serving certificate to store (always rendered, new or not).
    pub auto: Option<AutoSecrets>,
    /// CertManager: the Certificate to apply.
    pub certificate: Option<CertificateRequest>,
    /// CertificateSigningRequest: the request, the key and the certificate to write.
    pub csr: Option<csr::CsrPlan>,
    /// Auto, CertificateSigningRequest: why a certificate was stored during this reconcile.
    pub issued: Option<&'static str>,
    /// Auto: the step of the CA's renewal taken during this reconcile.
    pub renewal_step: Option<&'static str>,
    /// Auto: a step of the CA's renewal waits for the one pod to reload the stored certificate.
    pub awaits_reload: bool,
}

impl TlsPlan {
    /// status.tls.
    pub(crate) fn status(&self, names: &Names) -> Option<TlsStatus> {
        let mode = self.mode?;
        let time = |secs: Option<i64>| secs.and_then(|s| k8s_openapi::jiff::Timestamp::from_second(s).ok()).map(Time);
        Some(TlsStatus {
            ca_secret_name: (mode == TlsMode::Auto).then(|| names.auto_ca()),
            certificate_name: self.certificate.as_ref().map(|c| c.name.clone()),
            mode: Some(mode),
            not_after: time(self.material.as_ref().and_then(|m| m.not_after)),
            renewal_time: time(self.material.as_ref().and_then(|m| m.renewal_at)),
            serving_secret_name: match mode {
                TlsMode::Secret => self.material.as_ref().map(|m| m.secret_name.clone()),
                TlsMode::Auto => Some(names.auto_serving()),
                TlsMode::CertManager => self.certificate.as_ref().map(|c| c.secret_name.clone()),
                TlsMode::CertificateSigningRequest => Some(names.csr_serving()),
            },
            certificate_signing_request_name: self
                .csr
                .as_ref()
                .and_then(|c| c.state.request_name())
                .map(str::to_string),
        })
    }
}

/// The material in a Secret holding a serving certificate.
fn material(source: Source, with_renewal: bool) -> TlsMaterial {
    let info = source.text("tls.crt").and_then(crate::pki::inspect);
    TlsMaterial {
        secret_name: source.name.clone(),
        ca_pem: source.text(CA_CERT_KEY).filter(|c| !c.trim().is_empty()).map(str::to_string),
        not_after: info.as_ref().map(|i| i.not_after),
        renewal_at: info.filter(|_| with_renewal).map(|i| i.renewal_at()),
        source,
    }
}

/// The Secret content of an Auto serving certificate.
pub(crate) fn auto_serving_source(name: &str, secrets: &AutoSecrets) -> Source {
    auto::serving_source(name, secrets)
}

/// The Secret content of a serving certificate from the cluster's signer, with the signer's CA
/// when the spec names it.
pub(crate) fn csr_serving_source(name: &str, serving: &CertifiedPem, ca: Option<&str>) -> Source {
    let data = [("tls.crt", Some(&serving.cert[..])), ("tls.key", Some(&serving.key[..])), (CA_CERT_KEY, ca)]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?.as_bytes().to_vec())))
        .collect();
    Source { kind: SourceKind::Secret, name: name.to_string(), data }
}

/// The Secrets of TLS as they were read: the Auto CA and serving certificate (mode Auto), the
/// Secret cert-manager writes (mode CertManager), the serving Secret, the request's key and
/// the request (mode CertificateSigningRequest).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stored {
    pub auto_ca: Option<Secret>,
    pub auto_serving: Option<Secret>,
    /// Mode Auto: the workload as read, to tell when a step of the CA's renewal reached the pods.
    pub rollout: Option<auto::Rollout>,
    pub cert_manager: Option<Secret>,
    pub csr: csr::Stored,
}

/// The Secrets to read for `spec`, by name: what [`Stored`] holds.
pub(crate) fn to_read(spec: &IronicSpec, names: &Names) -> (Option<[String; 2]>, Option<String>) {
    let tls = spec.tls.clone().unwrap_or_default();
    match tls.effective_mode() {
        Some(TlsMode::Auto) => (Some([names.auto_ca(), names.auto_serving()]), None),
        Some(TlsMode::CertManager) if tls.cert_manager.is_some() => (None, Some(names.cert_manager_certificate())),
        Some(TlsMode::CertificateSigningRequest) => (None, None),
        _ => (None, None),
    }
}

/// What mode Auto needs beside the stored Secrets: how the CA is renewed, and everything else
/// the pods mount (to tell whether they run what the Secrets hold).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AutoContext<'a> {
    pub renewal: auto::Renewal,
    pub others: &'a [&'a Source],
}

/// Resolves the TLS mode of `spec` of the Ironic in `namespace`. Pure but for the Auto
/// certificates it may make; `now` is Unix seconds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve(
    names: &Names,
    namespace: &str,
    owner_uid: &str,
    spec: &IronicSpec,
    linked: &Linked,
    stored: &Stored,
    sans: &SubjectAltNames,
    context: AutoContext<'_>,
    now: i64,
) -> Result<TlsPlan, Error> {
    let tls = spec.tls.clone().unwrap_or_default();
    let Some(mode) = tls.effective_mode() else {
        return Ok(TlsPlan::default());
    };
    let mut plan = TlsPlan { mode: Some(mode), ..Default::default() };
    match mode {
        TlsMode::Secret => {
            plan.material = linked.get(fields::TLS_CERTIFICATE).cloned().map(|s| material(s, false));
        }
        TlsMode::Auto => auto_plan(&mut plan, names, namespace, owner_uid, &tls, stored, sans, context, now)?,
        TlsMode::CertManager => {
            let Some(settings) = &tls.cert_manager else {
                plan.pending = Some("spec.tls.certManager is required in mode CertManager".to_string());
                return Ok(plan);
            };
            let request = CertificateRequest::new(names.cert_manager_certificate(), settings, sans);
            match stored.cert_manager.as_ref().map(Source::from_secret).filter(|s| s.has("tls.crt") && s.has("tls.key"))
            {
                Some(source) => plan.material = Some(material(source, false)),
                None => {
                    plan.pending = Some(format!(
                        "waiting for cert-manager to issue Secret {} for Certificate {} (issuer {} {})",
                        request.secret_name, request.name, request.issuer_kind, request.issuer_name
                    ))
                }
            }
            plan.certificate = Some(request);
        }
        TlsMode::CertificateSigningRequest => {
            let Some(settings) = &tls.certificate_signing_request else {
                plan.pending = Some(
                    "spec.tls.certificateSigningRequest is required in mode CertificateSigningRequest".to_string(),
                );
                return Ok(plan);
            };
            // Only this Ironic's Secrets: a Secret of that name someone else made is a conflict.
            owned(stored.csr.serving.as_ref(), &names.csr_serving(), owner_uid)?;
            owned(stored.csr.request_key.as_ref(), &names.csr_request_key(), owner_uid)?;
            let decided = csr::resolve(names, namespace, settings, &stored.csr, sans, now)?;
            let ca = linked.get(fields::SIGNER_CA).and_then(|source| {
                let key = settings.signer_ca.as_ref().and_then(|r| r.key.clone());
                source.text(key.as_deref().or(source.first_key())?).map(str::to_string)
            });
            let (_, reason, message) = decided.state.condition(&settings.signer_name);
            match &decided.serving {
                Some(serving) => {
                    let source = csr_serving_source(&names.csr_serving(), serving, ca.as_deref());
                    plan.material = Some(material(source, true));
                }
                None if decided.state.is_failure() => plan.failed = Some((reason, message)),
                None => plan.pending = Some(message),
            }
            plan.issued = decided.issued;
            plan.csr = Some(decided);
        }
    }
    Ok(plan)
}

/// Mode Auto: the stored CA moved along its renewal ([`auto`]), and the serving certificate.
#[allow(clippy::too_many_arguments)]
fn auto_plan(
    plan: &mut TlsPlan,
    names: &Names,
    namespace: &str,
    owner_uid: &str,
    tls: &crds::ironic::Tls,
    stored: &Stored,
    sans: &SubjectAltNames,
    context: AutoContext<'_>,
    now: i64,
) -> Result<(), Error> {
    let settings = tls.auto.clone().unwrap_or_default();
    let ca = owned(stored.auto_ca.as_ref(), &names.auto_ca(), owner_uid)?;
    let serving = owned(stored.auto_serving.as_ref(), &names.auto_serving(), owner_uid)?;
    let served = auto::served(stored.rollout.as_ref(), serving.as_ref(), context.others);
    let issuer = auto::Auto {
        common_name: format!("{namespace}/{} Ironic CA", names.ironic),
        ca_days: i64::from(settings.ca_validity_days()),
        cert_days: i64::from(settings.certificate_validity_days()),
        sans,
    };
    let current = auto::stored(ca.as_ref(), serving.as_ref());
    let decided = auto::decide(current.as_ref(), &issuer, context.renewal, served, crate::pki::rotation::at(now))?;
    plan.issued = decided.issued;
    plan.renewal_step = decided.step;
    plan.awaits_reload = auto::awaits_reload(stored.rollout.as_ref(), &decided.bundle, served);
    let mut material = material(auto_serving_source(&names.auto_serving(), &decided.bundle), false);
    material.renewal_at = auto::renewal_at(&decided.bundle, context.renewal, now);
    plan.material = Some(material);
    plan.auto = Some(decided.bundle);
    Ok(())
}

/// A Secret the operator manages, or `None`; someone else's Secret of that name is a conflict.
fn owned(secret: Option<&Secret>, name: &str, owner_uid: &str) -> Result<Option<Source>, Error> {
    match secret {
        Some(secret) if !controlled_by(&secret.metadata, owner_uid) => Err(Error::Conflict { name: name.to_string() }),
        Some(secret) => Ok(Some(Source::from_secret(secret))),
        None => Ok(None),
    }
}
