//! `spec.tls`: ironic-standalone-operator's CA references and our modes.

use crate::ironic::IronicSpec;
use crate::ironic::tls::{
    AutoTls, BUILT_IN_SIGNER_MESSAGE, CertManagerTls, CsrTls, MIN_EXPIRATION_SECONDS, ReferenceKind,
    SIGNER_NAME_MAX_LENGTH, Tls, TlsMode,
};
use crate::validation::is_dns1123_subdomain;
use crate::validation::{Errors, is_set, parse_go_duration};
use std::time::Duration;

pub(super) fn validate_tls(errors: &mut Errors, spec: &IronicSpec) {
    let Some(tls) = &spec.tls else {
        return;
    };
    validate_ca_references(errors, tls);
    validate_mode(errors, tls);
}

fn validate_ca_references(errors: &mut Errors, tls: &Tls) {
    // The deprecated names are of a Secret (bmcCAName) and of a ConfigMap (trustedCAName), as
    // ironic-standalone-operator reads them; with the new form beside them, both must agree.
    let references = [
        ("bmcCA", "bmcCAName", tls.bmc_ca.as_ref().map(|r| (&r.name, r.kind)), &tls.bmc_ca_name, ReferenceKind::Secret),
        (
            "trustedCA",
            "trustedCAName",
            tls.trusted_ca.as_ref().map(|r| (&r.name, r.kind)),
            &tls.trusted_ca_name,
            ReferenceKind::ConfigMap,
        ),
    ];
    for (field, deprecated, reference, deprecated_name, deprecated_kind) in references {
        let Some((name, kind)) = reference else {
            continue;
        };
        if !is_set(name) {
            errors.push(format!("spec.tls.{field}.name"), "is required");
            continue;
        }
        if let Some(old_name) = deprecated_name.as_deref()
            && (Some(old_name) != name.as_deref() || kind.unwrap_or(ReferenceKind::ConfigMap) != deprecated_kind)
        {
            let object = match deprecated_kind {
                ReferenceKind::Secret => "Secret",
                ReferenceKind::ConfigMap => "ConfigMap",
            };
            errors.push(
                format!("spec.tls.{deprecated}"),
                format!("must name the same {object} as {field} when both are set; use {field} only"),
            );
        }
    }
}

fn validate_mode(errors: &mut Errors, tls: &Tls) {
    let has_secret = is_set(&tls.certificate_name);
    if tls.disabled == Some(true) {
        // The opt-out is explicit and alone: a certificate beside it is a contradiction.
        for (field, set) in [
            ("mode", tls.mode.is_some()),
            ("certificateName", has_secret),
            ("certManager", tls.cert_manager.is_some()),
            ("auto", tls.auto.is_some()),
            ("certificateSigningRequest", tls.certificate_signing_request.is_some()),
        ] {
            if set {
                errors.push(format!("spec.tls.{field}"), "cannot be used with disabled: true");
            }
        }
        return;
    }
    let mode = tls.effective_mode();
    match mode {
        Some(TlsMode::Secret) if !has_secret => {
            errors.push("spec.tls.certificateName", "is required when mode is Secret")
        }
        Some(TlsMode::Auto | TlsMode::CertManager | TlsMode::CertificateSigningRequest) if has_secret => {
            errors.push("spec.tls.certificateName", "can only be used with mode Secret")
        }
        _ => {}
    }
    if tls.cert_manager.is_some() && mode != Some(TlsMode::CertManager) {
        errors.push("spec.tls.certManager", "can only be used with mode CertManager");
    }
    if tls.certificate_signing_request.is_some() && mode != Some(TlsMode::CertificateSigningRequest) {
        errors.push("spec.tls.certificateSigningRequest", "can only be used with mode CertificateSigningRequest");
    }
    if mode == Some(TlsMode::CertificateSigningRequest) {
        match &tls.certificate_signing_request {
            None => {
                errors.push("spec.tls.certificateSigningRequest", "is required when mode is CertificateSigningRequest")
            }
            Some(csr) => validate_csr(errors, csr),
        }
    }
    if tls.auto.is_some() && mode != Some(TlsMode::Auto) {
        errors.push("spec.tls.auto", "can only be used with mode Auto");
    }
    if mode == Some(TlsMode::CertManager) {
        match &tls.cert_manager {
            None => errors.push("spec.tls.certManager", "is required when mode is CertManager"),
            Some(cm) => validate_cert_manager(errors, cm),
        }
    }
    if let Some(auto) = &tls.auto {
        validate_auto(errors, auto);
    }
}

/// cert-manager's issuer and the certificate's lifetimes (duration at least 1h, renewBefore
/// at least 5m and shorter).
fn validate_cert_manager(errors: &mut Errors, cm: &CertManagerTls) {
    if cm.issuer_ref.name.trim().is_empty() {
        errors.push("spec.tls.certManager.issuerRef.name", "is required");
    }
    let duration = check_duration(
        errors,
        "spec.tls.certManager.duration",
        cm.duration.as_deref(),
        Duration::from_secs(3600),
        "1h",
    );
    let renew = check_duration(
        errors,
        "spec.tls.certManager.renewBefore",
        cm.renew_before.as_deref(),
        Duration::from_secs(300),
        "5m",
    );
    if let (Some(duration), Some(renew)) = (duration, renew)
        && renew >= duration
    {
        errors.push("spec.tls.certManager.renewBefore", "must be shorter than duration");
    }
}

/// The operator's CA and certificate lifetimes.
fn validate_auto(errors: &mut Errors, auto: &AutoTls) {
    let (ca, cert) = (auto.ca_validity_days(), auto.certificate_validity_days());
    if ca < 1 {
        errors.push("spec.tls.auto.caValidityDays", "must be at least 1");
    }
    if cert < 1 {
        errors.push("spec.tls.auto.certificateValidityDays", "must be at least 1");
    } else if cert > ca {
        errors.push("spec.tls.auto.certificateValidityDays", "cannot exceed caValidityDays");
    }
}

/// A signer name the way Kubernetes checks it (`<DNS subdomain>/<path>`), and not one of the
/// `kubernetes.io` signers, which do not issue serving certificates for arbitrary names.
fn validate_csr(errors: &mut Errors, csr: &CsrTls) {
    let path = "spec.tls.certificateSigningRequest.signerName";
    if let Some(problem) = signer_name_problem(&csr.signer_name) {
        errors.push(path, problem);
    }
    if let Some(seconds) = csr.expiration_seconds
        && seconds < MIN_EXPIRATION_SECONDS
    {
        errors.push(
            "spec.tls.certificateSigningRequest.expirationSeconds",
            format!("must be at least {MIN_EXPIRATION_SECONDS}"),
        );
    }
    if let Some(ca) = &csr.signer_ca
        && !is_set(&ca.name)
    {
        errors.push("spec.tls.certificateSigningRequest.signerCA.name", "is required");
    }
}

/// What is wrong with a signer name, if anything.
fn signer_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("is required".into());
    }
    let format = "must be a signer name of the form example.com/signer-name";
    let Some((domain, path)) = name.split_once('/') else {
        return Some(format.into());
    };
    let path_ok = !path.is_empty()
        && path.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && path.starts_with(|c: char| c.is_ascii_alphanumeric())
        && path.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !is_dns1123_subdomain(domain) || !path_ok || name.len() > SIGNER_NAME_MAX_LENGTH {
        return Some(format.into());
    }
    if domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") {
        return Some(BUILT_IN_SIGNER_MESSAGE.into());
    }
    None
}

fn check_duration(
    errors: &mut Errors,
    path: &str,
    value: Option<&str>,
    minimum: Duration,
    minimum_text: &str,
) -> Option<Duration> {
    let value = value?;
    match parse_go_duration(value) {
        Ok(d) if d < minimum => {
            errors.push(path, format!("must be at least {minimum_text}"));
            None
        }
        Ok(d) => Some(d),
        Err(e) => {
            errors.push(path, e.to_string());
            None
        }
    }
}
