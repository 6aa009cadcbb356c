//! Fair shares of the provisioning limit between namespaces.
//!
//! The limit protects Ironic; one tenant with a thousand hosts must not take every slot for
//! hours while another tenant's single host waits. So when slots are contended, each namespace
//! that holds or wants slots gets an equal share (the limit divided among them, at least one),
//! and a namespace at or above its share waits while one below it is waiting. Nobody waits
//! for a share that nobody else wants: when no other namespace waits below its share, a free
//! slot goes to whoever asks (the limit stays fully used).

use crate::host::wake::HostKey;
use std::collections::{BTreeMap, BTreeSet};

/// Who holds slots and who waits, by namespace.
pub(super) struct Contention<'a> {
    pub limit: usize,
    /// Hosts holding a slot.
    pub in_use: &'a [&'a HostKey],
    /// Hosts waiting for one, first come first served.
    pub waiting: &'a [HostKey],
}

impl Contention<'_> {
    fn usage(&self) -> BTreeMap<&str, usize> {
        let mut usage = BTreeMap::new();
        for key in self.in_use {
            *usage.entry(key.namespace.as_str()).or_insert(0) += 1;
        }
        usage
    }

    /// Each contending namespace's share, counting `asking` among the contenders.
    fn share(&self, asking: &str) -> usize {
        let mut namespaces: BTreeSet<&str> = self.in_use.iter().map(|k| k.namespace.as_str()).collect();
        namespaces.extend(self.waiting.iter().map(|k| k.namespace.as_str()));
        namespaces.insert(asking);
        (self.limit / namespaces.len().max(1)).max(1)
    }

    /// Whether `host` may take a free slot now (the caller checked that one is free).
    pub(super) fn admits(&self, host: &HostKey) -> bool {
        let share = self.share(&host.namespace);
        let usage = self.usage();
        let used = |ns: &str| usage.get(ns).copied().unwrap_or(0);
        if used(&host.namespace) < share {
            return true;
        }
        // At or above its share: only if no other namespace waits below its own.
        !self.waiting.iter().any(|k| k.namespace != host.namespace && used(&k.namespace) < share)
    }

    /// The waiting hosts in the order they should be woken: those of namespaces below their
    /// share first, each group first come first served.
    pub(super) fn wake_order(&self) -> Vec<HostKey> {
        let usage = self.usage();
        let below = |k: &HostKey| usage.get(k.namespace.as_str()).copied().unwrap_or(0) < self.share(&k.namespace);
        let (first, rest): (Vec<&HostKey>, Vec<&HostKey>) = self.waiting.iter().partition(|k| below(k));
        first.into_iter().chain(rest).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(namespace: &str, n: usize) -> Vec<HostKey> {
        (0..n).map(|i| HostKey::new(namespace, format!("{namespace}-{i}"))).collect()
    }

    #[test]
    fn alone_a_namespace_may_use_every_slot() {
        let held = keys("big", 3);
        let in_use: Vec<&HostKey> = held.iter().collect();
        let next = HostKey::new("big", "big-3");
        assert!(Contention { limit: 4, in_use: &in_use, waiting: &[] }.admits(&next));
    }

    #[test]
    fn a_namespace_over_its_share_yields_to_one_waiting_below_its_own() {
        let held = keys("big", 3);
        let in_use: Vec<&HostKey> = held.iter().collect();
        let small = keys("small", 1);
        let contention = Contention { limit: 4, in_use: &in_use, waiting: &small };
        assert!(!contention.admits(&HostKey::new("big", "big-9")), "big holds 3 of 4; its share is 2");
        assert!(contention.admits(&small[0]), "small is below its share");
    }

    #[test]
    fn a_share_nobody_else_wants_is_not_held_back() {
        let held: Vec<HostKey> = keys("big", 2).into_iter().chain(keys("small", 2)).collect();
        let in_use: Vec<&HostKey> = held.iter().collect();
        // small waits too, but it holds its share already: big may take the free slot.
        let waiting = vec![HostKey::new("small", "small-9")];
        let contention = Contention { limit: 6, in_use: &in_use, waiting: &waiting };
        assert!(contention.admits(&HostKey::new("big", "big-9")));
    }

    #[test]
    fn every_namespace_gets_at_least_one_slot_even_when_they_outnumber_the_limit() {
        let held = keys("a", 1);
        let in_use: Vec<&HostKey> = held.iter().collect();
        let waiting: Vec<HostKey> = ["b", "c", "d"].iter().flat_map(|ns| keys(ns, 1)).collect();
        let contention = Contention { limit: 2, in_use: &in_use, waiting: &waiting };
        assert!(contention.admits(&waiting[0]));
        assert!(!contention.admits(&HostKey::new("a", "a-9")), "a has its one; b, c and d wait with none");
    }

    #[test]
    fn hosts_below_their_share_are_woken_first() {
        let held = keys("big", 3);
        let in_use: Vec<&HostKey> = held.iter().collect();
        let waiting =
            vec![HostKey::new("big", "big-7"), HostKey::new("small", "small-0"), HostKey::new("big", "big-8")];
        let order = Contention { limit: 4, in_use: &in_use, waiting: &waiting }.wake_order();
        let names: Vec<&str> = order.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["small-0", "big-7", "big-8"]);
    }
}
