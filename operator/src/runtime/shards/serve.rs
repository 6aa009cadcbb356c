//! Runs the host controller for the shards whose Leases this replica holds, and starts it
//! again whenever that set changes: a shard taken, given up, or past the deadline of its last
//! renewal (stopped within the lease's stop grace, before another replica can take it). The
//! set the controllers serve is told back to the elector, which releases a shard given up only
//! once it is not in it.

use super::elector::{Elector, Held};
use crate::config::OperatorConfig;
use crate::kit::Context;
use crate::runtime::error::Error;
use crate::runtime::readiness::Readiness;
use crate::runtime::supervise::{Stopped, stop_within};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
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

/// Serves the shards this replica holds until `shutdown` or a controller fails.
pub(crate) async fn serve(
    ctx: Arc<Context>,
    config: OperatorConfig,
    elector: Elector,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let (held_tx, mut held) = watch::channel(Held::new());
    let (served_tx, served) = watch::channel(BTreeSet::new());
    let stop = CancellationToken::new();
    // Aborted when this future is dropped (an aborted operator): a crashed process renews nothing.
    let mut elector = AbortOnDrop(Some(tokio::spawn(elector.run(held_tx, served, stop.clone()))));
    ready.standing_by();
    let grace = config.leader_election.as_ref().map(|e| e.timing.stop_grace()).unwrap_or(config.shutdown_grace);
    let mut running: Option<Running> = None;
    let result = loop {
        let now = Instant::now();
        let live: BTreeSet<String> =
            held.borrow_and_update().iter().filter(|(_, d)| **d > now).map(|(s, _)| s.clone()).collect();
        if running.as_ref().map(|r| &r.shards) != Some(&live) && !(running.is_none() && live.is_empty()) {
            if let Some(mut old) = running.take() {
                tracing::info!(from = ?old.shards, to = ?live, "the shards served change; restarting the host controller");
                if stop_within(&mut old.tasks, &old.token, grace, &mut None).await != Stopped::InTime {
                    tracing::warn!("the host controller was aborted to change its shards");
                }
                served_tx.send_replace(BTreeSet::new());
            }
            running = (!live.is_empty()).then(|| start(&ctx, &config, &ready, live.clone()));
            served_tx.send_replace(live.clone());
            ctx.metrics.set_leading(running.is_some());
            if running.is_none() {
                ready.standing_by();
            }
        }
        let next = held.borrow().iter().filter(|(s, _)| live.contains(*s)).map(|(_, d)| *d).min();
        let expiry = async move {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let failed = async {
            match running.as_mut() {
                Some(r) => r.tasks.join_next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            changed = held.changed() => if changed.is_err() {
                break Err(Error::LostLeadership(crate::runtime::leader::Loss::ElectorStopped));
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
        stop_within(&mut old.tasks, &old.token, config.shutdown_grace, &mut None).await;
    }
    ctx.metrics.set_leading(false);
    stop.cancel();
    if let Some(elector) = elector.take().await {
        let _ = tokio::time::timeout(RELEASE_TIMEOUT, elector.release_all()).await;
    }
    result
}

/// The elector's task, aborted if dropped before it is taken.
struct AbortOnDrop(Option<tokio::task::JoinHandle<Elector>>);

impl AbortOnDrop {
    async fn take(&mut self) -> Option<Elector> {
        self.0.take()?.await.ok()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
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
