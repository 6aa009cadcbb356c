//! Ironic losing its database (an ephemeral SQLite Ironic rescheduled):
//! a provisioned host is registered again and adopted, never deployed again.

mod common;
mod host_common;

use ferrometal_tests::wait;
use host_common::{HostEnv, Options, secs};
use std::time::Duration;

#[tokio::test]
async fn a_provisioned_host_is_adopted_not_redeployed_after_ironic_loses_its_database() -> anyhow::Result<()> {
    let mut t = HostEnv::with_operator("host-adopt", Options::default()).await?;
    let recorder = t.record();
    let (_, iso) = t.provisioned_fake_host("fake-0").await?;
    let first = t.node_uuid("fake-0").await?;
    assert!(t.ironic_transitions(&first)?.contains(&"deploying".to_string()), "it was deployed once");
    let states_before = recorder.states("fake-0").len();

    t.ironic.restart(true).await?;

    let node =
        wait::until_ok("the host's node back in Ironic, active", secs(60), Duration::from_millis(200), || async {
            Ok(t.node("fake-0").await?.filter(|n| n["uuid"] != first.as_str() && n["provision_state"] == "active"))
        })
        .await?;
    let second = node["uuid"].as_str().unwrap_or_default().to_string();
    assert_eq!(node["instance_info"]["boot_iso"], iso.as_str(), "adopted with its image");
    let transitions = t.ironic_transitions(&second)?;
    assert!(transitions.contains(&"adopting".to_string()), "{transitions:?}");
    assert!(
        !transitions.iter().any(|s| s == "deploying" || s == "wait call-back"),
        "the host was never deployed again: {transitions:?}"
    );
    let host = t
        .wait_for("fake-0", "the new node's ID", secs(30), |h| {
            h.status.as_ref().is_some_and(|s| s.provisioning.id == second)
        })
        .await?;
    let status = host.status.unwrap_or_default();
    assert_eq!(status.provisioning.state.as_str(), "provisioned");
    assert!(status.error_type.is_none());
    let states = recorder.states("fake-0");
    assert_eq!(states.len(), states_before, "the host stayed provisioned throughout: {states:?}");
    Ok(())
}
