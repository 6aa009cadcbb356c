//! What an `Ironic` may ask for that this operator does not deploy yet. Such a spec is valid
//! (ironic-standalone-operator's users bring it unchanged), so it is not refused; instead each
//! reconcile of a new generation says, in a Warning Event, what is not done.

use crds::ironic::IronicSpec;

/// One message per part of the spec that is accepted but not deployed.
pub(crate) fn notices(spec: &IronicSpec) -> Vec<String> {
    let mut out = Vec::new();
    if spec.networking_service.as_ref().is_some_and(|n| n.enabled == Some(true)) {
        out.push(
            "spec.networkingService is accepted but not deployed by this operator: no ironic-networking Deployment \
             or Service is created"
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{NetworkingService, PrometheusExporter};

    #[test]
    fn what_is_accepted_but_not_deployed_is_named() {
        assert!(notices(&IronicSpec::default()).is_empty());
        let spec = IronicSpec {
            networking_service: Some(NetworkingService { enabled: Some(true), ..Default::default() }),
            prometheus_exporter: Some(PrometheusExporter { enabled: true, ..Default::default() }),
            ..Default::default()
        };
        let notes = notices(&spec);
        assert_eq!(notes.len(), 1, "the ServiceMonitor is created (see `monitor`): {notes:?}");
        assert!(notes[0].contains("spec.networkingService"));
        let quiet = IronicSpec {
            networking_service: Some(NetworkingService { enabled: Some(false), ..Default::default() }),
            prometheus_exporter: Some(PrometheusExporter { enabled: true, ..Default::default() }),
            ..Default::default()
        };
        assert!(notices(&quiet).is_empty());
    }
}
