//! The Secrets and ConfigMaps the operator owns: generated credentials, the htpasswd, the
//! Auto TLS CA and serving certificate, the certificate from a CertificateSigningRequest with
//! the key of the request in flight, and the published CA bundle.

use super::meta::meta;
use crate::ironic::credentials::HTPASSWD_KEY;
use crate::ironic::names;
use crate::ironic::resolve::Resolved;
use crate::ironic::tls::csr::{REQUEST_DIGEST_KEY, REQUEST_KEY, SIGNER_ANNOTATION};
use crate::ironic::tls::{CA_CERT_KEY, auto_serving_source};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use std::collections::BTreeMap;

fn secret(resolved: &Resolved, name: String, type_: &str, data: &[(&str, &[u8])]) -> Secret {
    Secret {
        metadata: meta(resolved, name, names::owner_labels(&resolved.names.ironic)),
        type_: Some(type_.to_string()),
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.to_vec()))).collect()),
        ..Default::default()
    }
}

/// The generated API credentials, when `apiCredentialsName` is empty.
pub(crate) fn generated_credentials(resolved: &Resolved) -> Option<Secret> {
    let credentials = &resolved.credentials;
    credentials.generated.then(|| {
        secret(
            resolved,
            credentials.secret_name.clone(),
            "kubernetes.io/basic-auth",
            &[("username", credentials.username.as_bytes()), ("password", credentials.password.as_bytes())],
        )
    })
}

/// The htpasswd line, and nothing a guess could be checked against faster than bcrypt.
pub(crate) fn htpasswd(resolved: &Resolved) -> Secret {
    secret(resolved, resolved.names.htpasswd(), "Opaque", &[(HTPASSWD_KEY, resolved.credentials.htpasswd.as_bytes())])
}

/// The Auto CA (with its key, and those of a renewal under way) and the serving certificate
/// it signs.
pub(crate) fn auto_tls(resolved: &Resolved) -> Vec<Secret> {
    let Some(auto) = &resolved.tls.auto else {
        return Vec::new();
    };
    // The CA, and the next and the retired one of a renewal under way.
    let cas = crate::pki::rotation::ca_data(auto);
    let data: Vec<(&str, &[u8])> = cas.iter().map(|(k, v)| (*k, v.as_bytes())).collect();
    let ca = secret(resolved, resolved.names.auto_ca(), "Opaque", &data);
    let serving_source = auto_serving_source(&resolved.names.auto_serving(), auto);
    let data: Vec<(&str, &[u8])> = serving_source.data.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
    let serving = secret(resolved, resolved.names.auto_serving(), "kubernetes.io/tls", &data);
    vec![ca, serving]
}

/// Mode CertificateSigningRequest: the serving Secret once a certificate is signed (with the
/// signer that signed it, to tell when the spec names another), and the key of the request
/// in flight, kept apart so that a request under way never rolls the pods.
pub(crate) fn csr_tls(resolved: &Resolved) -> Vec<Secret> {
    let Some(plan) = &resolved.tls.csr else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(material) = &resolved.tls.material {
        let data: Vec<(&str, &[u8])> = material.source.data.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
        let mut serving = secret(resolved, resolved.names.csr_serving(), "kubernetes.io/tls", &data);
        serving.metadata.annotations = Some(BTreeMap::from([(SIGNER_ANNOTATION.to_string(), plan.signer.clone())]));
        out.push(serving);
    }
    if let Some(request) = &plan.request_key {
        out.push(secret(
            resolved,
            resolved.names.csr_request_key(),
            "Opaque",
            &[(REQUEST_KEY, request.key.as_bytes()), (REQUEST_DIGEST_KEY, request.digest.as_bytes())],
        ));
    }
    out
}

/// The CA bundle clients use to verify the API, when the CA is known. A ConfigMap: the CA is
/// public, and readers need no access to Secrets.
pub(crate) fn ca_bundle(resolved: &Resolved) -> Option<ConfigMap> {
    let ca = resolved.tls.material.as_ref()?.ca_pem.clone()?;
    Some(ConfigMap {
        metadata: meta(resolved, resolved.names.ca_bundle(), names::owner_labels(&resolved.names.ironic)),
        data: Some(BTreeMap::from([(CA_CERT_KEY.to_string(), ca)])),
        ..Default::default()
    })
}
