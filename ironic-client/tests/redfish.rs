//! A redfish node on a sushy-tools BMC: validate, power on and off, boot
//! device, inspect, and the inventory and ports inspection produces.

mod common;

use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ironic_client::{BootDevice, DriverInfo, NodeCreate, PowerState, PowerTarget, ProvisionState, WaitOptions};
use std::time::Duration;

#[tokio::test]
async fn redfish_node_validates_powers_on_and_off_and_inspects() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let (ironic, bmcs) = tokio::try_join!(
        IronicServer::start(IronicConfig::default()),
        Sushy::start(SushyConfig { systems: 1, ..SushyConfig::default() }),
    )?;
    let client = common::client(&ironic).await?;
    let system = &bmcs.systems()[0];
    let (user, password) = bmcs.credentials().unwrap_or(("admin", "password"));
    let driver_info = DriverInfo::new()
        .with("redfish_address", bmcs.endpoint())
        .with("redfish_system_id", bmcs.redfish_system_id(system))
        .with("redfish_username", user)
        .with("redfish_password", password);
    let node = client.create_node(&NodeCreate::new("redfish").name("redfish-0").driver_info(driver_info)).await?;
    let id = node.uuid.as_str();
    // Redfish calls are slower than fake ones; poll a little less eagerly.
    let wait = WaitOptions::new(Duration::from_secs(180), Duration::from_millis(250));

    client.manage(id).await?;
    client.wait_for_provision_state(id, ProvisionState::Manageable, wait).await?;

    let validation = client.validate_node(id).await?;
    assert!(validation.all_valid(&["power", "management", "inspect"]), "{validation:?}");

    client.set_power_state(id, PowerTarget::On, None).await?;
    client.wait_for_power_state(id, PowerState::On, wait).await?;
    assert_eq!(bmcs.power_state(system).await?, "On", "the BMC itself is on");

    client.set_power_state(id, PowerTarget::Off, Some(Duration::from_secs(60))).await?;
    client.wait_for_power_state(id, PowerState::Off, wait).await?;
    assert_eq!(bmcs.power_state(system).await?, "Off");

    let supported = client.supported_boot_devices(id).await?;
    assert!(supported.contains(&BootDevice::Cdrom), "{supported:?}");
    client.set_boot_device(id, BootDevice::Pxe, true).await?;
    assert_eq!(client.get_boot_device(id).await?.boot_device, Some(BootDevice::Pxe));

    client.inspect(id).await?;
    let inspected = client.wait_for_provision_state(id, ProvisionState::Manageable, wait).await?;
    assert_eq!(inspected.last_error, None);
    let node = client.get_node(id).await?;
    assert_eq!(node.properties["memory_mb"], 8 * 1024);
    assert_eq!(node.properties["cpu_arch"], "x86_64");

    let inventory = client.get_inventory(id).await?.inventory;
    assert_eq!(inventory.memory.and_then(|m| m.physical_mb), Some(8 * 1024));
    assert!(
        inventory.interfaces.iter().any(|i| i.mac_address.as_deref() == Some(system.mac.as_str())),
        "{:?}",
        inventory.interfaces
    );
    assert_eq!(inventory.disks.first().and_then(|d| d.size), Some(50 * 1024 * 1024 * 1024));

    // Inspection registers the NIC it found as a port.
    let ports = client.list_ports(id).await?;
    assert!(ports.iter().any(|p| p.address == system.mac), "{ports:?}");

    client.delete_node(id).await?;
    Ok(())
}
