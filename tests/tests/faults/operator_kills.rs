//! The operator SIGKILLed at random seeded moments while fake-hardware hosts register and
//! provision: several kills per run, each followed by a restart after a random pause.

use crate::cluster::{Cluster, provisioned};
use ferrometal_tests::faults::{self, Figures, KillRound};
use ferrometal_tests::ironic::IronicConfig;
use rand::SeedableRng;
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test]
async fn the_operator_killed_at_random_moments_while_hosts_provision_loses_and_repeats_nothing() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let scenario = "operator SIGKILLed during provisioning";
    let seed = faults::seed(scenario);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (hosts, rounds) = (faults::length(4, 100), faults::length(2, 20));
    let cluster = Cluster::start("faults-kill", IronicConfig::default()).await?;
    let recorder = cluster.recorder()?;
    let mut replicas = cluster.one_replica().await?;
    let names = cluster.provisioned_hosts("kill", hosts).await?;

    for round in 0..rounds {
        let kill = KillRound::draw(&mut rng, 300..6000, 0..2000);
        kill.kill(&mut replicas, 0).await?;
        println!("round {round}: killed after {:?}, restarted after {:?}", kill.before, kill.down);
        kill.restart(&mut replicas, 0).await?;
    }
    let last_fault = Instant::now();
    let convergence = faults::converge(
        &cluster.cp.client(),
        &cluster.ns,
        names.len(),
        last_fault,
        Duration::from_secs(faults::length(240, 900)),
        provisioned,
    )
    .await;
    replicas.ensure_running()?;
    let mut figures = Figures::compute(scenario, replicas.kills, &recorder.stop(), convergence);
    figures.panics = replicas.panics();
    faults::report(&figures);
    Ok(())
}
