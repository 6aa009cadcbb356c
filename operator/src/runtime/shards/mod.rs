//! Shard Leases (`--shard-leases`): one Lease per shard of `--shards`, instead of one leader
//! lease. Every replica may serve any shard; the replicas divide the shards among them, each up
//! to a fair share ([`plan`]), each runs the host controller for the shards it holds ([`serve`]), and the
//! shards of a replica that stops renewing are taken by the others once their term ends
//! ([`elector`]). Probes and webhooks serve on every replica, as with one leader.

mod elector;
mod plan;
mod serve;
mod sightings;

use crate::config::OperatorConfig;
use crate::kit::Context;
use crate::runtime::error::Error;
use crate::runtime::readiness::Readiness;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(crate) use elector::lease_name;

/// Whether `config` divides the shards by Lease.
pub(crate) fn by_lease(config: &OperatorConfig) -> bool {
    config.leader_election.is_some() && config.host.as_ref().is_some_and(|h| h.shard_leases && h.shards.is_some())
}

/// Takes shard Leases and serves their hosts until `shutdown`.
pub(crate) async fn run(
    ctx: Arc<Context>,
    config: OperatorConfig,
    ready: Arc<Readiness>,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let (Some(election), Some(shards)) =
        (config.leader_election.clone(), config.host.as_ref().and_then(|h| h.shards.clone()))
    else {
        return Ok(());
    };
    election.timing.validate().map_err(|e| Error::LeaderElection(crate::runtime::leader::Error::Timing(e)))?;
    tracing::info!(lease = %election.lease, shards = ?shards.all(), identity = %config.identity, "taking shard leases");
    let api: Api<Lease> = Api::namespaced(ctx.client.clone(), &election.namespace);
    let elector = elector::Elector::new(
        api,
        &election.lease,
        &config.identity,
        election.timing,
        ctx.metrics.clone(),
        shards.all(),
    );
    serve::serve(ctx, config, elector, ready, shutdown).await
}
