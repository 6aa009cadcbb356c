//! Leader election with a coordination.k8s.io Lease. Only the leader runs
//! controllers; every replica serves webhooks and probes.
//!
//! Our own elector, on the rules of [`super::lease`]: a take is a replace with
//! the Lease's resourceVersion, so two replicas racing for a free lease cannot
//! both win, and a renewal or a release a JSON patch tested on the holder; a
//! holder whose Lease is gone or no longer its own stops leading at once; one
//! that cannot renew within the renew deadline stops
//! leading by itself, whatever the apiserver says or fails to say; and the
//! runtime holds its own copy of that deadline ([`Leadership::lost`]), so that
//! even an elector stuck on a dead connection cannot keep the controllers
//! running past it.

use super::lease::{LeaseTiming, Observer, Verdict, claim, patch_params, post_params, release_patch, renewal};
use crate::kit::error::{KubeError, Verb};
use crate::metrics::Metrics;
use clap::Args;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

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
    /// Seconds a lease lasts without renewal; another replica takes over after that.
    #[arg(
        long = "leader-election-lease-duration-seconds",
        env = "LEADER_ELECTION_LEASE_DURATION",
        default_value_t = 15
    )]
    pub duration_seconds: u64,
    /// Seconds the leader may go without a successful renewal before it stops its
    /// controllers; shorter than the lease duration.
    #[arg(
        long = "leader-election-renew-deadline-seconds",
        env = "LEADER_ELECTION_RENEW_DEADLINE",
        default_value_t = 10
    )]
    pub renew_deadline_seconds: u64,
    /// Seconds between attempts to take or renew the lease.
    #[arg(long = "leader-election-retry-period-seconds", env = "LEADER_ELECTION_RETRY_PERIOD", default_value_t = 2)]
    pub retry_period_seconds: u64,
}

impl LeaderArgs {
    pub fn into_config(self) -> Option<LeaderElection> {
        self.enabled.then_some(LeaderElection {
            namespace: self.namespace,
            lease: self.lease,
            timing: LeaseTiming {
                duration: Duration::from_secs(self.duration_seconds),
                renew_deadline: Duration::from_secs(self.renew_deadline_seconds),
                retry_period: Duration::from_secs(self.retry_period_seconds),
            },
        })
    }
}

/// Where the lease lives, and its timing.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub namespace: String,
    pub lease: String,
    pub timing: LeaseTiming,
}

impl LeaderElection {
    /// The default timing for a lease.
    pub fn new(namespace: impl Into<String>, lease: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), lease: lease.into(), timing: LeaseTiming::default() }
    }
}

/// Why this replica stopped leading.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Loss {
    #[error("no renewal succeeded within the renew deadline")]
    Deadline,
    #[error("{holder} holds the lease now")]
    Taken { holder: String },
    #[error("the lease elector stopped")]
    ElectorStopped,
    #[error("the lease was deleted, or is no longer ours")]
    Gone,
}

/// What the elector tells the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Leading until `deadline` unless renewed again before it.
    Leading {
        deadline: Instant,
    },
    Lost(Loss),
}

/// A held lease: the deadline the elector keeps renewing, and the task doing it.
pub(crate) struct Leadership {
    state: watch::Receiver<State>,
    stop: CancellationToken,
    // Aborted on drop (see `Drop`), so that an operator that is itself aborted
    // stops renewing at once, as a crashed process would.
    task: Option<JoinHandle<Elector>>,
}

impl Leadership {
    /// Resolves when this replica must stop leading: the elector said so, its
    /// deadline passed without a renewal, or the elector is gone. Fails closed:
    /// every doubt is a loss.
    pub(crate) async fn lost(&mut self) -> Loss {
        loop {
            let deadline = match &*self.state.borrow_and_update() {
                State::Leading { deadline } => *deadline,
                State::Lost(loss) => return loss.clone(),
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Loss::Deadline,
                changed = self.state.changed() => if changed.is_err() {
                    return Loss::ElectorStopped;
                },
            }
        }
    }

    /// Stops renewing and hands the lease back, if this replica still holds it,
    /// so that another replica takes over without waiting for it to expire.
    /// Bounded: an unreachable apiserver only delays the exit by `timeout`.
    pub(crate) async fn release(mut self, within: Duration) {
        self.stop.cancel();
        let Some(task) = self.task.take() else { return };
        let released = timeout(within, async move {
            match task.await {
                Ok(elector) => elector.release().await,
                Err(join) => tracing::warn!(error = %join, "the lease elector failed"),
            }
        })
        .await;
        if released.is_err() {
            tracing::warn!("could not release the leader lease in time; it expires by itself");
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Why leader election could not go on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid leader election timing")]
    Timing(#[source] super::lease::Error),
    #[error(
        "the operator may not use its leader Lease; grant its service account get, create, update and patch on leases"
    )]
    Forbidden(#[source] KubeError),
    #[error(
        "the operator may not use a shard Lease; grant its service account get, list, watch, update and patch on \
         each shard's Lease by name, and create on leases (config/shards' Role)"
    )]
    ShardForbidden(#[source] Box<KubeError>),
}

/// Waits until this replica holds the lease, then keeps renewing it in the
/// background. Transient failures (no apiserver, conflicts) are retried; a
/// refused permission is an error, since waiting cannot fix it.
pub(crate) async fn acquire(
    client: kube::Client,
    config: &LeaderElection,
    identity: &str,
    standing_by: impl FnOnce(),
    metrics: Arc<Metrics>,
) -> Result<Leadership, Error> {
    config.timing.validate().map_err(Error::Timing)?;
    let mut elector = Elector {
        api: Api::namespaced(client, &config.namespace),
        name: config.lease.clone(),
        identity: identity.to_string(),
        timing: config.timing,
        observer: Observer::default(),
    };
    tracing::info!(lease = %config.lease, namespace = %config.namespace, identity, "waiting for the leader lease");
    let mut waiting_for: Option<String> = None;
    // Called once the lease could be read: from then on this replica stands by (for /readyz).
    let mut standing_by = Some(standing_by);
    let deadline = loop {
        let sent = Instant::now();
        match timeout(config.timing.renew_deadline, elector.attempt(false)).await {
            Ok(Ok(Attempt::Held)) => break config.timing.deadline_after(sent),
            Ok(Ok(Attempt::Other { holder })) => {
                if let Some(standing_by) = standing_by.take() {
                    standing_by();
                }
                if waiting_for.as_deref() != Some(holder.as_str()) {
                    tracing::info!(%holder, "another replica leads; waiting for its lease to expire");
                    waiting_for = Some(holder);
                }
            }
            // A Lease under our name that a renewal found gone or taken: the next attempt reads it.
            Ok(Ok(Attempt::Raced | Attempt::Gone)) => {
                if let Some(standing_by) = standing_by.take() {
                    standing_by();
                }
                tracing::debug!("another replica wrote the leader lease first")
            }
            Ok(Err(err)) if err.is_forbidden() => return Err(Error::Forbidden(err)),
            Ok(Err(err)) => {
                tracing::warn!(error = %crate::kit::error::chain(&err), "cannot take the leader lease; retrying")
            }
            Err(_) => tracing::warn!("the apiserver did not answer about the leader lease in time; retrying"),
        }
        sleep(config.timing.retry_period).await;
    };
    tracing::info!(identity, "leading");
    let (tx, rx) = watch::channel(State::Leading { deadline });
    let stop = CancellationToken::new();
    let task = tokio::spawn(hold(elector, deadline, tx, stop.clone(), metrics));
    Ok(Leadership { state: rx, stop, task: Some(task) })
}

/// Renews the lease every retry period until `stop`, the deadline passes
/// without a renewal, or another replica holds it; then reports the loss.
async fn hold(
    mut elector: Elector,
    mut deadline: Instant,
    tx: watch::Sender<State>,
    stop: CancellationToken,
    metrics: Arc<Metrics>,
) -> Elector {
    let loss = loop {
        tokio::select! {
            () = stop.cancelled() => return elector,
            () = sleep(elector.timing.retry_period) => {}
        }
        let sent = Instant::now();
        // No attempt may outlast the term: a request hanging on a dead
        // connection must not keep us "leading". Nor may one attempt use the
        // whole term: a stalled one is abandoned in time to try again.
        let limit = elector.timing.attempt_limit(sent, deadline);
        match timeout_at(limit, elector.attempt(true)).await {
            Ok(Ok(Attempt::Held)) => {
                deadline = elector.timing.deadline_after(sent);
                let _ = tx.send(State::Leading { deadline });
            }
            Ok(Ok(Attempt::Other { holder })) => break Loss::Taken { holder },
            // Deleted (a follower may create it and lead at once) or taken: no moment more.
            Ok(Ok(Attempt::Gone)) => break Loss::Gone,
            // Someone else wrote the lease; the next attempt reads what they wrote.
            Ok(Ok(Attempt::Raced)) => metrics.lease_renewal_failed(),
            Ok(Err(err)) => {
                metrics.lease_renewal_failed();
                tracing::warn!(error = %crate::kit::error::chain(&err), "cannot renew the leader lease");
            }
            Err(_) => {
                metrics.lease_renewal_failed();
                let left = deadline.saturating_duration_since(Instant::now());
                tracing::warn!(
                    waited = ?limit.saturating_duration_since(sent),
                    ?left,
                    "the apiserver did not answer a renewal of the leader lease in time; retrying"
                );
            }
        }
        if Instant::now() >= deadline {
            break Loss::Deadline;
        }
    };
    tracing::error!(reason = %loss, "lost the leader lease");
    let _ = tx.send(State::Lost(loss));
    elector
}

/// What one attempt found.
enum Attempt {
    /// We hold the lease now (taken or renewed).
    Held,
    /// Another replica holds it.
    Other { holder: String },
    /// Someone wrote the lease between our read and our take (409).
    Raced,
    /// The lease we hold was deleted (404, or not found by our read), or a renewal's test of
    /// the holder failed (422): not ours any more.
    Gone,
}

struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: LeaseTiming,
    observer: Observer,
}

impl Elector {
    /// Reads the lease and takes or renews it if it is free or ours. `holding`: we lead, so a
    /// missing lease is a loss, not one to create.
    async fn attempt(&mut self, holding: bool) -> Result<Attempt, KubeError> {
        let Some(lease) = self.api.get_opt(&self.name).await.map_err(KubeError::of::<Lease>(Verb::Get, &self.name))?
        else {
            if holding {
                return Ok(Attempt::Gone);
            }
            let lease = Lease {
                metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                spec: Some(claim(None, &self.identity, &self.timing, Timestamp::now())),
            };
            return match self.api.create(&post_params(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Raced),
                Err(err) => Err(KubeError::new(Verb::Create, "Lease", &self.name, err)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        match self.observer.judge(&spec, &self.identity, Instant::now()) {
            Verdict::Held { holder, .. } => return Ok(Attempt::Other { holder }),
            Verdict::Ours => return self.renew().await,
            Verdict::Free => {}
        }
        let mut next = lease;
        next.spec = Some(claim(Some(&spec), &self.identity, &self.timing, Timestamp::now()));
        match self.api.replace(&self.name, &post_params(), &next).await {
            Ok(_) => Ok(Attempt::Held),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Raced),
            Err(err) => Err(KubeError::new(Verb::Replace, "Lease", &self.name, err)),
        }
    }

    /// Renews the lease we hold: a JSON patch tested on the holder, as the shard Leases' (a
    /// take stays a replace with the resourceVersion read, so two replicas cannot both win).
    async fn renew(&self) -> Result<Attempt, KubeError> {
        let patch = Patch::Json::<()>(renewal(&self.identity, &self.timing, Timestamp::now()));
        match self.api.patch(&self.name, &patch_params(), &patch).await {
            Ok(_) => Ok(Attempt::Held),
            // Deleted, or taken since our read (the test of the holder failed).
            Err(kube::Error::Api(status)) if matches!(status.code, 404 | 422) => Ok(Attempt::Gone),
            Err(err) => Err(KubeError::new(Verb::Patch, "Lease", &self.name, err)),
        }
    }

    /// Hands the lease back if it is still ours: a patch the apiserver applies only while we
    /// hold it, so there is nothing to read first.
    async fn release(self) {
        let patch = Patch::Json::<()>(release_patch(&self.identity, Timestamp::now()));
        match self.api.patch(&self.name, &patch_params(), &patch).await {
            Ok(_) => tracing::info!(identity = %self.identity, "released the leader lease"),
            // Not ours any more, or gone: nothing to hand back.
            Err(kube::Error::Api(status)) if matches!(status.code, 404 | 422) => {}
            Err(err) => tracing::warn!(error = %crate::kit::error::chain(&err), "cannot release the leader lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leadership(state: State) -> (watch::Sender<State>, Leadership) {
        let (tx, rx) = watch::channel(state);
        (tx, Leadership { state: rx, stop: CancellationToken::new(), task: None })
    }

    #[tokio::test(start_paused = true)]
    async fn the_runtime_stops_leading_at_the_deadline_even_if_the_elector_says_nothing() {
        let start = Instant::now();
        let (_tx, mut leading) = leadership(State::Leading { deadline: start + Duration::from_secs(10) });
        assert_eq!(leading.lost().await, Loss::Deadline);
        assert_eq!(Instant::now(), start + Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_moves_the_deadline() {
        let start = Instant::now();
        let (tx, mut leading) = leadership(State::Leading { deadline: start + Duration::from_secs(10) });
        tokio::spawn(async move {
            sleep(Duration::from_secs(5)).await;
            let _ = tx.send(State::Leading { deadline: start + Duration::from_secs(15) });
            // The sender stays alive, silent, past the new deadline.
            sleep(Duration::from_secs(60)).await;
        });
        assert_eq!(leading.lost().await, Loss::Deadline);
        assert_eq!(Instant::now(), start + Duration::from_secs(15));
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_channel_means_not_leading() {
        let (tx, mut leading) = leadership(State::Leading { deadline: Instant::now() + Duration::from_secs(3600) });
        drop(tx);
        assert_eq!(leading.lost().await, Loss::ElectorStopped);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reported_loss_is_returned_at_once() {
        let (tx, mut leading) = leadership(State::Leading { deadline: Instant::now() + Duration::from_secs(3600) });
        let _ = tx.send(State::Lost(Loss::Taken { holder: "b".into() }));
        assert_eq!(leading.lost().await, Loss::Taken { holder: "b".into() });
    }

    #[test]
    fn the_flags_default_to_kubernetes_timings() {
        #[derive(Debug, clap::Parser)]
        struct Flags {
            #[command(flatten)]
            leader: LeaderArgs,
        }
        let flags = <Flags as clap::Parser>::try_parse_from(["test", "--leader-elect"]).expect("parses");
        let config = flags.leader.into_config().expect("enabled");
        assert_eq!(config.timing, LeaseTiming::default());
    }
}
