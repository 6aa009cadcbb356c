//! The Prometheus operator's `ServiceMonitor` for the exporter, when
//! `prometheusExporter.enabled` and not `disableServiceMonitor`. As ironic-standalone-operator
//! makes it: named `<name>-metrics`, labelled with the Ironic's name, one endpoint on the
//! Service's `metrics` port, plain HTTP (the exporter serves no TLS) at `/metrics`, no interval
//! of its own (Prometheus's default). The selector also names the Ironic's component: the
//! managed database's Service carries the Ironic's name too (see `design/ironic.md`).

use super::containers::METRICS_PORT_NAME;
use super::meta::meta;
use crate::ironic::names::{self, IRONIC_COMPONENT, IRONIC_LABEL};
use crate::ironic::resolve::Resolved;
use crate::kit::names::COMPONENT_LABEL;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

/// The Prometheus operator's ServiceMonitor API.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("monitoring.coreos.com", "v1", "ServiceMonitor"),
        "servicemonitors",
    )
}

/// The spec asks for a ServiceMonitor: the exporter runs and `disableServiceMonitor` is not set.
pub(crate) fn wanted(resolved: &Resolved) -> bool {
    resolved.settings.exporter.as_ref().is_some_and(|e| e.disable_service_monitor != Some(true))
}

/// The ServiceMonitor, when [`wanted`].
pub(crate) fn render(resolved: &Resolved) -> Option<DynamicObject> {
    if !wanted(resolved) {
        return None;
    }
    let name = resolved.names.service_monitor();
    let spec = json!({
        "selector": {"matchLabels": {
            IRONIC_LABEL: resolved.names.ironic,
            COMPONENT_LABEL: IRONIC_COMPONENT,
        }},
        "endpoints": [{"port": METRICS_PORT_NAME, "scheme": "http", "path": "/metrics"}],
    });
    let mut object =
        DynamicObject::new(&name, &api_resource()).within(&resolved.namespace).data(json!({ "spec": spec }));
    object.metadata = meta(resolved, name, names::owner_labels(&resolved.names.ironic));
    Some(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ironic::fixtures;
    use crds::ironic::PrometheusExporter;

    fn resolved(exporter: Option<PrometheusExporter>) -> Resolved {
        let mut resolved = fixtures::resolved(&fixtures::ironic(fixtures::WITH_DATABASE), None);
        resolved.settings.exporter = exporter;
        resolved
    }

    #[test]
    fn an_enabled_exporter_gets_a_service_monitor_on_the_metrics_port_of_the_ironics_own_service() {
        let resolved = resolved(Some(PrometheusExporter { enabled: true, ..Default::default() }));
        let monitor = render(&resolved).expect("a ServiceMonitor");
        let name = format!("{}-metrics", resolved.names.ironic);
        assert_eq!(monitor.metadata.name.as_deref(), Some(name.as_str()));
        assert_eq!(monitor.metadata.namespace.as_deref(), Some(resolved.namespace.as_str()));
        assert_eq!(monitor.metadata.owner_references, resolved.owner.clone().map(|o| vec![o]));
        let labels = monitor.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(IRONIC_LABEL), Some(&resolved.names.ironic));
        let types = monitor.types.clone().expect("types");
        assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("monitoring.coreos.com/v1", "ServiceMonitor"));
        let spec = &monitor.data["spec"];
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {IRONIC_LABEL: resolved.names.ironic, COMPONENT_LABEL: IRONIC_COMPONENT}})
        );
        assert_eq!(spec["endpoints"], json!([{"port": "metrics", "scheme": "http", "path": "/metrics"}]));
        assert!(spec.get("namespaceSelector").is_none(), "its own namespace, the default");
    }

    #[test]
    fn the_selector_matches_the_labels_the_service_carries() {
        let resolved = resolved(Some(PrometheusExporter { enabled: true, ..Default::default() }));
        let monitor = render(&resolved).expect("a ServiceMonitor");
        let service = crate::ironic::build::network::service(&resolved);
        let mut carried = service.metadata.labels.unwrap_or_default();
        // The ledger of the Ironic's own objects stamps its component on the Service.
        carried.extend(crate::ironic::names::ironic_scope());
        let selector = monitor.data["spec"]["selector"]["matchLabels"].as_object().cloned().unwrap_or_default();
        for (key, value) in selector {
            assert_eq!(carried.get(&key).map(String::as_str), value.as_str(), "{key}");
        }
        let ports = service.spec.and_then(|s| s.ports).unwrap_or_default();
        assert!(ports.iter().any(|p| p.name.as_deref() == Some(METRICS_PORT_NAME)), "the endpoint's port exists");
    }

    #[test]
    fn no_service_monitor_without_the_exporter_or_with_disable_service_monitor() {
        assert!(render(&resolved(None)).is_none());
        let disabled = PrometheusExporter { enabled: true, disable_service_monitor: Some(true), ..Default::default() };
        assert!(render(&resolved(Some(disabled))).is_none());
        let explicit = PrometheusExporter { enabled: true, disable_service_monitor: Some(false), ..Default::default() };
        assert!(render(&resolved(Some(explicit))).is_some());
    }
}
