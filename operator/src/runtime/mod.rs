//! The runtime: probes, metrics, webhooks, leader election, and the
//! controllers, started and stopped together.

pub(crate) mod error;
pub(crate) mod health;
pub(crate) mod leader;
pub(crate) mod lease;
pub(crate) mod readiness;
mod requests;
mod shards;
mod supervise;

pub(crate) use shards::lease_name as shard_lease_name;

use crate::config::OperatorConfig;
use crate::kit::Context;
use crate::metrics::Metrics;
use crate::runtime::error::Error;
use kube::Client;
use readiness::Readiness;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A running operator.
pub struct Operator {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), Error>>,
    metrics: Arc<Metrics>,
    health_addr: Option<SocketAddr>,
    webhook_addr: Option<SocketAddr>,
}

impl Operator {
    /// Binds the servers (so address errors surface at once) and starts the
    /// controllers in the background.
    pub async fn start(client: Client, mut config: OperatorConfig) -> Result<Self, Error> {
        // One set of feature gates: the Ironic controller validates with the webhook's.
        if let Some(ironic) = config.ironic.as_mut() {
            ironic.validation = config.features.clone();
        }
        if let Some(election) = &config.leader_election {
            election.timing.validate().map_err(|e| Error::LeaderElection(leader::Error::Timing(e)))?;
        }
        let metrics = Arc::new(Metrics::new());
        let shutdown = CancellationToken::new();
        let ready = Arc::new(Readiness::default());
        // Every request of the controllers passes through the readiness check's observer,
        // which records their watches as they sync, and is counted by verb.
        let client = ready.observe(requests::counted(client, metrics.clone()));
        let ctx = Arc::new(Context {
            client: client.clone(),
            metrics: metrics.clone(),
            namespaces: config.namespaces.clone(),
            identity: config.identity.clone(),
            features: config.features.clone(),
            ironic_namespaces: config.ironic_namespaces.clone(),
            host_pools: config.host_pools.clone(),
            host_access: config.host_access.clone(),
            reserved_account: config.reserved_account.clone(),
        });
        let health_addr = match config.health_addr {
            Some(addr) => {
                Some(health::serve(addr, config.health_limits, metrics.clone(), ready.clone(), shutdown.clone()).await?)
            }
            None => None,
        };
        let webhook_addr = match config.webhook.clone() {
            Some(webhook) => {
                ready.webhook_starting();
                let addr =
                    crate::webhook::start(ctx.clone(), webhook, shutdown.clone()).await.map_err(Error::Webhook)?.addr;
                ready.webhook_serving();
                Some(addr)
            }
            None => None,
        };
        // Probes and webhooks serve on every replica, leader or not.
        let task = tokio::spawn(supervise::supervise(ctx, config, ready, shutdown.clone()));
        Ok(Self { shutdown, task, metrics, health_addr, webhook_addr })
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The bound address of the health and metrics server.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_addr
    }

    /// The bound address of the webhook server.
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.webhook_addr
    }

    /// Stops everything at once, as a killed process would: no reconcile is
    /// waited for and the leader lease is not released, so another replica
    /// takes over only when it expires. For tests of what a crash leaves.
    pub fn abort(self) {
        self.task.abort();
        self.shutdown.cancel();
    }

    /// Stops everything and waits for the controllers to finish (at most the
    /// shutdown grace period; then they are aborted and this is an error).
    pub async fn shutdown(self) -> Result<(), Error> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Waits until the operator stops by itself (an error, or lost leadership).
    pub async fn wait(self) -> Result<(), Error> {
        match self.task.await {
            Ok(result) => result,
            Err(join) if join.is_cancelled() => Ok(()),
            Err(join) => Err(Error::Controller { controller: "runtime", source: Box::new(join) }),
        }
    }
}

/// `ferrometal run`: runs `operator_config` until SIGINT or SIGTERM.
pub async fn run_until_signal(operator_config: OperatorConfig) -> Result<(), Error> {
    let config = kube::Config::infer().await.map_err(Error::KubeConfig)?;
    let client = Client::try_from(config).map_err(Error::Client)?;
    let operator = Operator::start(client, operator_config).await?;
    let shutdown = operator.shutdown.clone();
    let mut task = tokio::spawn(operator.wait());
    tokio::select! {
        signal = termination() => {
            signal.map_err(Error::Signal)?;
            tracing::info!("shutting down");
            shutdown.cancel();
            flatten(task.await)
        }
        result = &mut task => flatten(result),
    }
}

fn flatten(result: Result<Result<(), Error>, tokio::task::JoinError>) -> Result<(), Error> {
    result.map_err(|join| Error::Controller { controller: "runtime", source: Box::new(join) })?
}

async fn termination() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = term.recv() => Ok(()),
    }
}
