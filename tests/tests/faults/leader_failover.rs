//! Two replicas electing a leader while hosts provision: the leader SIGKILLed, and the other
//! takes over within the lease duration; the leader cut off from the apiserver (a severable
//! proxy), and it makes no Ironic call after its local deadline (its Ironic traffic goes
//! through a proxy of its own that notes when it last forwarded a request).

use crate::cluster::{Cluster, LEASE_SECONDS, RENEW_DEADLINE_SECONDS, RETRY_PERIOD_SECONDS, provisioned};
use ferrometal_tests::faults::{self, Figures, Replicas};
use ferrometal_tests::ironic::IronicConfig;
use ferrometal_tests::proxy::TcpProxy;
use std::time::Duration;
use tokio::time::Instant;

/// The lease duration, counted from the follower's own sight of the last renewal (it polls
/// every retry period), its next attempt, and the requests' time on a busy 2-core machine:
/// the bound the in-process leader-election test uses.
const TAKEOVER: Duration = Duration::from_secs(LEASE_SECONDS + 2 * RETRY_PERIOD_SECONDS + 3);

#[tokio::test]
async fn a_killed_leader_is_replaced_within_the_lease_and_a_cut_off_leader_stops_calling_ironic() -> anyhow::Result<()>
{
    ferrometal_tests::init();
    let scenario = "leader SIGKILLed, then cut off from the apiserver";
    let hosts = faults::length(3, 30);
    let cluster = Cluster::start("faults-leader", IronicConfig::default()).await?;
    let recorder = cluster.recorder()?;
    let api = TcpProxy::start(cluster.cp.server_addr()?).await?;
    let ironic_url = url::Url::parse(cluster.ironic.endpoint())?;
    let ironic_addr = std::net::SocketAddr::from(([127, 0, 0, 1], ironic_url.port().unwrap_or(80)));
    let ironic = TcpProxy::start(ironic_addr).await?;
    let through = format!("http://{}", ironic.addr());
    // Replica 0 (the webhook's) goes directly; replica 1 through both proxies.
    let mut replicas = Replicas::start(vec![cluster.launch(0, None, None)?])?;
    replicas.wait_leader(Duration::from_secs(120)).await?;
    let names = cluster.provisioned_hosts("leader", hosts).await?;
    let mut replicas = replicas.with(cluster.launch(1, Some(api.addr()), Some(&through))?)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    anyhow::ensure!(replicas.leader().await == Some(0), "the first replica leads");

    // SIGKILL the leader while hosts provision: replica 1 takes over within the lease.
    replicas.kill(0);
    let killed = Instant::now();
    let leader = replicas.wait_leader(TAKEOVER + Duration::from_secs(30)).await?;
    let takeover = killed.elapsed();
    println!("replica {leader} took over {takeover:?} after the leader was SIGKILLed");
    assert_eq!(leader, 1);
    assert!(takeover <= TAKEOVER, "took over after {takeover:?}, beyond the lease duration");
    replicas.restart(0)?;
    let timeout = Duration::from_secs(faults::length(240, 900));
    let c =
        faults::converge(&cluster.cp.client(), &cluster.ns, names.len(), Instant::now(), timeout, provisioned).await;
    anyhow::ensure!(c.not_converged == 0, "not converged under the new leader: {c:?}");

    // Cut the leader (replica 1) off from the apiserver: its renewals fail, and from its
    // local deadline on it calls Ironic no more; replica 0 takes over.
    let fresh = cluster.provisioned_hosts("after-cut", 1).await?;
    api.sever();
    let cut = Instant::now();
    // The cut-off replica exits once it has given up its lease: only `/readyz` is asked here.
    let leader = loop {
        if let Some(i) = replicas.leader().await
            && i != 1
        {
            break Ok(i);
        }
        if cut.elapsed() > TAKEOVER + Duration::from_secs(30) {
            break Err(anyhow::anyhow!("no other replica leads {:?} after the cut", cut.elapsed()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (last_call, _) = ironic.last_forwarded();
    let deadline = cut + Duration::from_secs(RENEW_DEADLINE_SECONDS);
    println!(
        "cut off: replica {leader:?} leads {:?} after the cut; the cut-off leader's last Ironic call {:?} after the cut (deadline {RENEW_DEADLINE_SECONDS} s)",
        cut.elapsed(),
        last_call.map(|t| t.saturating_duration_since(cut.into_std()))
    );
    assert_eq!(leader?, 0, "the replica that still reaches the apiserver took over");
    assert!(
        last_call.is_none_or(|t| t <= deadline.into_std()),
        "the cut-off leader called Ironic {:?} after its local deadline",
        last_call.map(|t| t.saturating_duration_since(deadline.into_std()))
    );
    let all = names.len() + fresh.len();
    let convergence = faults::converge(&cluster.cp.client(), &cluster.ns, all, cut, timeout, provisioned).await;
    api.restore();
    let _ = replicas.revive()?;
    let mut figures = Figures::compute(scenario, 2, &recorder.stop(), convergence);
    figures.panics = replicas.panics();
    faults::report(&figures);
    Ok(())
}
