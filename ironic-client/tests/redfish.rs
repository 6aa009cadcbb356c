//! A redfish node on a sushy-tools BMC: validate, power on and off, boot
//! device, inspect, and the inventory and ports inspection produces; its BIOS
//! settings with their registry and its firmware components, a setting
//! changed by a manual clean, an ISO attached and detached as virtual media, and
//! Redfish event subscriptions made and deleted.

mod common;

use anyhow::Context as _;
use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ironic_client::{
    BiosSetting, BootDevice, DriverInfo, EventSubscriptionCreate, IronicClient, NodeCreate, PowerState, PowerTarget,
    ProvisionState, ProvisionTarget, Step, VirtualMediaDevice, WaitOptions,
};
use serde_json::json;
use std::time::Duration;

/// Redfish calls are slower than fake ones; poll a little less eagerly.
fn redfish_wait() -> WaitOptions {
    WaitOptions::new(Duration::from_secs(180), Duration::from_millis(250))
}

/// An Ironic, a BMC with one system, and a client of that Ironic.
async fn ironic_and_one_bmc() -> anyhow::Result<(IronicServer, Sushy, IronicClient)> {
    ferrometal_tests::init();
    let (ironic, bmcs) = tokio::try_join!(
        IronicServer::start(IronicConfig::default()),
        Sushy::start(SushyConfig { systems: 1, ..SushyConfig::default() }),
    )?;
    let client = common::client(&ironic).await?;
    Ok((ironic, bmcs, client))
}

/// A redfish node named `name` for the first system of `bmcs`, managed.
async fn managed_redfish_node(client: &IronicClient, bmcs: &Sushy, name: &str) -> anyhow::Result<String> {
    let system = &bmcs.systems()[0];
    let (user, password) = bmcs.credentials().unwrap_or(("admin", "password"));
    let driver_info = DriverInfo::new()
        .with("redfish_address", bmcs.endpoint())
        .with("redfish_system_id", bmcs.redfish_system_id(system))
        .with("redfish_username", user)
        .with("redfish_password", password);
    let node = client.create_node(&NodeCreate::new("redfish").name(name).driver_info(driver_info)).await?;
    client.manage(&node.uuid).await?;
    client.wait_for_provision_state(&node.uuid, ProvisionState::Manageable, redfish_wait()).await?;
    Ok(node.uuid)
}

fn setting<'a>(settings: &'a [BiosSetting], name: &str) -> anyhow::Result<&'a BiosSetting> {
    settings.iter().find(|s| s.name == name).with_context(|| format!("no {name} among {settings:?}"))
}

#[tokio::test]
async fn bios_settings_come_with_their_registry_and_the_firmware_components_are_listed() -> anyhow::Result<()> {
    let (_ironic, bmcs, client) = ironic_and_one_bmc().await?;
    let id = managed_redfish_node(&client, &bmcs, "redfish-bios").await?;

    // Managing the node (its verify step) cached the BMC's settings, with what its registry
    // says of each.
    let settings = client.list_bios_settings(&id).await?;
    let turbo = setting(&settings, "ProcTurboMode")?;
    assert_eq!(turbo.value.as_deref(), Some("Enabled"));
    assert_eq!(turbo.attribute_type.as_deref(), Some("Enumeration"));
    assert_eq!(turbo.allowable_values, ["Enabled", "Disabled"]);
    let cores = setting(&settings, "NumCores")?;
    assert_eq!((cores.read_only, cores.lower_bound, cores.upper_bound), (Some(true), Some(10), Some(20)));

    // And the firmware components: the BIOS version the system reports.
    let firmware = client.list_firmware_components(&id).await?;
    let bios = firmware.iter().find(|c| c.component == "bios").with_context(|| format!("{firmware:?}"))?;
    assert_eq!(bios.current_version.as_deref(), Some("1.0.0"));
    assert_eq!(bios.last_version_flashed, None, "never flashed");
    client.delete_node(&id).await?;
    Ok(())
}

/// The bios interface's step, out of band: no ramdisk boots, the BMC applies it at the reboot
/// (the emulated BMC at once, its pending settings empty after, as a BMC's are once applied).
#[tokio::test]
async fn a_manual_clean_changes_a_bios_setting_out_of_band() -> anyhow::Result<()> {
    let (_ironic, bmcs, client) = ironic_and_one_bmc().await?;
    let id = managed_redfish_node(&client, &bmcs, "redfish-bios-clean").await?;
    let change = Step::new("bios", "apply_configuration")
        .arg("settings", json!([{"name": "ProcTurboMode", "value": "Disabled"}]));
    client.set_provision_state(&id, &ProvisionTarget::Clean { steps: vec![change], disable_ramdisk: true }).await?;
    let cleaned = client.wait_for_provision_state(&id, ProvisionState::Manageable, redfish_wait()).await?;
    assert_eq!(cleaned.last_error, None);
    let settings = client.list_bios_settings(&id).await?;
    assert_eq!(setting(&settings, "ProcTurboMode")?.value.as_deref(), Some("Disabled"), "cached after the clean");

    client.delete_node(&id).await?;
    Ok(())
}

#[tokio::test]
async fn redfish_node_validates_powers_on_and_off_and_inspects() -> anyhow::Result<()> {
    let (_ironic, bmcs, client) = ironic_and_one_bmc().await?;
    let system = &bmcs.systems()[0];
    let id = &managed_redfish_node(&client, &bmcs, "redfish-0").await?;
    let wait = redfish_wait();

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

/// The node once Ironic let go of it (an asynchronous action ran to its end).
async fn unlocked(client: &IronicClient, id: &str) -> anyhow::Result<ironic_client::Node> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let node = client.get_node(id).await?;
        if node.reservation.is_none() {
            return Ok(node);
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "node {id} still locked by {:?}", node.reservation);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn inserted(client: &IronicClient, id: &str) -> anyhow::Result<bool> {
    Ok(client.list_virtual_media(id).await?.iter().any(|media| media.inserted))
}

#[tokio::test]
async fn an_iso_is_attached_as_a_virtual_cd_read_back_and_detached_and_a_missing_one_fails_in_last_error()
-> anyhow::Result<()> {
    let (ironic, bmcs, client) = ironic_and_one_bmc().await?;
    let id = managed_redfish_node(&client, &bmcs, "redfish-vmedia").await?;
    assert!(!inserted(&client, &id).await?, "the CD starts empty");

    let iso = ironic.image_server().write_live_iso("data.iso")?;
    client.attach_virtual_media(&id, VirtualMediaDevice::Cdrom, &iso).await?;
    let node = unlocked(&client, &id).await?;
    assert_eq!(node.last_error, None);
    let media = client.list_virtual_media(&id).await?;
    let cd = media.iter().find(|m| m.inserted).with_context(|| format!("nothing inserted: {media:?}"))?;
    assert_ne!(cd.image.as_deref(), Some(iso.as_str()), "the BMC has Ironic's copy, not the URL given");

    client.detach_virtual_media(&id, VirtualMediaDevice::Cdrom).await?;
    unlocked(&client, &id).await?;
    assert!(!inserted(&client, &id).await?, "ejected");

    let missing = format!("{}/images/missing.iso", ironic.image_server().url());
    client.attach_virtual_media(&id, VirtualMediaDevice::Cdrom, &missing).await?;
    let node = unlocked(&client, &id).await?;
    let error = node.last_error.context("a failed attach is in last_error")?;
    assert!(error.starts_with("Could not attach device cdrom"), "{error}");
    assert!(!inserted(&client, &id).await?, "nothing inserted");

    client.delete_node(&id).await?;
    Ok(())
}

#[tokio::test]
async fn an_event_subscription_is_made_read_listed_and_deleted_and_a_refusal_never_shows_its_headers()
-> anyhow::Result<()> {
    let (_ironic, bmcs, client) = ironic_and_one_bmc().await?;
    let id = managed_redfish_node(&client, &bmcs, "redfish-events").await?;
    let secret = "Bearer never-shown-0f1e2d";
    let headers = vec![std::collections::BTreeMap::from([("Authorization".to_string(), secret.to_string())])];
    let wanted = EventSubscriptionCreate {
        destination: "https://events.example/hook".into(),
        context: "rack-7".into(),
        protocol: "Redfish".into(),
        http_headers: headers.clone(),
    };
    let made = client.create_event_subscription(&id, &wanted).await?;
    assert!(!made.id.is_empty());
    assert_eq!(made.destination.as_deref(), Some("https://events.example/hook"));
    let read = client.event_subscription(&id, &made.id).await?;
    assert_eq!(read.context.as_deref(), Some("rack-7"));
    assert_eq!(client.event_subscription_ids(&id).await?, vec![made.id.clone()]);

    client.delete_event_subscription(&id, &made.id).await?;
    assert!(client.event_subscription_ids(&id).await?.is_empty());

    let refused = EventSubscriptionCreate { destination: "https://refused-by-bmc.example/".into(), ..wanted };
    let err = client.create_event_subscription(&id, &refused).await.expect_err("the BMC refuses it");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("never-shown"), "{shown}");
    client.delete_node(&id).await?;
    Ok(())
}
