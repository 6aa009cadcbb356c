//! The webhook's Service and ValidatingWebhookConfiguration, and the cert-manager Issuer and
//! Certificate of the cert-manager variant.

use crate::install::{CERT_MANAGER_SECRET, Layout, WEBHOOK_PORT, WEBHOOK_SERVICE};
use crate::webhook::{ClientConfig, render_configuration};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;
use serde_json::{Value, json};

/// cert-manager's self-signed Issuer of the webhook certificate.
pub(crate) const ISSUER: &str = "ferrometal-selfsigned-issuer";
/// cert-manager's Certificate of the webhook.
pub const CERTIFICATE: &str = "ferrometal-serving-cert";
/// The annotation cert-manager's cainjector fills a caBundle from.
pub(crate) const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";

/// The Service the apiserver reaches the webhook servers through.
pub(crate) fn service(layout: &Layout) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(WEBHOOK_SERVICE.to_string()),
            namespace: Some(layout.namespace.clone()),
            labels: Some(layout.labels()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(layout.selector()),
            ports: Some(vec![ServicePort {
                name: Some("webhook".to_string()),
                port: 443,
                target_port: Some(IntOrString::Int(i32::from(WEBHOOK_PORT))),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// How the apiserver reaches the webhooks: the Service, on 443.
pub(crate) fn client_config(layout: &Layout) -> ClientConfig {
    ClientConfig::Service { namespace: layout.namespace.clone(), name: WEBHOOK_SERVICE.to_string(), port: 443 }
}

/// The configuration as the operator renders it, without a caBundle: the operator publishes
/// its CA there (self-managed), or cert-manager's cainjector does (`inject_ca`).
pub fn configuration(layout: &Layout, inject_ca: bool) -> ValidatingWebhookConfiguration {
    let mut configuration = render_configuration(&client_config(layout), None);
    let labels = configuration.metadata.labels.get_or_insert_with(Default::default);
    labels.extend(layout.labels());
    if inject_ca {
        configuration.metadata.annotations =
            Some([(INJECT_CA_FROM.to_string(), format!("{}/{CERTIFICATE}", layout.namespace))].into());
    }
    configuration
}

/// The DNS names a serving certificate for the Service must cover.
pub(crate) fn dns_names(layout: &Layout) -> Vec<String> {
    let namespace = &layout.namespace;
    vec![format!("{WEBHOOK_SERVICE}.{namespace}.svc"), format!("{WEBHOOK_SERVICE}.{namespace}.svc.cluster.local")]
}

/// cert-manager's self-signed Issuer and the webhook's Certificate, written to the Secret the
/// cert-manager variant's Deployment mounts.
pub(crate) fn cert_manager_objects(layout: &Layout) -> Vec<Value> {
    let labels = serde_json::to_value(layout.labels()).unwrap_or_default();
    vec![
        json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
            "metadata": {"name": ISSUER, "namespace": layout.namespace, "labels": labels},
            "spec": {"selfSigned": {}},
        }),
        json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": CERTIFICATE, "namespace": layout.namespace, "labels": labels},
            "spec": {
                "secretName": CERT_MANAGER_SECRET,
                "dnsNames": dns_names(layout),
                // Kind and group explicitly: cert-manager re-issues when its defaults change.
                "issuerRef": {"name": ISSUER, "kind": "Issuer", "group": "cert-manager.io"},
                // Explicit since cert-manager 1.18 changed the default.
                "privateKey": {"rotationPolicy": "Always"},
            },
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_reaches_the_service_and_names_the_certificate_for_injection() {
        let layout = Layout::default();
        let configuration = configuration(&layout, true);
        let annotations = configuration.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get(INJECT_CA_FROM).map(String::as_str),
            Some("ferrometal-system/ferrometal-serving-cert")
        );
        for webhook in configuration.webhooks.iter().flatten() {
            let service = webhook.client_config.service.as_ref().expect("a Service");
            assert_eq!((service.name.as_str(), service.port), (WEBHOOK_SERVICE, Some(443)));
            assert!(webhook.client_config.ca_bundle.is_none());
        }
        assert!(self::configuration(&layout, false).metadata.annotations.is_none());
    }
}
