//! The rest of the spec the pods and Jobs are built from, defaults applied once: high
//! availability, scheduling, overrides, the exporter, the ramdisk, inspection and extra
//! configuration.

use crds::ironic::{DeployRamdisk, ExtraConfig, Inspection, IronicSpec, Overrides, PrometheusExporter};
use std::collections::BTreeMap;

/// The spec's settings, resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Settings {
    /// A DaemonSet with JSON RPC between conductors, instead of a one-replica Deployment.
    pub high_availability: bool,
    /// Where the pods and Jobs run; `None` when the spec names no node labels.
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `spec.overrides`, applied last.
    pub overrides: Option<Overrides>,
    /// The Prometheus exporter, when enabled.
    pub exporter: Option<PrometheusExporter>,
    pub deploy_ramdisk: DeployRamdisk,
    pub inspection: Inspection,
    pub extra_config: Vec<ExtraConfig>,
    /// JSON RPC between conductors skips certificate verification.
    pub insecure_rpc: bool,
}

impl Settings {
    pub(crate) fn of(spec: &IronicSpec) -> Self {
        Self {
            high_availability: spec.high_availability(),
            node_selector: spec.node_selector.clone().filter(|s| !s.is_empty()),
            overrides: spec.overrides.clone(),
            exporter: spec.prometheus_exporter.clone().filter(|p| p.enabled),
            deploy_ramdisk: spec.deploy_ramdisk.clone().unwrap_or_default(),
            inspection: spec.inspection.clone().unwrap_or_default(),
            extra_config: spec.extra_config.clone().unwrap_or_default(),
            insecure_rpc: spec.tls.as_ref().and_then(|t| t.insecure_rpc) == Some(true),
        }
    }

    /// `overrides.agentImages` names ironic-python-agent images of its own.
    pub(crate) fn custom_agent_images(&self) -> bool {
        self.overrides.as_ref().and_then(|o| o.agent_images.as_ref()).is_some_and(|a| !a.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{AgentImages, Tls};

    #[test]
    fn a_disabled_exporter_and_an_empty_node_selector_are_absent() {
        let spec = IronicSpec {
            prometheus_exporter: Some(PrometheusExporter { enabled: false, ..Default::default() }),
            node_selector: Some(BTreeMap::new()),
            ..Default::default()
        };
        let settings = Settings::of(&spec);
        assert_eq!((settings.exporter, settings.node_selector), (None, None));
        assert!(!settings.high_availability && !settings.insecure_rpc);
    }

    #[test]
    fn insecure_rpc_and_custom_agent_images_are_read_from_their_fields() {
        let spec = IronicSpec {
            tls: Some(Tls { insecure_rpc: Some(true), ..Default::default() }),
            overrides: Some(Overrides {
                agent_images: Some(vec![AgentImages {
                    architecture: None,
                    initramfs: "http://images/ipa.initramfs".into(),
                    kernel: "http://images/ipa.kernel".into(),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let settings = Settings::of(&spec);
        assert!(settings.insecure_rpc && settings.custom_agent_images());
        assert!(!Settings::of(&IronicSpec::default()).custom_agent_images());
    }
}
