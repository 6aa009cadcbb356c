//! What other writes onto a shard's Lease do to a replica, and what it leaves on them: a
//! holder's renewals go through writes that land between its read and its renewal, and a
//! replica that stops takes its requests with it.

use crate::host_common::{HostEnv, Options, secs};
use crate::shards::{LEASED, TIMING, holders, lease_name, leasing_replica};
use ferrometal_tests::wait;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Patch, PatchParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The annotation naming a replica that asks for a shard.
const WANTED_BY: &str = "ferrometal.io/wanted-by";
/// What the test writes onto the Leases.
const TOUCHED: &str = "test.ferrometal.io/touched";

/// When each shard's Lease was last renewed.
async fn renew_times(leases: &kube::Api<Lease>) -> anyhow::Result<BTreeMap<String, String>> {
    let mut times = BTreeMap::new();
    for shard in LEASED {
        let spec = leases.get(&lease_name(shard)).await?.spec.unwrap_or_default();
        times.insert(shard.to_string(), format!("{:?}", spec.renew_time));
    }
    Ok(times)
}

#[tokio::test]
async fn a_holder_renews_its_shard_leases_through_writes_landing_between_its_read_and_its_renewal() -> anyhow::Result<()>
{
    let t = HostEnv::start("host-shard-renew", Options::default()).await?;
    let replica = leasing_replica(&t, "r1", TIMING).await?;
    wait::until_ok("r1 holds every shard", secs(30), Duration::from_millis(100), || async {
        Ok(holders(&t).await?.values().all(|h| h == "r1").then_some(()))
    })
    .await?;
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    let before = renew_times(&leases).await?;
    let failed = replica.metrics().shard_lease_failure_count("renewal");

    // Every Lease written back to back for eight retry periods, as a standby replica's request
    // is written: each write a new resourceVersion, none touching the holder.
    let (started, mut writes) = (Instant::now(), 0_u64);
    while started.elapsed() < TIMING.retry_period * 8 {
        for shard in LEASED {
            let touched = serde_json::json!({ "metadata": { "annotations": { TOUCHED: writes.to_string() } } });
            leases.patch(&lease_name(shard), &PatchParams::default(), &Patch::Merge(&touched)).await?;
            writes += 1;
        }
    }
    println!("{writes} writes onto the held Leases in {:?}", started.elapsed());

    assert_eq!(replica.metrics().shard_lease_failure_count("renewal"), failed, "no renewal failed");
    assert!(holders(&t).await?.values().all(|h| h == "r1"), "r1 kept every shard");
    let after = renew_times(&leases).await?;
    // The renewals wrote over none of those writes: each Lease shows the last of its round
    // (the rounds are whole, so the last round's writes are numbered from writes - 4).
    for (last, shard) in (writes - 4..).zip(LEASED) {
        assert_ne!(before[shard], after[shard], "{shard} renewed while the writes landed");
        let lease = leases.get(&lease_name(shard)).await?;
        let shown = lease.metadata.annotations.unwrap_or_default().remove(TOUCHED);
        assert_eq!(shown, Some(last.to_string()), "{shard}: the last write onto it kept");
    }
    replica.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_replica_that_stops_withdraws_its_request() -> anyhow::Result<()> {
    let t = HostEnv::start("host-shard-withdraw", Options::default()).await?;
    let (first, second) = tokio::try_join!(leasing_replica(&t, "r1", TIMING), leasing_replica(&t, "r2", TIMING))?;
    wait::until_ok("two shards each", secs(30), Duration::from_millis(100), || async {
        let held = holders(&t).await?;
        let count = |r: &str| held.values().filter(|h| *h == r).count();
        Ok((count("r1") == 2 && count("r2") == 2).then_some(held))
    })
    .await?;

    // A third replica, nobody over its share of four among three, holds nothing: it asks, to
    // be counted, for a Lease another holds.
    let third = leasing_replica(&t, "r3", TIMING).await?;
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    let requested = || async {
        let mut asked = Vec::new();
        for shard in LEASED {
            let lease = leases.get(&lease_name(shard)).await?;
            if lease.metadata.annotations.unwrap_or_default().get(WANTED_BY).map(String::as_str) == Some("r3") {
                asked.push(shard.to_string());
            }
        }
        anyhow::Ok(asked)
    };
    wait::until_ok("r3 asks for a shard", secs(30), Duration::from_millis(100), || async {
        Ok((!requested().await?.is_empty()).then_some(()))
    })
    .await?;
    third.shutdown().await?;

    assert_eq!(requested().await?, Vec::<String>::new(), "no request of r3 left behind");
    first.shutdown().await?;
    second.shutdown().await?;
    Ok(())
}
