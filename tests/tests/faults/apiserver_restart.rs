//! The apiserver stopped and started again, etcd kept, under a running operator that has
//! provisioned its hosts: it recovers (leads again, and provisions a host created after the
//! restart) within 30 s, and repeats no completed work: Ironic sees no provision-state
//! request and no node creation for the hosts already active.

use crate::cluster::{Cluster, provisioned};
use ferrometal_tests::faults::{self, Figures, IronicLog};
use ferrometal_tests::ironic::IronicConfig;
use std::time::Duration;
use tokio::time::Instant;

const RECOVERY: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_apiserver_restarted_under_the_operator_recovers_within_30_s_and_repeats_no_completed_work()
-> anyhow::Result<()> {
    ferrometal_tests::init();
    let scenario = "apiserver stopped and started (etcd kept)";
    let hosts = faults::length(3, 30);
    let mut cluster = Cluster::start("faults-apiserver", IronicConfig::default()).await?;
    let recorder = cluster.recorder()?;
    let mut replicas = cluster.one_replica().await?;
    let names = cluster.provisioned_hosts("api", hosts).await?;
    let timeout = Duration::from_secs(faults::length(240, 900));
    let c =
        faults::converge(&cluster.cp.client(), &cluster.ns, names.len(), Instant::now(), timeout, provisioned).await;
    anyhow::ensure!(c.not_converged == 0, "the hosts did not provision before the fault: {c:?}");

    let log = IronicLog::new(&cluster.ironic.dir().join("ironic.log"));
    let mark = log.mark();
    // Shorter than the lease's renew deadline, and (full run) longer: then the operator stops
    // (it lost its lease) and its container is restarted, as the kubelet would.
    let outages: Vec<u64> = faults::length(vec![3], vec![3, 15]);
    let mut recoveries = Vec::new();
    for down in &outages {
        cluster.cp.stop_apiserver().await?;
        tokio::time::sleep(Duration::from_secs(*down)).await;
        cluster.cp.start_apiserver().await?;
        let started = Instant::now();
        let leader = loop {
            let restarted = replicas.revive()?;
            if restarted > 0 {
                println!("the operator exited during a {down} s outage and was restarted");
            }
            if let Some(i) = replicas.leader().await {
                break i;
            }
            anyhow::ensure!(
                started.elapsed() < RECOVERY,
                "no replica leads {RECOVERY:?} after the apiserver came back"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let leading = started.elapsed();
        // Working again: a host created now is provisioned.
        let fresh = cluster.provisioned_hosts(&format!("after-{down}s"), 1).await?;
        let all = names.len() + recoveries.len() + fresh.len();
        let c = faults::converge(&cluster.cp.client(), &cluster.ns, all, started, timeout, provisioned).await;
        println!("{down} s outage: replica {leader} leading {leading:?} after the restart, all converged {c:?}");
        anyhow::ensure!(leading <= RECOVERY, "leading again only after {leading:?}");
        recoveries.push((leading, c));
    }
    let record = recorder.stop();
    // The old hosts' nodes, by name and by UUID (the operator addresses nodes by either).
    let mut completed: Vec<String> = names.iter().map(|n| format!("{}~{n}", cluster.ns)).collect();
    for name in &names {
        completed.extend(record.machines.get(name).into_iter().flat_map(|m| m.nodes.iter().map(|n| n.uuid.clone())));
    }
    let repeated: Vec<_> = log
        .requests_since(mark)
        .into_iter()
        .filter(|r| {
            let node = r.path.strip_prefix("/v1/nodes/").and_then(|p| p.split('/').next()).unwrap_or_default();
            r.method == "PUT" && r.path.ends_with("/states/provision") && completed.iter().any(|c| c == node)
        })
        .collect();
    assert!(repeated.is_empty(), "completed hosts were asked to change provision state again: {repeated:?}");

    let convergence = recoveries.last().map(|(_, c)| *c).unwrap_or_default();
    let mut figures = Figures::compute(scenario, outages.len(), &record, convergence);
    figures.panics = replicas.panics();
    for (leading, _) in &recoveries {
        println!("recovered (leading) {:.1} s after the apiserver came back", leading.as_secs_f64());
    }
    faults::report(&figures);
    Ok(())
}
