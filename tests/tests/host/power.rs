//! Power through the reboot annotations, on fake-hardware hosts: `reboot.metal3.io` powers a
//! host off and on again, once; a host that may not be powered off (`disablePowerOff`) is
//! rebooted in place, once.

use crate::host_common::{HostEnv, Options, secs};
use ferrometal_tests::wait;
use kube::ResourceExt;
use serde_json::json;
use std::time::Duration;

const REBOOT: &str = "reboot.metal3.io";

/// Waits for `polls` more bulk polls: by then the controller has acted on what it saw.
async fn polls(t: &HostEnv, polls: u64) -> anyhow::Result<()> {
    let start = t.poll_count()?;
    wait::until("more bulk polls", secs(30), Duration::from_millis(100), || async {
        (t.poll_count().ok()? >= start + polls).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_reboot_annotation_powers_the_host_off_and_on_once_and_is_cleared() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-reboot", Options::default()).await?;
    t.provisioned_fake_host("fake-0").await?;
    polls(&t, 2).await?;
    let before = t.ironic_request_count("set_power_state")?;

    t.patch_host("fake-0", json!({"metadata": {"annotations": {REBOOT: ""}}})).await?;
    let host = t
        .wait_for("fake-0", "the reboot request cleared and powered on", secs(60), |h| {
            !h.annotations().contains_key(REBOOT) && h.status.as_ref().is_some_and(|s| s.powered_on)
        })
        .await?;
    assert_eq!(host.status.map(|s| s.provisioning.state.as_str()), Some("provisioned"), "not reprovisioned");
    polls(&t, 3).await?;
    assert_eq!(t.ironic_request_count("set_power_state")? - before, 2, "one power off, one power on");
    let node = t.node("fake-0").await?.expect("node");
    assert_eq!(node["power_state"], "power on");
    Ok(())
}

#[tokio::test]
async fn a_host_that_may_not_be_powered_off_is_rebooted_in_place_once() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-reboot-in-place", Options::default()).await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.fake_spec("fake-0");
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    spec["disablePowerOff"] = json!(true);
    t.create_host("fake-0", spec, json!({})).await?;
    t.wait_provisioned("fake-0", secs(60)).await?;
    polls(&t, 2).await?;
    let before = t.ironic_request_count("set_power_state")?;

    t.patch_host("fake-0", json!({"metadata": {"annotations": {REBOOT: ""}}})).await?;
    t.wait_for("fake-0", "the reboot request cleared", secs(60), |h| !h.annotations().contains_key(REBOOT)).await?;
    // Several polls later, after the host settled back to power on: still one reboot.
    polls(&t, 5).await?;
    assert_eq!(t.ironic_request_count("set_power_state")? - before, 1, "one reboot, never a power off");
    let host = t.hosts.get("fake-0").await?;
    assert!(host.status.as_ref().is_some_and(|s| s.powered_on));
    Ok(())
}
