//! The apply step: every supporting object through the ledger (the Secrets, the CA bundle,
//! the cert-manager Certificate, the Service, the Ingress, the ServiceMonitor where its API is
//! installed), each kind pruned as soon as all of it that this reconcile wants is written, the CertificateSigningRequests created and deleted, and the Events of what was made. Pruning replaces
//! deleting by name: generated credentials go once the user names their own, Auto TLS Secrets
//! once another mode is chosen, the Ingress once the spec drops it. The ledger's scope is the
//! Ironic's own component, so nothing of its database is ever selected. The workload and the
//! Jobs are the sequence's.

use super::build::{Desired, Resolved};
use super::monitor::{self, Monitoring};
use super::status::reasons;
use super::tls::cert_manager;
use super::tls::csr::CsrPlan;
use crate::kit::discovery::Discovery;
use crate::kit::{KubeError, Ledger, Notices, Progress, Verb};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::api::{Api, DeleteParams, PostParams};

/// Why the supporting objects could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

impl Error {
    /// What only a person can fix: cert-manager not installed, a missing permission, an
    /// object the apiserver refused; `None` for failures worth retrying.
    pub(crate) fn failure(&self) -> Option<Progress> {
        let Self::Kube(err) = self;
        if err.kind == "Certificate" && err.verb == Verb::Apply && err.is_not_found() {
            return Some(Progress::failed(
                reasons::CERT_MANAGER_MISSING,
                "cert-manager's Certificate API (cert-manager.io/v1) is not installed; install cert-manager or choose another TLS mode",
            ));
        }
        err.failure()
    }
}

/// What applying taught the status.
#[derive(Clone, Debug, Default)]
pub(crate) struct Applied {
    /// When cert-manager renews the Certificate, as it reports.
    pub certificate_renewal: Option<Time>,
    /// What became of the ServiceMonitor.
    pub monitoring: Monitoring,
}

/// Applies the supporting objects in `ledger` (the Ironic's scope) and prunes each kind.
pub(crate) async fn run(
    ledger: &Ledger,
    resolved: &Resolved,
    desired: &Desired,
    discovery: &Discovery,
    notices: &mut Notices,
) -> Result<Applied, Error> {
    for secret in &desired.secrets {
        ledger.apply(secret.clone()).await?;
    }
    if let Some(plan) = &resolved.tls.csr {
        // After the Secrets: the key is stored before its request exists, and a signed
        // certificate before its request goes, so a crash in between loses neither. Before the
        // prune: the key of a used request goes only once the request is gone.
        signing_requests(ledger, plan).await?;
    }
    ledger.prune::<Secret>().await?;
    for config_map in &desired.config_maps {
        ledger.apply(config_map.clone()).await?;
    }
    ledger.prune::<ConfigMap>().await?;
    let certificates = cert_manager::api_resource();
    let certificate_renewal = match &desired.certificate {
        Some(certificate) => {
            let stored = ledger.apply_dynamic(&certificates, certificate.clone()).await?;
            certificate_time(&stored, "renewalTime")
        }
        None => None,
    };
    ledger.prune_dynamic(&certificates).await?;
    ledger.apply(desired.service.clone()).await?;
    ledger.prune::<Service>().await?;
    if let Some(ingress) = &desired.ingress {
        ledger.apply(ingress.clone()).await?;
    }
    ledger.prune::<Ingress>().await?;
    let monitoring =
        monitor::run(ledger, discovery, desired.service_monitor.as_ref(), &resolved.names.service()).await?;

    if resolved.credentials.newly_generated {
        let note = format!("generated API credentials in Secret {}", resolved.credentials.secret_name);
        notices.normal("CredentialsGenerated", note);
    }
    if let Some(reason) = resolved.tls.issued {
        let secret = match resolved.tls.csr {
            Some(_) => resolved.names.csr_serving(),
            None => resolved.names.auto_serving(),
        };
        notices.normal("CertificateIssued", format!("issued a serving certificate in Secret {secret}: {reason}"));
    }
    if let Some(step) = resolved.tls.renewal_step {
        notices.normal("CARenewal", format!("renewing the CA in Secret {}: {step}", resolved.names.auto_ca()));
    }
    if let Some(request) = resolved.tls.csr.as_ref().and_then(|p| p.create.as_ref()) {
        let name = request.metadata.name.clone().unwrap_or_default();
        let note = format!(
            "requested a serving certificate from signer {}: run `kubectl certificate approve {name}`",
            request.spec.signer_name
        );
        notices.normal("CertificateRequested", note);
    }
    Ok(Applied { certificate_renewal, monitoring })
}

/// Creates the request that does not exist yet and deletes the used and abandoned ones. CSRs
/// are cluster-scoped: no ledger (it stamps a namespace and an owner reference), and no owner
/// reference (a namespaced owner cannot own them); they are found by name.
async fn signing_requests(ledger: &Ledger, plan: &CsrPlan) -> Result<(), Error> {
    let api: Api<CertificateSigningRequest> = Api::all(ledger.client().clone());
    if let Some(request) = &plan.create {
        let name = request.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), request).await {
            Ok(_) => {}
            // Made by a reconcile whose read came before it: the same key, the same request.
            Err(err) if crate::kit::error::code(&err) == Some(409) => {}
            Err(err) => return Err(KubeError::new(Verb::Create, "CertificateSigningRequest", name, err).into()),
        }
    }
    for name in &plan.delete {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(err) if crate::kit::error::code(&err) == Some(404) => {}
            Err(err) => return Err(KubeError::new(Verb::Delete, "CertificateSigningRequest", name.clone(), err).into()),
        }
    }
    Ok(())
}

/// A time from a Certificate's status.
fn certificate_time(certificate: &DynamicObject, field: &str) -> Option<Time> {
    certificate.data.get("status")?.get(field)?.as_str()?.parse::<Timestamp>().ok().map(Time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::error::{APPLY_REJECTED, FORBIDDEN, api_error};

    fn error(kind: &'static str, verb: Verb, code: u16) -> Error {
        Error::Kube(KubeError::new(verb, kind, "ironic-tls", api_error(code, "no")))
    }

    #[test]
    fn a_certificate_api_that_does_not_exist_means_cert_manager_is_missing() {
        let Some(Progress::Failed { reason, .. }) = error("Certificate", Verb::Apply, 404).failure() else {
            panic!("a failure")
        };
        assert_eq!(reason, reasons::CERT_MANAGER_MISSING);
    }

    #[test]
    fn other_refusals_and_missing_permissions_are_for_a_person_and_conflicts_are_retried() {
        let reason = |err: Error| err.failure().and_then(|p| p.reason_and_message().map(|(r, _)| r.to_string()));
        assert_eq!(reason(error("Ingress", Verb::Apply, 404)).as_deref(), Some(APPLY_REJECTED));
        assert_eq!(reason(error("Secret", Verb::Delete, 403)).as_deref(), Some(FORBIDDEN));
        assert_eq!(reason(error("Secret", Verb::Apply, 409)), None);
    }

    #[test]
    fn the_renewal_time_is_read_from_the_certificates_status() {
        let mut certificate = DynamicObject::new("ironic-tls", &cert_manager::api_resource());
        certificate.data = serde_json::json!({"status": {"renewalTime": "2030-01-02T03:04:05Z"}});
        let time = certificate_time(&certificate, "renewalTime").expect("a time");
        assert_eq!(time.0.as_second(), 1893553445);
        assert_eq!(certificate_time(&certificate, "notAfter"), None);
    }
}
