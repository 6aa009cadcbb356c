//! The smaller IronicSpec sections, each with ironic-standalone-operator's JSON names and defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default seconds between sensor data collections.
pub const DEFAULT_SENSOR_COLLECTION_INTERVAL: i32 = 60;
/// Default listen address of the Prometheus exporter.
pub const DEFAULT_EXPORTER_BIND_ADDRESS: &str = "0.0.0.0";

/// Settings of the provisioning/inspection ramdisk (ironic-python-agent).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployRamdisk {
    /// Do not run the ramdisk-downloader init container. The user then provides the IPA kernel
    /// and initramfs to the hosts another way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_downloader: Option<bool>,
    /// Kernel parameters for the provisioning/inspection ramdisk (`IRONIC_KERNEL_PARAMS`). No
    /// effect when a host boots a pre-built ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_kernel_params: Option<String>,
    /// Public SSH key injected into the ramdisk for debugging (`IRONIC_RAMDISK_SSH_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key: Option<String>,
}

/// Container image overrides. Unset images default per Ironic version (see
/// `crds::ironic::versions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Images {
    /// Branch of ironic-python-agent the downloader fetches; the main branch by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_ramdisk_branch: Option<String>,
    /// Image of the ramdisk-downloader init container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_ramdisk_downloader: Option<String>,
    /// Ironic image (also runs httpd, dnsmasq and the log watcher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ironic: Option<String>,
    /// Keepalived image, used only when keepalived manages the provisioning IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalived: Option<String>,
}

/// Inspection settings passed to ironic-python-agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    /// Inspection collectors to enable (`IRONIC_IPA_COLLECTORS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectors: Option<Vec<String>>,
    /// Interfaces to inspect for VLANs: interface names (all VLANs seen over LLDP) or
    /// `<interface>.<vlan>` pairs (`IRONIC_ENABLE_VLAN_INTERFACES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan_interfaces: Option<Vec<String>>,
}

/// One ironic.conf override, rendered as the environment variable `OS_<GROUP>__<NAME>`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtraConfig {
    /// ironic.conf section; `DEFAULT` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Option name within the section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Option value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Sensor data collection and the ironic-prometheus-exporter container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusExporter {
    /// Deploy the exporter and make Ironic send sensor data (`SEND_SENSOR_DATA=true`).
    pub enabled: bool,
    /// Do not create a ServiceMonitor. Must be true with highAvailability, where metrics are
    /// per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_service_monitor: Option<bool>,
    /// Address the exporter listens on. A loopback address cannot be scraped, so it requires
    /// disableServiceMonitor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "0.0.0.0"))]
    pub bind_address: Option<String>,
    /// Seconds between sensor data collections (`OS_SENSOR_DATA__INTERVAL`); at least 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60), range(min = 60))]
    pub sensor_collection_interval: Option<i32>,
}

impl PrometheusExporter {
    /// The listen address, defaulted.
    pub fn bind_address(&self) -> &str {
        self.bind_address.as_deref().unwrap_or(DEFAULT_EXPORTER_BIND_ADDRESS)
    }

    /// The collection interval in seconds, defaulted.
    pub fn sensor_collection_interval(&self) -> i32 {
        self.sensor_collection_interval.unwrap_or(DEFAULT_SENSOR_COLLECTION_INTERVAL)
    }
}

/// The Ironic Networking Service, which configures top-of-rack switch ports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkingService {
    /// Deploy the ironic-networking Deployment and Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Switch port settings per provisioning phase; at most one entry per type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_networks: Option<Vec<ProviderNetwork>>,
    /// Secret holding the switch configuration; `<name>-switch-config` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_config_secret_name: Option<String>,
    /// Secret holding the switch credentials; `<name>-switch-credentials` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_credentials_secret_name: Option<String>,
}

/// Switch port configuration for one provisioning phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderNetwork {
    /// Phase the settings apply to: idle, inspection, cleaning, rescuing, servicing or
    /// provisioning.
    #[serde(rename = "type")]
    pub type_: ProviderNetworkType,
    /// Port mode: access (one untagged VLAN, the default), trunk (tagged VLANs) or hybrid
    /// (both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "access"))]
    pub mode: Option<SwitchPortMode>,
    /// Untagged VLAN, 1-4094.
    #[serde(default, rename = "nativeVLAN", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4094))]
    pub native_vlan: Option<i32>,
    /// Tagged VLANs for trunk and hybrid ports: single IDs ("100") or ranges ("100-200").
    /// Forbidden for access ports.
    #[serde(default, rename = "allowedVLANs", skip_serializing_if = "Option::is_none")]
    pub allowed_vlans: Option<Vec<String>>,
    /// Port MTU, 1280-9216.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1280, max = 9216))]
    pub mtu: Option<i32>,
}

impl ProviderNetwork {
    /// The port mode, defaulted as the schema defaults it.
    pub fn mode(&self) -> SwitchPortMode {
        self.mode.unwrap_or_default()
    }
}

/// Provisioning phase of a provider network. Values: idle, inspection, cleaning, rescuing,
/// servicing, provisioning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ProviderNetworkType {
    /// Hosts not in any operation.
    Idle,
    /// Inspection.
    Inspection,
    /// Cleaning.
    Cleaning,
    /// Rescue.
    Rescuing,
    /// Servicing.
    Servicing,
    /// Deployment.
    Provisioning,
}

/// Switch port mode. Values: access (the default), trunk, hybrid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum SwitchPortMode {
    /// One untagged VLAN.
    #[default]
    Access,
    /// Tagged VLANs.
    Trunk,
    /// Untagged plus tagged VLANs.
    Hybrid,
}
