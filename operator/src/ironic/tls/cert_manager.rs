//! TLS mode CertManager: the `cert-manager.io/v1` Certificate the operator asks for.
//!
//! cert-manager reissues whenever the Certificate's names, issuer, usages or lifetime change,
//! so the request is fully deterministic: sorted names, explicit issuer kind and group (their
//! defaults moved between cert-manager releases) and an explicit private key rotation policy
//! (its default flipped in v1.18).

use crate::pki::SubjectAltNames;
use crds::ironic::{CertManagerTls, IssuerKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// cert-manager's Certificate API.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"), "certificates")
}

/// The Certificate to request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CertificateRequest {
    /// Name of the Certificate.
    pub name: String,
    /// Secret cert-manager writes (`tls.crt`, `tls.key`, `ca.crt`).
    pub secret_name: String,
    pub issuer_name: String,
    pub issuer_kind: &'static str,
    pub issuer_group: String,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
    pub duration: Option<String>,
    pub renew_before: Option<String>,
}

impl CertificateRequest {
    pub(crate) fn new(name: String, settings: &CertManagerTls, sans: &SubjectAltNames) -> Self {
        Self {
            secret_name: name.clone(),
            name,
            issuer_name: settings.issuer_ref.name.clone(),
            issuer_kind: match settings.issuer_ref.kind() {
                IssuerKind::Issuer => "Issuer",
                IssuerKind::ClusterIssuer => "ClusterIssuer",
            },
            issuer_group: settings.issuer_ref.group().to_string(),
            dns_names: sans.dns.clone(),
            ip_addresses: sans.ips.iter().map(ToString::to_string).collect(),
            duration: settings.duration.clone().filter(|d| !d.is_empty()),
            renew_before: settings.renew_before.clone().filter(|d| !d.is_empty()),
        }
    }
}

/// The Certificate object, owned by the Ironic.
pub(crate) fn render(
    request: &CertificateRequest,
    namespace: &str,
    owner: Option<OwnerReference>,
    labels: BTreeMap<String, String>,
) -> DynamicObject {
    let mut spec = json!({
        "secretName": request.secret_name,
        "issuerRef": {"name": request.issuer_name, "kind": request.issuer_kind, "group": request.issuer_group},
        "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
        "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        "secretTemplate": {"labels": labels},
    });
    let fields = [
        ("dnsNames", (!request.dns_names.is_empty()).then(|| json!(request.dns_names))),
        ("ipAddresses", (!request.ip_addresses.is_empty()).then(|| json!(request.ip_addresses))),
        ("duration", request.duration.as_ref().map(|d| json!(d))),
        ("renewBefore", request.renew_before.as_ref().map(|d| json!(d))),
    ];
    if let Value::Object(map) = &mut spec {
        for (key, value) in fields {
            if let Some(value) = value {
                map.insert(key.to_string(), value);
            }
        }
    }
    let mut object = DynamicObject::new(&request.name, &api_resource()).within(namespace).data(json!({ "spec": spec }));
    object.metadata = ObjectMeta {
        name: Some(request.name.clone()),
        namespace: Some(namespace.to_string()),
        labels: Some(labels),
        owner_references: owner.map(|o| vec![o]),
        ..Default::default()
    };
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::IssuerRef;

    #[test]
    fn the_request_is_explicit_and_sorted() {
        let settings = CertManagerTls {
            issuer_ref: IssuerRef { name: "metal3-ca".into(), kind: Some(IssuerKind::ClusterIssuer), group: None },
            duration: Some("2160h".into()),
            renew_before: None,
        };
        let sans = SubjectAltNames {
            dns: vec!["ironic".into(), "ironic.metal3.svc".into()],
            ips: vec!["192.0.2.2".parse().expect("ip")],
        };
        let request = CertificateRequest::new("ironic-tls".into(), &settings, &sans);
        let object = render(&request, "metal3", None, BTreeMap::new());
        let spec = &object.data["spec"];
        assert_eq!(
            spec["issuerRef"],
            json!({"name": "metal3-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
        );
        assert_eq!(spec["privateKey"]["rotationPolicy"], "Always");
        assert_eq!(spec["dnsNames"], json!(["ironic", "ironic.metal3.svc"]));
        assert_eq!(spec["ipAddresses"], json!(["192.0.2.2"]));
        assert_eq!(spec["duration"], "2160h");
        assert!(spec.get("renewBefore").is_none());
        assert_eq!(object.types.as_ref().map(|t| t.api_version.as_str()), Some("cert-manager.io/v1"));
    }
}
