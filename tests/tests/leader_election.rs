//! Leader election against the real apiserver, with two replicas of the
//! operator in this process, each running the Ironic controller while it leads.
//!
//! The timing is shortened (a 6 s lease, renewed every 0.5 s, given up 4 s
//! after the last renewal) so that the tests take seconds; the rules are the
//! production ones.

mod common;

use common::{Env, POLL};
use ferrometal_tests::proxy::TcpProxy;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use operator::testing::runtime::error::Error;
use operator::testing::runtime::leader::{LeaderElection, Loss};
use operator::testing::runtime::lease::LeaseTiming;
use operator::{Operator, OperatorConfig};
use std::time::Duration;
use tokio::time::Instant;

const LEASE: &str = "ferrometal-leader";
const TIMING: LeaseTiming = LeaseTiming {
    duration: Duration::from_secs(6),
    renew_deadline: Duration::from_secs(4),
    retry_period: Duration::from_millis(500),
};

fn replica(env: &Env, identity: &str) -> OperatorConfig {
    let mut config = env.operator_config();
    config.identity = identity.to_string();
    config.leader_election =
        Some(LeaderElection { namespace: env.ns.clone(), lease: LEASE.to_string(), timing: TIMING });
    config.ironic = Some(operator::testing::ironic::Config::default());
    config
}

/// Waits until `operator` leads; the time it took.
async fn until_leading(operator: &Operator, within: Duration) -> anyhow::Result<Duration> {
    let start = Instant::now();
    while !operator.metrics().leading() {
        anyhow::ensure!(start.elapsed() < within, "not leading after {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(start.elapsed())
}

async fn holder(env: &Env) -> anyhow::Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(env.client(), &env.ns);
    Ok(leases.get(LEASE).await?.spec.and_then(|s| s.holder_identity))
}

/// Asserts that `follower` does not lead for `period`, while the leader holds the lease.
async fn stays_follower(follower: &Operator, period: Duration) {
    let start = Instant::now();
    while start.elapsed() < period {
        assert!(!follower.metrics().leading(), "two replicas lead at once");
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn a_leader_cut_off_from_the_apiserver_stops_its_controllers_before_another_replica_takes_over()
-> anyhow::Result<()> {
    let env = Env::start("leader-cut").await?;
    let proxy = TcpProxy::start(env.cp.server_addr()?).await?;
    let cut_off = Operator::start(env.cp.client_through(proxy.addr()).await?, replica(&env, "replica-a")).await?;
    until_leading(&cut_off, Duration::from_secs(30)).await?;
    let metrics = cut_off.metrics();
    let other = env.start_operator(replica(&env, "replica-b")).await?;
    stays_follower(&other, Duration::from_secs(2)).await;

    proxy.sever();
    let severed = Instant::now();
    let exited = tokio::spawn(async move {
        let result = cut_off.wait().await;
        (severed.elapsed(), result)
    });
    let took_over = until_leading(&other, Duration::from_secs(60)).await?;
    let (stopped, result) = tokio::time::timeout(TIMING.duration, exited).await.map_err(|_| {
        let waited = TIMING.duration;
        anyhow::anyhow!("the cut-off replica still ran its controllers {waited:?} after another replica took over")
    })??;
    println!("the cut-off leader stopped {stopped:?} after the cut; the other took over after {took_over:?}");

    assert!(
        matches!(result, Err(Error::LostLeadership(Loss::Deadline))),
        "the cut-off leader stops with a lost lease: {result:?}"
    );
    assert!(
        stopped < took_over,
        "the cut-off leader stopped ({stopped:?} after the cut) before the other took over ({took_over:?})"
    );
    assert!(
        stopped <= TIMING.renew_deadline + TIMING.stop_grace() + Duration::from_secs(1),
        "stopped within the renew deadline and the stop grace: {stopped:?}"
    );
    assert!(!metrics.leading(), "the cut-off replica no longer reports leading");
    assert!(metrics.lease_renewal_failure_count() > 0, "its failed renewals were counted");
    assert_eq!(holder(&env).await?.as_deref(), Some("replica-b"));
    other.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn when_the_leader_dies_another_replica_takes_over_once_its_lease_runs_out() -> anyhow::Result<()> {
    let env = Env::start("leader-dies").await?;
    let leader = env.start_operator(replica(&env, "replica-a")).await?;
    until_leading(&leader, Duration::from_secs(30)).await?;
    let follower = env.start_operator(replica(&env, "replica-b")).await?;
    stays_follower(&follower, Duration::from_secs(2)).await;

    // Killed: nothing is released, the lease just stops being renewed.
    leader.abort();
    let took_over = until_leading(&follower, Duration::from_secs(60)).await?;
    println!("took over {took_over:?} after the leader died");
    // The last renewal came at most one retry period (plus the request) before the kill,
    // and the follower notices within a retry period once the lease has run out.
    assert!(
        took_over <= TIMING.duration + 2 * TIMING.retry_period + Duration::from_secs(2),
        "took over {took_over:?} after the leader died"
    );
    assert!(
        took_over >= TIMING.duration - TIMING.renew_deadline,
        "took over {took_over:?} after the kill: before the dead leader's lease can have run out"
    );
    assert_eq!(holder(&env).await?.as_deref(), Some("replica-b"));
    follower.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_leader_that_shuts_down_hands_the_lease_over_at_once() -> anyhow::Result<()> {
    let env = Env::start("leader-handover").await?;
    let leader = env.start_operator(replica(&env, "replica-a")).await?;
    until_leading(&leader, Duration::from_secs(30)).await?;
    let follower = env.start_operator(replica(&env, "replica-b")).await?;
    stays_follower(&follower, Duration::from_secs(1)).await;

    leader.shutdown().await?;
    let took_over = until_leading(&follower, Duration::from_secs(60)).await?;
    assert!(
        took_over < TIMING.duration - TIMING.retry_period,
        "the released lease was taken at the next attempt ({took_over:?}), not when it would have expired"
    );
    assert_eq!(holder(&env).await?.as_deref(), Some("replica-b"));
    follower.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_leader_whose_lease_is_deleted_stops_at_once_rather_than_at_its_deadline() -> anyhow::Result<()> {
    let env = Env::start("leader-deleted").await?;
    let leader = env.start_operator(replica(&env, "replica-a")).await?;
    until_leading(&leader, Duration::from_secs(30)).await?;

    // Deleted, a follower could create the Lease and lead at its next attempt: the leader must
    // not go on until its renew deadline.
    let leases: Api<Lease> = Api::namespaced(env.client(), &env.ns);
    leases.delete(LEASE, &Default::default()).await?;
    let deleted = Instant::now();
    let result = tokio::time::timeout(TIMING.duration, leader.wait()).await?;
    let stopped = deleted.elapsed();
    println!("the leader stopped {stopped:?} after its Lease was deleted");
    assert!(matches!(result, Err(Error::LostLeadership(Loss::Gone))), "stops with the Lease gone: {result:?}");
    assert!(stopped < TIMING.renew_deadline, "at its next attempt, not at its deadline: {stopped:?}");
    Ok(())
}
