//! `make bench`, sharded: a pre-registered fleet of N = 1000 and 10,000 hosts served by two
//! replicas dividing four shards, against one Ironic API and two conductors over MariaDB
//! (`ferrometal_tests::bench::shards` says what is measured and how; `design/performance.md`
//! records the figures). Prints figures; asserts nothing about timings.
//!
//!     cargo bench -p ferrometal-tests --bench shards
//!     FERROMETAL_BENCH_SHARD_HOSTS=1000 cargo bench -p ferrometal-tests --bench shards

use ferrometal_tests::bench::shards::{self, Options};
use operator::testing::host::Shards;
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    if !ferrometal_tests::bench::started_by_cargo_bench("shards") {
        return Ok(());
    }
    let options = Options::full(shard_of()?);
    eprintln!("[shards] host counts {:?}", options.hosts);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let reports = runtime.block_on(shards::run(&options, |report| {
        eprint!("{}", shards::render(std::slice::from_ref(report)));
    }))?;
    print!("{}", shards::render(&reports));
    Ok(())
}

/// The operator's own assignment of hosts to the four shards the replicas divide.
fn shard_of() -> anyhow::Result<shards::ShardOf> {
    let all: Vec<String> = ["0", "1", "2", "3"].map(String::from).into();
    let shards = Shards::parse(&all, &[])?.ok_or_else(|| anyhow::anyhow!("no shards"))?;
    Ok(Arc::new(move |namespace: &str, name: &str| shards.shard_of(namespace, name).to_string()))
}
