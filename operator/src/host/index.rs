//! An index of one scope's hosts, kept from the very watch events that fill the controller's
//! cache: which hosts are busy (the provisioning limit counts them) and which hosts name each
//! Secret (a change to it wakes them). Both answers cost what they return, never a scan of
//! every cached host: with thousands of hosts a Secret event or a slot taken would otherwise
//! cost a pass over all of them (design/performance.md, "Per-reconcile costs").
//!
//! Pure bookkeeping: [`HostIndex::apply`] takes the watcher's events as they come, before the
//! reconciles they trigger run, so the index is never older than the cache.

use crate::host::machine::is_busy;
use crate::host::secrets::secrets_named;
use crate::host::wake::HostKey;
use crds::baremetalhost::BareMetalHost;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;
use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

/// What the index keeps of a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Entry {
    busy: bool,
    /// The Secrets it names, in its namespace.
    secrets: Vec<String>,
}

impl Entry {
    fn of(host: &BareMetalHost) -> Self {
        let busy = host.status.as_ref().is_some_and(|s| is_busy(s.provisioning.state));
        Self { busy, secrets: secrets_named(host) }
    }
}

#[derive(Default)]
struct Inner {
    hosts: HashMap<HostKey, Entry>,
    busy: HashSet<HostKey>,
    /// (namespace, Secret name) → the hosts naming it.
    by_secret: HashMap<(String, String), HashSet<HostKey>>,
    /// The hosts a relist has shown so far (`Init` … `InitDone`): the others are gone.
    relisted: Option<HashSet<HostKey>>,
}

impl Inner {
    fn upsert(&mut self, key: HostKey, entry: Entry) {
        if self.hosts.get(&key) == Some(&entry) {
            return;
        }
        self.remove(&key);
        if entry.busy {
            self.busy.insert(key.clone());
        }
        for secret in &entry.secrets {
            self.by_secret.entry((key.namespace.clone(), secret.clone())).or_default().insert(key.clone());
        }
        self.hosts.insert(key, entry);
    }

    fn remove(&mut self, key: &HostKey) {
        let Some(entry) = self.hosts.remove(key) else { return };
        self.busy.remove(key);
        for secret in entry.secrets {
            let slot = (key.namespace.clone(), secret);
            if let Some(hosts) = self.by_secret.get_mut(&slot) {
                hosts.remove(key);
                if hosts.is_empty() {
                    self.by_secret.remove(&slot);
                }
            }
        }
    }
}

/// The index of one scope (a namespace, or the whole cluster).
#[derive(Default)]
pub(super) struct HostIndex {
    inner: RwLock<Inner>,
}

impl HostIndex {
    /// Takes one watch event in.
    pub(super) fn apply(&self, event: &Event<BareMetalHost>) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::Apply(host) => inner.upsert(HostKey::of(host), Entry::of(host)),
            Event::Delete(host) => inner.remove(&HostKey::of(host)),
            Event::Init => inner.relisted = Some(HashSet::new()),
            Event::InitApply(host) => {
                let key = HostKey::of(host);
                if let Some(seen) = inner.relisted.as_mut() {
                    seen.insert(key.clone());
                }
                inner.upsert(key, Entry::of(host));
            }
            Event::InitDone => {
                let seen = inner.relisted.take().unwrap_or_default();
                let gone: Vec<HostKey> = inner.hosts.keys().filter(|k| !seen.contains(*k)).cloned().collect();
                for key in gone {
                    inner.remove(&key);
                }
            }
        }
    }

    /// Whether the cache shows `key` busy.
    #[cfg(test)]
    pub(super) fn is_busy(&self, key: &HostKey) -> bool {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).busy.contains(key)
    }

    /// The hosts the cache shows busy.
    pub(super) fn busy(&self) -> Vec<HostKey> {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).busy.iter().cloned().collect()
    }

    /// The hosts that name the Secret `name` of `namespace`.
    pub(super) fn using(&self, namespace: &str, name: &str) -> Vec<ObjectRef<BareMetalHost>> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let slot = (namespace.to_string(), name.to_string());
        inner.by_secret.get(&slot).map(|hosts| hosts.iter().map(HostKey::object_ref).collect()).unwrap_or_default()
    }

    /// How many hosts it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).hosts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{BareMetalHostSpec, BareMetalHostStatus, BmcDetails, ProvisioningState};

    fn host(name: &str, state: ProvisioningState, credentials: &str) -> BareMetalHost {
        let spec = BareMetalHostSpec {
            bmc: Some(BmcDetails {
                address: "fake://x".into(),
                credentials_name: credentials.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut host = BareMetalHost::new(name, spec);
        host.metadata.namespace = Some("ns".into());
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = state;
        host.status = Some(status);
        host
    }

    fn names(refs: Vec<ObjectRef<BareMetalHost>>) -> Vec<String> {
        let mut names: Vec<String> = refs.into_iter().map(|r| r.name).collect();
        names.sort();
        names
    }

    #[test]
    fn a_host_is_found_by_the_secrets_it_names_and_busy_while_its_state_is() {
        use ProvisioningState as S;
        let index = HostIndex::default();
        index.apply(&Event::Apply(host("a", S::Provisioning, "bmc-a")));
        index.apply(&Event::Apply(host("b", S::Available, "shared")));
        index.apply(&Event::Apply(host("c", S::Available, "shared")));
        assert_eq!(names(index.using("ns", "shared")), ["b", "c"]);
        assert!(index.using("other", "shared").is_empty(), "a Secret of another namespace names none of them");
        assert!(index.is_busy(&HostKey::new("ns", "a")) && !index.is_busy(&HostKey::new("ns", "b")));
        index.apply(&Event::Apply(host("a", S::Provisioned, "shared")));
        assert!(index.busy().is_empty());
        assert!(index.using("ns", "bmc-a").is_empty(), "the old Secret no longer wakes it");
        assert_eq!(names(index.using("ns", "shared")), ["a", "b", "c"]);
        index.apply(&Event::Delete(host("b", S::Available, "shared")));
        assert_eq!(names(index.using("ns", "shared")), ["a", "c"]);
    }

    #[test]
    fn a_relist_drops_the_hosts_it_no_longer_shows() {
        use ProvisioningState as S;
        let index = HostIndex::default();
        index.apply(&Event::Apply(host("a", S::Inspecting, "s")));
        index.apply(&Event::Apply(host("b", S::Available, "s")));
        index.apply(&Event::Init);
        index.apply(&Event::InitApply(host("b", S::Available, "s")));
        assert_eq!(index.len(), 2, "nothing dropped before the relist is done");
        index.apply(&Event::InitDone);
        assert_eq!(index.len(), 1);
        assert!(index.busy().is_empty(), "a, busy before, is gone");
        assert_eq!(names(index.using("ns", "s")), ["b"]);
    }
}
