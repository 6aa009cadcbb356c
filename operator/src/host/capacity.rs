//! The provisioning limit: at most N hosts inspecting, provisioning or
//! deprovisioning at once, counted across all hosts.
//!
//! A host takes a slot before its status says it entered such a state and
//! gives it back only after its status says it left, so an observer of the
//! hosts never sees more than N of them busy. Hosts the informers' caches show
//! busy count too (after a restart, before their next reconcile), except
//! those known to have left already while the cache lags behind. Hosts that
//! had to wait are woken whenever a slot frees up. Namespaces share the slots fairly when
//! they contend for them ([`share`](super::share)).

use crate::host::machine::is_busy;
use crate::host::share::Contention;
use crate::host::wake::{HostKey, Wakeups};
use crds::baremetalhost::BareMetalHost;
use kube::runtime::reflector::Store;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

#[derive(Default)]
struct Slots {
    /// Hosts this process moved into a busy state.
    held: HashSet<HostKey>,
    /// Hosts that left a busy state; the caches may not show it yet.
    released: HashSet<HostKey>,
    /// Hosts waiting for a slot, first come first served.
    waiting: Vec<HostKey>,
}

/// The provisioning slots.
pub(super) struct Capacity {
    limit: usize,
    slots: Mutex<Slots>,
    stores: RwLock<Vec<Store<BareMetalHost>>>,
    wakeups: Arc<Wakeups>,
}

/// Which hosts the caches show busy, and which they show idle.
fn cached(stores: &[Store<BareMetalHost>]) -> (HashSet<HostKey>, HashSet<HostKey>) {
    let mut busy = HashSet::new();
    let mut idle = HashSet::new();
    for host in stores.iter().flat_map(|store| store.state()) {
        let key = HostKey::of(&host);
        if host.status.as_ref().is_some_and(|s| is_busy(s.provisioning.state)) {
            busy.insert(key);
        } else {
            idle.insert(key);
        }
    }
    (busy, idle)
}

impl Capacity {
    pub(super) fn new(limit: usize, wakeups: Arc<Wakeups>) -> Self {
        Self { limit: limit.max(1), slots: Mutex::new(Slots::default()), stores: RwLock::new(Vec::new()), wakeups }
    }

    /// Adds a controller's cache of hosts to the count.
    pub(super) fn add_store(&self, store: Store<BareMetalHost>) {
        self.stores.write().unwrap_or_else(|e| e.into_inner()).push(store);
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

    /// Takes a slot for `host`; false when none is free (the host is woken
    /// when one frees up).
    pub(super) fn try_acquire(&self, host: &HostKey) -> bool {
        let stores = self.stores.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (busy, idle) = cached(&stores);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        // Once a cache shows a released host idle (or gone), it stops lagging.
        slots.released.retain(|key| busy.contains(key) && !idle.contains(key));
        slots.released.remove(host);
        if slots.held.contains(host) {
            return true;
        }
        let mut in_use: HashSet<&HostKey> = busy.iter().filter(|key| !slots.released.contains(*key)).collect();
        in_use.extend(slots.held.iter());
        in_use.remove(host);
        let in_use: Vec<&HostKey> = in_use.into_iter().collect();
        let others: Vec<HostKey> = slots.waiting.iter().filter(|k| *k != host).cloned().collect();
        let fair = Contention { limit: self.limit, in_use: &in_use, waiting: &others }.admits(host);
        if in_use.len() < self.limit && fair {
            slots.held.insert(host.clone());
            slots.waiting.retain(|k| k != host);
            true
        } else {
            if !slots.waiting.contains(host) {
                slots.waiting.push(host.clone());
            }
            false
        }
    }

    /// Records that `host` left its busy state (or was deleted) and wakes
    /// the longest-waiting hosts: as many as there are slots, so that a
    /// freed slot is taken at once without waking every waiting host.
    pub(super) fn release(&self, host: &HostKey) {
        let waiting: Vec<HostKey> = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.waiting.retain(|k| k != host);
            slots.held.remove(host);
            slots.released.insert(host.clone());
            let held: Vec<&HostKey> = slots.held.iter().collect();
            let order = Contention { limit: self.limit, in_use: &held, waiting: &slots.waiting }.wake_order();
            order.into_iter().take(self.limit).collect()
        };
        for key in &waiting {
            self.wakeups.wake(key);
        }
    }

    /// `host` no longer waits for a slot (its plan changed).
    pub(super) fn stop_waiting(&self, host: &HostKey) {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).waiting.retain(|k| k != host);
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
        let (store, mut writer) = kube::runtime::reflector::store::<BareMetalHost>();
        writer.apply_watcher_event(&Event::Apply(host("a", S::Provisioning)));
        writer.apply_watcher_event(&Event::Apply(host("b", S::Available)));
        let capacity = Capacity::new(1, Arc::new(Wakeups::default()));
        capacity.add_store(store);
        let (a, b) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"));
        assert!(!capacity.try_acquire(&b), "a found busy after a restart holds the only slot");
        capacity.release(&a);
        assert!(capacity.try_acquire(&b), "a left, even though the cache still shows it busy");
        capacity.release(&b);
        // The cache catches up; a enters provisioning again and counts.
        writer.apply_watcher_event(&Event::Apply(host("a", S::Available)));
        assert!(capacity.try_acquire(&a));
        writer.apply_watcher_event(&Event::Apply(host("a", S::Provisioning)));
        assert!(!capacity.try_acquire(&b));
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

    #[tokio::test]
    async fn only_the_longest_waiting_hosts_are_woken() {
        use futures::StreamExt;
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let capacity = Capacity::new(1, wakeups.clone());
        let keys: Vec<HostKey> = (0..4).map(|i| HostKey::new("ns", format!("h{i}"))).collect();
        assert!(capacity.try_acquire(&keys[0]));
        for key in &keys[1..] {
            assert!(!capacity.try_acquire(key));
        }
        capacity.stop_waiting(&keys[1]);
        capacity.release(&keys[0]);
        wakeups.wake(&HostKey::new("ns", "marker"));
        assert_eq!(woken.next().await.map(|r| r.name), Some("h2".to_string()));
        assert_eq!(woken.next().await.map(|r| r.name), Some("marker".to_string()), "one slot, one host woken");
    }
}
