//! Leader election with a coordination.k8s.io Lease. Only the leader runs
//! controllers; every replica serves webhooks and probes.

use clap::Args;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;

/// Flags of leader election.
#[derive(Debug, Args)]
pub struct LeaderArgs {
    /// Run controllers only while holding the leader lease (for more than one replica).
    #[arg(long = "leader-elect", env = "LEADER_ELECT")]
    pub enabled: bool,
    /// Namespace of the lease.
    #[arg(long = "leader-election-namespace", env = "POD_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Name of the lease.
    #[arg(long = "leader-election-lease", env = "LEADER_ELECTION_LEASE", default_value = "ferrometal-leader")]
    pub lease: String,
}

impl LeaderArgs {
    pub fn into_config(self) -> Option<LeaderElection> {
        self.enabled.then_some(LeaderElection { namespace: self.namespace, lease: self.lease })
    }
}

/// Where the lease lives.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub namespace: String,
    pub lease: String,
}

/// Seconds a lease is valid without renewal; a crashed leader is replaced
/// after at most this long.
const LEASE_SECONDS: u64 = 15;
/// How long before expiry the holder renews.
const GRACE_SECONDS: u64 = 5;

/// Waits until this replica holds the lease; calls `standing_by` once the lease could be
/// read, while another replica may hold it. The returned receiver turns `false` if
/// leadership is lost.
pub async fn acquire(
    client: kube::Client,
    config: &LeaderElection,
    identity: &str,
    standing_by: impl FnOnce(),
) -> Result<watch::Receiver<bool>, LeaseManagerError> {
    let manager = LeaseManagerBuilder::new(client, &config.lease)
        .with_namespace(&config.namespace)
        .with_identity(identity)
        .with_duration(LEASE_SECONDS)
        .with_grace(GRACE_SECONDS)
        .with_field_manager(crate::FIELD_MANAGER)
        .build()
        .await?;
    standing_by();
    let (mut leading, _task) = manager.watch().await;
    tracing::info!(lease = %config.lease, namespace = %config.namespace, identity, "waiting for the leader lease");
    while !*leading.borrow_and_update() {
        if leading.changed().await.is_err() {
            break;
        }
    }
    tracing::info!(identity, "leading");
    Ok(leading)
}
