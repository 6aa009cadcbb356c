//! Runs the host controller for the shards whose Leases this replica holds, and starts it
//! again whenever that set changes: a shard taken, given up, or past the deadline of its last
//! renewal (stopped within the lease's stop grace, before another replica can take it). What
//! the controllers serve is told back to the elector with the number of the publication it
//! came from, and the elector releases a shard given up only once a publication without it
//! was applied.

use super::elector::{Applied, Elector, Held};
use crate::config::OperatorConfig;
use crate::kit::Context;
use crate::kit::backoff::sleep_until_some;
use crate::kit::error::KubeError;
use crate::runtime::error::Error;
use crate::runtime::readiness::Readiness;
use crate::runtime::supervise::{Stopped, stop_within};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long releasing the Leases may delay the exit.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(2);

/// The host controller of some shards.
struct Running {
    shards: BTreeSet<String>,
    tasks: JoinSet<Result<(), Error>>,
    token: CancellationToken,
}

/// The shards of `held` whose deadline has not passed.
fn live(held: &Held, now: Instant) -> BTreeSet<String> {
    held.shards.iter().filter(|(_, d)| **d > now).map(|(s, _)| s.clone()).collect()
}

/// Serves the shards this replica holds until `shutdown` or a controller fails.
pub(crate) async fn serve(
    ctx: Arc<Context>,
    config: OperatorConfig,
    elector: Elector,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let (held_tx, mut held) = watch::channel(Held::default());
    let (applied_tx, applied) = watch::channel::<Applied>((0, BTreeSet::new()));
    let stop = CancellationToken::new();
    // Aborted when this future is dropped (an aborted operator): a crashed process renews nothing.
    let mut elector = ElectorTask(Some(tokio::spawn(elector.run(held_tx, applied, stop.clone()))));
    ready.standing_by();
    let grace = config.leader_election.as_ref().map(|e| e.timing.stop_grace()).unwrap_or(config.shutdown_grace);
    let mut running: Option<Running> = None;
    let result = loop {
        let wanted = live(&held.borrow_and_update(), Instant::now());
        if running.as_ref().map_or(!wanted.is_empty(), |r| r.shards != wanted) {
            if let Some(mut old) = running.take() {
                tracing::info!(from = ?old.shards, to = ?wanted, "the shards served change; restarting the host controller");
                if stop_within(&mut old.tasks, &old.token, grace, &mut None).await != Stopped::InTime {
                    tracing::warn!("the host controller was aborted to change its shards");
                }
            }
            // Read again after the stop: a deadline may have passed, or a shard been given up.
            let latest = held.borrow_and_update().clone();
            applied_tx.send_replace((latest.seq, BTreeSet::new()));
            let shards = live(&latest, Instant::now());
            running = (!shards.is_empty()).then(|| start(&ctx, &config, &ready, shards.clone()));
            applied_tx.send_replace((latest.seq, shards));
            ctx.metrics.set_leading(running.is_some());
            if running.is_none() {
                ready.standing_by();
            }
        }
        let next = running.as_ref().and_then(|r| earliest(&held.borrow(), &r.shards));
        let expiry = sleep_until_some(next);
        let failed = async {
            match running.as_mut() {
                Some(r) => r.tasks.join_next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            changed = held.changed() => if changed.is_err() {
                break Err(elector.failure().await);
            },
            () = expiry => {}
            Some(done) = failed => match done {
                Ok(Ok(())) => {}
                Ok(Err(err)) => break Err(err),
                Err(join) => break Err(Error::Controller { controller: "runtime", source: Box::new(join) }),
            },
        }
    };
    if let Some(mut old) = running.take() {
        // No longer than the Leases allow: the earliest deadline, and the stop grace after it.
        let until = earliest(&held.borrow(), &old.shards).map(|d| d.saturating_duration_since(Instant::now()) + grace);
        stop_within(&mut old.tasks, &old.token, until.unwrap_or(grace).min(config.shutdown_grace), &mut None).await;
    }
    ctx.metrics.set_leading(false);
    stop.cancel();
    if let Some(Ok(elector)) = elector.finish().await {
        let _ = tokio::time::timeout(RELEASE_TIMEOUT, elector.release_all()).await;
    }
    result
}

/// The earliest deadline of `shards` in `held`.
fn earliest(held: &Held, shards: &BTreeSet<String>) -> Option<Instant> {
    held.shards.iter().filter(|(s, _)| shards.contains(*s)).map(|(_, d)| *d).min()
}

/// Starts the host controller for `shards`.
fn start(ctx: &Arc<Context>, config: &OperatorConfig, ready: &Readiness, shards: BTreeSet<String>) -> Running {
    tracing::info!(?shards, "serving shards");
    ready.leading(&["host"], &config.namespaces);
    let mut host = config.host.clone().unwrap_or_default();
    host.shards = host.shards.map(|all| all.serving(shards.clone()));
    let token = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let (ctx, child) = (ctx.clone(), token.clone());
    tasks.spawn(async move {
        crate::host::run(ctx, host, child)
            .await
            .map_err(|e| Error::Controller { controller: "host", source: Box::new(e) })
    });
    Running { shards, tasks, token }
}

/// The elector's task, aborted if dropped before it finished.
struct ElectorTask(Option<JoinHandle<Result<Elector, KubeError>>>);

impl ElectorTask {
    /// What the elector ended with (it was stopped, or it failed).
    async fn finish(&mut self) -> Option<Result<Elector, KubeError>> {
        let task = self.0.as_mut()?;
        let ended = task.await;
        self.0 = None;
        ended.ok()
    }

    /// Why the elector stopped by itself.
    async fn failure(&mut self) -> Error {
        match self.finish().await {
            Some(Err(err)) if err.is_forbidden() => {
                Error::LeaderElection(crate::runtime::leader::Error::ShardForbidden(Box::new(err)))
            }
            _ => Error::LostLeadership(crate::runtime::leader::Loss::ElectorStopped),
        }
    }
}

impl Drop for ElectorTask {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}
