//! Ironic's embedded cheroot server (10 threads, listen backlog 5) resets
//! connections under a burst. The default in-flight bound keeps a client
//! below that; a client configured far above it still gets every answer,
//! because resets are retried with jittered backoff.

mod common;

use ferrometal_tests::ironic::IronicConfig;
use futures::future::try_join_all;
use ironic_client::{IronicClient, Operation};

async fn burst(client: &IronicClient, ids: &[String], copies: usize) -> anyhow::Result<usize> {
    let calls = ids.iter().cycle().take(ids.len() * copies).map(|id| client.get_node_fields(id, &["name"]));
    Ok(try_join_all(calls).await?.len())
}

fn retries(client: &IronicClient) -> u64 {
    client.metrics().snapshot().iter().find(|s| s.operation == Operation::GetNode).map_or(0, |s| s.retries)
}

#[tokio::test]
async fn bursts_get_every_answer_within_and_far_beyond_the_in_flight_bound() -> anyhow::Result<()> {
    let (ironic, bounded) = common::start(IronicConfig::default()).await?;
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(common::fake_node(&bounded, &format!("burst-{i}")).await?.uuid);
    }

    assert_eq!(burst(&bounded, &ids, 25).await?, 200);
    assert_eq!(bounded.metrics().requests(Operation::GetNode), 200);
    println!("default bound of 8: {} retries for 200 GETs", retries(&bounded));

    // 96 at once: far past what cheroot accepts.
    let unbounded = common::builder(&ironic).max_in_flight(96).build().await?;
    assert_eq!(burst(&unbounded, &ids, 12).await?, 96);
    println!("96 in flight: {} retries for 96 GETs", retries(&unbounded));
    Ok(())
}
