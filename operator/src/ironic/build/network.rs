//! The Service in front of the pods, and the optional Ingress.

use super::containers::{API_PORT_NAME, IMAGES_PORT_NAME, IMAGES_TLS_PORT_NAME, METRICS_PORT_NAME};
use super::meta::meta;
use crate::ironic::names;
use crate::ironic::resolve::Resolved;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec,
    IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub(crate) use crds::ironic::names::{IMAGES_SERVICE_PORT, api_service_port};
/// Service port of the image server over TLS.
pub(crate) const IMAGES_TLS_SERVICE_PORT: i32 = 8443;

fn service_port(name: &str, port: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_string()),
        port,
        target_port: Some(IntOrString::String(name.to_string())),
        protocol: Some("TCP".to_string()),
        ..Default::default()
    }
}

pub(crate) fn service(resolved: &Resolved) -> Service {
    let network = &resolved.network;
    let mut ports = vec![service_port(API_PORT_NAME, api_service_port(network.serves_tls))];
    // Each replica of a DaemonSet serves its own images; one Service cannot front them.
    if !resolved.settings.high_availability {
        ports.push(service_port(IMAGES_PORT_NAME, IMAGES_SERVICE_PORT));
        if network.serves_vmedia_tls {
            ports.push(service_port(IMAGES_TLS_PORT_NAME, IMAGES_TLS_SERVICE_PORT));
        }
    }
    if resolved.settings.exporter.is_some() {
        ports.push(service_port(METRICS_PORT_NAME, network.exporter_port));
    }
    Service {
        metadata: meta(
            resolved,
            resolved.names.service(),
            names::common_labels(&resolved.names.ironic, &resolved.version.version.to_string()),
        ),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_string()),
            selector: Some(names::selector(&resolved.names)),
            ports: Some(ports),
            ..Default::default()
        }),
        status: None,
    }
}

fn path(path: &str, service: &str, port: &str) -> HTTPIngressPath {
    HTTPIngressPath {
        path: Some(path.to_string()),
        path_type: "ImplementationSpecific".to_string(),
        backend: IngressBackend {
            service: Some(IngressServiceBackend {
                name: service.to_string(),
                port: Some(ServiceBackendPort { name: Some(port.to_string()), number: None }),
            }),
            resource: None,
        },
    }
}

/// The Ingress, when `networking.ingress` asks for one: `/` to the API, `/redfish` and
/// `/images` to the image server.
pub(crate) fn ingress(resolved: &Resolved) -> Option<Ingress> {
    let settings = resolved.network.ingress.as_ref()?;
    let host = settings.host.clone().filter(|h| !h.is_empty());
    let service = resolved.names.service();
    let images = if resolved.network.serves_vmedia_tls { IMAGES_TLS_PORT_NAME } else { IMAGES_PORT_NAME };
    let mut metadata = meta(
        resolved,
        resolved.names.ingress(),
        names::common_labels(&resolved.names.ironic, &resolved.version.version.to_string()),
    );
    metadata.annotations = settings.annotations.clone().filter(|a| !a.is_empty());
    Some(Ingress {
        metadata,
        spec: Some(IngressSpec {
            ingress_class_name: settings.ingress_class_name.clone().filter(|c| !c.is_empty()),
            tls: Some(vec![IngressTLS {
                hosts: host.clone().map(|h| vec![h]),
                secret_name: Some(resolved.names.ingress_tls()),
            }]),
            rules: Some(vec![IngressRule {
                host,
                http: Some(HTTPIngressRuleValue {
                    paths: vec![
                        path("/", &service, API_PORT_NAME),
                        path("/redfish", &service, images),
                        path("/images", &service, images),
                    ],
                }),
            }]),
            ..Default::default()
        }),
        status: None,
    })
}
