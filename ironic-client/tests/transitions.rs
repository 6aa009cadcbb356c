//! Every provisioning transition against a real Ironic with fake hardware,
//! including the failures a waiter must recognise.

mod common;

use ferrometal_tests::ironic::IronicConfig;
use ironic_client::{
    DeployRequest, DeployStep, Error, NodeCreate, PatchOperation, PowerState, PowerTarget, ProvisionState,
    ProvisionTarget, Secret, Step,
};

#[tokio::test]
async fn every_transition_reaches_its_state() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    let id = common::fake_node(&client, "transitions-0").await?.uuid;
    let wait = |state| client.wait_for_provision_state(&id, state, common::fast());

    client.manage(&id).await?;
    wait(ProvisionState::Manageable).await?;
    client.inspect(&id).await?;
    wait(ProvisionState::Manageable).await?;

    // Manual cleaning with real fake-hardware clean steps.
    client.clean(&id, vec![Step::new("bios", "factory_reset"), Step::new("vendor", "log_passthrough")]).await?;
    let cleaned = wait(ProvisionState::Manageable).await?;
    assert_eq!(cleaned.last_error, None);

    // Adopt a machine that is already deployed.
    client.adopt(&id).await?;
    wait(ProvisionState::Active).await?;

    // Servicing with a service step.
    client.service(&id, vec![Step::new("vendor", "log_passthrough")]).await?;
    wait(ProvisionState::Active).await?;

    // Rescue with a password, and back.
    client.rescue(&id, Secret::from("rescue-pw")).await?;
    wait(ProvisionState::Rescue).await?;
    client.unrescue(&id).await?;
    wait(ProvisionState::Active).await?;

    // Rebuild needs an image source in Ironic 39 (it answers 500 otherwise).
    client.update_node(&id, &[PatchOperation::add("/instance_info/image_source", "http://images/os.img")]).await?;
    client.rebuild(&id, DeployRequest::default()).await?;
    wait(ProvisionState::Active).await?;

    // A transition the state machine refuses is a typed InvalidState.
    let refused = client.provide(&id).await;
    assert!(matches!(refused, Err(Error::InvalidState(_))), "{refused:?}");

    // A service step that parks the node in `service wait`. Its abort (through the generic
    // entry point) is accepted, but Ironic defers it until the step allows, which this fake
    // step never does; the abort that takes effect is shown below, in `wait call-back`.
    client.service(&id, vec![Step::new("vendor", "trigger_servicewait")]).await?;
    wait(ProvisionState::ServiceWait).await?;
    client.set_provision_state(&id, &ProvisionTarget::Abort).await?;

    // A node that is not idle can only be deleted in maintenance.
    let refused = client.delete_node(&id).await;
    assert!(matches!(refused, Err(Error::InvalidState(_))), "{refused:?}");
    client.set_maintenance(&id, Some("leave service wait")).await?;
    client.delete_node(&id).await?;
    assert!(client.find_node(&id).await?.is_none());
    Ok(())
}

#[tokio::test]
async fn a_failed_deployment_is_reported_with_ironics_last_error() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    let id = common::available_node(&client, "failing-0").await?;

    // Disabling the only (core) deploy step makes the deployment fail.
    let request = DeployRequest {
        configdrive: None,
        deploy_steps: vec![DeployStep { step: Step::new("deploy", "deploy"), priority: 0 }],
    };
    client.deploy(&id, request).await?;
    let outcome = client.wait_for_provision_state(&id, ProvisionState::Active, common::fast()).await;
    let Err(Error::ProvisionFailed { state, last_error, .. }) = outcome else {
        panic!("expected ProvisionFailed, got {outcome:?}");
    };
    assert_eq!(state, ProvisionState::DeployFailed);
    assert!(last_error.is_some_and(|e| e.contains("No deploy steps")));
    Ok(())
}

#[tokio::test]
async fn every_power_target_is_accepted_and_ends_in_its_power_state() -> anyhow::Result<()> {
    let (_ironic, client) = common::start(IronicConfig::default()).await?;
    let id = common::fake_node(&client, "power-0").await?.uuid;
    let power = |target, timeout, wanted| {
        let client = client.clone();
        let id = id.clone();
        async move {
            client.set_power_state(&id, target, timeout).await?;
            let node = client.wait_for_power_state(&id, wanted, common::fast()).await?;
            anyhow::ensure!(node.target_power_state.is_none(), "{target:?} settled");
            anyhow::Ok(())
        }
    };
    let timeout = Some(std::time::Duration::from_secs(30));
    power(PowerTarget::On, None, PowerState::On).await?;
    power(PowerTarget::Reboot, None, PowerState::On).await?;
    power(PowerTarget::SoftOff, timeout, PowerState::Off).await?;
    power(PowerTarget::On, None, PowerState::On).await?;
    power(PowerTarget::SoftReboot, timeout, PowerState::On).await?;
    power(PowerTarget::Off, None, PowerState::Off).await?;
    Ok(())
}

#[tokio::test]
async fn an_abort_ends_a_deployment_waiting_for_its_agent_in_deploy_failed() -> anyhow::Result<()> {
    let (ironic, client) = common::start(IronicConfig::default()).await?;
    // The agent deploy (`direct`) on fake hardware: the fake boot "boots" the ramdisk, and
    // the deployment waits for an agent that never calls back.
    let images = ironic.image_server();
    std::fs::write(images.root().join("disk.img"), b"a disk image")?;
    let mut create = NodeCreate::new("fake-hardware").name("abort-0");
    create.interfaces.deploy_interface = Some("direct".into());
    let id = client.create_node(&create).await?.uuid;
    client.manage(&id).await?;
    client.wait_for_provision_state(&id, ProvisionState::Manageable, common::fast()).await?;
    client.provide(&id).await?;
    client.wait_for_provision_state(&id, ProvisionState::Available, common::fast()).await?;
    let image = format!("{}/disk.img", images.url());
    client
        .update_node(
            &id,
            &[
                PatchOperation::add("/instance_info/image_source", image.as_str()),
                PatchOperation::add("/instance_info/image_os_hash_algo", "sha256"),
                PatchOperation::add("/instance_info/image_os_hash_value", "5".repeat(64).as_str()),
            ],
        )
        .await?;
    client.deploy(&id, DeployRequest::default()).await?;
    client.wait_for_provision_state(&id, ProvisionState::DeployWait, common::fast()).await?;

    client.abort(&id).await?;
    let aborted = client.wait_for_provision_state(&id, ProvisionState::Active, common::fast()).await;
    assert!(
        matches!(aborted, Err(Error::ProvisionFailed { state: ProvisionState::DeployFailed, .. })),
        "the abort ends the deployment: {aborted:?}"
    );
    Ok(())
}
