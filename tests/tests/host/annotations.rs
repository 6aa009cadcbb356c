//! The annotations that change what the controller does to a host:
//! detached (leave Ironic without deprovisioning) and paused (hands off).

use crate::host_common::{HostEnv, Options, secs};
use anyhow::Context as _;
use crds::baremetalhost::OperationalStatus;
use ferrometal_tests::wait;
use kube::ResourceExt;
use serde_json::json;
use std::time::Duration;

const DETACHED: &str = "baremetalhost.metal3.io/detached";
const PAUSED: &str = "baremetalhost.metal3.io/paused";

#[tokio::test]
async fn a_detached_host_is_deleted_without_ironic_ever_deleting_it() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-detach", Options::default()).await?;
    let recorder = t.record().await?;
    t.provisioned_fake_host("fake-0").await?;
    let uuid = t.node_uuid("fake-0").await?;

    t.patch_host("fake-0", json!({"metadata": {"annotations": {DETACHED: ""}}})).await?;
    let detached = t
        .wait_for("fake-0", "detached", secs(30), |h| {
            h.status.as_ref().is_some_and(|s| s.operational_status == OperationalStatus::Detached)
        })
        .await?;
    assert_eq!(detached.status.map(|s| s.provisioning.state.as_str()), Some("provisioned"));
    assert!(t.node("fake-0").await?.is_none(), "the node left Ironic");

    t.delete_host("fake-0").await?;
    t.wait_gone("fake-0", secs(30)).await?;
    let transitions = t.ironic_transitions(&uuid)?;
    assert!(transitions.contains(&"active".to_string()), "the log covers the node: {transitions:?}");
    assert!(!transitions.iter().any(|s| s == "deleting"), "Ironic never deprovisioned it: {transitions:?}");
    let states = recorder.states("fake-0");
    assert!(!states.iter().any(|s| s == "deprovisioning" || s == "deleting"), "{states:?}");
    Ok(())
}

#[tokio::test]
async fn a_paused_host_is_left_untouched() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-paused", Options::default()).await?;
    let mut spec = t.fake_spec("paused-new");
    spec["inspectionMode"] = json!("disabled");
    t.create_host("paused-new", spec, json!({PAUSED: ""})).await?;
    let mut spec = t.fake_spec("running");
    spec["inspectionMode"] = json!("disabled");
    t.create_host("running", spec, json!({})).await?;
    t.wait_for("running", "available and powered on", secs(60), |h| {
        h.status.as_ref().is_some_and(|s| s.provisioning.state.as_str() == "available" && s.powered_on)
    })
    .await?;

    // A new paused host is never registered, not even given a finalizer.
    let paused = t.hosts.get("paused-new").await?;
    assert!(paused.status.is_none(), "{:?}", paused.status);
    assert!(paused.finalizers().is_empty());
    assert!(t.node("paused-new").await?.is_none());

    // Pausing a managed host freezes it: a new power target is not applied.
    let before = t.patch_host("running", json!({"metadata": {"annotations": {PAUSED: ""}}})).await?;
    t.patch_host("running", json!({"spec": {"online": false}})).await?;
    let polls = t.poll_count()?;
    let writes = t.operator()?.metrics().status_write_count("host");
    // Three bulk polls later the controller has seen everything there is to see.
    wait::until("three more bulk polls", secs(30), Duration::from_millis(100), || async {
        (t.poll_count().ok()? >= polls + 3).then_some(())
    })
    .await?;
    let node = t.node("running").await?.context("node")?;
    assert_eq!(node["power_state"], "power on", "the paused host was not powered off");
    assert_eq!(t.operator()?.metrics().status_write_count("host"), writes, "no status was written");
    let after = t.hosts.get("running").await?;
    assert_eq!(after.status, before.status);

    // Unpausing lets the controller catch up.
    t.patch_host("running", json!({"metadata": {"annotations": {PAUSED: null}}})).await?;
    t.wait_for("running", "powered off", secs(30), |h| h.status.as_ref().is_some_and(|s| !s.powered_on)).await?;
    Ok(())
}
