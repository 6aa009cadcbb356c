//! A fake-hardware node through its whole life on a real Ironic:
//! enroll → manageable → available → active → available → deleted.

mod common;

use ferrometal_tests::ironic::IronicConfig;
use ironic_client::{
    ApiVersion, ConfigDrive, ConfigDriveData, DeployRequest, JsonObject, Operation, PowerState, PowerTarget,
    ProvisionState,
};
use serde_json::json;

#[tokio::test]
async fn fake_node_goes_from_enroll_to_active_and_back_to_deleted() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    // The newest version both sides speak: 1.115 with Ironic 39, 1.111 with the oldest (35).
    let (major, minor) = ferrometal_tests::env::IronicRelease::chosen()?.max_api_version();
    assert_eq!(client.api_version(), ApiVersion::new(major, minor), "negotiated the release's newest version");

    let node = common::fake_node(&client, "lifecycle-0").await?;
    assert_eq!(node.provision_state, Some(ProvisionState::Enroll));
    let id = node.uuid.as_str();

    client.manage(id).await?;
    client.wait_for_provision_state(id, ProvisionState::Manageable, common::fast()).await?;

    client.provide(id).await?;
    client.wait_for_provision_state(id, ProvisionState::Available, common::fast()).await?;

    client.set_power_state(id, PowerTarget::On, None).await?;
    client.wait_for_power_state(id, PowerState::On, common::fast()).await?;

    let mut meta = JsonObject::new();
    meta.insert("local-hostname".into(), json!("lifecycle-0"));
    let drive = ConfigDriveData {
        meta_data: meta,
        user_data: Some(json!("#cloud-config\n")),
        network_data: Some(json!({"links": [], "networks": [], "services": []})),
        vendor_data: None,
    };
    let request = DeployRequest { configdrive: Some(ConfigDrive::Json(drive)), deploy_steps: Vec::new() };
    client.deploy(id, request).await?;
    let active = client.wait_for_provision_state(id, ProvisionState::Active, common::fast()).await?;
    assert_eq!(active.last_error, None);
    let deployed = client.get_node(id).await?;
    assert_eq!(deployed.instance_info["configdrive"], "******", "Ironic stored (and masks) the drive");

    client.undeploy(id).await?;
    client.wait_for_provision_state(id, ProvisionState::Available, common::fast()).await?;

    client.delete_node(id).await?;
    assert!(client.find_node(id).await?.is_none(), "the node is gone");

    let metrics = client.metrics();
    assert_eq!(metrics.requests(Operation::SetProvisionState), 4, "manage, provide, deploy, undeploy");
    assert_eq!(metrics.requests(Operation::Discover), 1);
    Ok(())
}
