//! Parsing answers recorded from a real Ironic 39.0.0 (see
//! `tests/fixtures/record.sh`). No server needed.

use ironic_client::{
    ApiVersion, BootDevice, BootDeviceState, Node, NodeInventory, NodeStatusSummary, NodeValidation, Port, PowerState,
    ProvisionState, ServerVersions,
};
use pretty_assertions::assert_eq;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixture<T: DeserializeOwned>(name: &str) -> T {
    // At run time first: a binary reused from another clone has that clone's path compiled in.
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    let path = format!("{dir}/tests/fixtures/{name}.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn discovery_documents_give_the_version_range() {
    for name in ["root", "v1_root"] {
        let body = serde_json::to_vec(&fixture::<Value>(name)).unwrap();
        let range = ServerVersions::from_discovery_body(&body).expect(name);
        assert_eq!(range.min, ApiVersion::new(1, 1), "{name}");
        assert_eq!(range.max, ApiVersion::new(1, 115), "{name}");
        assert_eq!(range.negotiate(), Ok(ApiVersion::MAXIMUM));
    }
}

#[test]
fn created_fake_node() {
    let node: Node = fixture("node_fake_created");
    assert_eq!(node.name.as_deref(), Some("fixture-fake"));
    assert_eq!(node.driver.as_deref(), Some("fake-hardware"));
    assert_eq!(node.provision_state, Some(ProvisionState::Enroll));
    assert_eq!(node.target_provision_state, None);
    assert_eq!(node.power_state, None, "fake power stays null until asked");
    assert_eq!(node.resource_class.as_deref(), Some("baremetal"));
    assert_eq!(node.interfaces.deploy_interface.as_deref(), Some("fake"));
    assert_eq!(node.interfaces.network_interface.as_deref(), Some("noop"));
    assert_eq!(node.properties["cpu_arch"], "x86_64");
    assert_eq!(node.maintenance, Some(false));
    assert_eq!(node.uuid.len(), 36);
    // Ironic masks the password; we still keep it out of reach.
    assert!(node.driver_info.get("fake_password").is_none());
    assert!(node.driver_info.secret("fake_password").is_some());
    assert_eq!(node.driver_info.get("fake_username"), Some(&Value::from("admin")));
}

#[test]
fn active_fake_node() {
    let node: Node = fixture("node_fake_active");
    assert_eq!(node.provision_state, Some(ProvisionState::Active));
    assert_eq!(node.power_state, Some(PowerState::On));
    assert!(node.provision_updated_at.is_some());
    let debug = format!("{node:?}");
    assert!(debug.contains("\"fake_password\": <redacted>"), "{debug}");
}

#[test]
fn inspected_redfish_node() {
    let node: Node = fixture("node_redfish_inspected");
    assert_eq!(node.provision_state, Some(ProvisionState::Manageable));
    assert_eq!(node.properties["memory_mb"], 4096);
    assert_eq!(node.properties["capabilities"], "boot_mode:uefi");
    assert_eq!(node.interfaces.boot_interface.as_deref(), Some("redfish-virtual-media"));
    assert!(node.driver_info.get("redfish_address").is_some());
    assert!(node.driver_info.secret("redfish_password").is_some());
}

#[test]
fn status_pages() {
    let first: Value = fixture("nodes_status_page_1");
    assert!(first["next"].is_string());
    let nodes: Vec<NodeStatusSummary> = serde_json::from_value(first["nodes"].clone()).unwrap();
    assert_eq!(nodes.len(), 1);
    let n = &nodes[0];
    assert_eq!(n.name.as_deref(), Some("fixture-fake"));
    assert_eq!(n.provision_state, Some(ProvisionState::Active));
    assert_eq!(n.power_state, Some(PowerState::On));
    assert!(!n.maintenance && !n.is_busy() && !n.has_failed());

    let second: Value = fixture("nodes_status_page_2");
    let nodes: Vec<NodeStatusSummary> = serde_json::from_value(second["nodes"].clone()).unwrap();
    assert_eq!(nodes[0].provision_state, Some(ProvisionState::Enroll));
    assert_eq!(nodes[0].power_state, None);
}

#[test]
fn ports() {
    let created: Port = fixture("port_created");
    assert_eq!(created.address, "52:54:00:12:34:56");
    assert_eq!(created.pxe_enabled, Some(true));
    let listed: Value = fixture("ports_by_node");
    let ports: Vec<Port> = serde_json::from_value(listed["ports"].clone()).unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].uuid, created.uuid);
    assert_eq!(ports[0].node_uuid, created.node_uuid);
}

#[test]
fn validation_results() {
    let fake: NodeValidation = fixture("node_validate_fake");
    assert!(fake.all_valid(&["power", "management", "deploy", "boot"]));
    let redfish: NodeValidation = fixture("node_validate_redfish");
    assert!(redfish.all_valid(&["power", "management", "inspect"]));
    let failures: Vec<_> = redfish.failures().map(|(i, _)| i).collect();
    assert!(failures.contains(&"boot") && failures.contains(&"deploy"), "{failures:?}");
    assert!(redfish.interface("boot").and_then(|v| v.reason.as_deref()).is_some_and(|r| r.contains("deploy_kernel")));
}

#[test]
fn boot_devices() {
    let state: BootDeviceState = fixture("boot_device");
    assert_eq!(state, BootDeviceState { boot_device: Some(BootDevice::Disk), persistent: Some(true) });
    let supported: Value = fixture("boot_device_supported");
    let devices: Vec<BootDevice> = serde_json::from_value(supported["supported_boot_devices"].clone()).unwrap();
    assert_eq!(
        devices,
        vec![BootDevice::Pxe, BootDevice::Disk, BootDevice::Cdrom, BootDevice::Bios, BootDevice::UefiHttp]
    );
}

#[test]
fn redfish_inventory() {
    let inv: NodeInventory = fixture("node_inventory_redfish");
    let cpu = inv.inventory.cpu.as_ref().unwrap();
    assert_eq!(cpu.architecture.as_deref(), Some("x86_64"));
    assert_eq!(cpu.count, Some(1));
    assert_eq!(inv.inventory.memory.as_ref().and_then(|m| m.physical_mb), Some(4096));
    assert_eq!(inv.inventory.interfaces[0].mac_address.as_deref(), Some("00:5c:52:31:3a:9c"));
    assert_eq!(inv.inventory.disks[0].size, Some(100 * 1024 * 1024 * 1024));
    assert_eq!(inv.inventory.boot.as_ref().and_then(|b| b.current_boot_mode.as_deref()), Some("uefi"));
    assert!(inv.inventory.other.contains_key("storage_controllers"));
    assert_eq!(inv.plugin_data["macs"][0], "00:5c:52:31:3a:9c");
}
