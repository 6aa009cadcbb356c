//! The provisioning limit: at most N hosts inspecting, provisioning or
//! deprovisioning at once, counted across all hosts.
//!
//! A host takes a slot before its status says it entered such a state and
//! gives it back only after its status says it left, so an observer of the
//! hosts never sees more than N of them busy, besides hosts whose node the poll
//! shows resting (gone, in `enroll`, or failed): those hold no slot until they ask
//! Ironic again. Hosts the informers' caches show
//! busy count too (after a restart, before their next reconcile), except
//! those known to have left already while the cache lags behind. Hosts that
//! had to wait are woken whenever a slot frees up, one host per free slot: the slot is
//! promised to the host woken for it until that host asks, or for [`PROMISE`] if it never
//! does, so slots freed faster than woken hosts arrive wake no more hosts than there are
//! slots. Namespaces share the slots fairly when they contend for them ([`share`](super::share)).

use crate::host::index::HostIndex;
use crate::host::share::{Contention, Queue};
use crate::host::wake::{Cause, HostKey, Wakeups};
use crate::kit::backoff::sleep_until_some;
use crds::baremetalhost::BareMetalHost;
use kube::runtime::reflector::Store;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a slot stays promised to the host woken for it. A woken host asks within a
/// reconcile queue's wait; one that never asks (paused, or failing before it gets there)
/// keeps the slot from others only this long.
pub(super) const PROMISE: Duration = Duration::from_secs(30);
/// How long a host that took a slot again ([`Capacity::resume`]) is not judged resting: a poll
/// that read its node before its call landed would still show it failed. The call's outcome
/// is waited for by the poller (`Poller::expect`) once it returns; this covers the call.
pub(super) const RESUME_GRACE: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Slots {
    /// Hosts this process moved into a busy state.
    held: HashSet<HostKey>,
    /// Hosts that left a busy state; the caches may not show it yet.
    released: HashSet<HostKey>,
    /// Hosts waiting for a slot, first come first served.
    waiting: Queue,
    /// Hosts woken for a free slot that have not asked for it yet, and when the promise lapses.
    promised: HashMap<HostKey, Instant>,
    /// Hosts whose node the last poll showed resting (`Poller::resting`: gone, in `enroll`, or
    /// failed): they hold no slot, whatever their status says, until they ask Ironic for
    /// work again ([`Capacity::resume`]). As baremetal-operator counts only Ironic's busy
    /// nodes; and so a busy status no host earned (restored from an annotation anyone who may
    /// write the host can set) or a host that keeps failing never keeps the slots from the
    /// others, another namespace's hosts among them.
    resting: HashSet<HostKey>,
    /// Hosts that took a slot again, and when: not judged resting for [`RESUME_GRACE`].
    resumed: HashMap<HostKey, Instant>,
}

/// The provisioning slots.
pub(super) struct Capacity {
    limit: usize,
    slots: Mutex<Slots>,
    /// The caches of hosts, only to wait for their first list.
    stores: RwLock<Vec<Store<BareMetalHost>>>,
    /// Which hosts the caches show busy, kept from their watch events.
    indexes: RwLock<Vec<Arc<HostIndex>>>,
    wakeups: Arc<Wakeups>,
    /// Told when a slot is promised, so [`Capacity::watch_promises`] times its lapse.
    promising: Notify,
}

impl Slots {
    /// The hosts holding a slot, with `busy` those the caches show busy: held by this process,
    /// busy in a cache and not known to have left, or promised one.
    fn in_use<'a>(&'a self, busy: &'a [HostKey]) -> HashSet<&'a HostKey> {
        let mut in_use: HashSet<&HostKey> = busy.iter().filter(|key| !self.released.contains(*key)).collect();
        in_use.extend(self.held.iter());
        in_use.extend(self.promised.keys());
        // A slot promised to a resting host (woken to take one again) is reserved all the same.
        in_use.retain(|key| !self.resting.contains(*key) || self.promised.contains_key(*key));
        in_use
    }

    /// Forgets the promises that lapsed, and the one to `host`, which asked or left.
    fn settle_promises(&mut self, host: &HostKey) {
        let now = Instant::now();
        self.promised.retain(|key, until| *until > now && key != host);
    }

    /// Forgets the promises that lapsed.
    fn drop_lapsed(&mut self) {
        let now = Instant::now();
        self.promised.retain(|_, until| *until > now);
    }
}

/// Which waiting hosts a free slot may wake.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// Those of namespaces below their share first, then any.
    Any,
    /// Only those of namespaces below their share.
    BelowShare,
}

/// Slots in use, by namespace.
fn usage<'a>(in_use: impl IntoIterator<Item = &'a HostKey>) -> BTreeMap<&'a str, usize> {
    let mut usage = BTreeMap::new();
    for key in in_use {
        *usage.entry(key.namespace.as_str()).or_insert(0) += 1;
    }
    usage
}

impl Capacity {
    pub(super) fn new(limit: usize, wakeups: Arc<Wakeups>) -> Self {
        Self {
            limit: limit.max(1),
            slots: Mutex::new(Slots::default()),
            stores: RwLock::new(Vec::new()),
            indexes: RwLock::new(Vec::new()),
            wakeups,
            promising: Notify::new(),
        }
    }

    /// Adds a controller's cache of hosts, and the index kept from its watch, to the count.
    pub(super) fn add_scope(&self, store: Store<BareMetalHost>, index: Arc<HostIndex>) {
        self.stores.write().unwrap_or_else(|e| e.into_inner()).push(store);
        self.indexes.write().unwrap_or_else(|e| e.into_inner()).push(index);
    }

    /// Waits until every cache has its initial list, so hosts that are busy
    /// already are counted before any new one takes a slot.
    pub(super) async fn ready(&self) {
        let stores = self.stores.read().unwrap_or_else(|e| e.into_inner()).clone();
        for store in stores {
            // An error means the controller stopped; there is nothing to wait for.
            let _ = store.wait_until_ready().await;
        }
    }

    /// The hosts the caches show busy: about as many as there are slots, whatever the number
    /// of hosts.
    fn cached_busy(&self) -> Vec<HostKey> {
        self.indexes.read().unwrap_or_else(|e| e.into_inner()).iter().flat_map(|index| index.busy()).collect()
    }

    /// Takes a slot for `host`; false when none is free (the host is woken
    /// when one frees up).
    pub(super) fn try_acquire(&self, host: &HostKey) -> bool {
        let busy = self.cached_busy();
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        // Once a cache shows a released host idle (or gone), it stops lagging.
        let cached: HashSet<&HostKey> = busy.iter().collect();
        slots.released.retain(|key| cached.contains(key));
        slots.released.remove(host);
        slots.settle_promises(host);
        if slots.held.contains(host) {
            return true;
        }
        let mut in_use = slots.in_use(&busy);
        in_use.remove(host);
        let free = in_use.len() < self.limit;
        let usage = usage(in_use);
        let fair = Contention { limit: self.limit, usage: &usage, waiting: &slots.waiting.namespaces() }.admits(host);
        if !(free && fair) {
            slots.waiting.push(host);
            // Turned away by fairness from a free slot: it goes to a namespace below its share
            // (never back to this host, nor to another of a namespace at its share).
            let more = if free { self.next_to_wake(&mut slots, &busy, Wake::BelowShare) } else { Vec::new() };
            drop(slots);
            self.wake(&more);
            return false;
        }
        slots.held.insert(host.clone());
        slots.waiting.remove(host);
        // Slots still free (a host woken for one was turned away by fairness, or the limit
        // grew): the next waiting hosts are woken for them.
        let more = self.next_to_wake(&mut slots, &busy, Wake::Any);
        drop(slots);
        self.wake(&more);
        true
    }

    fn wake(&self, hosts: &[HostKey]) {
        for key in hosts {
            self.wakeups.wake(key, Cause::Slot);
        }
    }

    /// Records that `host` left its busy state (or was deleted) and wakes as many waiting
    /// hosts as there are free slots, those of namespaces below their share first, so that a
    /// freed slot is taken at once without waking every waiting host. Whether this host held
    /// one is not asked: the cache may show it idle already, and a wake-up too many costs a
    /// reconcile, one too few a host waiting for nothing.
    pub(super) fn release(&self, host: &HostKey) {
        let busy = self.cached_busy();
        let waiting = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.waiting.remove(host);
            slots.held.remove(host);
            slots.resting.remove(host);
            slots.resumed.remove(host);
            slots.settle_promises(host);
            slots.released.insert(host.clone());
            self.next_to_wake(&mut slots, &busy, Wake::Any)
        };
        self.wake(&waiting);
    }

    /// The waiting hosts to wake for the free slots, marked woken and promised a slot: a host
    /// woken that does not come to ask (paused, or failing before it gets there) is passed
    /// over by the next wake-ups until it asks again, and its slot is free again once the
    /// promise lapses.
    fn next_to_wake(&self, slots: &mut Slots, busy: &[HostKey], wake: Wake) -> Vec<HostKey> {
        let in_use = slots.in_use(busy);
        let free = self.limit.saturating_sub(in_use.len());
        let usage = usage(in_use);
        let contention = Contention { limit: self.limit, usage: &usage, waiting: &slots.waiting.namespaces() };
        let mut next = slots.waiting.first(free, |namespace| contention.below_share(namespace));
        if wake == Wake::BelowShare {
            next.retain(|key| contention.below_share(&key.namespace));
        }
        slots.waiting.woken(&next);
        let until = Instant::now() + PROMISE;
        slots.promised.extend(next.iter().map(|key| (key.clone(), until)));
        if !next.is_empty() {
            self.promising.notify_one();
        }
        next
    }

    /// Wakes waiting hosts for the slots whose promise lapsed, when one lapses, until
    /// `shutdown`. Without it a slot promised to a host that never came would stay unused
    /// until another slot freed up or a waiting host looked again by itself (every 5 minutes).
    pub(super) async fn watch_promises(&self, shutdown: CancellationToken) {
        loop {
            let next = self.slots.lock().unwrap_or_else(|e| e.into_inner()).promised.values().min().copied();
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.promising.notified() => continue,
                () = sleep_until_some(next) => self.lapse(),
            }
        }
    }

    /// Frees the slots whose promise lapsed and wakes waiting hosts for any slot free. A
    /// promise found lapsed already (by a host that asked meanwhile) may have freed a slot too:
    /// the free slots are counted either way.
    fn lapse(&self) {
        let busy = self.cached_busy();
        let waiting = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.drop_lapsed();
            self.next_to_wake(&mut slots, &busy, Wake::Any)
        };
        self.wake(&waiting);
    }

    /// `host` no longer waits for a slot (its plan changed). Woken for a free slot it will not
    /// take, it hands the wake-up on.
    pub(super) fn stop_waiting(&self, host: &HostKey) {
        // Every reconcile that moves nowhere busy comes here: most hosts never waited.
        if !self.slots.lock().unwrap_or_else(|e| e.into_inner()).waiting.remove(host) {
            return;
        }
        let busy = self.cached_busy();
        let waiting = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.settle_promises(host);
            self.next_to_wake(&mut slots, &busy, Wake::Any)
        };
        self.wake(&waiting);
    }

    /// Records the hosts that rest now, `resting_of` the hosts that may hold a slot (those this
    /// process moved into a busy state and those the caches show busy; the poller says which
    /// rest), and wakes waiting hosts for the slots that frees.
    pub(super) fn rest(&self, resting_of: impl FnOnce(&HashSet<HostKey>) -> HashSet<HostKey>) {
        let busy = self.cached_busy();
        let mut counted: HashSet<HostKey> = busy.iter().cloned().collect();
        counted.extend(self.slots.lock().unwrap_or_else(|e| e.into_inner()).held.iter().cloned());
        let resting = resting_of(&counted);
        let waiting = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            slots.resumed.retain(|_, at| now.duration_since(*at) < RESUME_GRACE);
            let resting: HashSet<HostKey> =
                resting.into_iter().filter(|key| !slots.resumed.contains_key(key)).collect();
            if slots.resting == resting {
                return;
            }
            slots.resting = resting;
            self.next_to_wake(&mut slots, &busy, Wake::Any)
        };
        self.wake(&waiting);
    }

    /// Whether `host` rests: it must take a slot again before it asks Ironic for work.
    pub(super) fn is_resting(&self, host: &HostKey) -> bool {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).resting.contains(host)
    }

    /// Takes a slot again for `host`, which rests in a busy state and is about to ask Ironic
    /// for work; false when none is free (it waits, still resting, and is woken for one).
    pub(super) fn resume(&self, host: &HostKey) -> bool {
        {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            if !slots.resting.remove(host) {
                return true;
            }
            slots.held.remove(host);
        }
        if self.try_acquire(host) {
            self.slots.lock().unwrap_or_else(|e| e.into_inner()).resumed.insert(host.clone(), Instant::now());
            return true;
        }
        // Back to resting: a host turned away while it briefly counted is woken for the slot.
        let busy = self.cached_busy();
        let waiting = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.resting.insert(host.clone());
            self.next_to_wake(&mut slots, &busy, Wake::Any)
        };
        self.wake(&waiting);
        false
    }

    /// Slots held by hosts this process moved into a busy state.
    pub(super) fn held(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_limited_and_reused() {
        let capacity = Capacity::new(2, Arc::new(Wakeups::default()));
        let (a, b, c) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"), HostKey::new("ns", "c"));
        assert!(capacity.try_acquire(&a));
        assert!(capacity.try_acquire(&a), "taking a held slot again is free");
        assert!(capacity.try_acquire(&b));
        assert!(!capacity.try_acquire(&c));
        capacity.release(&a);
        assert!(capacity.try_acquire(&c));
        assert_eq!(capacity.held(), 2);
        capacity.release(&b);
        capacity.release(&b);
        assert_eq!(capacity.held(), 1);
    }

    fn host(name: &str, state: crds::baremetalhost::ProvisioningState) -> BareMetalHost {
        let mut host = BareMetalHost::new(name, Default::default());
        host.metadata.namespace = Some("ns".into());
        let mut status = crds::baremetalhost::BareMetalHostStatus::default();
        status.provisioning.state = state;
        host.status = Some(status);
        host
    }

    #[test]
    fn hosts_busy_in_the_cache_count_until_known_to_have_left() {
        use crds::baremetalhost::ProvisioningState as S;
        use kube::runtime::watcher::Event;
        let (store, _writer) = kube::runtime::reflector::store::<BareMetalHost>();
        let index = Arc::new(HostIndex::default());
        index.apply(&Event::Apply(host("a", S::Provisioning)));
        index.apply(&Event::Apply(host("b", S::Available)));
        let capacity = Capacity::new(1, Arc::new(Wakeups::default()));
        capacity.add_scope(store, index.clone());
        let (a, b) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"));
        assert!(!capacity.try_acquire(&b), "a found busy after a restart holds the only slot");
        capacity.release(&a);
        assert!(capacity.try_acquire(&b), "a left, even though the cache still shows it busy");
        capacity.release(&b);
        // The cache catches up; a enters provisioning again and counts.
        index.apply(&Event::Apply(host("a", S::Available)));
        assert!(capacity.try_acquire(&a));
        index.apply(&Event::Apply(host("a", S::Provisioning)));
        assert!(!capacity.try_acquire(&b));
    }

    #[tokio::test]
    async fn a_host_resting_in_a_busy_state_holds_no_slot_until_it_asks_ironic_again() {
        use crds::baremetalhost::ProvisioningState as S;
        use futures::StreamExt;
        // A tenant's host shows provisioning (a status restored from an annotation, say) while
        // its node is gone from Ironic: the only slot is another namespace's once a poll shows it.
        let (store, _writer) = kube::runtime::reflector::store::<BareMetalHost>();
        let index = Arc::new(HostIndex::default());
        index.apply(&kube::runtime::watcher::Event::Apply(host("a", S::Provisioning)));
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(1, wakeups);
        capacity.add_scope(store, index);
        let (a, other) = (HostKey::new("ns", "a"), HostKey::new("other", "b"));
        assert!(!capacity.try_acquire(&other), "counted from the cache");
        capacity.rest(|counted| {
            assert_eq!(*counted, HashSet::from([a.clone()]), "the poller judges the hosts that may hold a slot");
            counted.clone()
        });
        assert_eq!(woken.next().await.map(|r| r.name), Some("b".to_string()), "woken for the slot freed");
        assert!(capacity.try_acquire(&other));
        assert!(!capacity.resume(&a), "asking Ironic again takes a slot, and none is free");
        assert!(capacity.is_resting(&a), "still holds none while it waits");
        capacity.release(&other);
        assert_eq!(woken.next().await.map(|r| r.name), Some("a".to_string()), "woken to take one again");
        assert!(!capacity.try_acquire(&HostKey::new("other", "c")), "the slot is promised to a, resting or not");
        assert!(capacity.resume(&a));
        assert!(!capacity.is_resting(&a) && !capacity.try_acquire(&other), "a holds the slot again");
        capacity.rest(|_| HashSet::from([a.clone()]));
        assert!(!capacity.is_resting(&a), "a poll that may predate its call does not judge it");
    }

    #[test]
    fn a_tenant_with_many_hosts_yields_freed_slots_to_one_waiting_with_none() {
        let capacity = Capacity::new(2, Arc::new(Wakeups::default()));
        let big: Vec<HostKey> = (0..4).map(|i| HostKey::new("big", format!("b{i}"))).collect();
        let small = HostKey::new("small", "s0");
        assert!(capacity.try_acquire(&big[0]) && capacity.try_acquire(&big[1]), "alone, big takes every slot");
        assert!(!capacity.try_acquire(&big[2]));
        assert!(!capacity.try_acquire(&small));
        capacity.release(&big[0]);
        assert!(!capacity.try_acquire(&big[2]), "big waited first, but holds its share while small has none");
        assert!(capacity.try_acquire(&small));
        capacity.release(&small);
        assert!(capacity.try_acquire(&big[2]), "nobody else waits: the slot is big's again");
    }

    #[tokio::test]
    async fn waiting_hosts_are_woken_when_a_slot_frees_up() {
        use futures::StreamExt;
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(1, wakeups);
        let (a, b) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"));
        assert!(capacity.try_acquire(&a));
        assert!(!capacity.try_acquire(&b));
        capacity.release(&a);
        assert_eq!(woken.next().await.map(|r| r.name), Some("b".to_string()));
        assert!(capacity.try_acquire(&b));
    }

    type Woken =
        std::pin::Pin<Box<dyn futures::Stream<Item = kube::runtime::reflector::ObjectRef<BareMetalHost>> + Send>>;

    /// `hosts` hosts `h0`… asking for `limit` slots in turn: the first `limit` hold one, the
    /// rest wait, in order. With the wake-ups, the stream of hosts woken, and the limiter.
    fn crowded(limit: usize, hosts: usize) -> (Arc<Wakeups>, Woken, Capacity, Vec<HostKey>) {
        let wakeups = Arc::new(Wakeups::default());
        let woken: Woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(limit, wakeups.clone());
        let keys: Vec<HostKey> = (0..hosts).map(|i| HostKey::new("ns", format!("h{i}"))).collect();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(capacity.try_acquire(key), i < limit, "{key} takes a slot only while one is free");
        }
        (wakeups, woken, capacity, keys)
    }

    #[tokio::test]
    async fn only_the_longest_waiting_hosts_are_woken() {
        use futures::StreamExt;
        let (wakeups, mut woken, capacity, keys) = crowded(1, 4);
        capacity.stop_waiting(&keys[1]);
        capacity.release(&keys[0]);
        wakeups.wake(&HostKey::new("ns", "marker"), Cause::Poll);
        assert_eq!(woken.next().await.map(|r| r.name), Some("h2".to_string()));
        assert_eq!(woken.next().await.map(|r| r.name), Some("marker".to_string()), "one slot, one host woken");
    }

    #[tokio::test]
    async fn a_slot_freed_by_a_host_the_cache_shows_idle_already_still_wakes_a_waiting_host() {
        use crds::baremetalhost::ProvisioningState as S;
        use futures::StreamExt;
        use kube::runtime::watcher::Event;
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let (store, _writer) = kube::runtime::reflector::store::<BareMetalHost>();
        let index = Arc::new(HostIndex::default());
        index.apply(&Event::Apply(host("a", S::Provisioning)));
        let capacity = Capacity::new(1, wakeups);
        capacity.add_scope(store, index.clone());
        let (a, b) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"));
        assert!(!capacity.try_acquire(&b), "a, busy in the cache after a restart, holds the slot");
        // Its status write comes back before the write returns: the index shows it idle.
        index.apply(&Event::Apply(host("a", S::Provisioned)));
        capacity.release(&a);
        assert_eq!(woken.next().await.map(|r| r.name), Some("b".to_string()));
    }

    /// The hosts woken so far, up to a marker woken after them.
    async fn woken_until_marker(wakeups: &Wakeups, woken: &mut Woken) -> Vec<String> {
        use futures::StreamExt;
        wakeups.wake(&HostKey::new("ns", "marker"), Cause::Poll);
        let mut names = Vec::new();
        while let Some(name) = woken.next().await.map(|r| r.name) {
            if name == "marker" {
                break;
            }
            names.push(name);
        }
        names
    }

    #[tokio::test(start_paused = true)]
    async fn a_woken_host_that_never_asks_holds_its_slot_only_until_the_promise_lapses() {
        let (wakeups, mut woken, capacity, keys) = crowded(2, 5);
        capacity.release(&keys[0]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h2"]);
        // h2 never comes (paused): the next freed slot goes to h3, not to h2 again.
        capacity.release(&keys[1]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h3"]);
        assert!(capacity.try_acquire(&keys[3]));
        assert!(woken_until_marker(&wakeups, &mut woken).await.is_empty(), "h2's slot is still promised");
        assert!(!capacity.try_acquire(&keys[4]), "not even to a host asking by itself");
        tokio::time::advance(PROMISE).await;
        assert!(capacity.try_acquire(&keys[4]), "the promise lapsed: the slot is free");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lapsed_promise_wakes_the_next_waiting_host_by_itself() {
        let (wakeups, mut woken, capacity, keys) = crowded(1, 3);
        let capacity = Arc::new(capacity);
        let shutdown = CancellationToken::new();
        let watcher = tokio::spawn({
            let (capacity, shutdown) = (capacity.clone(), shutdown.clone());
            async move { capacity.watch_promises(shutdown).await }
        });
        capacity.release(&keys[0]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h1"]);
        // h1 never comes: once its promise lapses h2 is woken, with no other slot freed.
        tokio::time::sleep(PROMISE + Duration::from_millis(1)).await;
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h2"]);
        assert!(capacity.try_acquire(&keys[2]));
        shutdown.cancel();
        assert!(watcher.await.is_ok());
    }

    #[tokio::test]
    async fn slots_freed_faster_than_woken_hosts_arrive_wake_one_host_each() {
        let (wakeups, mut woken, capacity, keys) = crowded(3, 10);
        for key in &keys[..3] {
            capacity.release(key);
        }
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h3", "h4", "h5"]);
        assert!(capacity.try_acquire(&keys[4]));
        assert!(woken_until_marker(&wakeups, &mut woken).await.is_empty(), "h3 and h5 are still coming");
    }

    #[tokio::test]
    async fn a_slot_promised_to_a_woken_host_is_not_taken_by_one_that_did_not_wait() {
        let (wakeups, mut woken, capacity, keys) = crowded(1, 2);
        capacity.release(&keys[0]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["h1"]);
        assert!(!capacity.try_acquire(&HostKey::new("ns", "new")));
        assert!(capacity.try_acquire(&keys[1]));
    }

    #[tokio::test]
    async fn a_woken_host_turned_away_by_fairness_hands_its_slot_to_the_namespace_below_its_share() {
        let wakeups = Arc::new(Wakeups::default());
        let mut woken: Woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(2, wakeups.clone());
        let big: Vec<HostKey> = (0..3).map(|i| HostKey::new("big", format!("b{i}"))).collect();
        let small = HostKey::new("small", "s0");
        assert!(capacity.try_acquire(&big[0]) && capacity.try_acquire(&big[1]));
        assert!(!capacity.try_acquire(&big[2]));
        capacity.release(&big[0]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["b2"], "alone, big may use every slot");
        assert!(!capacity.try_acquire(&small), "the free slot is promised to b2");
        // b2 comes, but small now waits with none while big holds its share.
        assert!(!capacity.try_acquire(&big[2]));
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["s0"]);
        assert!(capacity.try_acquire(&small));
    }

    #[tokio::test(start_paused = true)]
    async fn a_host_turned_away_by_fairness_wakes_no_host_of_a_namespace_at_its_share() {
        let wakeups = Arc::new(Wakeups::default());
        let mut woken: Woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(2, wakeups.clone());
        let big: Vec<HostKey> = (0..4).map(|i| HostKey::new("big", format!("b{i}"))).collect();
        let small = HostKey::new("small", "s0");
        assert!(capacity.try_acquire(&big[0]) && capacity.try_acquire(&big[1]));
        assert!(!capacity.try_acquire(&big[2]) && !capacity.try_acquire(&big[3]));
        assert!(!capacity.try_acquire(&small));
        capacity.release(&big[0]);
        assert_eq!(woken_until_marker(&wakeups, &mut woken).await, ["s0"]);
        // s0 never comes; its promise lapses, and b2 asks by itself.
        tokio::time::advance(PROMISE).await;
        assert!(!capacity.try_acquire(&big[2]), "small still waits below its share");
        assert!(woken_until_marker(&wakeups, &mut woken).await.is_empty(), "not b2 itself, nor b3");
    }
}
