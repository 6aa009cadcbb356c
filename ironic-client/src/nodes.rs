//! Node calls: create, read, list, update, delete, maintenance, validation,
//! boot device and inventory.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::query::fields_with_uuid;
use crate::types::{
    BootDevice, BootDeviceState, Node, NodeCreate, NodeInventory, NodeListQuery, NodePage, NodeValidation,
    PatchOperation,
};
use crate::version::ApiVersion;

impl IronicClient {
    /// Creates a node (`POST /v1/nodes`); it starts in `enroll`.
    ///
    /// When the connection breaks, a named create is sent again, and if that meets a
    /// conflict the node of that name is returned: the first attempt reached Ironic and
    /// created it. A create without a name is not sent again after a reset, since a repeat
    /// would make a second node; it fails with [`crate::Error::ConnectionReset`].
    pub async fn create_node(&self, node: &NodeCreate) -> Result<Node> {
        if node.disable_power_off.is_some() {
            self.require("disable_power_off", ApiVersion::DISABLE_POWER_OFF)?;
        }
        let mut request = Request::new(Operation::CreateNode, Method::POST, &["nodes"]).json(node)?;
        let name = node.name.as_deref().filter(|n| !n.is_empty());
        if name.is_none() {
            request = request.once_if_reset();
        }
        let sent = self.send_tracked(request).await;
        match (sent.result, name) {
            (Err(crate::Error::Conflict(_)), Some(name)) if sent.resent_after_reset => {
                tracing::debug!(name, "a create sent again after a reset conflicted; reading the node it made");
                self.get_node(name).await
            }
            (result, _) => result?.json(),
        }
    }

    /// A node by UUID or name, every field.
    pub async fn get_node(&self, ident: &str) -> Result<Node> {
        self.send_json(Request::new(Operation::GetNode, Method::GET, &["nodes", ident])).await
    }

    /// A node by UUID or name, only `fields` (and `uuid`). Cheaper for Ironic
    /// than the whole node.
    pub async fn get_node_fields<S: AsRef<str>>(&self, ident: &str, fields: &[S]) -> Result<Node> {
        let request = Request::new(Operation::GetNode, Method::GET, &["nodes", ident])
            .query([("fields", fields_with_uuid(fields))]);
        self.send_json(request).await
    }

    /// A node by UUID or name, or `None` if there is none.
    pub async fn find_node(&self, ident: &str) -> Result<Option<Node>> {
        match self.get_node(ident).await {
            Ok(node) => Ok(Some(node)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One page of nodes matching `query`.
    pub async fn list_nodes(&self, query: &NodeListQuery) -> Result<NodePage> {
        let (nodes, next_marker) = self.fetch_page(Operation::ListNodes, "nodes", query.params()).await?;
        Ok(NodePage { nodes, next_marker })
    }

    /// Every node matching `query`, following pages.
    pub async fn list_all_nodes(&self, query: &NodeListQuery) -> Result<Vec<Node>> {
        self.fetch_all(Operation::ListNodes, "nodes", query.params()).await
    }

    /// Applies a JSON Patch (`PATCH /v1/nodes/{ident}`); returns the node.
    pub async fn update_node(&self, ident: &str, patch: &[PatchOperation]) -> Result<Node> {
        let request = Request::new(Operation::UpdateNode, Method::PATCH, &["nodes", ident]).json(patch)?;
        self.send_json(request).await
    }

    /// Deletes a node. Ironic refuses it outside `enroll`, `manageable`,
    /// `available` and `adopt failed` unless the node is in maintenance.
    pub async fn delete_node(&self, ident: &str) -> Result<()> {
        self.send_unit(Request::new(Operation::DeleteNode, Method::DELETE, &["nodes", ident])).await
    }

    /// Puts a node in maintenance.
    pub async fn set_maintenance(&self, ident: &str, reason: Option<&str>) -> Result<()> {
        let body = match reason {
            Some(reason) => json!({ "reason": reason }),
            None => json!({}),
        };
        let request =
            Request::new(Operation::SetMaintenance, Method::PUT, &["nodes", ident, "maintenance"]).json(&body)?;
        self.send_unit(request).await
    }

    /// Takes a node out of maintenance.
    pub async fn clear_maintenance(&self, ident: &str) -> Result<()> {
        self.send_unit(Request::new(Operation::ClearMaintenance, Method::DELETE, &["nodes", ident, "maintenance"]))
            .await
    }

    /// Validates every interface of a node.
    pub async fn validate_node(&self, ident: &str) -> Result<NodeValidation> {
        self.send_json(Request::new(Operation::ValidateNode, Method::GET, &["nodes", ident, "validate"])).await
    }

    /// The boot device a node is set to.
    pub async fn get_boot_device(&self, ident: &str) -> Result<BootDeviceState> {
        self.send_json(Request::new(
            Operation::GetBootDevice,
            Method::GET,
            &["nodes", ident, "management", "boot_device"],
        ))
        .await
    }

    /// Sets the boot device, for the next boot only unless `persistent`.
    pub async fn set_boot_device(&self, ident: &str, device: BootDevice, persistent: bool) -> Result<()> {
        let request =
            Request::new(Operation::SetBootDevice, Method::PUT, &["nodes", ident, "management", "boot_device"])
                .json(&json!({ "boot_device": device, "persistent": persistent }))?;
        self.send_unit(request).await
    }

    /// The boot devices a node's management interface supports.
    pub async fn supported_boot_devices(&self, ident: &str) -> Result<Vec<BootDevice>> {
        #[derive(Deserialize)]
        struct Supported {
            supported_boot_devices: Vec<BootDevice>,
        }
        let supported: Supported = self
            .send_json(Request::new(
                Operation::GetSupportedBootDevices,
                Method::GET,
                &["nodes", ident, "management", "boot_device", "supported"],
            ))
            .await?;
        Ok(supported.supported_boot_devices)
    }

    /// The hardware inventory recorded by the last inspection (404 when the
    /// node was never inspected).
    pub async fn get_inventory(&self, ident: &str) -> Result<NodeInventory> {
        self.send_json(Request::new(Operation::GetInventory, Method::GET, &["nodes", ident, "inventory"])).await
    }
}
