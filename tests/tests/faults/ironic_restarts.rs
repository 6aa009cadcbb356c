//! Ironic restarted under the operator: with its database during provisioning and in steady
//! state, and without it (every node gone, as an Ironic with an ephemeral database that was
//! rescheduled) in steady state, where the operator must adopt what it finds provisioned
//! instead of deploying it again.

use crate::cluster::{Cluster, provisioned};
use ferrometal_tests::faults::{self, Figures};
use ferrometal_tests::ironic::IronicConfig;
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test]
async fn ironic_restarted_with_and_without_its_database_duplicates_and_reprovisions_nothing() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let scenario = "Ironic restarted (with its database while provisioning, without it in steady state)";
    let hosts = faults::length(3, 30);
    let mut cluster = Cluster::start("faults-ironic", IronicConfig::default()).await?;
    let recorder = cluster.recorder()?;
    let mut replicas = cluster.one_replica().await?;
    let names = cluster.provisioned_hosts("ironic", hosts).await?;
    let timeout = Duration::from_secs(faults::length(240, 900));
    let mut restarts = 0;

    // During provisioning, with the database.
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.ironic.restart(false).await?;
    restarts += 1;
    let c =
        faults::converge(&cluster.cp.client(), &cluster.ns, names.len(), Instant::now(), timeout, provisioned).await;
    println!("restarted with its database while provisioning: converged {c:?}");
    anyhow::ensure!(c.not_converged == 0, "not converged after a restart during provisioning: {c:?}");

    // Steady state: with the database, then without. Converged again once every host is
    // provisioned and its node is back and active in Ironic; the last time is the figure.
    let mut convergence = c;
    for wipe in [false, true] {
        cluster.ironic.restart(wipe).await?;
        restarts += 1;
        let since = Instant::now();
        let c = faults::converge(&cluster.cp.client(), &cluster.ns, names.len(), since, timeout, provisioned).await;
        anyhow::ensure!(c.not_converged == 0, "not converged after a restart (wipe: {wipe}): {c:?}");
        wait_all_active(&cluster, names.len(), timeout).await?;
        println!("restarted in steady state (database wiped: {wipe}): active again after {:?}", since.elapsed());
        convergence = faults::Convergence { not_converged: 0, time: Some(since.elapsed()) };
    }
    replicas.ensure_running()?;
    let mut figures = Figures::compute(scenario, restarts, &recorder.stop(), convergence);
    figures.panics = replicas.panics();
    faults::report(&figures);
    Ok(())
}

/// Waits until Ironic has one active node per host of the cluster's namespace.
async fn wait_all_active(cluster: &Cluster, hosts: usize, timeout: Duration) -> anyhow::Result<()> {
    let prefix = format!("{}~", cluster.ns);
    let ironic = &cluster.ironic;
    ferrometal_tests::wait::until("every node active in Ironic", timeout, Duration::from_millis(500), || {
        let prefix = prefix.clone();
        async move {
            let nodes = ironic.get_json("/v1/nodes?fields=name,provision_state").await.ok()?;
            let active = nodes["nodes"]
                .as_array()?
                .iter()
                .filter(|n| {
                    n["name"].as_str().is_some_and(|s| s.starts_with(&prefix)) && n["provision_state"] == "active"
                })
                .count();
            (active == hosts).then_some(())
        }
    })
    .await
}
