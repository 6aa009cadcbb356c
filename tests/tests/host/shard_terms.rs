//! When a replica takes a shard Lease another held: the moment the holder's term ends by its
//! count, or the moment the Lease is released, not at its next look. The replica here looks
//! only every 20 s, so a Lease taken within 10 s was taken by the term's end or the release
//! it saw, not by a look.

use crate::host_common::{HostEnv, Options, secs};
use crate::shards::{LEASED, holders, lease_name, leasing_replica};
use ferrometal_tests::wait;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Patch, PatchParams};
use operator::testing::runtime::lease::LeaseTiming;
use std::time::Duration;

/// Looks far apart: a takeover sooner than a look cannot come from one.
const SLOW_LOOKS: LeaseTiming = LeaseTiming {
    duration: Duration::from_secs(40),
    renew_deadline: Duration::from_secs(30),
    retry_period: Duration::from_secs(20),
};

/// Writes `shard`'s Lease as held by `holder` (none: released), renewed now for `seconds`.
async fn write_lease(t: &HostEnv, shard: &str, holder: Option<&str>, seconds: i32) -> anyhow::Result<()> {
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    let name = lease_name(shard);
    let lease = Lease {
        metadata: ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() },
        spec: Some(LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    leases.patch(&name, &PatchParams::apply("shard-terms-test").force(), &Patch::Apply(&lease)).await?;
    Ok(())
}

#[tokio::test]
async fn a_replica_takes_a_lease_when_its_term_ends_or_it_is_released_not_at_its_next_look() -> anyhow::Result<()> {
    let t = HostEnv::start("host-shard-terms", Options::default()).await?;
    // A holder that will never renew: two Leases whose term ends in 2 s, two in 10 minutes.
    for (shard, seconds) in LEASED.iter().zip([2, 2, 600, 600]) {
        write_lease(&t, shard, Some("ghost"), seconds).await?;
    }
    let replica = leasing_replica(&t, "r1", SLOW_LOOKS).await?;
    let count =
        |held: &std::collections::BTreeMap<String, String>, who: &str| held.values().filter(|h| *h == who).count();
    wait::until_ok("r1 takes the two whose term ended", secs(10), Duration::from_millis(100), || async {
        let held = holders(&t).await?;
        Ok((count(&held, "r1") == 2 && count(&held, "ghost") == 2).then_some(()))
    })
    .await?;

    // The ghost hands its other two back: r1, alone alive now, takes them as it sees them freed.
    for shard in &LEASED[2..] {
        write_lease(&t, shard, None, 1).await?;
    }
    wait::until_ok("r1 takes the two released", secs(10), Duration::from_millis(100), || async {
        Ok(holders(&t).await?.values().all(|h| h == "r1").then_some(()))
    })
    .await?;
    replica.shutdown().await?;
    Ok(())
}
