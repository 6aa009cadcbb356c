//! Fair shares of the provisioning limit between namespaces, and the queue of hosts waiting
//! for a slot.
//!
//! The limit protects Ironic; one tenant with a thousand hosts must not take every slot for
//! hours while another tenant's single host waits. So when slots are contended, each namespace
//! that holds or wants slots gets an equal share (the limit divided among them, at least one),
//! and a namespace at or above its share waits while one below it is waiting. Nobody waits
//! for a share that nobody else wants: when no other namespace waits below its share, a free
//! slot goes to whoever asks (the limit stays fully used).
//!
//! Both cost what the namespaces and the hosts asked for number, never the hosts waiting: a
//! wave of thousands of hosts asking at once must not make each ask cost a pass over them all.

use crate::host::wake::HostKey;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Who holds slots and who waits, by namespace.
pub(super) struct Contention<'a> {
    pub limit: usize,
    /// Slots held, by namespace.
    pub usage: &'a BTreeMap<&'a str, usize>,
    /// The namespaces with hosts waiting.
    pub waiting: &'a BTreeSet<&'a str>,
}

impl Contention<'_> {
    fn used(&self, namespace: &str) -> usize {
        self.usage.get(namespace).copied().unwrap_or(0)
    }

    /// Each contending namespace's share, counting `asking` among the contenders.
    fn share(&self, asking: &str) -> usize {
        let mut namespaces: BTreeSet<&str> = self.usage.keys().copied().collect();
        namespaces.extend(self.waiting.iter().copied());
        namespaces.insert(asking);
        (self.limit / namespaces.len().max(1)).max(1)
    }

    /// Whether `namespace` holds fewer slots than its share.
    pub(super) fn below_share(&self, namespace: &str) -> bool {
        self.used(namespace) < self.share(namespace)
    }

    /// Whether `host` may take a free slot now (the caller checked that one is free).
    pub(super) fn admits(&self, host: &HostKey) -> bool {
        let own = host.namespace.as_str();
        if self.below_share(own) {
            return true;
        }
        // At or above its share: only if no other namespace waits below its own.
        let share = self.share(own);
        !self.waiting.iter().any(|ns| *ns != own && self.used(ns) < share)
    }
}

/// Hosts waiting for a slot, first come first served, found by namespace.
#[derive(Default)]
pub(super) struct Queue {
    next: u64,
    /// Each waiting host's place.
    places: HashMap<HostKey, u64>,
    /// The hosts in order.
    order: BTreeMap<u64, HostKey>,
    /// The places of each namespace's hosts (never empty).
    by_namespace: BTreeMap<String, BTreeSet<u64>>,
    /// The places of hosts woken that have not asked again since: passed over by [`Queue::first`].
    woken: BTreeSet<u64>,
}

impl Queue {
    /// Adds `host` at the end, unless it waits already (it asked again: no longer woken).
    pub(super) fn push(&mut self, host: &HostKey) {
        if let Some(place) = self.places.get(host) {
            self.woken.remove(place);
            return;
        }
        let place = self.next;
        self.next = self.next.saturating_add(1);
        self.places.insert(host.clone(), place);
        self.order.insert(place, host.clone());
        self.by_namespace.entry(host.namespace.clone()).or_default().insert(place);
    }

    /// Removes `host`; whether it was waiting.
    pub(super) fn remove(&mut self, host: &HostKey) -> bool {
        let Some(place) = self.places.remove(host) else { return false };
        self.order.remove(&place);
        self.woken.remove(&place);
        if let Some(places) = self.by_namespace.get_mut(&host.namespace) {
            places.remove(&place);
            if places.is_empty() {
                self.by_namespace.remove(&host.namespace);
            }
        }
        true
    }

    /// The namespaces with hosts waiting.
    pub(super) fn namespaces(&self) -> BTreeSet<&str> {
        self.by_namespace.keys().map(String::as_str).collect()
    }

    /// Marks `hosts` woken.
    pub(super) fn woken(&mut self, hosts: &[HostKey]) {
        for host in hosts {
            if let Some(place) = self.places.get(host) {
                self.woken.insert(*place);
            }
        }
    }

    /// The first `n` hosts to wake, passing over those woken already: those of namespaces
    /// `first` picks (below their share), in the order they came, then the others in the
    /// order they came. Costs what the woken hosts and `n` number, never the whole queue.
    pub(super) fn first(&self, n: usize, first: impl Fn(&str) -> bool) -> Vec<HostKey> {
        let awake = |p: &u64| !self.woken.contains(p);
        // The `n` earliest places of the picked namespaces: each namespace's are in order, so
        // its first `n` not woken are all that can count.
        let mut picked: Vec<u64> = self
            .by_namespace
            .iter()
            .filter(|(ns, _)| first(ns))
            .flat_map(|(_, places)| places.iter().filter(|p| awake(p)).take(n).copied())
            .collect();
        picked.sort_unstable();
        picked.truncate(n);
        let chosen: BTreeSet<u64> = picked.iter().copied().collect();
        // Fewer than `n` picked means every host of the picked namespaces not woken was: at
        // most `n` places, and the woken ones, are skipped here.
        let rest = self.order.keys().filter(|p| awake(p) && !chosen.contains(*p)).take(n.saturating_sub(picked.len()));
        picked.iter().chain(rest).filter_map(|p| self.order.get(p).cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(namespace: &str, n: usize) -> Vec<HostKey> {
        (0..n).map(|i| HostKey::new(namespace, format!("{namespace}-{i}"))).collect()
    }

    fn usage(held: &[HostKey]) -> BTreeMap<&str, usize> {
        let mut usage = BTreeMap::new();
        for key in held {
            *usage.entry(key.namespace.as_str()).or_insert(0) += 1;
        }
        usage
    }

    fn namespaces(waiting: &[HostKey]) -> BTreeSet<&str> {
        waiting.iter().map(|k| k.namespace.as_str()).collect()
    }

    #[test]
    fn alone_a_namespace_may_use_every_slot() {
        let held = keys("big", 3);
        let next = HostKey::new("big", "big-3");
        assert!(Contention { limit: 4, usage: &usage(&held), waiting: &BTreeSet::new() }.admits(&next));
    }

    #[test]
    fn a_namespace_over_its_share_yields_to_one_waiting_below_its_own() {
        let held = keys("big", 3);
        let small = keys("small", 1);
        let (usage, waiting) = (usage(&held), namespaces(&small));
        let contention = Contention { limit: 4, usage: &usage, waiting: &waiting };
        assert!(!contention.admits(&HostKey::new("big", "big-9")), "big holds 3 of 4; its share is 2");
        assert!(contention.admits(&small[0]), "small is below its share");
    }

    #[test]
    fn a_share_nobody_else_wants_is_not_held_back() {
        let held: Vec<HostKey> = keys("big", 2).into_iter().chain(keys("small", 2)).collect();
        // small waits too, but it holds its share already: big may take the free slot.
        let waiting = vec![HostKey::new("small", "small-9")];
        let (usage, waiting) = (usage(&held), namespaces(&waiting));
        let contention = Contention { limit: 6, usage: &usage, waiting: &waiting };
        assert!(contention.admits(&HostKey::new("big", "big-9")));
    }

    #[test]
    fn every_namespace_gets_at_least_one_slot_even_when_they_outnumber_the_limit() {
        let held = keys("a", 1);
        let waiting: Vec<HostKey> = ["b", "c", "d"].iter().flat_map(|ns| keys(ns, 1)).collect();
        let (usage, names) = (usage(&held), namespaces(&waiting));
        let contention = Contention { limit: 2, usage: &usage, waiting: &names };
        assert!(contention.admits(&waiting[0]));
        assert!(!contention.admits(&HostKey::new("a", "a-9")), "a has its one; b, c and d wait with none");
    }

    #[test]
    fn hosts_below_their_share_are_woken_first_each_group_in_the_order_they_came() {
        let held = keys("big", 3);
        let mut queue = Queue::default();
        for key in [HostKey::new("big", "big-7"), HostKey::new("small", "small-0"), HostKey::new("big", "big-8")] {
            queue.push(&key);
        }
        let usage = usage(&held);
        let waiting = queue.namespaces();
        let contention = Contention { limit: 4, usage: &usage, waiting: &waiting };
        let names = |hosts: Vec<HostKey>| hosts.into_iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names(queue.first(3, |ns| contention.below_share(ns))), ["small-0", "big-7", "big-8"]);
        assert_eq!(names(queue.first(1, |ns| contention.below_share(ns))), ["small-0"]);
        assert_eq!(names(queue.first(2, |_| false)), ["big-7", "small-0"], "nobody below: first come first served");
    }

    #[test]
    fn a_woken_host_is_passed_over_until_it_asks_again() {
        let mut queue = Queue::default();
        let hosts = keys("ns", 3);
        for key in &hosts {
            queue.push(key);
        }
        let first = queue.first(1, |_| true);
        queue.woken(&first);
        assert_eq!(first, hosts[..1]);
        assert_eq!(queue.first(1, |_| true), hosts[1..2], "the first host woken never came: the next is");
        queue.push(&hosts[0]);
        assert_eq!(queue.first(1, |_| true), hosts[..1], "it asked again, in its place");
    }

    #[test]
    fn a_host_waits_once_and_leaves_the_queue_whole() {
        let mut queue = Queue::default();
        let hosts = keys("ns", 3);
        for key in hosts.iter().chain(&hosts) {
            queue.push(key);
        }
        assert_eq!(queue.first(10, |_| true).len(), 3, "asking twice waits once");
        assert!(queue.remove(&hosts[0]) && !queue.remove(&hosts[0]));
        assert!(queue.remove(&hosts[1]) && queue.remove(&hosts[2]));
        assert!(queue.namespaces().is_empty() && queue.first(1, |_| true).is_empty());
    }
}
