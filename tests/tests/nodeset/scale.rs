//! Scale and claims: hosts added and removed under each deletion policy touch only that host;
//! two NodeSets racing for the same machines never both get one; `hardwareReqs` choose by the
//! hardware redfish inspection found (sushy-tools).

use crate::host_common::{BMC_PASSWORD, BMC_USER, secs, state_of};
use crate::nodeset_common::{NodeSetEnv, Setup, condition, condition_is, names, processed, settle};
use crds::baremetalhost::annotations::DETACHED;
use crds::nodeset::{HOSTNAME_LABEL, NODESET_LABEL};
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ferrometal_tests::wait;
use kube::ResourceExt;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

async fn hosts_of(env: &NodeSetEnv, name: &str) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(NodeSetEnv::bmh_names(&env.nodesets.get(name).await?))
}

#[tokio::test]
async fn scaling_out_and_in_under_each_deletion_policy_touches_only_that_host() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-scale", Setup::default()).await?;
    env.free_hosts(&names("server", 4), json!({})).await?;
    env.service("bootstrap", true, "bootstrap:1").await?;
    let jobs = env.record_jobs().await?;
    env.create_nodeset("computes", env.spec(&["compute-0", "compute-1"], &["bootstrap"])).await?;
    let ready = env.wait_ready("computes", secs(300)).await?;
    let first = NodeSetEnv::bmh_names(&ready);
    let states = env.t.record().await?;

    // Scale out: only the new host is claimed and provisioned.
    let nodes = json!({"compute-2": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.12/24"]}]}});
    env.patch_spec("computes", json!({"nodes": nodes})).await?;
    env.wait_nodeset("computes", "three hosts ready", secs(300), |n| {
        processed(n) && condition_is(n, "Ready", "True") && NodeSetEnv::bmh_names(n).len() == 3
    })
    .await?;
    let three = hosts_of(&env, "computes").await?;
    let added = three["compute-2"].clone();
    for (host, machine) in &first {
        assert_eq!(&three[host], machine);
        assert_eq!(states.states(machine), ["provisioned"], "{machine} was not touched");
    }
    assert_eq!(jobs.runs("bootstrap", "compute-2"), 1);

    // Removed under Retain: the machine keeps running, claimed; re-added, it is adopted as it is.
    let states = env.t.record().await?;
    env.patch_spec("computes", json!({"nodes": {"compute-2": null}})).await?;
    env.wait_nodeset("computes", "compute-2 released", secs(60), |n| {
        processed(n) && NodeSetEnv::bmh_names(n).len() == 2
    })
    .await?;
    settle(&env).await?;
    let retained = env.t.hosts.get(&added).await?;
    assert_eq!(state_of(&retained), "provisioned");
    assert_eq!(retained.labels().get(HOSTNAME_LABEL).map(String::as_str), Some("compute-2"), "still labelled");
    env.patch_spec("computes", json!({"nodes": nodes.clone()})).await?;
    env.wait_nodeset("computes", "compute-2 adopted", secs(60), |n| {
        processed(n) && condition_is(n, "Ready", "True") && NodeSetEnv::bmh_names(n).get("compute-2") == Some(&added)
    })
    .await?;
    assert_eq!(states.states(&added), ["provisioned"], "adopted without reprovisioning");
    assert_eq!(jobs.runs("bootstrap", "compute-2"), 1, "runOnce services stay run");

    // Removed under Detach: still provisioned, detached from Ironic. The policy is switched
    // first: a removal in the same edit would be released under the policy seen before (Retain).
    switch_policy(&env, "Detach").await?;
    env.patch_spec("computes", json!({"nodes": {"compute-1": null}})).await?;
    let detached = &first["compute-1"];
    env.t.wait_for(detached, "detached", secs(60), |h| h.annotations().contains_key(DETACHED)).await?;
    settle(&env).await?;
    assert_eq!(state_of(&env.t.hosts.get(detached).await?), "provisioned");
    assert!(!states.states(detached).iter().any(|s| s == "deprovisioning"), "{:?}", states.states(detached));

    // Removed under Deprovision: that machine, and only it, is deprovisioned and freed.
    switch_policy(&env, "Deprovision").await?;
    env.patch_spec("computes", json!({"nodes": {"compute-0": null}})).await?;
    let freed = &first["compute-0"];
    let host = env
        .t
        .wait_for(freed, "deprovisioned and free", secs(120), |h| {
            state_of(h) == "available" && h.spec.consumer_ref.is_none() && h.spec.image.is_none()
        })
        .await?;
    assert!(!host.labels().contains_key(NODESET_LABEL), "back in the pool");
    crate::host_common::assert_in_order(&states.states(freed), &["provisioned", "deprovisioning", "available"]);
    assert_eq!(states.states(&added), ["provisioned"]);
    assert_eq!(states.states(detached).last().map(String::as_str), Some("provisioned"));

    // Deleting the NodeSet runs the policy on the hosts it still has, behind its finalizer.
    env.delete_nodeset("computes").await?;
    env.t
        .wait_for(&added, "deprovisioned", secs(120), |h| state_of(h) == "available" && h.spec.consumer_ref.is_none())
        .await?;
    let detached_host = env.t.hosts.get(detached).await?;
    assert!(detached_host.spec.consumer_ref.is_some(), "a machine released earlier is not the NodeSet's any more");
    Ok(())
}

/// Sets the deletion policy and waits until status records it.
async fn switch_policy(env: &NodeSetEnv, policy: &str) -> anyhow::Result<()> {
    env.patch_spec("computes", json!({"deletionPolicy": policy})).await?;
    let seen = serde_json::from_value(json!(policy))?;
    env.wait_nodeset("computes", "the policy recorded", secs(60), |n| {
        processed(n) && n.status.as_ref().and_then(|s| s.deletion_policy) == Some(seen)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_host_removed_in_the_same_edit_that_switched_to_deprovision_is_retained() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-policy", Setup::default()).await?;
    let machines = names("server", 2);
    env.free_hosts(&machines, json!({})).await?;
    env.create_nodeset("computes", env.spec(&["compute-0", "compute-1"], &[])).await?;
    env.wait_ready("computes", secs(300)).await?;
    let before = hosts_of(&env, "computes").await?;
    let states = env.t.record().await?;
    env.patch_spec("computes", json!({"deletionPolicy": "Deprovision", "nodes": {"compute-1": null}})).await?;
    env.wait_nodeset("computes", "compute-1 released", secs(60), |n| {
        processed(n) && NodeSetEnv::bmh_names(n).len() == 1
    })
    .await?;
    settle(&env).await?;
    let kept = env.t.hosts.get(&before["compute-1"]).await?;
    assert_eq!(state_of(&kept), "provisioned", "retained: Deprovision was not in force when it was removed");
    assert!(kept.spec.image.is_some());
    assert!(!states.states(&before["compute-1"]).iter().any(|s| s == "deprovisioning"));
    Ok(())
}

#[tokio::test]
async fn two_nodesets_racing_for_the_same_hosts_never_claim_one_twice() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-race", Setup::default()).await?;
    let machines = names("server", 4);
    env.free_hosts(&machines, json!({})).await?;
    let hosts = ["compute-0", "compute-1", "compute-2"];
    let (a, b) = (env.spec(&hosts, &[]), env.spec(&hosts, &[]));
    tokio::try_join!(env.create_nodeset("left", a), env.create_nodeset("right", b))?;
    let settled = wait::until_ok("every machine claimed once", secs(120), crate::common::POLL, || async {
        let (left, right) = (hosts_of(&env, "left").await?, hosts_of(&env, "right").await?);
        Ok((left.len() + right.len() == 4).then_some((left, right)))
    })
    .await?;
    settle(&env).await?;
    let (left, right) = (hosts_of(&env, "left").await?, hosts_of(&env, "right").await?);
    assert_eq!((&left, &right), (&settled.0, &settled.1), "claims are stable");
    println!("left claimed {left:?}, right claimed {right:?}");
    let left_machines: BTreeSet<&String> = left.values().collect();
    let right_machines: BTreeSet<&String> = right.values().collect();
    assert!(left_machines.is_disjoint(&right_machines), "a machine claimed twice: {left:?} {right:?}");
    for machine in &machines {
        let host = env.t.hosts.get(machine).await?;
        let consumer = host.spec.consumer_ref.as_ref().and_then(|c| c.name.clone()).unwrap_or_default();
        let owner = if left_machines.contains(machine) { "left" } else { "right" };
        assert_eq!(consumer, owner, "{machine}'s consumerRef agrees with the NodeSet that has it");
        assert_eq!(host.labels().get(NODESET_LABEL).map(String::as_str), Some(owner));
    }
    // The NodeSet that came short says which host and why.
    let short = if left.len() < 3 { "left" } else { "right" };
    let nodeset = env.nodesets.get(short).await?;
    let degraded = condition(&nodeset, "Degraded").cloned().expect("Degraded");
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), ("True", "NoMatchingHost"), "{degraded:?}");
    Ok(())
}

#[tokio::test]
async fn hardware_reqs_claim_only_hosts_whose_inspected_hardware_fits() -> anyhow::Result<()> {
    // Two emulated racks: the test's sushy-tools with 8 GiB machines, and one with 16 GiB.
    let env = NodeSetEnv::start("nset-hw", Setup { sushy_systems: Some(2), ..Setup::default() }).await?;
    let big = Sushy::start(SushyConfig {
        systems: 2,
        auth: Some((BMC_USER.into(), BMC_PASSWORD.into())),
        memory_gib: 16,
        ..SushyConfig::default()
    })
    .await?;
    env.t.credentials_secret("bmc", BMC_USER, BMC_PASSWORD).await?;
    let mut machines = Vec::new();
    for (i, system) in env.t.sushy.as_ref().map(|s| s.systems().to_vec()).unwrap_or_default().iter().enumerate() {
        let name = format!("small-{i}");
        let mut spec = env.t.redfish_spec(i, "bmc")?;
        spec["bootMACAddress"] = json!(system.mac);
        env.t.create_host(&name, spec, json!({})).await?;
        machines.push(name);
    }
    for (i, system) in big.systems().iter().enumerate() {
        let name = format!("big-{i}");
        let spec = json!({
            "bmc": {"address": big.bmc_address("redfish-virtualmedia", system), "credentialsName": "bmc"},
            "bootMACAddress": system.mac, "online": true, "inspectionMode": "fast", "automatedCleaningMode": "disabled",
        });
        env.t.create_host(&name, spec, json!({})).await?;
        machines.push(name);
    }
    for machine in &machines {
        env.t.wait_state(machine, "available", secs(240)).await?;
    }
    let mut spec = env.spec(&["compute-0", "compute-1", "compute-2"], &[]);
    spec["baremetalSetTemplate"]["hardwareReqs"] = json!({"minMemoryGiB": 12, "minCpuCount": 2});
    env.create_nodeset("computes", spec).await?;
    let short = env
        .wait_nodeset("computes", "two hosts claimed, one short", secs(300), |n| {
            NodeSetEnv::bmh_names(n).len() == 2 && condition_is(n, "Degraded", "True")
        })
        .await?;
    let claimed: BTreeSet<String> = NodeSetEnv::bmh_names(&short).into_values().collect();
    assert_eq!(claimed, BTreeSet::from(["big-0".to_string(), "big-1".to_string()]), "only the 16 GiB machines fit");
    let degraded = condition(&short, "Degraded").cloned().expect("Degraded");
    assert_eq!(degraded.reason, "NoMatchingHost");
    assert!(
        degraded.message.contains("compute-2") && degraded.message.contains("none has at least 12 GiB of memory"),
        "{}",
        degraded.message
    );
    // Without the host nothing can back, the two redfish machines are provisioned and ready.
    env.patch_spec("computes", json!({"nodes": {"compute-2": null}})).await?;
    env.wait_ready("computes", secs(300)).await?;
    for machine in &claimed {
        let node = env.t.node(machine).await?.unwrap_or_default();
        assert_eq!((node["driver"].as_str(), node["provision_state"].as_str()), (Some("redfish"), Some("active")));
    }
    for small in ["small-0", "small-1"] {
        assert_eq!(state_of(&env.t.hosts.get(small).await?), "available", "{small} was never claimed");
    }
    Ok(())
}

const CONFIRM: &str = "ferrometal.io/confirm-deprovision";

/// Sets the NodeSet's deprovision confirmation to `value`.
async fn confirm(env: &NodeSetEnv, value: &str) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"annotations": {CONFIRM: value}}});
    env.nodesets.patch("computes", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(patch)).await?;
    Ok(())
}

/// Removes `hosts` in one edit and waits until the NodeSet says it waits for a confirmation;
/// then checks that every one of them is still provisioned and claimed.
async fn removal_waits(env: &NodeSetEnv, hosts: &[&str], machines: &BTreeMap<String, String>) -> anyhow::Result<()> {
    let removed: serde_json::Map<String, serde_json::Value> =
        hosts.iter().map(|h| (h.to_string(), serde_json::Value::Null)).collect();
    env.patch_spec("computes", json!({"nodes": removed})).await?;
    env.wait_nodeset("computes", "waiting for a confirmation", secs(60), |n| {
        processed(n) && condition(n, "Degraded").is_some_and(|c| c.reason == "DeprovisionUnconfirmed")
    })
    .await?;
    settle(env).await?;
    for host in hosts {
        let machine = env.t.hosts.get(&machines[*host]).await?;
        assert_eq!(state_of(&machine), "provisioned", "{host} is kept as it is");
        assert!(machine.spec.consumer_ref.is_some() && machine.spec.image.is_some(), "{host} is still claimed");
    }
    Ok(())
}

/// Waits until the machines of `hosts` are deprovisioned and back in the pool.
async fn freed(env: &NodeSetEnv, hosts: &[&str], machines: &BTreeMap<String, String>) -> anyhow::Result<()> {
    for host in hosts {
        env.t
            .wait_for(&machines[*host], "deprovisioned and free", secs(120), |h| {
                state_of(h) == "available" && h.spec.consumer_ref.is_none()
            })
            .await?;
    }
    Ok(())
}

#[tokio::test]
async fn removing_more_hosts_than_max_unavailable_waits_for_a_confirmation_that_confirms_one_removal()
-> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-confirm", Setup::default()).await?;
    env.free_hosts(&names("server", 3), json!({})).await?;
    let mut spec = env.spec(&["compute-0", "compute-1", "compute-2"], &[]);
    spec["deletionPolicy"] = json!("Deprovision");
    env.create_nodeset("computes", spec).await?;
    let machines = NodeSetEnv::bmh_names(&env.wait_ready("computes", secs(300)).await?);
    let states = env.t.record().await?;

    // Two at once, over maxUnavailable (1): nothing happens until a user names them.
    removal_waits(&env, &["compute-1", "compute-2"], &machines).await?;
    confirm(&env, "compute-1,compute-2").await?;
    freed(&env, &["compute-1", "compute-2"], &machines).await?;
    let spent = env
        .wait_nodeset("computes", "the confirmation spent", secs(60), |n| {
            n.status.as_ref().and_then(|s| s.spent_deprovision_confirmations.as_ref()).is_some_and(|s| s.len() == 1)
        })
        .await?;
    assert!(!condition_is(&spent, "Degraded", "True"), "{:?}", condition(&spent, "Degraded"));

    // Back again, then removed again with the old value still on the NodeSet: it confirmed
    // one removal, not this one.
    let again = json!({
        "compute-1": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.11/24"]}]},
        "compute-2": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.12/24"]}]},
    });
    env.patch_spec("computes", json!({"nodes": again})).await?;
    let machines = NodeSetEnv::bmh_names(
        &env.wait_nodeset("computes", "three hosts ready again", secs(300), |n| {
            processed(n) && condition_is(n, "Ready", "True") && NodeSetEnv::bmh_names(n).len() == 3
        })
        .await?,
    );
    removal_waits(&env, &["compute-1", "compute-2"], &machines).await?;
    confirm(&env, "all, again").await?;
    freed(&env, &["compute-1", "compute-2"], &machines).await?;
    assert_eq!(states.states(&machines["compute-0"]), ["provisioned"], "the host kept was never touched");
    Ok(())
}
