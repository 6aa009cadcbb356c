//! The NodeLocked retry path on a real Ironic: a power change holds the
//! node's lock (fake power is slowed to 1 s per BMC call, so the lock is held
//! for about 2 s) while provisioning transitions arrive.
//!
//! Ironic's conductor itself waits for a busy lock before answering 409
//! (`[conductor]node_locked_retry_attempts`, 3 × 1 s by default), which would
//! hide a 2 s lock from the client; the servers here answer at once, so the
//! client's own retry path is what gets the transitions through.

mod common;

use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use ironic_client::{Error, IronicClient, Operation, PowerState, PowerTarget, ProvisionState};

async fn slow_power_ironic() -> anyhow::Result<(IronicServer, IronicClient)> {
    common::start(IronicConfig {
        extra: vec![
            ("fake".into(), "power_delay".into(), "1".into()),
            ("conductor".into(), "node_locked_retry_attempts".into(), "1".into()),
        ],
        ..IronicConfig::default()
    })
    .await
}

fn set_provision_retries(client: &IronicClient) -> u64 {
    let stats = client.metrics().snapshot();
    stats.iter().find(|s| s.operation == Operation::SetProvisionState).map_or(0, |s| s.retries)
}

#[tokio::test]
async fn a_transition_during_a_power_change_is_retried_until_the_lock_is_free() -> anyhow::Result<()> {
    let (_ironic, client) = slow_power_ironic().await?;
    let id = common::manageable_node(&client, "locked-0").await?;
    let retries_before = set_provision_retries(&client);

    // The power change is accepted at once; its worker then holds the lock.
    client.set_power_state(&id, PowerTarget::On, None).await?;
    let locked = client.get_node_fields(&id, &["reservation"]).await?;
    assert!(locked.reservation.is_some(), "the conductor holds the node");

    // Ironic answers 409 NodeLocked; the client backs off and retries.
    client.provide(&id).await?;
    assert!(set_provision_retries(&client) > retries_before, "provide was retried after NodeLocked");

    client.wait_for_provision_state(&id, ProvisionState::Available, common::fast()).await?;
    client.wait_for_power_state(&id, PowerState::On, common::fast()).await?;
    Ok(())
}

#[tokio::test]
async fn two_conflicting_transitions_at_once_both_succeed_or_one_gets_invalid_state() -> anyhow::Result<()> {
    let (_ironic, client) = slow_power_ironic().await?;
    let id = common::manageable_node(&client, "locked-1").await?;

    client.set_power_state(&id, PowerTarget::On, None).await?;
    // Both arrive while the lock is held, both are retried, and whichever
    // gets the node first moves it: the other then either succeeds (it came
    // after the first finished) or is refused by the state machine.
    let (provide, inspect) = tokio::join!(client.provide(&id), client.inspect(&id));
    let outcomes = [("provide", &provide), ("inspect", &inspect)];
    for (name, outcome) in outcomes {
        assert!(
            matches!(outcome, Ok(()) | Err(Error::InvalidState(_))),
            "{name}: expected success or InvalidState, got {outcome:?}"
        );
    }
    assert!(provide.is_ok() || inspect.is_ok(), "one of them moved the node");
    assert!(set_provision_retries(&client) > 0, "the lock was hit and retried");

    // The node settles in the state the successful transitions lead to.
    let settled = if provide.is_ok() { ProvisionState::Available } else { ProvisionState::Manageable };
    client.wait_for_provision_state(&id, settled, common::fast()).await?;
    Ok(())
}
