//! `spec.networking`: ports, the provisioning interface, DHCP, keepalived and external access.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default Ironic API port.
pub const DEFAULT_API_PORT: i32 = 6385;
/// Default image server (httpd) port.
pub const DEFAULT_IMAGE_SERVER_PORT: i32 = 6180;
/// Default port of the virtual media image server over TLS.
pub const DEFAULT_IMAGE_SERVER_TLS_PORT: i32 = 6183;
/// Default JSON RPC port.
pub const DEFAULT_RPC_PORT: i32 = 6189;
/// Default Prometheus exporter port.
pub const DEFAULT_PROMETHEUS_EXPORTER_PORT: i32 = 9608;

/// Networking settings for Ironic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    /// Public port of the Ironic API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 6385), range(min = 1))]
    pub api_port: Option<i32>,
    /// Bind the API to the provisioning interface only (needs host networking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_interface: Option<bool>,
    /// DHCP for network boot (dnsmasq). dnsmasq is deployed only when this is set; not
    /// supported with highAvailability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp: Option<Dhcp>,
    /// Run without host networking. Only for virtual media deployments; excludes bindInterface,
    /// dhcp, interface, ipAddress, macAddresses and keepalived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_host_network: Option<bool>,
    /// URL hosts use to call back to Ironic (virtual media). Set together with
    /// imageServerExternalURL unless an ingress is configured; not with externalIP.
    #[serde(default, rename = "externalCallbackURL", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uri"))]
    pub external_callback_url: Option<String>,
    /// IP through which remote hosts reach the API and image server (virtual media). The
    /// cluster itself never uses it. Exclusive with ingress and the external URLs.
    #[serde(default, rename = "externalIP", skip_serializing_if = "Option::is_none")]
    pub external_ip: Option<String>,
    /// URL hosts use to download images (virtual media). Set together with
    /// externalCallbackURL unless an ingress is configured; not with externalIP.
    #[serde(default, rename = "imageServerExternalURL", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uri"))]
    pub image_server_external_url: Option<String>,
    /// Public port of the image server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 6180), range(min = 1))]
    pub image_server_port: Option<i32>,
    /// Public port of the virtual media image server over TLS.
    #[serde(default, rename = "imageServerTLSPort", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 6183), range(min = 1))]
    pub image_server_tls_port: Option<i32>,
    /// An Ingress for the API (`/`) and the image server (`/redfish`, `/images`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Ingress>,
    /// Provisioning network interface (`PROVISIONING_INTERFACE`); detected from ipAddress if
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Provisioning IP to listen on (`PROVISIONING_IP`); detected from interface if unset. Not
    /// allowed with highAvailability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// Deprecated: use keepalived. "keepalived" runs a Keepalived container that manages
    /// ipAddress on interface; "" (the default) expects the address to be present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address_manager: Option<IpAddressManager>,
    /// Keepalived managing the provisioning IP (and extra VIPs); needs ipAddress and interface;
    /// not with highAvailability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalived: Option<Keepalived>,
    /// MAC addresses used to pick the provisioning interface (`PROVISIONING_MACS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_addresses: Option<Vec<String>>,
    /// Port of the Prometheus exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 9608), range(min = 1))]
    pub prometheus_exporter_port: Option<i32>,
    /// JSON RPC port between Ironic replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 6189), range(min = 1))]
    pub rpc_port: Option<i32>,
}

impl Networking {
    /// API port, defaulted.
    pub fn api_port(&self) -> i32 {
        self.api_port.unwrap_or(DEFAULT_API_PORT)
    }
    /// Image server port, defaulted.
    pub fn image_server_port(&self) -> i32 {
        self.image_server_port.unwrap_or(DEFAULT_IMAGE_SERVER_PORT)
    }
    /// Virtual media TLS port, defaulted.
    pub fn image_server_tls_port(&self) -> i32 {
        self.image_server_tls_port.unwrap_or(DEFAULT_IMAGE_SERVER_TLS_PORT)
    }
    /// JSON RPC port, defaulted.
    pub fn rpc_port(&self) -> i32 {
        self.rpc_port.unwrap_or(DEFAULT_RPC_PORT)
    }
    /// Exporter port, defaulted.
    pub fn prometheus_exporter_port(&self) -> i32 {
        self.prometheus_exporter_port.unwrap_or(DEFAULT_PROMETHEUS_EXPORTER_PORT)
    }
    /// True when keepalived manages the provisioning IP, in either spelling.
    pub fn keepalived_enabled(&self) -> bool {
        self.ip_address_manager == Some(IpAddressManager::Keepalived)
            || self.keepalived.as_ref().is_some_and(|k| k.enabled.unwrap_or(false))
    }
    /// True unless host networking is disabled.
    pub fn host_network(&self) -> bool {
        !self.disable_host_network.unwrap_or(false)
    }
}

/// How the provisioning IP is managed (deprecated form). Values: "" (already present),
/// "keepalived".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum IpAddressManager {
    /// The address is expected to be configured on the interface already.
    #[serde(rename = "")]
    None,
    /// A Keepalived container manages the address.
    #[serde(rename = "keepalived")]
    Keepalived,
}

/// DHCP settings for dnsmasq.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dhcp {
    /// DNS server handed to hosts. Not together with serveDNS.
    #[serde(default, rename = "dnsAddress", skip_serializing_if = "Option::is_none")]
    pub dns_address: Option<String>,
    /// Additional pools, each tagged `range_N` in dnsmasq. Requires Ironic 37.0 or newer.
    /// When set, networkCIDR/rangeBegin/rangeEnd may all be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_ranges: Option<Vec<DhcpRange>>,
    /// Gateway handed to hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_address: Option<String>,
    /// dnsmasq `dhcp-host` records, passed through unvalidated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// dnsmasq tags to refuse DHCP to (`dhcp-ignore`), passed through unvalidated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<Vec<String>>,
    /// CIDR of the provisioning network; must contain networking.ipAddress.
    #[serde(default, rename = "networkCIDR", skip_serializing_if = "Option::is_none")]
    pub network_cidr: Option<String>,
    /// First address of the pool, inside networkCIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_begin: Option<String>,
    /// Last address of the pool, inside networkCIDR and not before rangeBegin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
    /// Hand out the provisioning host itself as DNS server. Not together with dnsAddress.
    #[serde(default, rename = "serveDNS", skip_serializing_if = "Option::is_none")]
    pub serve_dns: Option<bool>,
}

/// An additional DHCP pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DhcpRange {
    /// Gateway for this pool (IPv4 only: dnsmasq cannot send per-range IPv6 gateways).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_address: Option<String>,
    /// CIDR of the pool's network.
    #[serde(default, rename = "networkCIDR", skip_serializing_if = "Option::is_none")]
    pub network_cidr: Option<String>,
    /// First address of the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_begin: Option<String>,
    /// Last address of the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
}

/// Ingress for external access to the API and image server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ingress {
    /// Annotations for the Ingress object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Host name the Ingress serves; its TLS Secret is `<name>-ingress-tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// IngressClass to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
}

/// Keepalived settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Keepalived {
    /// Extra virtual IPs Keepalived manages besides networking.ipAddress.
    #[serde(default, rename = "additionalVIPs", skip_serializing_if = "Option::is_none")]
    pub additional_vips: Option<Vec<KeepalivedVip>>,
    /// Run Keepalived for networking.ipAddress on networking.interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// One additional virtual IP.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeepalivedVip {
    /// Interface carrying the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The virtual IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// Prefix length of the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 128))]
    pub prefix: Option<i32>,
}
