//! Runs the controllers while this replica leads, and stops them within a
//! bound: on a shutdown request, a failed controller or a lost lease.
//!
//! A controller stops cleanly when its in-flight reconciles finish; one stuck
//! on a request that never returns (an apiserver or an Ironic that stopped
//! answering) would hold the process forever, so after a grace period the
//! tasks are aborted and the runtime reports that it had to. After a lost
//! lease the grace is the lease's stop grace (half the margin between the
//! renew deadline and the lease's expiry), so that the controllers are gone
//! before another replica can take over; when another replica already holds
//! the lease there is no grace at all.

use super::error::Error;
use super::leader::{self, Leadership, Loss};
use super::readiness::Readiness;
use crate::config::OperatorConfig;
use crate::kit::Context;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long releasing the lease may delay the exit.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long aborted tasks get to unwind before the runtime stops waiting.
const ABORT_WAIT: Duration = Duration::from_secs(1);

/// Why the controllers are being stopped.
enum Stop {
    Requested,
    Lost(Loss),
    Failed(Error),
}

/// Waits for leadership (when configured), runs the controllers, and stops
/// them all when one fails, leadership is lost, or shutdown is asked for.
pub(super) async fn supervise(
    ctx: Arc<Context>,
    config: OperatorConfig,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    if super::shards::by_lease(&config) {
        return super::shards::run(ctx, config, ready, shutdown).await;
    }
    let mut leadership = match &config.leader_election {
        Some(election) => tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            acquired = leader::acquire(ctx.client.clone(), election, &config.identity, || ready.standing_by(), ctx.metrics.clone()) => {
                Some(acquired.map_err(Error::LeaderElection)?)
            }
        },
        None => None,
    };
    ctx.metrics.set_leading(true);
    // Before any controller starts, so that every watch it syncs is expected.
    let running: Vec<&str> = [
        config.ironic.is_some().then_some("ironic"),
        config.host.is_some().then_some("host"),
        config.nodeset.is_some().then_some("nodeset"),
    ]
    .into_iter()
    .flatten()
    .collect();
    ready.leading(&running, &config.namespaces);
    let controllers = shutdown.child_token();
    let mut tasks = spawn_controllers(&ctx, &config, &controllers);

    let stop = loop {
        tokio::select! {
            () = shutdown.cancelled() => break Stop::Requested,
            loss = lost(&mut leadership) => break Stop::Lost(loss),
            Some(done) = tasks.join_next() => match done {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => break Stop::Failed(err),
                Err(join) => break Stop::Failed(Error::Controller { controller: "runtime", source: Box::new(join) }),
            },
        }
    };
    let grace = match (&stop, &config.leader_election) {
        // Another replica leads already: not a moment more.
        (Stop::Lost(Loss::Taken { .. } | Loss::Gone), _) => Duration::ZERO,
        (Stop::Lost(_), Some(election)) => election.timing.stop_grace().min(config.shutdown_grace),
        _ => config.shutdown_grace,
    };
    if let Stop::Lost(loss) = &stop {
        ctx.metrics.set_leading(false);
        tracing::error!(reason = %loss, ?grace, "lost the leader lease; stopping the controllers");
    }
    let stopped = stop_within(&mut tasks, &controllers, grace, &mut leadership).await;
    ctx.metrics.set_leading(false);
    // After a loss the lease is not ours to release.
    let result = match (stop, stopped) {
        (Stop::Lost(loss), _) => return Err(Error::LostLeadership(loss)),
        (Stop::Failed(err), Stopped::LostWhileStopping(_)) => return Err(err),
        (Stop::Requested, Stopped::LostWhileStopping(loss)) => return Err(Error::LostLeadership(loss)),
        (Stop::Failed(err), _) => Err(err),
        (Stop::Requested, Stopped::InTime) => Ok(()),
        (Stop::Requested, Stopped::Aborted) => Err(Error::StopTimeout { grace }),
    };
    // The controllers are gone (finished or aborted): hand the lease to a successor
    // now rather than make it wait for the lease to expire.
    if let Some(leadership) = leadership {
        leadership.release(RELEASE_TIMEOUT).await;
    }
    result
}

fn spawn_controllers(
    ctx: &Arc<Context>,
    config: &OperatorConfig,
    token: &CancellationToken,
) -> JoinSet<Result<(), Error>> {
    let mut tasks = JoinSet::new();
    if let Some(ironic) = config.ironic.clone() {
        let (ctx, token) = (ctx.clone(), token.clone());
        tasks.spawn(async move {
            crate::ironic::run(ctx, ironic, token)
                .await
                .map_err(|e| Error::Controller { controller: "ironic", source: Box::new(e) })
        });
    }
    if let Some(host) = config.host.clone() {
        let (ctx, token) = (ctx.clone(), token.clone());
        tasks.spawn(async move {
            crate::host::run(ctx, host, token)
                .await
                .map_err(|e| Error::Controller { controller: "host", source: Box::new(e) })
        });
    }
    if let Some(nodeset) = config.nodeset.clone() {
        let (ctx, token) = (ctx.clone(), token.clone());
        tasks.spawn(async move {
            crate::nodeset::run(ctx, nodeset, token)
                .await
                .map_err(|e| Error::Controller { controller: "nodeset", source: Box::new(e) })
        });
    }
    tasks
}

/// Resolves when a held lease is lost; never, without leader election.
async fn lost(leadership: &mut Option<Leadership>) -> Loss {
    match leadership {
        Some(leadership) => leadership.lost().await,
        None => std::future::pending().await,
    }
}

/// How the controllers stopped.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stopped {
    /// Every task finished within the grace period.
    InTime,
    /// The grace period ran out; the rest were aborted.
    Aborted,
    /// The lease was lost while they were stopping; the rest were aborted.
    LostWhileStopping(Loss),
}

/// Cancels `token` and waits for `tasks` to finish, for at most `grace` and
/// not past a loss of the lease; then aborts the rest.
pub(super) async fn stop_within<T: std::fmt::Display + 'static>(
    tasks: &mut JoinSet<Result<(), T>>,
    token: &CancellationToken,
    grace: Duration,
    leadership: &mut Option<Leadership>,
) -> Stopped {
    token.cancel();
    let drained = async {
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::warn!(error = %err, "a controller failed while stopping"),
                Err(join) => tracing::warn!(error = %join, "a controller task failed while stopping"),
            }
        }
    };
    let stopped = tokio::select! {
        () = drained => return Stopped::InTime,
        () = tokio::time::sleep(grace) => Stopped::Aborted,
        loss = lost(leadership) => Stopped::LostWhileStopping(loss),
    };
    tracing::error!(
        remaining = tasks.len(),
        ?grace,
        how = ?stopped,
        "the controllers did not stop in time; aborting them"
    );
    tasks.abort_all();
    let _ = tokio::time::timeout(ABORT_WAIT, async { while tasks.join_next().await.is_some() {} }).await;
    stopped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that stops when cancelled, after `delay`.
    fn polite(tasks: &mut JoinSet<Result<(), String>>, token: &CancellationToken, delay: Duration) {
        let token = token.clone();
        tasks.spawn(async move {
            token.cancelled().await;
            tokio::time::sleep(delay).await;
            Ok(())
        });
    }

    /// A task that ignores cancellation: a reconcile stuck on a dead connection.
    fn stuck(tasks: &mut JoinSet<Result<(), String>>, dropped: Arc<std::sync::atomic::AtomicBool>) {
        tasks.spawn(async move {
            struct Flag(Arc<std::sync::atomic::AtomicBool>);
            impl Drop for Flag {
                fn drop(&mut self) {
                    self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let _flag = Flag(dropped);
            std::future::pending::<()>().await;
            Ok(())
        });
    }

    #[tokio::test(start_paused = true)]
    async fn controllers_that_stop_in_time_are_waited_for() {
        let token = CancellationToken::new();
        let mut tasks = JoinSet::new();
        polite(&mut tasks, &token, Duration::from_secs(3));
        let start = tokio::time::Instant::now();
        let stopped = stop_within(&mut tasks, &token, Duration::from_secs(20), &mut None).await;
        assert_eq!(stopped, Stopped::InTime);
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert!(tasks.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stuck_controller_is_aborted_after_the_grace_period() {
        let token = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        polite(&mut tasks, &token, Duration::from_secs(1));
        stuck(&mut tasks, dropped.clone());
        let start = tokio::time::Instant::now();
        let stopped = stop_within(&mut tasks, &token, Duration::from_secs(20), &mut None).await;
        assert_eq!(stopped, Stopped::Aborted);
        assert!(start.elapsed() >= Duration::from_secs(20) && start.elapsed() < Duration::from_secs(22));
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "the stuck task was aborted");
        assert!(tasks.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_grace_aborts_at_once() {
        let token = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        stuck(&mut tasks, dropped.clone());
        // Let it start: it is in the middle of its work when the stop comes.
        tokio::task::yield_now().await;
        let start = tokio::time::Instant::now();
        assert_eq!(stop_within(&mut tasks, &token, Duration::ZERO, &mut None).await, Stopped::Aborted);
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }
}
