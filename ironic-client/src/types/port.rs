//! Ports: the NICs Ironic knows a node by.

use serde::{Deserialize, Serialize};

use super::JsonObject;

/// A port as Ironic returns it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Port {
    /// The port's UUID.
    pub uuid: String,
    /// The MAC address.
    pub address: String,
    /// The node it belongs to.
    pub node_uuid: Option<String>,
    /// An optional name (1.88).
    pub name: Option<String>,
    /// Whether the node may PXE boot from it.
    pub pxe_enabled: Option<bool>,
    /// The switch port it is wired to (LLDP data).
    pub local_link_connection: Option<JsonObject>,
    /// The physical network it is on.
    pub physical_network: Option<String>,
    /// Free-form metadata.
    pub extra: Option<JsonObject>,
    /// Creation time (RFC 3339).
    pub created_at: Option<String>,
    /// Last update time (RFC 3339).
    pub updated_at: Option<String>,
}

/// What `POST /v1/ports` takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PortCreate {
    /// The node's UUID.
    pub node_uuid: String,
    /// The MAC address.
    pub address: String,
    /// Whether the node may PXE boot from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pxe_enabled: Option<bool>,
    /// An optional name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The switch port it is wired to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_link_connection: Option<JsonObject>,
    /// The physical network it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_network: Option<String>,
    /// Free-form metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<JsonObject>,
}

impl PortCreate {
    /// A port with MAC `address` on node `node_uuid`.
    pub fn new(node_uuid: impl Into<String>, address: impl Into<String>) -> Self {
        Self { node_uuid: node_uuid.into(), address: address.into(), ..Self::default() }
    }
}
