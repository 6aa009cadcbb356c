//! Host modes baremetal-operator users rely on, end to end on fake hardware: externally
//! provisioned hosts (adopted, never deployed), unmanaged hosts (no BMC), a host re-created
//! with its status in the `baremetalhost.metal3.io/status` annotation (a move between
//! clusters: adopted, never redeployed), and `inspect.metal3.io` (inspect again).

use crate::host_common::{HostEnv, Options, secs};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

const STATUS: &str = "baremetalhost.metal3.io/status";
const INSPECT: &str = "inspect.metal3.io";

#[tokio::test]
async fn an_externally_provisioned_host_is_adopted_and_never_deployed() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-external", Options::default()).await?;
    let iso = t.ironic.image_server().write_live_iso("live.iso")?;
    let mut spec = t.fake_spec("ext-0");
    spec["externallyProvisioned"] = json!(true);
    spec["image"] = json!({"url": iso, "format": "live-iso"});
    t.create_host("ext-0", spec, json!({})).await?;

    let host = t.wait_state("ext-0", "externally provisioned", secs(60)).await?;
    assert!(host.status.as_ref().is_some_and(|s| s.error_type.is_none()), "{:?}", host.status);
    let uuid = t.node_uuid("ext-0").await?;
    let node = t.wait_node_state("ext-0", "active", secs(60)).await?;
    assert_eq!(node["uuid"], uuid.as_str());
    let transitions = t.ironic_transitions(&uuid)?;
    assert!(transitions.iter().any(|s| s == "adopting"), "adopted: {transitions:?}");
    assert!(!transitions.iter().any(|s| s == "deploying" || s == "wait call-back"), "{transitions:?}");
    Ok(())
}

#[tokio::test]
async fn a_host_without_a_bmc_is_unmanaged_and_never_registered() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-unmanaged", Options::default()).await?;
    t.create_host("bare-0", json!({"online": false, "bootMACAddress": "52:54:00:00:00:09"}), json!({})).await?;
    t.wait_state("bare-0", "unmanaged", secs(30)).await?;
    assert_eq!(t.node_count().await?, 0, "nothing was registered in Ironic");
    assert_eq!(t.ironic_request_count("create_node")?, 0);
    Ok(())
}

#[tokio::test]
async fn a_host_recreated_with_its_status_annotation_is_adopted_not_redeployed() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-restore", Options::default()).await?;
    let (provisioned, iso) = t.provisioned_fake_host("moved-0").await?;
    let status = serde_json::to_string(&provisioned.status)?;
    let spec = serde_json::to_value(&provisioned.spec)?;

    // The move: the host leaves (detached, so Ironic keeps nothing deployed away from it) and
    // comes back as a new object carrying its old status.
    t.patch_host("moved-0", json!({"metadata": {"annotations": {"baremetalhost.metal3.io/detached": ""}}})).await?;
    t.wait_for("moved-0", "detached", secs(30), |h| {
        h.status.as_ref().is_some_and(|s| s.operational_status == crds::baremetalhost::OperationalStatus::Detached)
    })
    .await?;
    t.hosts.delete("moved-0", &DeleteParams::default()).await?;
    t.wait_gone("moved-0", secs(30)).await?;
    assert!(t.node("moved-0").await?.is_none(), "the node left Ironic with the detached host");

    let recreated = t.create_host("moved-0", spec, json!({STATUS: status})).await?;
    t.wait_provisioned("moved-0", secs(60)).await?;
    // The restored status is written first and the annotation dropped right after it.
    let host = t
        .wait_for("moved-0", "without its status annotation", secs(30), |h| !h.annotations().contains_key(STATUS))
        .await?;
    assert_ne!(recreated.uid(), provisioned.uid(), "a new object");
    assert!(!host.annotations().contains_key(STATUS), "the annotation is consumed");
    let restored = host.status.expect("status");
    assert_eq!(restored.provisioning.image.as_ref().map(|i| i.url.as_str()), Some(iso.as_str()));
    // The restored status says provisioned at once; behind it the host is registered again
    // and its running machine adopted.
    let node = t.wait_node_state("moved-0", "active", secs(60)).await?;
    let uuid = node["uuid"].as_str().unwrap_or_default().to_string();
    let transitions = t.ironic_transitions(&uuid)?;
    assert!(transitions.iter().any(|s| s == "adopting"), "the running machine is adopted: {transitions:?}");
    assert!(!transitions.iter().any(|s| s == "deploying"), "never redeployed: {transitions:?}");
    Ok(())
}

#[tokio::test]
async fn a_host_whose_status_was_lost_while_its_node_is_active_is_adopted_not_redeployed() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-lost-status", Options::default()).await?;
    let (provisioned, _) = t.provisioned_fake_host("lost-0").await?;
    let spec = serde_json::to_value(&provisioned.spec)?;
    let uuid = t.node_uuid("lost-0").await?;
    let before = t.ironic_transitions(&uuid)?;
    let count = |seen: &[String], state: &str| seen.iter().filter(|s| *s == state).count();

    // The status is lost without the operator's help: the host is paused (the operator lets
    // it be), its finalizer is dropped by hand and it is created again, without a status
    // annotation. Ironic still has the node, active.
    t.patch_host("lost-0", json!({"metadata": {"annotations": {"baremetalhost.metal3.io/paused": ""}}})).await?;
    t.hosts.delete("lost-0", &DeleteParams::default()).await?;
    t.hosts.patch("lost-0", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await?;
    t.wait_gone("lost-0", secs(30)).await?;
    assert_eq!(t.node_uuid("lost-0").await?, uuid, "Ironic keeps the node");

    t.create_host("lost-0", spec, json!({})).await?;
    let host = t.wait_provisioned("lost-0", secs(60)).await?;
    let status = host.status.expect("status");
    assert!(status.error_type.is_none(), "{status:?}");
    assert_eq!(status.provisioning.id, uuid, "the same node");
    let transitions = t.ironic_transitions(&uuid)?;
    assert_eq!(transitions.len(), before.len(), "the node never moved again: {transitions:?}");
    assert_eq!(count(&transitions, "deploying"), count(&before, "deploying"), "never redeployed: {transitions:?}");
    assert_eq!(count(&transitions, "inspecting"), count(&before, "inspecting"), "not inspected again: {transitions:?}");
    Ok(())
}

#[tokio::test]
async fn a_restored_condition_time_at_the_end_of_the_calendar_does_not_crash_the_controller() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-restore-far", Options::default()).await?;
    // A registration error "recorded" just before the end of what the API can represent.
    let status = json!({
        "errorType": "registration error", "errorCount": 2147483647, "errorMessage": "boom",
        "operationalStatus": "error",
        "provisioning": {"state": "registering", "ID": ""},
        "conditions": [{"type": "Degraded", "status": "True", "reason": "RegistrationError", "message": "boom",
            "observedGeneration": 1, "lastTransitionTime": "9999-12-30T00:00:00Z"}],
    });
    t.create_host("far-0", t.fake_spec("far-0"), json!({STATUS: status.to_string()})).await?;
    let warned = t.wait_events("far-0", &["StatusRestored", "StatusRestoreCorrected"]).await?;
    assert!(warned.iter().any(|r| r == "StatusRestoreCorrected"), "{warned:?}");
    // The controller lives on: another host goes all the way.
    t.provisioned_fake_host("next-0").await?;
    let host = t.hosts.get("far-0").await?;
    let conditions = host.status.and_then(|s| s.conditions).unwrap_or_default();
    let now = k8s_openapi::jiff::Timestamp::now();
    assert!(conditions.iter().all(|c| c.last_transition_time.0 <= now), "{conditions:?}");
    Ok(())
}

#[tokio::test]
async fn the_inspect_annotation_inspects_an_available_host_again_and_is_consumed() -> anyhow::Result<()> {
    let t = HostEnv::with_operator("host-reinspect", Options::default()).await?;
    let recorder = t.record().await?;
    t.create_host("insp-0", t.fake_spec("insp-0"), json!({})).await?;
    t.wait_state("insp-0", "available", secs(60)).await?;
    let inspected_once = recorder.states("insp-0").iter().filter(|s| *s == "inspecting").count();
    assert_eq!(inspected_once, 1, "{:?}", recorder.states("insp-0"));

    let patch = json!({"metadata": {"annotations": {INSPECT: ""}}});
    t.hosts.patch("insp-0", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let host = t
        .wait_for("insp-0", "inspected again and available", secs(60), |h| {
            !h.annotations().contains_key(INSPECT)
                && h.status.as_ref().is_some_and(|s| s.provisioning.state.as_str() == "available")
        })
        .await?;
    assert!(host.status.is_some());
    let states = recorder.states("insp-0");
    assert_eq!(states.iter().filter(|s| *s == "inspecting").count(), 2, "inspected a second time: {states:?}");
    Ok(())
}
