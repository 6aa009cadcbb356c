//! The whole BareMetalHost lifecycle against a real Ironic: a fake-hardware
//! host, a redfish-virtualmedia host on sushy-tools booting a live ISO, and
//! the agent (`direct`) deploy request of a disk image, which gets as far
//! as `wait call-back` here (no ramdisk can run on loopback).

use crate::host_common::{HostEnv, Options, assert_in_order, secs, uid};
use anyhow::Context as _;
use crds::hardwaredata::HardwareData;
use kube::ResourceExt;
use kube::api::Api;
use serde_json::json;

const FULL_CYCLE: [&str; 11] = [
    "registering",
    "inspecting",
    "preparing",
    "available",
    "provisioning",
    "provisioned",
    "deprovisioning",
    "available",
    "powering off before delete",
    "deleting",
    "<deleted>",
];

#[tokio::test]
async fn a_fake_hardware_host_goes_through_the_whole_lifecycle() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-fake", Options::default()).await?;
    let recorder = t.record().await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.fake_spec("fake-0");
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    let created = t.create_host("fake-0", spec, json!({})).await?;

    let host = t.wait_provisioned("fake-0", secs(60)).await?;
    let node = t.node("fake-0").await?.context("the host has an Ironic node")?;
    assert_eq!(node["power_state"], "power on", "online: true powers the host on");
    assert_eq!(node["driver"], "fake-hardware");
    assert_eq!(node["provision_state"], "active");
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str());
    assert_eq!(node["instance_uuid"], uid(&created).as_str());
    let status = host.status.clone().unwrap_or_default();
    assert_eq!(status.provisioning.id, node["uuid"].as_str().unwrap_or_default());
    assert_eq!(status.provisioning.image.as_ref().map(|i| i.url.as_str()), Some(iso.as_str()));
    assert!(host.finalizers().iter().any(|f| f == "baremetalhost.metal3.io"));
    let metrics = t.operator()?.metrics();
    assert_eq!(
        metrics.apiserver_request_count("create", "hostfirmwaresettings"),
        1,
        "its settings object made once, with the status that shows the node, not at every reconcile before"
    );
    let hardware: Api<HardwareData> = Api::namespaced(t.env.client(), t.ns());
    let data = hardware.get("fake-0").await.context("inspection wrote HardwareData")?;
    assert_eq!(data.owner_references().first().map(|o| o.uid.as_str()), Some(uid(&created).as_str()));

    // Removing the image deprovisions the host.
    t.deprovision("fake-0", secs(60)).await?;
    assert_eq!(t.node("fake-0").await?.context("node")?["provision_state"], "available");

    // Deleting it removes the node, then the host.
    t.delete_host("fake-0").await?;
    t.wait_gone("fake-0", secs(60)).await?;
    assert!(t.node("fake-0").await?.is_none(), "the Ironic node is deleted with the host");
    assert_in_order(&recorder.states("fake-0"), &FULL_CYCLE);
    // Every state change was announced in an Event.
    let expected =
        ["Registering", "Inspecting", "Available", "Provisioning", "Provisioned", "Deprovisioning", "PowerChange"];
    t.wait_events("fake-0", &expected).await?;
    Ok(())
}

#[tokio::test]
async fn a_redfish_virtualmedia_host_goes_through_the_whole_lifecycle_with_a_live_iso() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-redfish", Options { sushy_systems: Some(1), ..Options::default() }).await?;
    let recorder = t.record().await?;
    t.credentials_secret("bmc", crate::host_common::BMC_USER, crate::host_common::BMC_PASSWORD).await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    let created = t.create_host("rf-0", spec, json!({})).await?;

    let host = t.wait_provisioned("rf-0", secs(120)).await?;
    let node = t.node("rf-0").await?.context("the host has an Ironic node")?;
    assert_eq!(node["driver"], "redfish");
    assert_eq!(node["boot_interface"], "redfish-virtual-media");
    assert_eq!(node["inspect_interface"], "redfish");
    assert_eq!(node["deploy_interface"], "ramdisk", "a live ISO is booted by the ramdisk deploy");
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str());
    assert_eq!(node["instance_uuid"], uid(&created).as_str());
    assert_eq!(node["provision_state"], "active");
    assert_eq!(node["automated_clean"], false, "automatedCleaningMode: disabled");
    let sushy = t.sushy.as_ref().context("sushy")?;
    let system = sushy.systems().first().context("system")?;
    assert_eq!(node["driver_info"]["redfish_system_id"], sushy.redfish_system_id(system).as_str());
    assert_eq!(sushy.power_state(system).await?, "On");
    let status = host.status.clone().unwrap_or_default();
    let good = status.good_credentials.as_ref().and_then(|c| c.credentials.as_ref()).and_then(|r| r.name.as_deref());
    assert_eq!(good, Some("bmc"));
    // Inspection: a summary in status, everything in HardwareData.
    let summary = status.hardware.context("status.hardware")?;
    assert_eq!(summary.cpu.as_ref().and_then(|c| c.count), Some(4));
    assert_eq!(summary.ram_mebibytes, Some(8 * 1024));
    let hardware: Api<HardwareData> = Api::namespaced(t.env.client(), t.ns());
    let data = hardware.get("rf-0").await?.spec.hardware.context("HardwareData has the details")?;
    let nics = data.nics.unwrap_or_default();
    assert!(nics.iter().any(|n| n.mac.as_deref() == Some(system.mac.as_str())), "{nics:?}");
    assert!(data.storage.is_some_and(|s| !s.is_empty()));

    t.deprovision("rf-0", secs(120)).await?;
    let node = t.node("rf-0").await?.context("node")?;
    assert_eq!(node["provision_state"], "available");
    assert!(node["instance_info"].get("boot_iso").is_none(), "undeploy wiped instance_info");

    t.delete_host("rf-0").await?;
    t.wait_gone("rf-0", secs(120)).await?;
    assert!(t.node("rf-0").await?.is_none());
    assert_eq!(sushy.power_state(system).await?, "Off", "powered off before delete");
    assert_in_order(&recorder.states("rf-0"), &FULL_CYCLE);
    Ok(())
}

#[tokio::test]
async fn a_disk_image_is_deployed_by_the_agent_up_to_wait_callback() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-direct", Options { sushy_systems: Some(1), ..Options::default() }).await?;
    let images = t.ironic.image_server();
    // Ironic checks that the image exists before deploying it.
    let content = b"not really a qcow2 image";
    std::fs::write(images.root().join("os.qcow2"), content)?;
    let image_url = format!("{}/os.qcow2", images.url());
    // Only the agent would verify it; Ironic passes it on.
    let digest = "5".repeat(64);
    let mut config = t.host_config();
    config.deploy_iso_url = Some(images.write_live_iso("deploy.iso")?);
    let deploy_iso = config.deploy_iso_url.clone();
    t.start_operator(config).await?;
    t.credentials_secret("bmc", crate::host_common::BMC_USER, crate::host_common::BMC_PASSWORD).await?;
    t.data_secret("user-data", "userData", "#cloud-config\nhostname: direct-0\n").await?;
    t.data_secret("network-data", "networkData", "links: []\nnetworks: []\nservices: []\n").await?;
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["image"] = json!({"url": image_url, "checksum": digest, "checksumType": "sha256", "format": "qcow2"});
    spec["rootDeviceHints"] = json!({"deviceName": "/dev/sda", "minSizeGigabytes": 10});
    spec["userData"] = json!({"name": "user-data"});
    spec["networkData"] = json!({"name": "network-data"});
    spec["bootMode"] = json!("UEFI");
    let created = t.create_host("direct-0", spec, json!({})).await?;

    let node = t.wait_node_state("direct-0", "wait call-back", secs(120)).await?;
    assert_eq!(node["deploy_interface"], "direct");
    assert_eq!(node["target_provision_state"], "active");
    let info = &node["instance_info"];
    assert_eq!(info["image_source"], image_url.as_str());
    assert_eq!(info["image_os_hash_algo"], "sha256");
    assert_eq!(info["image_os_hash_value"], digest.as_str());
    assert_eq!(info["image_disk_format"], "qcow2");
    assert!(info.get("boot_iso").is_none());
    assert!(info.get("configdrive").is_some(), "the config drive went with the deploy request: {info}");
    assert_eq!(node["properties"]["root_device"], json!({"name": "s== /dev/sda", "size": ">= 10"}));
    assert!(node["properties"]["capabilities"].as_str().is_some_and(|c| c.contains("boot_mode:uefi")));
    assert_eq!(node["driver_info"]["deploy_iso"], json!(deploy_iso));
    assert_eq!(node["instance_uuid"], uid(&created).as_str());
    let host = t.wait_state("direct-0", "provisioning", secs(10)).await?;
    let status = host.status.unwrap_or_default();
    assert_eq!(status.last_attempted_image.map(|i| i.url), Some(image_url));
    assert!(status.error_type.is_none(), "waiting for the agent is not an error");
    Ok(())
}
