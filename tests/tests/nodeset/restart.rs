//! The operator killed (as a crash: no reconcile finishes) and started again in the middle of
//! provisioning and of a rollout: it converges with no second provisioning, no duplicate Job and
//! no rerun of a completed service.

use crate::host_common::secs;
use crate::nodeset_common::{NodeSetEnv, Setup, names, processed};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_restart_mid_provisioning_and_mid_rollout_converges_without_repeating_anything() -> anyhow::Result<()> {
    let mut env = NodeSetEnv::start("nset-restart", Setup::default()).await?;
    let machines = names("server", 3);
    env.free_hosts(&machines, json!({})).await?;
    env.service("bootstrap", true, "bootstrap:1").await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let jobs = env.record_jobs().await?;
    let states = env.t.record().await?;
    let hosts = ["compute-0", "compute-1", "compute-2"];
    env.create_nodeset("computes", env.spec(&hosts, &["bootstrap", "configure-os"])).await?;

    // Mid-provisioning: a machine in `provisioning`, killed there.
    ferrometal_tests::wait::until("a machine provisioning", secs(120), Duration::from_millis(20), || {
        let provisioning = machines.iter().any(|m| states.current(m).as_deref() == Some("provisioning"));
        async move { provisioning.then_some(()) }
    })
    .await?;
    env.kill_operator();
    let mut at_kill = Vec::new();
    for machine in &machines {
        at_kill.push(crate::host_common::state_of(&env.t.hosts.get(machine).await?).to_string());
    }
    assert!(at_kill.iter().any(|s| s != "provisioned"), "killed while provisioning, not after: {at_kill:?}");
    env.start_operator().await?;
    env.wait_ready("computes", secs(300)).await?;
    for machine in &machines {
        let seen = states.states(machine);
        assert_eq!(seen.iter().filter(|s| *s == "provisioning").count(), 1, "{machine} provisioned once: {seen:?}");
        assert!(!seen.iter().any(|s| s == "deprovisioning"), "{machine}: {seen:?}");
    }
    for host in hosts {
        assert_eq!(
            (jobs.runs("bootstrap", host), jobs.runs("configure-os", host)),
            (1, 1),
            "{host}: {:?}",
            jobs.seen()
        );
    }

    // Mid-rollout: one host done, one in a running Job, one waiting.
    let _hold = env.hold_service_pods(Duration::from_secs(3));
    let edit = json!({"nodeTemplate": {"networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 9000, "gateway": "192.0.2.1"}]}});
    env.patch_spec("computes", edit).await?;
    env.wait_nodeset("computes", "one host configured, one running", secs(120), |n| {
        let hosts = n.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default();
        let configured = hosts
            .values()
            .filter(|h| h.desired_config_hash.is_some() && h.deployed_config_hash == h.desired_config_hash)
            .count();
        processed(n) && configured == 1
    })
    .await?;
    let running_before = jobs.seen().len();
    env.kill_operator();
    let running: Vec<String> = env
        .jobs
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|j| {
            !j.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        })
        .filter_map(|j| j.metadata.name)
        .collect();
    assert!(!running.is_empty(), "killed while a service Job had not finished");
    env.start_operator().await?;
    env.wait_nodeset("computes", "the rollout done", secs(180), |n| {
        processed(n)
            && crate::nodeset_common::condition_is(n, "Ready", "True")
            && n.status.as_ref().and_then(|s| s.rollout.as_ref()).and_then(|r| r.config_hash.clone())
                == n.status.as_ref().and_then(|s| s.config_hash.clone())
    })
    .await?;
    println!("{running_before} Jobs before the restart, {} after", jobs.seen().len());
    for host in hosts {
        assert_eq!(jobs.runs("bootstrap", host), 1, "{host}: runOnce stays once");
        assert_eq!(
            jobs.runs("configure-os", host),
            2,
            "{host}: once for the bring-up, once for the edit: {:?}",
            jobs.seen()
        );
    }
    for machine in &machines {
        assert_eq!(states.states(machine).iter().filter(|s| *s == "provisioning").count(), 1, "{machine}");
    }
    Ok(())
}
