//! DataImage against Ironic and an emulated Redfish BMC: an ISO attached to an externally
//! provisioned host's virtual CD at its next power on (Ironic's virtual media API), never twice,
//! ejected at the power on after its DataImage is deleted (which waits for it), and an image
//! Ironic cannot download recorded as the DataImage's error while the host boots without it;
//! the host never leaves `externally provisioned` and its node never leaves `active`.

use super::components::reboot;
use super::firmware::{object_until, with_operator};
use crate::host_common::{HostEnv, secs};
use anyhow::Context as _;
use crds::condition::find;
use crds::dataimage::DataImage;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

fn ready_reason(image: &DataImage) -> Option<String> {
    image.status.as_ref().and_then(|s| find(&s.conditions, "Ready")).map(|c| c.reason.clone())
}

fn attached(image: &DataImage) -> Option<String> {
    image.status.as_ref().and_then(|s| s.attached_image.as_ref()).map(|a| a.url.clone())
}

fn data_image(name: &str, url: &str) -> anyhow::Result<DataImage> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "DataImage",
        "metadata": {"name": name}, "spec": {"url": url}
    }))?)
}

/// Whether the node's virtual CD holds an image, as Ironic reads it from the BMC.
async fn cd_inserted(t: &HostEnv, uuid: &str) -> anyhow::Result<bool> {
    let media = t.ironic_client().await?.list_virtual_media(uuid).await?;
    Ok(media.iter().any(|m| m.inserted))
}

#[tokio::test]
async fn a_data_image_is_attached_at_power_on_once_ejected_after_its_deletion_and_a_failure_recorded_in_place()
-> anyhow::Result<()> {
    let t = with_operator("host-dataimage", 1).await?;
    let api: Api<DataImage> = Api::namespaced(t.env.client(), t.ns());
    let recorder = t.record().await?;
    let mut spec = t.redfish_spec(0, "bmc")?;
    spec["externallyProvisioned"] = json!(true);
    spec["image"] = json!({"url": t.ironic.image_server().write_live_iso("live.iso")?, "format": "live-iso"});
    let host = t.create_host("di-0", spec, json!({})).await?;
    t.wait_for("di-0", "externally provisioned and on", secs(240), |h| {
        h.status.as_ref().is_some_and(|s| {
            s.provisioning.state == crds::baremetalhost::ProvisioningState::ExternallyProvisioned && s.powered_on
        })
    })
    .await?;
    let uuid = t.node_uuid("di-0").await?;
    let adopted = t.ironic_transitions(&uuid)?.len();
    assert!(!cd_inserted(&t, &uuid).await?, "the CD starts empty");

    // What Ironic cannot attach is refused at admission, with the field.
    for url in ["oci://registry.example/data:1", "ftp://192.0.2.1/data.iso", "http://u:p@192.0.2.1/data.iso"] {
        let refused = api.create(&PostParams::default(), &data_image("di-0", url)?).await;
        assert!(format!("{refused:?}").contains("spec.url"), "{url}: {refused:?}");
    }

    // Accepted, it waits for the host's power on, owned by the host and kept by our finalizer.
    let url = t.ironic.image_server().write_live_iso("data.iso")?;
    api.create(&PostParams::default(), &data_image("di-0", &url)?).await?;
    let waiting = object_until(&api, "di-0", "awaiting the power on", |d| {
        ready_reason(d).as_deref() == Some("AwaitingPowerOn")
            && d.finalizers().iter().any(|f| f == "dataimage.metal3.io")
    })
    .await?;
    let owner = waiting.owner_references().first().context("owned")?;
    assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("BareMetalHost", host.uid().unwrap_or_default().as_str()));
    assert!(!cd_inserted(&t, &uuid).await?, "nothing attached to a running host");

    // The reboot attaches it before the host is powered on.
    reboot(&t, "di-0").await?;
    let ready = object_until(&api, "di-0", "attached", |d| ready_reason(d).as_deref() == Some("Attached")).await?;
    assert_eq!(attached(&ready).as_deref(), Some(url.as_str()));
    assert!(cd_inserted(&t, &uuid).await?, "the BMC has it");
    assert_eq!(t.ironic_request_count("attach_virtual_media")?, 1);
    t.wait_events("di-0", &["Attached"]).await?;

    // Another reboot attaches nothing again.
    reboot(&t, "di-0").await?;
    assert_eq!(t.ironic_request_count("attach_virtual_media")?, 1, "attached once");
    assert_eq!(t.ironic_request_count("detach_virtual_media")?, 0);
    assert!(cd_inserted(&t, &uuid).await?);

    // Deleted, it waits for the next power on to be ejected, and goes then.
    api.delete("di-0", &DeleteParams::default()).await?;
    let kept = api.get("di-0").await?;
    assert!(kept.metadata.deletion_timestamp.is_some() && cd_inserted(&t, &uuid).await?, "kept until ejected");
    reboot(&t, "di-0").await?;
    ferrometal_tests::wait::until_ok("the DataImage gone", secs(120), secs(1), || async {
        Ok(api.get_opt("di-0").await?.is_none().then_some(()))
    })
    .await?;
    assert!(!cd_inserted(&t, &uuid).await?, "ejected");
    assert_eq!(t.ironic_request_count("detach_virtual_media")?, 1);

    // An image Ironic cannot download: the host boots without it, and the DataImage says why.
    let missing = format!("{}/missing.iso", t.ironic.image_server().url());
    api.create(&PostParams::default(), &data_image("di-0", &missing)?).await?;
    object_until(&api, "di-0", "awaiting the power on", |d| ready_reason(d).as_deref() == Some("AwaitingPowerOn"))
        .await?;
    reboot(&t, "di-0").await?;
    let failed =
        object_until(&api, "di-0", "the failure", |d| ready_reason(d).as_deref() == Some("AttachFailed")).await?;
    let error = failed.status.as_ref().and_then(|s| s.error.clone()).context("an error")?;
    assert_eq!(error.count, 1);
    assert!(error.message.contains("Could not attach"), "{}", error.message);
    assert_eq!(attached(&failed), None);
    assert!(!cd_inserted(&t, &uuid).await?);

    // In place throughout: the node never left `active`, the host never left its state.
    let since: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(adopted).collect();
    assert!(since.is_empty(), "no provision state change: {since:?}");
    let states = recorder.states("di-0");
    let at = states.iter().position(|s| s == "externally provisioned").context(format!("{states:?}"))?;
    assert!(states[at..].iter().all(|s| s == "externally provisioned"), "{states:?}");
    Ok(())
}
