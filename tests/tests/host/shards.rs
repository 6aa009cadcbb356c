//! Shards: two replicas that serve different shards of the hosts, against one Ironic. Each
//! registers and provisions only its own hosts, each node carries its host's shard, and the
//! nodes of hosts provisioned before the hosts were divided are moved into their shards
//! without being provisioned again.

use crate::host_common::{HostEnv, Options, secs};
use ferrometal_tests::wait;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::ListParams;
use operator::testing::host::Shards;
use operator::testing::runtime::leader::LeaderElection;
use operator::testing::runtime::lease::LeaseTiming;
use std::collections::BTreeMap;
use std::time::Duration;

const SHARDS: [&str; 2] = ["east", "west"];

fn shards(served: &str) -> anyhow::Result<Shards> {
    let all: Vec<String> = SHARDS.iter().map(|s| (*s).to_string()).collect();
    Shards::parse(&all, &[served.to_string()])?.ok_or_else(|| anyhow::anyhow!("no shards"))
}

/// Host names `<prefix>-<i>`, `each` of every one of `shards` shards: the shard depends on the
/// test's namespace too, so names are picked rather than fixed.
fn per_shard(prefix: &str, each: usize, shards: usize, owner: &impl Fn(&str) -> String) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for i in 0.. {
        let name = format!("{prefix}-{i}");
        if names.iter().filter(|n| owner(n.as_str()) == owner(&name)).count() < each {
            names.push(name);
        }
        if names.len() == each * shards {
            break;
        }
    }
    names
}

async fn create_provisioned(t: &HostEnv, names: &[String]) -> anyhow::Result<()> {
    crate::scale::create_hosts_to_provision(t, names).await?;
    for name in names {
        t.wait_provisioned(name, secs(120)).await?;
    }
    Ok(())
}

#[tokio::test]
async fn replicas_of_different_shards_each_serve_only_their_hosts_and_nodes_carry_the_hosts_shard() -> anyhow::Result<()>
{
    let mut t = HostEnv::start("host-shards", Options::default()).await?;
    // Before shards: one replica serves every host, and their nodes carry no shard.
    t.start_operator(t.host_config()).await?;
    let (every, ns) = (shards("east")?, t.ns().to_string());
    let owner = |name: &str| every.shard_of(&ns, name).to_string();
    let before = per_shard("old", 1, SHARDS.len(), &owner);
    create_provisioned(&t, &before).await?;
    let mut deployed = Vec::new();
    for name in &before {
        let uuid = t.node_uuid(name).await?;
        assert_eq!(t.node(name).await?.and_then(|n| n["shard"].as_str().map(str::to_string)), None);
        deployed.push((name.clone(), uuid));
    }
    t.operator.take().ok_or_else(|| anyhow::anyhow!("no operator"))?.shutdown().await?;

    // Two replicas, one shard each.
    let mut replicas = Vec::new();
    for served in SHARDS {
        let mut config = t.env.operator_config();
        config.identity = format!("replica-{served}");
        config.host = Some(operator::testing::host::Config { shards: Some(shards(served)?), ..t.host_config() });
        replicas.push((served, t.env.start_operator(config).await?));
    }
    let after = per_shard("new", 3, SHARDS.len(), &owner);
    create_provisioned(&t, &after).await?;
    for name in before.iter().chain(&after) {
        let expected = owner(name);
        wait::until_ok(&format!("{name}'s node in shard {expected}"), secs(60), Duration::from_millis(200), || async {
            let node = t.node(name).await?;
            Ok(node.filter(|n| n["shard"].as_str() == Some(expected.as_str())).map(|_| ()))
        })
        .await?;
    }
    assert_eq!(t.node_count().await?, before.len() + after.len(), "one node per host, none twice");
    // Moved into their shards, the old hosts' nodes were not deployed again.
    for (name, uuid) in &deployed {
        assert_eq!(t.node_uuid(name).await?, *uuid, "{name} kept its node");
        let deploys = t.ironic_transitions(uuid)?.iter().filter(|s| *s == "deploying").count();
        assert_eq!(deploys, 1, "{name} was provisioned once");
        t.wait_provisioned(name, secs(30)).await?;
    }
    // Every Event about a new host came from the replica of its shard.
    for name in &after {
        let reporters = reporters(&t, name).await?;
        assert!(!reporters.is_empty(), "{name}: no events");
        assert_eq!(reporters, [format!("replica-{}", owner(name))], "{name}");
    }
    // Each replica asked Ironic to create nodes only for its own hosts: new ones, and old ones
    // (a conflict, then the node found by name).
    for (served, operator) in &replicas {
        let own = before.iter().chain(&after).filter(|name| owner(name) == *served).count();
        let created = operator.metrics().ironic_request_count("create_node") as usize;
        assert!(created <= own, "{served} asked to create {created} nodes for its {own} hosts");
    }
    let hosts = t.hosts.list(&ListParams::default()).await?;
    assert!(hosts.items.iter().all(|h| crate::host_common::state_of(h) == "provisioned"));
    for (_, operator) in replicas {
        operator.shutdown().await?;
    }
    Ok(())
}

/// The replicas that reported Events about `host`.
async fn reporters(t: &HostEnv, host: &str) -> anyhow::Result<Vec<String>> {
    let mut instances: Vec<String> =
        t.events_about(host).await?.into_iter().filter_map(|e| e.reporting_instance).collect();
    instances.sort();
    instances.dedup();
    Ok(instances)
}

/// Short terms, so that a takeover is seconds away.
pub(crate) const TIMING: LeaseTiming = LeaseTiming {
    duration: Duration::from_secs(3),
    renew_deadline: Duration::from_secs(2),
    retry_period: Duration::from_millis(500),
};

pub(crate) const LEASED: [&str; 4] = ["a", "b", "c", "d"];

/// A replica that takes shard Leases of `LEASED`, timed by `timing`.
pub(crate) async fn leasing_replica(
    t: &HostEnv,
    identity: &str,
    timing: LeaseTiming,
) -> anyhow::Result<operator::Operator> {
    let all: Vec<String> = LEASED.iter().map(|s| (*s).to_string()).collect();
    let mut config = t.env.operator_config();
    config.identity = identity.into();
    config.leader_election = Some(LeaderElection { timing, ..LeaderElection::new(t.ns(), "fm") });
    config.host = Some(operator::testing::host::Config {
        shards: Shards::parse(&all, &[])?,
        shard_leases: true,
        ..t.host_config()
    });
    t.env.start_operator(config).await
}

/// The Lease of `shard`.
pub(crate) fn lease_name(shard: &str) -> String {
    format!("fm-shard-{shard}")
}

/// Who holds each shard's Lease now (a released or missing one: nobody).
pub(crate) async fn holders(t: &HostEnv) -> anyhow::Result<BTreeMap<String, String>> {
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    let mut holders = BTreeMap::new();
    for shard in LEASED {
        let holder = leases.get_opt(&lease_name(shard)).await?.and_then(|l| l.spec?.holder_identity);
        holders.insert(shard.to_string(), holder.unwrap_or_default());
    }
    Ok(holders)
}

/// When `identity` last renewed each Lease it holds.
async fn renewals_by(t: &HostEnv, identity: &str) -> anyhow::Result<BTreeMap<String, k8s_openapi::jiff::Timestamp>> {
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    let mut renewed = BTreeMap::new();
    for shard in LEASED {
        let spec = leases.get(&lease_name(shard)).await?.spec.unwrap_or_default();
        if spec.holder_identity.as_deref() == Some(identity)
            && let Some(time) = spec.renew_time
        {
            renewed.insert(shard.to_string(), time.0);
        }
    }
    Ok(renewed)
}

#[tokio::test]
async fn replicas_with_shard_leases_divide_the_shards_and_hand_them_over_with_hosts_in_flight_provisioning_each_once()
-> anyhow::Result<()> {
    let t = HostEnv::start("host-shard-leases", Options::default()).await?;
    let all: Vec<String> = LEASED.iter().map(|s| (*s).to_string()).collect();
    let every = Shards::parse(&all, &[])?.ok_or_else(|| anyhow::anyhow!("no shards"))?;
    let ns = t.ns().to_string();
    let owner = |name: &str| every.shard_of(&ns, name).to_string();
    let first = leasing_replica(&t, "r1", TIMING).await?;
    wait::until_ok("r1 holds every shard", secs(30), Duration::from_millis(100), || async {
        Ok(holders(&t).await?.values().all(|h| h == "r1").then_some(()))
    })
    .await?;

    // Hosts of every shard start provisioning under r1, and r2 starts at once: r1 gives up two
    // shards r2 asks for while their hosts are on the way.
    let given = per_shard("given", 1, LEASED.len(), &owner);
    crate::scale::create_hosts_to_provision(&t, &given).await?;
    let second = leasing_replica(&t, "r2", TIMING).await?;
    let split = wait::until_ok("two shards each", secs(60), Duration::from_millis(100), || async {
        let held = holders(&t).await?;
        let count = |r: &str| held.values().filter(|h| *h == r).count();
        Ok((count("r1") == 2 && count("r2") == 2).then_some(held))
    })
    .await?;
    for name in &given {
        t.wait_provisioned(name, secs(120)).await?;
    }

    // Hosts of every shard again, and r2 dies without a word while they are on the way: its
    // Leases are neither renewed nor released, and r1 takes them once their term ends.
    let taken = per_shard("taken", 1, LEASED.len(), &owner);
    crate::scale::create_hosts_to_provision(&t, &taken).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    second.abort();
    let killed = std::time::Instant::now();
    // A write already sent when it was aborted lands within moments; then its renewals stand.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let renewed = renewals_by(&t, "r2").await?;
    wait::until_ok("r1 holds every shard again", secs(30), Duration::from_millis(50), || async {
        Ok(holders(&t).await?.values().all(|h| h == "r1").then_some(()))
    })
    .await?;
    let handover = killed.elapsed();
    println!("shards of the killed replica taken over in {handover:?} (lease duration {:?})", TIMING.duration);
    // Not before the term its last renewal gave could end (same machine, same clock).
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    for (shard, renew) in &renewed {
        let spec = leases.get(&lease_name(shard)).await?.spec.unwrap_or_default();
        let acquired = spec.acquire_time.ok_or_else(|| anyhow::anyhow!("{shard}: no acquire time"))?.0;
        let term = k8s_openapi::jiff::SignedDuration::try_from(TIMING.duration)?;
        assert!(acquired >= renew.checked_add(term)?, "{shard} taken at {acquired}, renewed at {renew}");
    }
    assert_eq!(renewed.len(), 2, "r2 held two shards: {renewed:?}");
    for name in &taken {
        t.wait_provisioned(name, secs(120)).await?;
    }

    // One node per host, each deployed once; the hosts of r1's own shards never saw r2.
    assert_eq!(t.node_count().await?, given.len() + taken.len(), "one node per host");
    for name in given.iter().chain(&taken) {
        let uuid = t.node_uuid(name).await?;
        let deploys = t.ironic_transitions(&uuid)?.iter().filter(|s| *s == "deploying").count();
        assert_eq!(deploys, 1, "{name} was provisioned once");
    }
    for name in taken.iter().filter(|n| split[&owner(n)] == "r1") {
        assert_eq!(reporters(&t, name).await?, ["r1"], "{name}: served by the holder of its shard");
    }
    first.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn replicas_started_together_count_each_other_and_take_two_shards_each_giving_none_back() -> anyhow::Result<()> {
    let t = HostEnv::start("host-shard-start", Options::default()).await?;
    // Each replica's start lasts a retry period after its first look, at most 2 s (the shipped
    // retry period), which two replicas of one process started at once fall within.
    let timing = LeaseTiming {
        duration: Duration::from_secs(6),
        renew_deadline: Duration::from_secs(4),
        retry_period: Duration::from_secs(2),
    };
    let (first, second) = tokio::try_join!(leasing_replica(&t, "r1", timing), leasing_replica(&t, "r2", timing))?;
    let split = wait::until_ok("two shards each", secs(30), Duration::from_millis(100), || async {
        let held = holders(&t).await?;
        let count = |r: &str| held.values().filter(|h| *h == r).count();
        Ok((count("r1") == 2 && count("r2") == 2).then_some(held))
    })
    .await?;
    // Each Lease was taken once: none went to one replica first and was handed to the other.
    let leases: kube::Api<Lease> = kube::Api::namespaced(t.env.client(), t.ns());
    for shard in LEASED {
        let spec = leases.get(&lease_name(shard)).await?.spec.unwrap_or_default();
        assert_eq!(spec.lease_transitions, Some(1), "{shard} changed hands: {split:?}");
    }
    first.shutdown().await?;
    second.shutdown().await?;
    Ok(())
}
