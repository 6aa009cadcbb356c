//! The operator dies after it asked Ironic to flash a provisioned host's BIOS by servicing,
//! before any status says so: neither the host's status (never `servicing`, never on again) nor
//! the components object's (no update handed over) is written, the real apiserver refusing
//! both (`refusals`) while Ironic services the host to the end. What was flashed is then known
//! from Ironic alone (the record the host controller writes into the node before it asks), so
//! the restarted operator flashes nothing again, now or at the next reboot. The emulated BMC
//! adds one to the BIOS version at each flash: 1.1.0 means one.

use super::components::{ready_reason, reboot, version};
use super::firmware::{FORBIDDEN, allow_on_reboot, live_iso_host, object_until};
use super::refusals::{Kind, Refusal, Refusals, host_status, kill, until_ironic_did};
use crate::host_common::{BMC_PASSWORD, BMC_USER, HostEnv, Options, secs, state_of};
use anyhow::Context as _;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// Every host status that shows the servicing or what came after it (the host on again):
/// from the reboot's power off on, the operator records nothing of the servicing.
fn servicing_recorded() -> Refusal {
    Refusal {
        name: "servicing",
        kind: Kind::Host,
        condition: "has(object.status.operationalStatus) \
                    && (object.status.operationalStatus == 'servicing' || object.status.poweredOn)",
        probe: host_status("provisioned", json!({"operationalStatus": "servicing"})),
    }
}

/// Every components status that shows an update handed over to Ironic.
fn handover_recorded() -> Refusal {
    Refusal {
        name: "handover",
        kind: Kind::Components,
        condition: "has(object.status.updates) && size(object.status.updates) > 0",
        probe: json!({"status": {"updates": [{"component": "bios", "url": "http://192.0.2.1/bios.bin"}]}}),
    }
}

/// The node's transitions since its first `deployed`, none of them where a servicing must not
/// take it.
fn servicings_since(t: &HostEnv, uuid: &str, deployed: usize) -> anyhow::Result<Vec<String>> {
    let since: Vec<String> = t.ironic_transitions(uuid)?.into_iter().skip(deployed).collect();
    assert!(since.iter().all(|s| !FORBIDDEN.contains(&s.as_str())), "serviced in place: {since:?}");
    Ok(since)
}

/// A provisioned host booting a live ISO from the first emulated system, with a BIOS update
/// its policy lets servicing flash at the next reboot; answers its node and the node's
/// transitions so far.
async fn awaiting_reboot(
    t: &HostEnv,
    api: &Api<HostFirmwareComponents>,
    bios: &FirmwareUpdate,
) -> anyhow::Result<(String, usize)> {
    live_iso_host(t, "rf-0").await?;
    object_until(api, "rf-0", "components read", |c| version(c, "bios").as_deref() == Some("1.0.0")).await?;
    t.wait_provisioned("rf-0", secs(300)).await?;
    let uuid = t.node_uuid("rf-0").await?;
    let deployed = t.ironic_transitions(&uuid)?.len();
    allow_on_reboot(t, "rf-0", "firmwareUpdates").await?;
    api.patch("rf-0", &PatchParams::default(), &Patch::Merge(json!({"spec": {"updates": [bios]}}))).await?;
    object_until(api, "rf-0", "the update awaiting the reboot", |c| {
        ready_reason(c).as_deref() == Some("AwaitingReboot")
    })
    .await?;
    Ok((uuid, deployed))
}

#[tokio::test]
async fn an_operator_killed_while_ironic_flashes_a_hosts_bios_never_flashes_it_again() -> anyhow::Result<()> {
    // Two systems: Ironic names the system to update only when the BMC has several.
    let mut t = HostEnv::start("host-crash-svc", Options { sushy_systems: Some(2), ..Options::default() }).await?;
    t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let refusals = Refusals::of(&t).await?;
    refusals.probe(Kind::Components).await?;
    t.start_operator(t.host_config()).await?;
    let api: Api<HostFirmwareComponents> = Api::namespaced(t.env.client(), t.ns());
    let bios =
        FirmwareUpdate { component: "bios".into(), url: format!("{}/bios-1.1.bin", t.ironic.image_server().url()) };
    let (uuid, deployed) = awaiting_reboot(&t, &api, &bios).await?;

    // The reboot asks for the servicing; Ironic flashes the BIOS and the node is back in
    // `active`, while every status write that would say so is refused: the operator dies there.
    let (servicing, handover) = (servicing_recorded(), handover_recorded());
    refusals.impose(&servicing).await?;
    refusals.impose(&handover).await?;
    t.patch_host("rf-0", json!({"metadata": {"annotations": {"reboot.metal3.io": ""}}})).await?;
    until_ironic_did(&t, "rf-0", "servicing", "active", secs(240)).await?;
    kill(&mut t);
    let host = t.hosts.get("rf-0").await?;
    let status = host.status.as_ref().context("status")?;
    assert_eq!((state_of(&host), status.powered_on), ("provisioned", false), "the reboot's power off, no more");
    let components = api.get("rf-0").await?;
    assert!(components.status.as_ref().is_some_and(|s| s.updates.is_empty()), "nothing handed over recorded");
    refusals.lift(&servicing).await?;
    refusals.lift(&handover).await?;
    t.start_operator(t.host_config()).await?;

    // Flashed once, as Ironic's record tells the new operator: handed over, up to date, on.
    let flashed = object_until(&api, "rf-0", "the BIOS flashed and up to date", |c| {
        version(c, "bios").as_deref() == Some("1.1.0") && ready_reason(c).as_deref() == Some("UpToDate")
    })
    .await?;
    assert_eq!(flashed.status.map(|s| s.updates), Some(vec![bios]), "the update handed over");
    t.wait_provisioned("rf-0", secs(120)).await?;
    let since = servicings_since(&t, &uuid, deployed)?;
    // Ironic waits for the BMC's task in `service wait`: one servicing leaves `active` once.
    assert_eq!(since.iter().filter(|s| *s == "active").count(), 1, "one servicing: {since:?}");

    // The next reboot is only a reboot: the update stays flashed once.
    reboot(&t, "rf-0").await?;
    assert_eq!(servicings_since(&t, &uuid, deployed)?, since, "no second servicing");
    assert_eq!(version(&api.get("rf-0").await?, "bios").as_deref(), Some("1.1.0"));
    Ok(())
}
