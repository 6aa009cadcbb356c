//! Nodes as Ironic returns them and as we create them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DriverInfo, JsonObject, PowerState, ProvisionState, null_as_default};

/// The hardware interfaces of a node. `None` on create means the driver's
/// default; on read, that the field was not requested.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[allow(missing_docs)] // each field is the interface it names
pub struct NodeInterfaces {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bios_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub console_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub firmware_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inspect_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rescue_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor_interface: Option<String>,
}

/// A node as Ironic returns it. Fields left out by a `fields` query are
/// `None` or empty; `uuid` is always requested by this client.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Node {
    /// The node's UUID.
    pub uuid: String,
    /// The node's unique name.
    pub name: Option<String>,
    /// The hardware type (`redfish`, `ipmi`, `fake-hardware`…).
    pub driver: Option<String>,
    /// How to reach the BMC; secrets come back masked.
    pub driver_info: DriverInfo,
    /// The interfaces in use.
    #[serde(flatten)]
    pub interfaces: NodeInterfaces,
    /// Hardware properties (`cpu_arch`, `memory_mb`, `capabilities`…).
    #[serde(deserialize_with = "null_as_default")]
    pub properties: JsonObject,
    /// What to deploy (`image_source`, `boot_iso`…).
    #[serde(deserialize_with = "null_as_default")]
    pub instance_info: JsonObject,
    /// Free-form metadata.
    #[serde(deserialize_with = "null_as_default")]
    pub extra: JsonObject,
    /// The current provision state.
    pub provision_state: Option<ProvisionState>,
    /// The state an ongoing transition is heading for; `None` when idle.
    pub target_provision_state: Option<ProvisionState>,
    /// When the provision state last changed (RFC 3339).
    pub provision_updated_at: Option<String>,
    /// The power state; `None` until first known.
    pub power_state: Option<PowerState>,
    /// The power state being moved to; `None` when idle.
    pub target_power_state: Option<PowerState>,
    /// Whether the node is in maintenance.
    pub maintenance: Option<bool>,
    /// Why it is in maintenance.
    pub maintenance_reason: Option<String>,
    /// Why Ironic itself put it in maintenance (`power failure`…).
    pub fault: Option<String>,
    /// The error of the last failed operation.
    pub last_error: Option<String>,
    /// The conductor holding the node's lock, if any.
    pub reservation: Option<String>,
    /// The conductor managing the node.
    pub conductor: Option<String>,
    /// The conductor group.
    pub conductor_group: Option<String>,
    /// The shard: which of the services that divide Ironic's nodes among them serves it (1.82).
    pub shard: Option<String>,
    /// The resource class.
    pub resource_class: Option<String>,
    /// The instance deployed on it.
    pub instance_uuid: Option<String>,
    /// Whether to clean automatically on provide and undeploy.
    pub automated_clean: Option<bool>,
    /// Whether the node refuses destructive operations.
    pub protected: Option<bool>,
    /// Whether Ironic may never power the node off (1.95).
    pub disable_power_off: Option<bool>,
    /// The owning project.
    pub owner: Option<String>,
    /// The leasing project.
    pub lessee: Option<String>,
    /// A description.
    pub description: Option<String>,
    /// Traits.
    #[serde(deserialize_with = "null_as_default")]
    pub traits: Vec<String>,
    /// The boot mode (`uefi`, `bios`).
    pub boot_mode: Option<String>,
    /// Whether secure boot is on.
    pub secure_boot: Option<bool>,
    /// Network data for the config drive.
    pub network_data: Option<Value>,
    /// The clean step running now.
    pub clean_step: Option<Value>,
    /// The deploy step running now.
    pub deploy_step: Option<Value>,
    /// The service step running now.
    pub service_step: Option<Value>,
    /// The node's health (1.109).
    pub health: Option<String>,
    /// When inspection started.
    pub inspection_started_at: Option<String>,
    /// When inspection finished.
    pub inspection_finished_at: Option<String>,
    /// Creation time (RFC 3339).
    pub created_at: Option<String>,
    /// Last update time (RFC 3339).
    pub updated_at: Option<String>,
}

/// What `POST /v1/nodes` takes. Start from [`NodeCreate::new`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NodeCreate {
    /// The hardware type.
    pub driver: String,
    /// A unique name; lets the node be addressed by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A UUID to use instead of a generated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// How to reach the BMC.
    #[serde(skip_serializing_if = "DriverInfo::is_empty")]
    pub driver_info: DriverInfo,
    /// Interfaces other than the driver's defaults.
    #[serde(flatten)]
    pub interfaces: NodeInterfaces,
    /// Hardware properties.
    #[serde(skip_serializing_if = "JsonObject::is_empty")]
    pub properties: JsonObject,
    /// What to deploy.
    #[serde(skip_serializing_if = "JsonObject::is_empty")]
    pub instance_info: JsonObject,
    /// Free-form metadata.
    #[serde(skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
    /// The resource class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_class: Option<String>,
    /// Overrides `[conductor]automated_clean` for this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automated_clean: Option<bool>,
    /// The conductor group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conductor_group: Option<String>,
    /// The shard (1.82).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The owning project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// A description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Network data for the config drive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_data: Option<Value>,
    /// Never power the node off (needs API 1.95).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_power_off: Option<bool>,
}

impl NodeCreate {
    /// A node of hardware type `driver`, everything else default.
    pub fn new(driver: impl Into<String>) -> Self {
        Self { driver: driver.into(), ..Self::default() }
    }

    /// Sets the name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the `driver_info`.
    #[must_use]
    pub fn driver_info(mut self, driver_info: DriverInfo) -> Self {
        self.driver_info = driver_info;
        self
    }

    /// Sets the resource class.
    #[must_use]
    pub fn resource_class(mut self, resource_class: impl Into<String>) -> Self {
        self.resource_class = Some(resource_class.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_body_has_only_what_was_set_and_flattens_interfaces() {
        let mut create =
            NodeCreate::new("redfish").name("host-0").driver_info(DriverInfo::new().with("redfish_password", "pw"));
        create.interfaces.deploy_interface = Some("ramdisk".into());
        assert_eq!(
            serde_json::to_value(&create).unwrap(),
            json!({"driver": "redfish", "name": "host-0", "deploy_interface": "ramdisk",
                   "driver_info": {"redfish_password": "pw"}})
        );
        assert!(!format!("{create:?}").contains("\"pw\""));
    }
}
