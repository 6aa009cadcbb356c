//! The runtime: probes, metrics, webhooks, leader election, and the
//! controllers, started and stopped together.

pub mod error;
pub mod health;
pub mod leader;
pub mod readiness;

use crate::cli::RunArgs;
use crate::config::OperatorConfig;
use crate::kube::Context;
use crate::metrics::Metrics;
use crate::runtime::error::Error;
use kube::Client;
use readiness::Readiness;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinSet;
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
    pub async fn start(client: Client, config: OperatorConfig) -> Result<Self, Error> {
        let metrics = Arc::new(Metrics::new());
        let shutdown = CancellationToken::new();
        let ready = Arc::new(Readiness::default());
        // Every request of the controllers passes through the readiness check's observer,
        // which records their watches as they sync.
        let client = ready.observe(client);
        let ctx = Arc::new(Context {
            client: client.clone(),
            metrics: metrics.clone(),
            namespaces: config.namespaces.clone(),
            identity: config.identity.clone(),
        });
        let health_addr = match config.health_addr {
            Some(addr) => Some(health::serve(addr, metrics.clone(), ready.clone(), shutdown.clone()).await?),
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
        let task = tokio::spawn(supervise(ctx, config, ready, shutdown.clone()));
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

    /// Stops everything and waits for the controllers to finish.
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

/// `ferrometal run`: runs until SIGINT or SIGTERM.
pub async fn run_until_signal(args: RunArgs) -> Result<(), Error> {
    let config = kube::Config::infer().await.map_err(Error::KubeConfig)?;
    let client = Client::try_from(config).map_err(Error::Client)?;
    let operator = Operator::start(client, OperatorConfig::from(args)).await?;
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

/// Waits for leadership (when configured), runs the controllers, and stops
/// them all when one fails, leadership is lost, or shutdown is asked for.
async fn supervise(
    ctx: Arc<Context>,
    config: OperatorConfig,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let mut leading = match &config.leader_election {
        Some(election) => tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            acquired = leader::acquire(ctx.client.clone(), election, &config.identity, || ready.standing_by()) => {
                Some(acquired.map_err(Error::LeaderElection)?)
            }
        },
        None => None,
    };
    // Before any controller starts, so that every watch it syncs is expected.
    let running: Vec<&str> = [config.ironic.is_some().then_some("ironic"), config.host.is_some().then_some("host")]
        .into_iter()
        .flatten()
        .collect();
    ready.leading(&running, &config.namespaces);
    let controllers = shutdown.child_token();
    let mut tasks: JoinSet<Result<(), Error>> = JoinSet::new();
    if let Some(ironic) = config.ironic.clone() {
        let (ctx, token) = (ctx.clone(), controllers.clone());
        tasks.spawn(async move {
            crate::ironic::run(ctx, ironic, token)
                .await
                .map_err(|e| Error::Controller { controller: "ironic", source: Box::new(e) })
        });
    }
    if let Some(host) = config.host.clone() {
        let (ctx, token) = (ctx.clone(), controllers.clone());
        tasks.spawn(async move {
            crate::host::run(ctx, host, token)
                .await
                .map_err(|e| Error::Controller { controller: "host", source: Box::new(e) })
        });
    }
    if let Some(nodeset) = config.nodeset.clone() {
        let (ctx, token) = (ctx.clone(), controllers.clone());
        tasks.spawn(async move {
            crate::nodeset::run(ctx, nodeset, token)
                .await
                .map_err(|e| Error::Controller { controller: "nodeset", source: Box::new(e) })
        });
    }

    let outcome = loop {
        tokio::select! {
            () = shutdown.cancelled() => break Ok(()),
            () = lost_leadership(&mut leading) => break Err(Error::LostLeadership),
            Some(done) = tasks.join_next() => match done {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => break Err(err),
                Err(join) => break Err(Error::Controller { controller: "runtime", source: Box::new(join) }),
            },
        }
    };
    controllers.cancel();
    while tasks.join_next().await.is_some() {}
    outcome
}

/// Resolves when a held lease is lost; never, without leader election.
async fn lost_leadership(leading: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    match leading {
        Some(rx) => loop {
            if rx.changed().await.is_err() || !*rx.borrow() {
                return;
            }
        },
        None => std::future::pending().await,
    }
}
