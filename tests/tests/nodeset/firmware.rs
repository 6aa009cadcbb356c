//! BIOS settings and firmware updates rolled out from a NodeSet in place, against a real Ironic
//! and emulated Redfish BMCs: an edit of `firmwareSettings` serviced host by host under
//! `maxUnavailable` (each machine `active` → `servicing` → `active`, never deprovisioned), a
//! value the BMC refuses stopping the rollout, a fixed value resuming it, and a firmware update
//! flashed the same way, once.

use crate::host_common::{BMC_PASSWORD, BMC_USER, Recorder, secs};
use crate::nodeset_common::{NodeSetEnv, Setup, condition, processed};
use anyhow::Context as _;
use crds::baremetalhost::{BareMetalHost, ErrorType, OperationalStatus};
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings, HostUpdatePolicy};
use crds::nodeset::NodeSet;
use ferrometal_tests::wait;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOSTS: [&str; 2] = ["bios-0", "bios-1"];
const MACHINES: [&str; 2] = ["server-0", "server-1"];

/// What a node never goes through while its machine is serviced in place.
const FORBIDDEN: [&str; 6] = ["deploying", "cleaning", "deleting", "wait call-back", "available", "manageable"];

/// Watches the namespace's BareMetalHosts and keeps the most that were out of service at once:
/// powered off, being serviced, or with a servicing error.
struct Disruptions {
    most: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Disruptions {
    fn start(hosts: Api<BareMetalHost>) -> Self {
        let most = Arc::new(Mutex::new(0));
        let sink = most.clone();
        let task = tokio::spawn(async move {
            let mut out = BTreeSet::new();
            let mut events = watcher::watcher(hosts, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let (Ok(Event::Apply(host)) | Ok(Event::InitApply(host))) = event else { continue };
                let status = host.status.as_ref();
                let disrupted = status.is_some_and(|s| {
                    !s.powered_on
                        || s.operational_status == OperationalStatus::Servicing
                        || s.error_type == Some(ErrorType::Servicing)
                });
                match disrupted {
                    true => out.insert(host.name_any()),
                    false => out.remove(&host.name_any()),
                };
                let mut most = sink.lock().unwrap_or_else(|e| e.into_inner());
                *most = (*most).max(out.len());
            }
        });
        Self { most, task }
    }

    fn most(&self) -> usize {
        *self.most.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Disruptions {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every host's BIOS settings applied: the hash it has is the one the spec asks for.
fn applied(nodeset: &NodeSet) -> bool {
    let hosts = nodeset.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default();
    hosts.len() == HOSTS.len()
        && hosts
            .values()
            .all(|h| h.desired_firmware_hash.is_some() && h.applied_firmware_hash == h.desired_firmware_hash)
}

fn settings(values: Value) -> Value {
    json!({"baremetalSetTemplate": {"firmwareSettings": values}})
}

/// The environment: two emulated Redfish machines, free and allowed to be serviced at a reboot.
async fn machines() -> anyhow::Result<NodeSetEnv> {
    let setup = Setup { sushy_systems: Some(2), webhooks: true, ..Setup::default() };
    let env = NodeSetEnv::start("nset-bios", setup).await?;
    env.t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let policies: Api<HostUpdatePolicy> = Api::namespaced(env.t.env.client(), env.ns());
    for (index, machine) in MACHINES.iter().enumerate() {
        env.t.create_host(machine, env.t.redfish_spec(index, "bmc")?, json!({})).await?;
        let policy: HostUpdatePolicy = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "HostUpdatePolicy",
            "metadata": {"name": machine}, "spec": {"firmwareSettings": "onReboot", "firmwareUpdates": "onReboot"}
        }))?;
        policies.create(&PostParams::default(), &policy).await?;
    }
    for machine in MACHINES {
        env.t.wait_state(machine, "available", secs(180)).await?;
    }
    Ok(env)
}

/// A BIOS setting of `machine` as Ironic reads it from the BMC.
async fn bios(env: &NodeSetEnv, machine: &str, name: &str) -> anyhow::Result<Option<String>> {
    let uuid = env.t.node_uuid(machine).await?;
    let settings = env.t.ironic_client().await?.list_bios_settings(&uuid).await?;
    Ok(settings.into_iter().find(|s| s.name == name).and_then(|s| s.value))
}

/// Each machine's Ironic transitions after `before`.
async fn since(
    env: &NodeSetEnv,
    before: &BTreeMap<String, Vec<String>>,
) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let now = env.node_transitions(&MACHINES.map(String::from)).await?;
    Ok(now
        .into_iter()
        .map(|(m, all)| {
            let n = before[&m].len();
            (m, all.into_iter().skip(n).collect())
        })
        .collect())
}

/// How many servicings a node started (from `active`, or again from `service failed`): Ironic
/// goes back and forth between `servicing` and `service wait` within one.
fn servicings(moves: &[String]) -> usize {
    let mut previous = "active";
    let mut started = 0;
    for state in moves {
        if state == "servicing" && previous != "service wait" {
            started += 1;
        }
        previous = state;
    }
    started
}

/// Every machine kept its image and stayed `provisioned`, its node never left `active` but to
/// be serviced.
fn in_place(recorder: &Recorder, moves: &BTreeMap<String, Vec<String>>) {
    for machine in MACHINES {
        assert_eq!(recorder.states(machine), ["provisioned"], "{machine} never left provisioned");
        let moved = &moves[machine];
        assert!(moved.iter().all(|s| !FORBIDDEN.contains(&s.as_str())), "{machine}'s node moved to {moved:?}");
    }
}

#[tokio::test]
async fn a_nodeset_bios_edit_is_serviced_host_by_host_in_place_a_refused_value_stops_it_a_fix_goes_to_the_failed_host_first_and_an_update_is_flashed_once()
-> anyhow::Result<()> {
    let env = machines().await?;
    let mut spec = env.spec(&HOSTS, &[]);
    spec["baremetalSetTemplate"]["bmhLabelSelector"] = json!({});
    spec["rollout"] = json!({"maxUnavailable": 1});
    env.create_nodeset("bios", spec).await?;
    let ready = env.wait_ready("bios", secs(300)).await?;
    let claimed = NodeSetEnv::bmh_names(&ready);
    let first = claimed.get(HOSTS[0]).context("bios-0 claimed")?.clone();
    let second = claimed.get(HOSTS[1]).context("bios-1 claimed")?.clone();
    let recorder = env.t.record().await?;
    let disruptions = Disruptions::start(env.t.hosts.clone());
    let before = env.node_transitions(&MACHINES.map(String::from)).await?;

    // A password is refused at admission, as a settings object refuses it.
    let refused = env.patch_spec("bios", settings(json!({"SysPassword": "x"}))).await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("firmwareSettings[SysPassword]"), "{message}");

    // The edit: serviced one host at a time, in place.
    env.patch_spec("bios", settings(json!({"ProcTurboMode": "Disabled"}))).await?;
    let done = env.wait_nodeset("bios", "the settings applied on every host", secs(420), |n| {
        processed(n) && applied(n) && crate::nodeset_common::condition_is(n, "Ready", "True")
    });
    done.await?;
    for machine in MACHINES {
        assert_eq!(bios(&env, machine, "ProcTurboMode").await?.as_deref(), Some("Disabled"), "{machine}");
    }
    let moves = since(&env, &before).await?;
    for machine in MACHINES {
        assert_eq!(servicings(&moves[machine]), 1, "{machine} serviced once: {moves:?}");
    }
    in_place(&recorder, &moves);
    assert_eq!(disruptions.most(), 1, "maxUnavailable: 1");
    env.t.wait_events("bios", &["FirmwareHandedOver", "FirmwareReboot", "FirmwareApplied"]).await?;

    // A value the BMC refuses on the second host (its own override): the first is serviced with
    // the template's new value, the second's servicing fails, and the rollout stops there.
    let refusing = json!({
        "baremetalSetTemplate": {"firmwareSettings": {"ProcTurboMode": "Disabled", "L2Cache": "20x256 KB"}},
        "nodes": {HOSTS[1]: {"firmwareSettings": {"L2Cache": "refused-by-bmc"}}},
    });
    env.patch_spec("bios", refusing).await?;
    let failed = env.wait_nodeset("bios", "the rollout stopped by the failure", secs(300), |n| {
        processed(n) && condition(n, "Degraded").is_some_and(|c| c.reason == "FirmwareFailed")
    });
    let failed = failed.await?;
    let message = condition(&failed, "Degraded").map(|c| c.message.clone()).unwrap_or_default();
    assert!(message.contains(HOSTS[1]) && !message.contains(HOSTS[0]), "{message}");
    assert_eq!(bios(&env, &first, "L2Cache").await?.as_deref(), Some("20x256 KB"));
    let moves = since(&env, &before).await?;
    assert!(moves[&second].iter().any(|s| s == "service failed"), "{moves:?}");
    assert_eq!(servicings(&moves[&first]), 2, "{first}: {moves:?}");
    let objects: Api<HostFirmwareSettings> = Api::namespaced(env.t.env.client(), env.ns());
    let handed = objects.get(&second).await?;
    assert_eq!(
        handed.spec.settings.get("L2Cache").map(crds::firmware::setting_text).as_deref(),
        Some("refused-by-bmc")
    );

    // Fixed, with a new template value for both: the failed host is handed the fix first and its
    // servicing retried with it; the first host, settled, waits until the second is back, so
    // never two machines out of service at once; then both have the new value.
    let fixed = json!({
        "baremetalSetTemplate": {"firmwareSettings": {"ProcTurboMode": "Disabled", "L2Cache": "30x256 KB"}},
        "nodes": {HOSTS[1]: {"firmwareSettings": null}},
    });
    env.patch_spec("bios", fixed).await?;
    env.wait_nodeset("bios", "the fixed value applied on every host", secs(420), |n| {
        processed(n) && applied(n) && crate::nodeset_common::condition_is(n, "Ready", "True")
    })
    .await?;
    for machine in MACHINES {
        assert_eq!(bios(&env, machine, "L2Cache").await?.as_deref(), Some("30x256 KB"), "{machine}");
    }
    let moves = since(&env, &before).await?;
    in_place(&recorder, &moves);
    assert_eq!(servicings(&moves[&first]), 3, "{first}: {moves:?}");
    assert_eq!(disruptions.most(), 1, "maxUnavailable: 1, the failed host included");
    for machine in MACHINES {
        assert_eq!(moves[machine].last().map(String::as_str), Some("active"), "{machine}: {moves:?}");
    }

    // A firmware update: flashed the same way, one host at a time, once.
    let flashed_before: BTreeMap<String, usize> = moves.iter().map(|(m, s)| (m.clone(), servicings(s))).collect();
    let url = format!("{}/bios-1.1.bin", env.t.ironic.image_server().url());
    env.patch_spec("bios", json!({"baremetalSetTemplate": {"firmwareUpdates": [{"component": "bios", "url": url}]}}))
        .await?;
    env.wait_nodeset("bios", "the update flashed on every host", secs(420), |n| {
        processed(n) && applied(n) && crate::nodeset_common::condition_is(n, "Ready", "True")
    })
    .await?;
    let components: Api<HostFirmwareComponents> = Api::namespaced(env.t.env.client(), env.ns());
    for machine in MACHINES {
        let object = components.get(machine).await?;
        let status = object.status.context("status")?;
        let bios = status.components.iter().find(|c| c.component == "bios").context("bios")?;
        assert_eq!(bios.current_version.as_deref(), Some("1.1.0"), "{machine}: {bios:?}");
        assert_eq!(bios.last_version_flashed.as_deref(), Some("1.1.0"), "{machine}: {bios:?}");
        assert_eq!(status.updates.len(), 1, "{machine}: the one update handed to Ironic");
    }
    let moves = since(&env, &before).await?;
    in_place(&recorder, &moves);
    for machine in MACHINES {
        assert_eq!(servicings(&moves[machine]), flashed_before[machine] + 1, "{machine}: {moves:?}");
    }
    assert_eq!(disruptions.most(), 1, "maxUnavailable: 1");

    // A setting no longer wanted is taken back from every settings object (the NodeSet knows
    // it handed it over from the object's managed fields), and no machine is serviced for it.
    let serviced_before: BTreeMap<String, usize> =
        since(&env, &before).await?.iter().map(|(m, s)| (m.clone(), servicings(s))).collect();
    env.patch_spec("bios", settings(json!({"ProcTurboMode": "Disabled", "L2Cache": null}))).await?;
    wait::until_ok("L2Cache taken back from every settings object", secs(120), Duration::from_millis(500), || async {
        let mut wanted = Vec::new();
        for machine in MACHINES {
            wanted.push(objects.get(machine).await?.spec.settings.contains_key("L2Cache"));
        }
        Ok(wanted.iter().all(|w| !w).then_some(()))
    })
    .await?;
    env.wait_nodeset("bios", "ready after the take-back", secs(120), |n| {
        processed(n) && applied(n) && crate::nodeset_common::condition_is(n, "Ready", "True")
    })
    .await?;
    for machine in MACHINES {
        let settings = objects.get(machine).await?.spec.settings;
        assert!(settings.contains_key("ProcTurboMode"), "{machine}: the wanted setting stays: {settings:?}");
    }
    let moves = since(&env, &before).await?;
    for machine in MACHINES {
        assert_eq!(servicings(&moves[machine]), serviced_before[machine], "{machine} not serviced: {moves:?}");
    }
    Ok(())
}
