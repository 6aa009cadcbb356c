//! Every provisioning transition against a real Ironic with fake hardware,
//! including the failures a waiter must recognise.

mod common;

use ferrometal_tests::ironic::IronicConfig;
use ironic_client::{DeployRequest, DeployStep, Error, PatchOperation, ProvisionState, ProvisionTarget, Secret, Step};

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

    // A service step that parks the node in `service wait`, then abort
    // (through the generic entry point). Ironic accepts the abort and applies
    // it once the running step allows.
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
