//! Day-2 configuration: `spec.nodeTemplate` and the per-host `spec.nodes.<host>` overrides.

use super::sources::VariablesFromSource;
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::KubeSchema;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Free-form variables: any JSON value per name.
pub type Variables = BTreeMap<String, serde_json::Value>;

/// Variables are arbitrary JSON values, kept as written: the schema preserves them unpruned.
fn variables_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true},
    })
}

/// Configuration shared by every host; applied in place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeTemplate {
    /// Resolver settings of every host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// Network whose first address services use to reach a host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management_network: Option<String>,
    /// Networks of every host, by name; hosts add addresses and override fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub networks: Option<Vec<NetworkConfig>>,
    /// Variables passed to services; hosts may override each one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "variables_schema")]
    pub variables: Option<Variables>,
    /// Variables read from Secrets and ConfigMaps of the NodeSet's namespace, each key a
    /// variable, in list order (a later source wins); variables win over them, and a host's
    /// variablesFrom and variables over all of the template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub variables_from: Option<Vec<VariablesFromSource>>,
}

/// One network of a host. Every field but name is optional, so a host entry can override a
/// single field of the template's entry of the same name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfig {
    /// Addresses in CIDR notation, e.g. 192.0.2.10/24; normally set per host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    /// Resolver settings for this network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// Default gateway on this network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Host interface (or bond) carrying the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// MTU, 576-9216.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 576, max = 9216))]
    pub mtu: Option<i32>,
    /// Network name, the merge key between template and host.
    pub name: String,
    /// Static routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<Route>>,
    /// 802.1Q VLAN ID, 1-4094; untagged when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4094))]
    pub vlan: Option<i32>,
}

/// A static route.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// Route metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub metric: Option<i32>,
    /// Destination in CIDR notation, or "default".
    pub to: String,
    /// Next hop.
    pub via: String,
}

/// Resolver settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dns {
    /// Name servers in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nameservers: Option<Vec<String>>,
    /// Search domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Vec<String>>,
}

/// Per-host settings; the map key is the host name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSection {
    /// Locked once this host is claimed: extra labels its BareMetalHost must carry, on top of
    /// the template's selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::selector::bounded_label_selector")]
    pub bmh_label_selector: Option<LabelSelector>,
    /// Applied in place: BIOS settings for this host, overriding the template's key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::firmware::firmware_settings_schema")]
    pub firmware_settings: Option<super::firmware::FirmwareSettings>,
    /// Applied in place: firmware updates for this host, replacing the template's of the same
    /// component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::firmware::firmware_updates_schema")]
    pub firmware_updates: Option<Vec<crate::firmware::FirmwareUpdate>>,
    /// Provisioning only: first-boot network data Secret for this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_data: Option<SecretReference>,
    /// Applied in place: network overrides merged by name with the template's networks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub networks: Option<Vec<NetworkConfig>>,
    /// Request: changing it (to any new value) deprovisions this one host and provisions it
    /// again with the current provisioning settings. The first value seen is only recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reprovision_token: Option<String>,
    /// Provisioning only: first-boot user data Secret for this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data: Option<SecretReference>,
    /// Applied in place: variables overriding the template's, key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "variables_schema")]
    pub variables: Option<Variables>,
    /// Applied in place: variables read from Secrets and ConfigMaps of the NodeSet's namespace,
    /// overriding the template's variables; this host's variables win over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub variables_from: Option<Vec<VariablesFromSource>>,
}
