//! Ironic and the operator's view of it disagreeing: Ironic losing its database (an ephemeral
//! SQLite Ironic rescheduled), where a provisioned host is registered again and adopted, never
//! deployed again; and a node that exists although the last poll did not show it (made by a
//! reconcile that died before the next poll, or by anyone else), which registration finds by
//! name instead of duplicating it.

use crate::host_common::{HostEnv, Options, secs};
use ferrometal_tests::wait;
use ironic_client::NodeCreate;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_provisioned_host_is_adopted_not_redeployed_after_ironic_loses_its_database() -> anyhow::Result<()> {
    let mut t = HostEnv::with_operator("host-adopt", Options::default()).await?;
    let recorder = t.record().await?;
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

#[tokio::test]
async fn a_node_made_after_the_last_poll_is_registered_as_found_never_duplicated() -> anyhow::Result<()> {
    let mut t = HostEnv::start("host-found", Options::default()).await?;
    let mut config = t.host_config();
    // After its first poll the operator looks again only in a minute, unless a host acts: its
    // snapshot says the host's node is missing.
    config.slow_poll_interval = Duration::from_secs(60);
    t.start_operator(config).await?;
    // The count is taken over once a poll has completed (no host exists to reconcile yet).
    wait::until("the first bulk poll", secs(30), Duration::from_millis(50), || async {
        (t.poll_count().ok()? >= 1).then_some(())
    })
    .await?;
    // The node a reconcile created before it died, as Ironic has it: enrolled, nothing more.
    let made =
        t.ironic_client().await?.create_node(&NodeCreate::new("fake-hardware").name(t.node_name("fake-0"))).await?;

    let mut spec = t.fake_spec("fake-0");
    spec["inspectionMode"] = json!("disabled");
    t.create_host("fake-0", spec, json!({})).await?;
    let host = t.wait_state("fake-0", "available", secs(60)).await?;

    assert_eq!(t.node_count().await?, 1, "one node, never a second of the same name");
    assert_eq!(host.status.unwrap_or_default().provisioning.id, made.uuid, "the host took the node made before");
    assert_eq!(t.ironic_request_count("create_node")?, 1, "the create Ironic refused");
    assert_eq!(t.ironic_request_count("get_node")?, 1, "then the node read by name");
    Ok(())
}
