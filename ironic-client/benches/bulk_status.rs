//! Bulk status versus one GET per node, on a real Ironic with 1000
//! fake-hardware nodes. Prints figures; asserts nothing about timings.
//!
//!     cargo bench -p ironic-client
//!
//! `FERROMETAL_BENCH_NODES` changes the node count (default 1000).

use std::time::{Duration, Instant};

use ferrometal_tests::ironic::{IronicConfig, IronicServer};
use futures::{StreamExt, TryStreamExt};
use ironic_client::{IronicClient, NodeCreate, Operation, STATUS_FIELDS};

const ROUNDS: usize = 3;

fn main() -> anyhow::Result<()> {
    // `cargo test --all-targets` and nextest run bench binaries too; only
    // `cargo bench` passes --bench, and only then is it worth creating a
    // thousand nodes. Test runners get no output at all: nextest reads the
    // output of `--list` as a list of tests, and this binary has none.
    if !std::env::args().any(|a| a == "--bench") {
        if !std::env::args().any(|a| a == "--list") {
            eprintln!("bulk_status: run with `cargo bench -p ironic-client`");
        }
        return Ok(());
    }
    // The figures are the output: the harness's log tails of Ironic would bury them.
    // SAFETY: no other thread exists yet; the runtime starts below.
    unsafe { std::env::set_var("FERROMETAL_LOG_TAILS", "0") };
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let nodes: usize = std::env::var("FERROMETAL_BENCH_NODES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);

    let started = Instant::now();
    let ironic = IronicServer::start(IronicConfig::default()).await?;
    let client = IronicClient::builder(ironic.endpoint()).build().await?;
    println!(
        "Ironic {} up in {:.1} s, API {}",
        ironic.endpoint(),
        started.elapsed().as_secs_f64(),
        client.api_version()
    );

    let started = Instant::now();
    let uuids: Vec<String> = futures::stream::iter(0..nodes)
        .map(|i| {
            let client = client.clone();
            async move {
                let create = NodeCreate::new("fake-hardware").name(format!("bench-{i:04}"));
                client.create_node(&create).await.map(|n| n.uuid)
            }
        })
        .buffer_unordered(ironic_client::DEFAULT_MAX_IN_FLIGHT)
        .try_collect()
        .await?;
    report("create", nodes, client.metrics().requests(Operation::CreateNode), started.elapsed());

    for round in 1..=ROUNDS {
        let before = client.metrics().requests(Operation::NodeStatus);
        let started = Instant::now();
        let statuses = client.node_statuses().await?;
        let wall = started.elapsed();
        assert_eq!(statuses.len(), nodes, "bulk status sees every node");
        let requests = client.metrics().requests(Operation::NodeStatus) - before;
        report(&format!("bulk status, round {round}"), statuses.len(), requests, wall);
    }

    for round in 1..=ROUNDS {
        let before = client.metrics().requests(Operation::GetNode);
        let started = Instant::now();
        let seen: Vec<_> = futures::stream::iter(&uuids)
            .map(|uuid| client.get_node_fields(uuid, STATUS_FIELDS))
            .buffer_unordered(ironic_client::DEFAULT_MAX_IN_FLIGHT)
            .try_collect()
            .await?;
        let wall = started.elapsed();
        let requests = client.metrics().requests(Operation::GetNode) - before;
        report(&format!("one GET per node, round {round}"), seen.len(), requests, wall);
    }

    let retries: u64 = client.metrics().snapshot().iter().map(|s| s.retries).sum();
    println!("retries over the whole run: {retries}");
    Ok(())
}

fn report(what: &str, nodes: usize, requests: u64, wall: Duration) {
    let secs = wall.as_secs_f64();
    println!(
        "{what:<28} {nodes:>5} nodes  {requests:>5} requests  wall {:>9.1} ms  {:>8.1} requests/s  {:>9.1} nodes/s",
        secs * 1000.0,
        requests as f64 / secs,
        nodes as f64 / secs,
    );
}
