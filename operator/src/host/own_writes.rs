//! Which watch events of a host are its own reconcile's writes, so that they wake no second
//! reconcile: the writer went on from what it wrote.
//!
//! A write is known as ours by the resource version its response carries. The apiserver often
//! sends the watch event before the response arrives, so an event of a host whose reconcile is
//! running, and whose version is not known yet, is set aside rather than taken as someone
//! else's change. When the reconcile ends, every write it made has answered: an event set aside
//! whose version none of them returned was another writer's, and the host is woken for it.

use crate::host::wake::HostKey;
use crds::baremetalhost::BareMetalHost;
use std::collections::HashMap;
use std::sync::Mutex;

/// The writes of one host whose watch events are still awaited, at most.
const AWAITED: usize = 4;
/// The events set aside during one reconcile, at most; more count as someone else's change.
const SET_ASIDE: usize = 8;

/// Per host, while it has anything to tell.
#[derive(Default)]
struct Host {
    /// The versions its writes returned whose events have not come yet.
    awaited: Vec<String>,
    /// Whether its reconcile runs: a write of it may not have answered yet.
    running: bool,
    /// The versions of events that came while it ran, not known as ours then.
    set_aside: Vec<String>,
    /// More events came while it ran than are set aside.
    overflowed: bool,
}

impl Host {
    fn is_empty(&self) -> bool {
        self.awaited.is_empty() && !self.running && self.set_aside.is_empty() && !self.overflowed
    }

    /// Takes `version` out of the awaited ones; whether it was one.
    fn arrived(&mut self, version: &str) -> bool {
        let Some(at) = self.awaited.iter().position(|v| v == version) else { return false };
        self.awaited.remove(at);
        true
    }
}

/// The own writes of every host.
#[derive(Default)]
pub(super) struct OwnWrites {
    hosts: Mutex<HashMap<HostKey, Host>>,
}

impl OwnWrites {
    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<HostKey, Host>> {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A write of `host` returned it.
    pub(super) fn wrote(&self, host: &BareMetalHost) {
        let Some(version) = host.metadata.resource_version.clone() else { return };
        let mut hosts = self.hosts();
        let entry = hosts.entry(HostKey::of(host)).or_default();
        // Its event came first and was set aside: it is known as ours now.
        if let Some(at) = entry.set_aside.iter().position(|v| *v == version) {
            entry.set_aside.remove(at);
            return;
        }
        let awaited = &mut entry.awaited;
        // A reconcile writes a host at most a few times; an event that never came (a relist
        // passed over it) must not keep a version forever.
        if awaited.len() >= AWAITED {
            awaited.remove(0);
        }
        awaited.push(version);
    }

    /// Whether the watch event showing `host` needs no reconcile of its own: one of our writes
    /// returned it, or it came while the host's reconcile runs and is judged when that ends.
    pub(super) fn claims(&self, host: &BareMetalHost) -> bool {
        let Some(version) = host.metadata.resource_version.as_deref() else { return false };
        let key = HostKey::of(host);
        let mut hosts = self.hosts();
        let Some(entry) = hosts.get_mut(&key) else { return false };
        if entry.arrived(version) {
            if entry.is_empty() {
                hosts.remove(&key);
            }
            return true;
        }
        if !entry.running {
            return false;
        }
        if entry.set_aside.len() < SET_ASIDE {
            entry.set_aside.push(version.to_owned());
        } else {
            entry.overflowed = true;
        }
        true
    }

    /// The reconcile of `key` starts.
    pub(super) fn start(&self, key: &HostKey) {
        self.hosts().entry(key.clone()).or_default().running = true;
    }

    /// The reconcile of `key` ended, every write it made answered; whether an event set aside
    /// meanwhile was someone else's change, which then needs a reconcile.
    pub(super) fn finish(&self, key: &HostKey) -> bool {
        let mut hosts = self.hosts();
        let Some(entry) = hosts.get_mut(key) else { return false };
        entry.running = false;
        let set_aside = std::mem::take(&mut entry.set_aside);
        let mut changed = std::mem::take(&mut entry.overflowed);
        for version in &set_aside {
            changed |= !entry.arrived(version);
        }
        if entry.is_empty() {
            hosts.remove(key);
        }
        changed
    }

    /// The host is gone.
    pub(super) fn forget(&self, key: &HostKey) {
        self.hosts().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;

    fn version(rv: &str) -> BareMetalHost {
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        host.metadata.namespace = Some("ns".into());
        host.metadata.resource_version = Some(rv.into());
        host
    }

    fn key() -> HostKey {
        HostKey::new("ns", "h")
    }

    #[test]
    fn a_watch_event_of_our_own_write_is_recognised_once() {
        let own = OwnWrites::default();
        own.wrote(&version("10"));
        own.wrote(&version("11"));
        assert!(!own.claims(&version("9")), "someone else's version");
        assert!(own.claims(&version("10")), "the first of two writes of one reconcile");
        assert!(own.claims(&version("11")));
        assert!(!own.claims(&version("11")), "recognised once");
        for rv in 20..30 {
            own.wrote(&version(&rv.to_string()));
        }
        assert!(!own.claims(&version("20")), "only the last few are kept");
        assert!(own.claims(&version("29")));
        own.forget(&key());
        assert!(!own.claims(&version("28")), "a forgotten host keeps nothing");
    }

    #[test]
    fn an_event_of_our_write_that_comes_before_its_response_wakes_nothing() {
        let own = OwnWrites::default();
        own.start(&key());
        assert!(own.claims(&version("10")), "set aside while the reconcile runs");
        own.wrote(&version("10"));
        assert!(!own.finish(&key()), "it was ours");
        assert!(own.hosts().is_empty(), "nothing is kept for a host at rest");
    }

    #[test]
    fn another_writers_change_during_a_reconcile_wakes_the_host_when_it_ends() {
        let own = OwnWrites::default();
        own.start(&key());
        assert!(own.claims(&version("10")));
        own.wrote(&version("11"));
        assert!(own.finish(&key()), "10 was not ours");
        assert!(own.claims(&version("11")), "our own event still comes later");
        assert!(!own.claims(&version("12")), "at rest, a change triggers at once");
    }

    #[test]
    fn many_writes_whose_events_came_first_wake_nothing() {
        let own = OwnWrites::default();
        own.start(&key());
        for rv in 0..SET_ASIDE {
            assert!(own.claims(&version(&rv.to_string())));
            own.wrote(&version(&rv.to_string()));
        }
        assert!(!own.finish(&key()), "each was known as ours when its response came");
        assert!(own.hosts().is_empty());
    }

    #[test]
    fn more_events_during_a_reconcile_than_are_set_aside_count_as_a_change() {
        let own = OwnWrites::default();
        own.start(&key());
        for rv in 0..=SET_ASIDE {
            assert!(own.claims(&version(&rv.to_string())));
        }
        // Every one was ours, but the last could not be kept to be told so.
        for rv in 0..=SET_ASIDE {
            own.wrote(&version(&rv.to_string()));
        }
        assert!(own.finish(&key()), "one was not kept: it may not have been ours");
    }
}
