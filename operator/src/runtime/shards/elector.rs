//! The shard Leases of one replica: every retry period it reads every shard's Lease (all at
//! once, each judged on this replica's clock the moment its answer came, as the leader elector
//! does, or earlier, the moment a watch showed it: [`super::sightings`]), and again the moment
//! another holder's term ends or a Lease is seen released, plans ([`super::plan`]), and
//! writes ([`writes`]): renews what it holds first, then takes, releases what it gave up once
//! the controllers confirmed they stopped serving it, and asks for a shard by annotating its
//! Lease. It publishes the shards to serve, each with the deadline its last renewal gives (only
//! a renewal moves it), numbered, so that the supervision can say which publication it applied.
mod writes;

use super::plan::{Holder, Seen, plan};
use super::sightings::{self, Sighting, due};
use crate::kit::error::{KubeError, Verb};
use crate::metrics::Metrics;
use crate::runtime::lease::{LeaseTiming, Observer, Verdict};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_util::sync::CancellationToken;
use writes::holds;

/// The annotation naming the replica that asks for a shard.
pub(crate) const WANTED_BY: &str = "ferrometal.io/wanted-by";
/// When it asked (renewed while it keeps asking): a request not renewed goes stale.
const WANTED_AT: &str = "ferrometal.io/wanted-at";
/// The longest a replica's start lasts ([`Elector::starting_until`]): replicas a Deployment
/// starts together look within moments of each other, and a replica whose looks are slow
/// (a long retry period) does not wait one of them to serve.
const START: Duration = Duration::from_secs(2);

/// The shards to serve, each until its deadline unless renewed, and the publication's number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Held {
    pub seq: u64,
    pub shards: BTreeMap<String, Instant>,
}

/// What the supervision runs: the shards of publication `seq` (none while it restarts).
pub(crate) type Applied = (u64, BTreeSet<String>);

/// What this replica knows of one shard's Lease.
#[derive(Default)]
struct Known {
    observer: Observer,
    /// A request seen on the Lease (`wanted-by`, `wanted-at`) and when it was first seen.
    request: Option<((String, String), Instant)>,
    /// While ours: the end of the term the last renewal gave.
    deadline: Option<Instant>,
    /// When we last asked for it.
    asked: Option<Instant>,
    /// While another replica holds it: the end of its term, as this replica counts it.
    ends: Option<Instant>,
}

pub(crate) struct Elector {
    api: Api<Lease>,
    prefix: String,
    identity: String,
    timing: LeaseTiming,
    metrics: Arc<Metrics>,
    known: BTreeMap<String, Known>,
    /// Ours, given up, with the first publication without them: renewed until the
    /// supervision applied that publication (nothing serves them then), then released.
    leaving: BTreeMap<String, u64>,
    /// The number of the next publication.
    seq: u64,
    /// The shards of the last publication.
    published: BTreeSet<String>,
    /// The end of this replica's start, a retry period after its first look (at most
    /// [`START`]), when it looks again: holding nothing until then, it takes nothing, and asks,
    /// to be counted by replicas starting with it ([`plan`]). `None` before the first look.
    starting_until: Option<Instant>,
    /// Whether the start looked again at once after a request lost its write (once only).
    relooked: bool,
}

impl Elector {
    pub(crate) fn new(
        api: Api<Lease>,
        prefix: &str,
        identity: &str,
        timing: LeaseTiming,
        metrics: Arc<Metrics>,
        shards: &[String],
    ) -> Self {
        Self {
            api,
            prefix: prefix.to_string(),
            identity: identity.to_string(),
            timing,
            metrics,
            known: shards.iter().map(|s| (s.clone(), Known::default())).collect(),
            leaving: BTreeMap::new(),
            seq: 1,
            published: BTreeSet::new(),
            starting_until: None,
            relooked: false,
        }
    }

    fn name(&self, shard: &str) -> String {
        lease_name(&self.prefix, shard)
    }

    /// Runs until `stop`, publishing the shards to serve on `held`; `applied` says what the
    /// controllers serve. Returns itself, to release what it holds; fails when the Leases are
    /// forbidden, which waiting cannot fix.
    pub(crate) async fn run(
        mut self,
        held: watch::Sender<Held>,
        applied: watch::Receiver<Applied>,
        stop: CancellationToken,
    ) -> Result<Self, KubeError> {
        let names = self.known.keys().map(|shard| (shard.clone(), self.name(shard))).collect();
        let mut sightings = sightings::watch(&self.api, names);
        let (mut looked, mut next) = (Instant::now(), Instant::now());
        loop {
            if Instant::now() >= next {
                looked = Instant::now();
                let again = self.attempt(&applied).await?;
                self.publish(&held);
                // A retry period after the look ended (a slow apiserver is not asked faster),
                // unless a request raced while starting.
                next = Instant::now() + if again { Duration::ZERO } else { self.timing.retry_period };
            }
            // The end of the start is a moment to look too: the shards wait for nothing more.
            let wake = due(next, looked, self.known.values().filter_map(|k| k.ends).chain(self.starting_until));
            tokio::select! {
                () = stop.cancelled() => return Ok(self),
                () = sleep_until(wake) => next = next.min(wake),
                Some(seen) = sightings.next() => {
                    if self.sighted(seen, Instant::now()) {
                        next = Instant::now();
                    }
                }
            }
        }
    }

    /// Publishes the shards whose term has not ended, those given up excepted, when they changed.
    fn publish(&mut self, held: &watch::Sender<Held>) {
        let now = Instant::now();
        let shards: BTreeMap<String, Instant> = self
            .known
            .iter()
            .filter(|(shard, _)| !self.leaving.contains_key(*shard))
            .filter_map(|(shard, k)| k.deadline.filter(|d| *d > now).map(|d| (shard.clone(), d)))
            .collect();
        held.send_if_modified(|current| {
            if current.shards == shards {
                return false;
            }
            self.published = shards.keys().cloned().collect();
            *current = Held { seq: self.seq, shards };
            self.seq += 1;
            true
        });
    }

    /// A Lease as its watch showed it at `at`: its record is seen from then on (the term another
    /// holder's renewal gives counts from its first sighting). Returns whether to look now: it
    /// is free (released or deleted).
    fn sighted(&mut self, (shard, spec): Sighting, at: Instant) -> bool {
        let identity = self.identity.clone();
        let Some(known) = self.known.get_mut(&shard) else { return false };
        let verdict = known.observer.judge(&spec, &identity, at);
        known.ends = ends(&verdict);
        verdict == Verdict::Free
    }

    /// One look and its writes, each request bounded by half the renew deadline. Returns
    /// whether to look again at once.
    async fn attempt(&mut self, applied: &watch::Receiver<Applied>) -> Result<bool, KubeError> {
        let limit = (self.timing.renew_deadline / 2).max(self.timing.retry_period);
        let shards: Vec<String> = self.known.keys().cloned().collect();
        let reads = futures::future::join_all(shards.iter().map(|shard| {
            let (api, name) = (self.api.clone(), self.name(shard));
            async move {
                let read = timeout(limit, api.get_opt(&name)).await;
                (read, Instant::now())
            }
        }))
        .await;
        let mut leases = BTreeMap::new();
        let mut seen = Vec::new();
        for (shard, (read, at)) in shards.iter().zip(reads) {
            match read {
                Ok(Ok(lease)) => {
                    seen.push(self.judge(shard, lease.as_ref(), at));
                    leases.insert(shard.clone(), lease);
                }
                Ok(Err(err)) => {
                    self.failed(shard, "read", KubeError::of::<Lease>(Verb::Get, &self.name(shard))(err))?
                }
                Err(_) => self.timed_out(shard, "read"),
            }
        }
        let starting = self.starting_until.is_none_or(|until| Instant::now() < until);
        let moves = plan(&self.identity, &seen, shards.len(), starting);
        for shard in moves.give_up {
            if !self.leaving.contains_key(&shard) {
                tracing::info!(shard, "giving up a shard another replica asked for");
                // Served only once the supervision applied a publication without it: the next,
                // or the last if that had it no longer (its deadline passed).
                let since = if self.published.contains(&shard) { self.seq } else { self.seq - 1 };
                self.leaving.insert(shard, since);
            }
        }
        // Our own first: a renewal late is a shard lost.
        let (ours, others): (Vec<&Seen>, Vec<&Seen>) = seen.iter().partition(|l| l.holder == Holder::Me);
        for lease in ours {
            let current = leases.get(&lease.shard).cloned().flatten();
            let done = self.leaving.get(&lease.shard).is_some_and(|since| applied.borrow().0 >= *since);
            let write = async {
                match done {
                    true => self.release(&lease.shard).await,
                    false => self.write_claim(&lease.shard, current, false).await,
                }
            };
            match timeout(limit, write).await {
                Ok(written) => written?,
                Err(_) => self.timed_out(&lease.shard, if done { "release" } else { "renewal" }),
            }
        }
        let mut raced = false;
        for lease in others {
            let current = leases.get(&lease.shard).cloned().flatten();
            let shard = &lease.shard;
            let taking = moves.take.contains(shard);
            let write = async {
                if taking {
                    self.write_claim(shard, current, true).await.map(|()| false)
                } else if moves.ask.as_ref() == Some(shard) {
                    self.ask(shard, current).await.map(|asked| !asked)
                } else {
                    Ok(false)
                }
            };
            match timeout(limit, write).await {
                Ok(lost) => raced |= lost?,
                Err(_) => self.timed_out(shard, if taking { "take" } else { "request" }),
            }
            if !taking {
                self.forget(shard);
            }
        }
        self.starting_until.get_or_insert_with(|| Instant::now() + self.timing.retry_period.min(START));
        // A request that lost its write while starting: another replica asked for that Lease at
        // the same moment. Looking again at once (once: no loop against a Lease written without
        // end), this one asks for another before the start ends.
        let again = starting && raced && !self.relooked;
        self.relooked |= again;
        Ok(again)
    }

    /// A failed request (`attempt`: what it was, for the metric): a refusal stops the elector,
    /// anything else waits for the next attempt.
    fn failed(&self, shard: &str, attempt: &'static str, err: KubeError) -> Result<(), KubeError> {
        if err.is_forbidden() {
            return Err(err);
        }
        self.metrics.shard_lease_failed(attempt);
        tracing::warn!(shard, error = %crate::kit::error::chain(&err), "a shard lease request failed");
        Ok(())
    }

    /// A read or write the apiserver did not answer within its share of the renew deadline;
    /// the next attempt reads what is there.
    fn timed_out(&self, shard: &str, attempt: &'static str) {
        self.metrics.shard_lease_failed(attempt);
        tracing::warn!(shard, attempt, "the apiserver did not answer about a shard lease in time");
    }

    /// Judges one Lease (`None`: none yet, free), read at `now`.
    fn judge(&mut self, shard: &str, lease: Option<&Lease>, now: Instant) -> Seen {
        let freshness = self.timing.duration;
        let identity = self.identity.clone();
        let known = self.known.entry(shard.to_string()).or_default();
        let spec = lease.and_then(|l| l.spec.clone()).unwrap_or_default();
        let verdict = known.observer.judge(&spec, &identity, now);
        known.ends = ends(&verdict);
        let holder = match verdict {
            Verdict::Ours => Holder::Me,
            Verdict::Free => Holder::Free,
            Verdict::Held { holder, .. } => Holder::Other(holder),
        };
        let annotations = lease.and_then(|l| l.metadata.annotations.as_ref());
        let request = annotations.and_then(|a| Some((a.get(WANTED_BY)?.clone(), a.get(WANTED_AT)?.clone())));
        let first_seen = match (&known.request, request) {
            (Some((seen, since)), Some(now_seen)) if *seen == now_seen => Some((now_seen, *since)),
            (_, Some(now_seen)) => Some((now_seen, now)),
            (_, None) => None,
        };
        known.request = first_seen.clone();
        let wanted_by =
            first_seen.filter(|(_, since)| now.saturating_duration_since(*since) < freshness).map(|((by, _), _)| by);
        Seen { shard: shard.to_string(), holder, wanted_by }
    }

    fn forget(&mut self, shard: &str) {
        self.leaving.remove(shard);
        if let Some(known) = self.known.get_mut(shard) {
            known.deadline = None;
        }
    }

    /// Hands back every Lease still ours (the controllers are stopped), then tries to withdraw
    /// our requests: the others count a replica that asked as alive while its request is fresh,
    /// and leave a free Lease it asked for to it, so a request left behind would keep a shard
    /// unserved that long. Releases first: they are what the others wait for.
    pub(crate) async fn release_all(mut self) {
        let shards: Vec<String> = self.known.keys().cloned().collect();
        let mut others = Vec::new();
        for shard in shards {
            match self.api.get_opt(&self.name(&shard)).await {
                Ok(Some(lease)) if holds(&lease, &self.identity) => {
                    if let Err(err) = self.release(&shard).await {
                        tracing::warn!(shard, error = %crate::kit::error::chain(&err), "cannot release a shard lease");
                    }
                }
                Ok(Some(lease)) => others.push((shard, lease)),
                Ok(None) => {}
                Err(err) => tracing::warn!(shard, error = %err, "cannot read a shard lease to release it"),
            }
        }
        for (shard, lease) in others {
            self.withdraw(&shard, &lease).await;
        }
    }
}

/// The end of another holder's term, as `verdict` gives it.
fn ends(verdict: &Verdict) -> Option<Instant> {
    match verdict {
        Verdict::Held { until, .. } => Some(*until),
        Verdict::Ours | Verdict::Free => None,
    }
}

/// The Lease of `shard`.
pub(crate) fn lease_name(prefix: &str, shard: &str) -> String {
    format!("{prefix}-shard-{shard}")
}
