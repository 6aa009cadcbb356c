//! A NodeSet's life on real machines (fake hardware behind a real Ironic): claimed,
//! provisioned once, edited in place, deleted and recreated, and not one machine deprovisioned
//! that nobody asked for.

use crate::host_common::secs;
use crate::nodeset_common::{NodeSetEnv, Setup, names, processed, settle};
use serde_json::json;

const HOSTS: [&str; 3] = ["compute-0", "compute-1", "compute-2"];

/// Transitions an Ironic node makes when its machine is deprovisioned or provisioned again.
const DISRUPTIVE: [&str; 6] = ["deploying", "cleaning", "deleting", "wait call-back", "available", "manageable"];

#[tokio::test]
async fn deleting_a_provisioned_nodeset_deprovisions_nothing_and_recreating_it_adopts_the_same_machines()
-> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-delete", Setup::default()).await?;
    let machines = names("server", 3);
    env.free_hosts(&machines, json!({})).await?;
    env.service("bootstrap", true, "bootstrap:1").await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let jobs = env.record_jobs().await?;
    let spec = env.spec(&HOSTS, &["bootstrap", "configure-os"]);
    env.create_nodeset("computes", spec.clone()).await?;
    let ready = env.wait_ready("computes", secs(300)).await?;
    let claimed = NodeSetEnv::bmh_names(&ready);
    assert_eq!(claimed.len(), 3, "one machine per host: {claimed:?}");
    for host in HOSTS {
        assert_eq!(jobs.runs("bootstrap", host), 1, "{host}: {:?}", jobs.seen());
    }
    let runs = jobs.runs_by_service();
    env.nodes_active(&machines).await?;

    // The reported failure: deleting the NodeSet deprovisioned every machine.
    let states = env.t.record().await?;
    let before = env.node_transitions(&machines).await?;
    let requests = env.provision_state_requests()?;
    env.delete_nodeset("computes").await?;
    settle(&env).await?;
    for machine in &machines {
        let host = env.t.hosts.get(machine).await?;
        assert_eq!(crate::host_common::state_of(&host), "provisioned", "{machine}");
        assert!(host.spec.image.is_some(), "{machine} keeps its image");
        assert_eq!(
            host.spec.consumer_ref.as_ref().and_then(|c| c.name.as_deref()),
            Some("computes"),
            "Retain keeps {machine} claimed"
        );
    }
    env.nodes_active(&machines).await?;

    // Recreated, it finds its machines by label and runs nothing again.
    env.create_nodeset("computes", spec).await?;
    let again = env.wait_ready("computes", secs(120)).await?;
    assert_eq!(NodeSetEnv::bmh_names(&again), claimed, "the same machines back the same hosts");
    settle(&env).await?;
    assert_eq!(jobs.runs_by_service(), runs, "no service ran again, runOnce or not: {:?}", jobs.seen());
    for machine in &machines {
        assert_eq!(states.states(machine), ["provisioned"], "{machine} never left provisioned");
    }
    let after = env.node_transitions(&machines).await?;
    for machine in &machines {
        let new: Vec<&String> = after[machine].iter().skip(before[machine].len()).collect();
        assert!(new.iter().all(|s| !DISRUPTIVE.contains(&s.as_str())), "{machine}'s node moved to {new:?}");
    }
    env.nodes_active(&machines).await?;
    assert_eq!(env.provision_state_requests()?, requests, "no provision-state request to Ironic");
    env.t
        .wait_events(
            "computes",
            &["Claimed", "Provisioning", "Provisioned", "RolloutStarted", "RolloutCompleted", "HostReleased"],
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn day_two_edits_rerun_only_the_affected_services_and_never_touch_the_machines() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-edit", Setup::default()).await?;
    let machines = names("server", 3);
    env.free_hosts(&machines, json!({})).await?;
    for (service, run_once) in [("bootstrap", true), ("configure-network", false), ("configure-os", false)] {
        env.service(service, run_once, &format!("{service}:1")).await?;
    }
    let jobs = env.record_jobs().await?;
    env.create_nodeset("computes", env.spec(&HOSTS, &["bootstrap", "configure-network", "configure-os"])).await?;
    env.wait_ready("computes", secs(300)).await?;
    let states = env.t.record().await?;
    let requests = env.provision_state_requests()?;

    let count = |service: &str, host: &str| jobs.runs(service, host);
    let snapshot = || -> Vec<(String, String, usize)> {
        let mut out = Vec::new();
        for service in ["bootstrap", "configure-network", "configure-os"] {
            for host in HOSTS {
                out.push((service.to_string(), host.to_string(), count(service, host)));
            }
        }
        out
    };
    // Applies `edit` to the spec (a merge patch) and waits for the NodeSet to roll it out; returns how many more
    // times each service ran on each host.
    let roll_out = async |edit: serde_json::Value| -> anyhow::Result<Vec<(String, String, usize)>> {
        let before = snapshot();
        let edited = env.patch_spec("computes", edit).await?;
        let generation = edited.metadata.generation;
        env.wait_nodeset("computes", "the edit rolled out", secs(180), |n| {
            processed(n)
                && n.metadata.generation == generation
                && crate::nodeset_common::condition_is(n, "Ready", "True")
                && n.status.as_ref().and_then(|s| s.rollout.as_ref()).and_then(|r| r.config_hash.clone())
                    == n.status.as_ref().and_then(|s| s.config_hash.clone())
        })
        .await?;
        Ok(snapshot().into_iter().zip(before).map(|((s, h, now), (_, _, then))| (s, h, now - then)).collect())
    };
    let expect = |delta: &[(String, String, usize)], hosts: &[&str]| {
        for (service, host, more) in delta {
            let wanted = if service != "bootstrap" && hosts.contains(&host.as_str()) { 1 } else { 0 };
            assert_eq!(*more, wanted, "{service} on {host}: {delta:?}");
        }
    };

    // The MTU of every host.
    let mtu = json!({"nodeTemplate": {"networks": [
        {"name": "ctlplane", "interface": "eno1", "mtu": 9000, "gateway": "192.0.2.1"}]}});
    expect(&roll_out(mtu).await?, &HOSTS);
    // A network added to every host.
    let network = json!({"nodeTemplate": {"networks": [
        {"name": "ctlplane", "interface": "eno1", "mtu": 9000, "gateway": "192.0.2.1"},
        {"name": "storage", "interface": "eno2", "vlan": 30, "mtu": 9000}]}});
    expect(&roll_out(network).await?, &HOSTS);
    // DNS servers.
    expect(&roll_out(json!({"nodeTemplate": {"dns": {"nameservers": ["192.0.2.54"]}}})).await?, &HOSTS);
    // One host's variables: that host only.
    expect(&roll_out(json!({"nodes": {"compute-1": {"variables": {"role": "hci"}}}})).await?, &["compute-1"]);
    // Everyone's variables.
    expect(&roll_out(json!({"nodeTemplate": {"variables": {"timezone": "Europe/Paris"}}})).await?, &HOSTS);

    for machine in &machines {
        assert_eq!(states.states(machine), ["provisioned"], "{machine} never left provisioned");
    }
    env.nodes_active(&machines).await?;
    assert_eq!(
        env.provision_state_requests()? - requests,
        0,
        "zero Ironic provision-state requests during the rollouts"
    );
    Ok(())
}

#[tokio::test]
async fn an_edited_image_only_marks_hosts_outdated_and_a_reprovision_token_reprovisions_one_host() -> anyhow::Result<()>
{
    let env = NodeSetEnv::start("nset-image", Setup::default()).await?;
    let machines = names("server", 2);
    env.free_hosts(&machines, json!({})).await?;
    env.service("bootstrap", true, "bootstrap:1").await?;
    let jobs = env.record_jobs().await?;
    let hosts = ["compute-0", "compute-1"];
    env.create_nodeset("computes", env.spec(&hosts, &["bootstrap"])).await?;
    let ready = env.wait_ready("computes", secs(300)).await?;
    let claimed = NodeSetEnv::bmh_names(&ready);
    let states = env.t.record().await?;
    let requests = env.provision_state_requests()?;

    let new_iso = env.t.ironic.image_server().write_live_iso("live-2.iso")?;
    let edited = env
        .patch_spec("computes", json!({"baremetalSetTemplate": {"image": {"url": new_iso, "format": "live-iso"}}}))
        .await?;
    let outdated = env
        .wait_nodeset("computes", "hosts outdated", secs(60), |n| {
            processed(n)
                && n.metadata.generation == edited.metadata.generation
                && n.status
                    .iter()
                    .flat_map(|s| s.hosts.iter().flatten())
                    .all(|(_, h)| h.provisioning_outdated == Some(true))
        })
        .await?;
    assert!(crate::nodeset_common::condition_is(&outdated, "Ready", "True"), "an outdated host still runs fine");
    settle(&env).await?;
    assert_eq!(env.provision_state_requests()?, requests, "a new image alone asks nothing of Ironic");
    for machine in claimed.values() {
        assert_eq!(states.states(machine), ["provisioned"]);
        let node = env.t.node(machine).await?.unwrap_or_default();
        assert_eq!(node["instance_info"]["boot_iso"], env.iso.as_str(), "{machine} still runs the old image");
    }

    // The one way to reprovision a machine: its host's token.
    env.patch_spec("computes", json!({"nodes": {"compute-1": {"reprovisionToken": "2026-09-01"}}})).await?;
    let done = env
        .wait_nodeset("computes", "compute-1 reprovisioned", secs(300), |n| {
            processed(n)
                && crate::nodeset_common::condition_is(n, "Ready", "True")
                && n.status.as_ref().and_then(|s| s.hosts.as_ref()).and_then(|h| h.get("compute-1")).is_some_and(|h| {
                    h.reprovision_token.as_deref() == Some("2026-09-01") && h.provisioning_outdated == Some(false)
                })
        })
        .await?;
    assert_eq!(NodeSetEnv::bmh_names(&done), claimed, "reprovisioned in place, on the same machine");
    let (old, new) = (&claimed["compute-0"], &claimed["compute-1"]);
    crate::host_common::assert_in_order(
        &states.states(new),
        &["provisioned", "deprovisioning", "available", "provisioning", "provisioned"],
    );
    assert_eq!(states.states(old), ["provisioned"], "the other machine is untouched");
    let node = env.t.node(new).await?.unwrap_or_default();
    assert_eq!(node["instance_info"]["boot_iso"], new_iso.as_str(), "provisioned with the current image");
    let node = env.t.node(old).await?.unwrap_or_default();
    assert_eq!(node["instance_info"]["boot_iso"], env.iso.as_str());
    let host = &done.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default()["compute-0"];
    assert_eq!(host.provisioning_outdated, Some(true), "compute-0 is still outdated");
    assert_eq!(
        (jobs.runs("bootstrap", "compute-1"), jobs.runs("bootstrap", "compute-0")),
        (2, 1),
        "services rerun after a reprovision"
    );
    Ok(())
}
