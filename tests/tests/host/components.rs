//! HostFirmwareComponents against Ironic and emulated Redfish BMCs: a host's firmware versions
//! read into the object of its name; an update Ironic cannot flash refused at admission; a
//! valid one waiting for the host's policy, then flashed by servicing the provisioned host in
//! place at its reboot (the emulated BMC's SimpleUpdate bumps the BIOS version), and never
//! flashed again; an image the BMC refuses failing the servicing, retried once its URL is fixed.

use super::firmware::{allow_on_reboot, live_iso_host, object_until, serviced_in_place, with_operator};
use crate::host_common::{HostEnv, secs, state_of};
use anyhow::Context as _;
use crds::condition::find;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

pub(crate) fn version(object: &HostFirmwareComponents, component: &str) -> Option<String> {
    let status = object.status.as_ref()?;
    status.components.iter().find(|c| c.component == component).and_then(|c| c.current_version.clone())
}

pub(crate) fn ready_reason(object: &HostFirmwareComponents) -> Option<String> {
    object.status.as_ref().and_then(|s| find(&s.conditions, "Ready")).map(|c| c.reason.clone())
}

fn updates(updates: &[FirmwareUpdate]) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"spec": {"updates": updates}}))
}

/// Reboots the host as a user does, and waits until it is on again.
pub(crate) async fn reboot(t: &HostEnv, name: &str) -> anyhow::Result<()> {
    t.patch_host(name, json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    t.wait_for(name, "rebooted (the annotation consumed, on again)", secs(240), |h| {
        !h.annotations().contains_key("reboot.metal3.io")
            && h.status.as_ref().is_some_and(|s| s.powered_on && s.error_type.is_none())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_provisioned_hosts_bios_is_flashed_in_place_once_its_policy_allows_never_twice_and_a_refused_image_retried_once_fixed()
-> anyhow::Result<()> {
    // Two systems: Ironic names the system to update only when the BMC has several, and the
    // emulator wants a target.
    let t = with_operator("host-fw-update", 2).await?;
    let api: Api<HostFirmwareComponents> = Api::namespaced(t.env.client(), t.ns());
    let recorder = t.record().await?;
    let host = live_iso_host(&t, "rf-0").await?;

    let read = object_until(&api, "rf-0", "components read", |c| version(c, "bios").is_some()).await?;
    let owner = read.owner_references().first().context("owned")?;
    assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("BareMetalHost", host.uid().unwrap_or_default().as_str()));
    assert!(read.spec.updates.is_empty(), "the operator writes no update");
    assert_eq!(version(&read, "bios").as_deref(), Some("1.0.0"));
    assert!(version(&read, "bmc").is_some(), "{:?}", read.status);
    assert_eq!(ready_reason(&read).as_deref(), Some("UpToDate"));

    // What Ironic cannot flash is refused at admission, with the field.
    let cpld = FirmwareUpdate { component: "cpld".into(), url: "http://192.0.2.1/cpld.bin".into() };
    let refused = api.patch("rf-0", &PatchParams::default(), &updates(&[cpld])).await;
    let message = format!("{refused:?}");
    assert!(refused.is_err() && message.contains("spec.updates[0].component"), "{message}");
    let ftp = FirmwareUpdate { component: "bios".into(), url: "ftp://192.0.2.1/bios.bin".into() };
    let refused = api.patch("rf-0", &PatchParams::default(), &updates(&[ftp])).await;
    assert!(format!("{refused:?}").contains("spec.updates[0].url"), "{refused:?}");

    t.wait_provisioned("rf-0", secs(300)).await?;
    let uuid = t.node_uuid("rf-0").await?;
    let deployed = t.ironic_transitions(&uuid)?.len();

    // Without a policy the update waits, and says why; a reboot is only a reboot.
    let bios =
        FirmwareUpdate { component: "bios".into(), url: format!("{}/bios-1.1.bin", t.ironic.image_server().url()) };
    api.patch("rf-0", &PatchParams::default(), &updates(std::slice::from_ref(&bios))).await?;
    object_until(&api, "rf-0", "the reason the update waits", |c| {
        ready_reason(c).as_deref() == Some("ServicingNotAllowed")
    })
    .await?;
    reboot(&t, "rf-0").await?;
    let since: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(deployed).collect();
    assert!(since.is_empty(), "no provision state change at a reboot without a policy: {since:?}");

    // With one, the next reboot services the host: the BIOS is flashed, in place.
    allow_on_reboot(&t, "rf-0", "firmwareUpdates").await?;
    object_until(&api, "rf-0", "the update awaiting the reboot", |c| {
        ready_reason(c).as_deref() == Some("AwaitingReboot")
    })
    .await?;
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    let flashed = object_until(&api, "rf-0", "the BIOS flashed", |c| {
        version(c, "bios").as_deref() == Some("1.1.0") && ready_reason(c).as_deref() == Some("UpToDate")
    })
    .await?;
    let status = flashed.status.as_ref().context("status")?;
    assert_eq!(status.updates, std::slice::from_ref(&bios), "the updates handed over");
    let component = status.components.iter().find(|c| c.component == "bios").context("bios")?;
    assert_eq!(component.initial_version, "1.0.0");
    assert_eq!(component.last_version_flashed.as_deref(), Some("1.1.0"));
    let host = t.wait_provisioned("rf-0", secs(120)).await?;
    assert!(host.status.as_ref().is_some_and(|s| s.powered_on && s.error_type.is_none()));
    let (since, _) = serviced_in_place(&t, &recorder, "rf-0", &uuid, deployed).await?;
    // One servicing (it waits for the BMC's task in `service wait`): out of `active` once.
    assert_eq!(since.iter().filter(|s| *s == "active").count(), 1, "{since:?}");

    // Flashed once: another reboot is only a reboot, and the version stays.
    reboot(&t, "rf-0").await?;
    let after: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(deployed).collect();
    assert_eq!(after, since, "no second servicing");
    let again = api.get("rf-0").await?;
    assert_eq!(version(&again, "bios").as_deref(), Some("1.1.0"));

    // An image the BMC refuses: a servicing error, the host still provisioned; once the URL is
    // fixed the servicing is tried again and flashes that image alone. The emulated BMC adds one
    // to the version at each flash: 1.2.0 after it means nothing was flashed twice.
    let server = t.ironic.image_server().url().to_string();
    let refused = FirmwareUpdate { component: "bios".into(), url: format!("{server}/bios-refused-by-bmc.bin") };
    api.patch("rf-0", &PatchParams::default(), &updates(&[refused])).await?;
    object_until(&api, "rf-0", "the new update awaiting the reboot", |c| {
        ready_reason(c).as_deref() == Some("AwaitingReboot")
    })
    .await?;
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    let failed = t
        .wait_for("rf-0", "a servicing error", secs(240), |h| {
            h.status.as_ref().is_some_and(|s| s.error_type == Some(crds::baremetalhost::ErrorType::Servicing))
        })
        .await?;
    assert_eq!(state_of(&failed), "provisioned");
    assert_eq!(version(&api.get("rf-0").await?, "bios").as_deref(), Some("1.1.0"));
    let fixed = FirmwareUpdate { component: "bios".into(), url: format!("{server}/bios-1.2.bin") };
    api.patch("rf-0", &PatchParams::default(), &updates(std::slice::from_ref(&fixed))).await?;
    let flashed = object_until(&api, "rf-0", "the fixed image flashed", |c| {
        version(c, "bios").as_deref() == Some("1.2.0") && ready_reason(c).as_deref() == Some("UpToDate")
    })
    .await?;
    assert_eq!(flashed.status.as_ref().map(|s| s.updates.clone()), Some(vec![fixed]));
    t.wait_for("rf-0", "OK and on again", secs(240), |h| {
        h.status.as_ref().is_some_and(|s| s.error_type.is_none() && s.powered_on)
    })
    .await?;
    let all: Vec<String> = t.ironic_transitions(&uuid)?.into_iter().skip(deployed).collect();
    assert!(all.iter().any(|s| s == "service failed"), "{all:?}");
    assert!(all.iter().all(|s| !super::firmware::FORBIDDEN.contains(&s.as_str())), "{all:?}");
    let states = recorder.states("rf-0");
    let provisioned_at = states.iter().position(|s| s == "provisioned").context(format!("{states:?}"))?;
    assert!(states[provisioned_at..].iter().all(|s| s == "provisioned"), "never left provisioned: {states:?}");
    Ok(())
}
