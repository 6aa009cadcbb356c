//! The shard Leases of one replica: every retry period it reads every shard's Lease, judges
//! it on its own clock (`lease::Observer`, as the leader elector does), plans
//! ([`super::plan`]), and writes: takes, renews, releases what it gave up once no controller
//! serves it, and asks for a shard by annotating its Lease. Every write is a replace with the
//! resourceVersion read, so two replicas racing for a Lease cannot both win. It publishes the
//! shards to serve, each with the deadline its last renewal gives, which only a renewal moves.

use super::plan::{Holder, Seen, plan};
use crate::kit::error::{KubeError, Verb};
use crate::runtime::lease::{LeaseTiming, Observer, Verdict, claim, released};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

/// The annotation naming the replica that asks for a shard.
pub(crate) const WANTED_BY: &str = "ferrometal.io/wanted-by";
/// When it asked (renewed while it keeps asking): a request not renewed goes stale.
const WANTED_AT: &str = "ferrometal.io/wanted-at";

/// The shards to serve, each until its deadline unless renewed.
pub(crate) type Held = BTreeMap<String, Instant>;

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
}

pub(crate) struct Elector {
    api: Api<Lease>,
    prefix: String,
    identity: String,
    timing: LeaseTiming,
    known: BTreeMap<String, Known>,
    /// Ours, given up: renewed until no controller serves them, then released.
    leaving: BTreeSet<String>,
}

impl Elector {
    pub(crate) fn new(api: Api<Lease>, prefix: &str, identity: &str, timing: LeaseTiming, shards: &[String]) -> Self {
        Self {
            api,
            prefix: prefix.to_string(),
            identity: identity.to_string(),
            timing,
            known: shards.iter().map(|s| (s.clone(), Known::default())).collect(),
            leaving: BTreeSet::new(),
        }
    }

    fn name(&self, shard: &str) -> String {
        lease_name(&self.prefix, shard)
    }

    /// Runs until `stop`, publishing the shards to serve on `held`; `served` says which
    /// shards the controllers serve now. Returns itself, to release what it holds.
    pub(crate) async fn run(
        mut self,
        held: watch::Sender<Held>,
        served: watch::Receiver<BTreeSet<String>>,
        stop: CancellationToken,
    ) -> Self {
        loop {
            let limit = (self.timing.renew_deadline / 2).max(self.timing.retry_period);
            let served_now = served.borrow().clone();
            if timeout(limit, self.attempt(&served_now)).await.is_err() {
                tracing::warn!("the apiserver did not answer about the shard leases in time; retrying");
            }
            let now = Instant::now();
            let publish: Held = self
                .known
                .iter()
                .filter(|(shard, _)| !self.leaving.contains(*shard))
                .filter_map(|(shard, k)| k.deadline.filter(|d| *d > now).map(|d| (shard.clone(), d)))
                .collect();
            held.send_if_modified(|current| {
                let changed = *current != publish;
                *current = publish;
                changed
            });
            tokio::select! {
                () = stop.cancelled() => return self,
                () = sleep(self.timing.retry_period) => {}
            }
        }
    }

    /// One look and its writes.
    async fn attempt(&mut self, served: &BTreeSet<String>) {
        let shards: Vec<String> = self.known.keys().cloned().collect();
        let mut leases = BTreeMap::new();
        let mut seen = Vec::new();
        let now = Instant::now();
        for shard in &shards {
            match self.api.get_opt(&self.name(shard)).await {
                Ok(lease) => {
                    seen.push(self.judge(shard, lease.as_ref(), now));
                    leases.insert(shard.clone(), lease);
                }
                Err(err) => tracing::warn!(shard, error = %err, "cannot read a shard lease"),
            }
        }
        // What we gave up stays ours, and asked for, until released: the plan counts it.
        let moves = plan(&self.identity, &seen);
        for shard in moves.give_up {
            if self.leaving.insert(shard.clone()) {
                tracing::info!(shard, "giving up a shard another replica asked for");
            }
        }
        for lease in &seen {
            let current = leases.get(&lease.shard).cloned().flatten();
            let shard = &lease.shard;
            if lease.holder == Holder::Me && self.leaving.contains(shard) && !served.contains(shard) {
                self.release(shard, current).await;
            } else if lease.holder == Holder::Me {
                self.write_claim(shard, current, false).await;
            } else if moves.take.contains(shard) {
                self.write_claim(shard, current, true).await;
            } else if moves.ask.as_ref() == Some(shard) {
                self.ask(shard, current).await;
            }
            if lease.holder != Holder::Me && !moves.take.contains(shard) {
                self.forget(shard);
            }
        }
    }

    /// Judges one Lease (`None`: none yet, free).
    fn judge(&mut self, shard: &str, lease: Option<&Lease>, now: Instant) -> Seen {
        let freshness = self.timing.duration;
        let identity = self.identity.clone();
        let known = self.known.entry(shard.to_string()).or_default();
        let spec = lease.and_then(|l| l.spec.clone()).unwrap_or_default();
        let holder = match known.observer.judge(&spec, &identity, now) {
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

    /// Takes (or renews) `shard`'s Lease; a take clears our own request on it.
    async fn write_claim(&mut self, shard: &str, current: Option<Lease>, taking: bool) {
        let sent = Instant::now();
        let name = self.name(shard);
        let spec =
            claim(current.as_ref().and_then(|l| l.spec.as_ref()), &self.identity, &self.timing, Timestamp::now());
        let result = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta { name: Some(name.clone()), ..ObjectMeta::default() },
                    spec: Some(spec),
                };
                self.api.create(&post_params(), &lease).await.map(|_| ())
            }
            Some(mut lease) => {
                if taking {
                    clear_request(&mut lease, &self.identity);
                }
                lease.spec = Some(spec);
                self.api.replace(&name, &post_params(), &lease).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => {
                if taking {
                    tracing::info!(shard, "took a shard lease");
                }
                let deadline = self.timing.deadline_after(sent);
                let known = self.known.entry(shard.to_string()).or_default();
                known.deadline = Some(deadline);
                known.asked = None;
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => {
                tracing::warn!(shard, error = %KubeError::new(Verb::Patch, "Lease", &name, err), "cannot write a shard lease")
            }
        }
    }

    /// Hands `shard`'s Lease back: no controller serves it any more.
    async fn release(&mut self, shard: &str, current: Option<Lease>) {
        let Some(mut lease) = current else { return };
        let spec = lease.spec.clone().unwrap_or_default();
        lease.spec = Some(released(&spec, Timestamp::now()));
        let name = self.name(shard);
        match self.api.replace(&name, &post_params(), &lease).await {
            Ok(_) => {
                tracing::info!(shard, "released a shard lease");
                self.forget(shard);
            }
            Err(err) => tracing::warn!(shard, error = %err, "cannot release a shard lease"),
        }
    }

    /// Asks for `shard`: annotates its Lease, again once half a term has passed.
    async fn ask(&mut self, shard: &str, current: Option<Lease>) {
        let Some(mut lease) = current else { return };
        let now = Instant::now();
        let half = self.timing.duration / 2;
        let known = self.known.entry(shard.to_string()).or_default();
        if known.asked.is_some_and(|at| now.saturating_duration_since(at) < half) {
            return;
        }
        let annotations = lease.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert(WANTED_BY.into(), self.identity.clone());
        annotations.insert(WANTED_AT.into(), Timestamp::now().to_string());
        match self.api.replace(&self.name(shard), &post_params(), &lease).await {
            Ok(_) => {
                tracing::info!(shard, "asked for a shard");
                if let Some(known) = self.known.get_mut(shard) {
                    known.asked = Some(now);
                }
            }
            Err(err) => tracing::debug!(shard, error = %err, "cannot ask for a shard"),
        }
    }

    /// Hands back every Lease still ours (the controllers are stopped).
    pub(crate) async fn release_all(mut self) {
        let ours: Vec<String> =
            self.known.iter().filter(|(_, k)| k.deadline.is_some()).map(|(s, _)| s.clone()).collect();
        for shard in ours {
            match self.api.get_opt(&self.name(&shard)).await {
                Ok(Some(lease)) if holds(&lease, &self.identity) => self.release(&shard, Some(lease)).await,
                Ok(_) => {}
                Err(err) => tracing::warn!(shard, error = %err, "cannot read a shard lease to release it"),
            }
        }
    }
}

/// The Lease of `shard`.
pub(crate) fn lease_name(prefix: &str, shard: &str) -> String {
    format!("{prefix}-shard-{shard}")
}

fn holds(lease: &Lease, identity: &str) -> bool {
    lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(identity)
}

/// Removes a request on `lease` when it is `identity`'s.
fn clear_request(lease: &mut Lease, identity: &str) {
    if let Some(annotations) = lease.metadata.annotations.as_mut()
        && annotations.get(WANTED_BY).map(String::as_str) == Some(identity)
    {
        annotations.remove(WANTED_BY);
        annotations.remove(WANTED_AT);
    }
}

fn post_params() -> PostParams {
    PostParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..PostParams::default() }
}
