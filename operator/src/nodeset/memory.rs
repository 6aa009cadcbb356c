//! What the NodeSet controller remembers between reconciles, shared by the controllers of every
//! scope: its own writes until the caches show them, the claims it lost, and the failure
//! messages of failed Jobs (read from their pods once; a failed Job never changes).

use crate::kit::fresh::{Recent, version};
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings};
use crds::nodeset::NodeSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// The controller's memory.
pub(super) struct Memory {
    pub nodesets: Recent<NodeSet>,
    pub hosts: Recent<BareMetalHost>,
    pub jobs: Recent<Job>,
    /// Settings objects written with a NodeSet's BIOS settings (`firmware`): a reconcile right
    /// after must not hand them over again to another host's slot.
    pub settings: Recent<HostFirmwareSettings>,
    /// Components objects written with a NodeSet's firmware updates, likewise.
    pub components: Recent<HostFirmwareComponents>,
    /// The record of what ran (`record`): a reconcile right after one that recorded a
    /// completion must not read the older copy and run the service again.
    pub records: Recent<ConfigMap>,
    /// BareMetalHosts (namespace, name) a claim lost, with the resource version it lost at.
    lost: Mutex<HashMap<(String, String), u64>>,
    /// Failure messages of failed Jobs, by uid.
    failures: Mutex<HashMap<String, String>>,
}

impl Default for Memory {
    fn default() -> Self {
        Self {
            nodesets: Recent::default(),
            hosts: Recent::default(),
            jobs: Recent::default(),
            // Kept whole, as their caches keep them: who applied what is read from them.
            settings: Recent::with_owners(),
            components: Recent::with_owners(),
            records: Recent::default(),
            lost: Mutex::default(),
            failures: Mutex::default(),
        }
    }
}

impl Memory {
    /// Remembers that a claim of `host` lost a race.
    pub(super) fn lost(&self, host: &BareMetalHost) {
        let key = (host.namespace().unwrap_or_default(), host.name_any());
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).insert(key, version(host));
    }

    /// The hosts of `hosts` whose claim was lost and that the cache still shows as they were
    /// then: the winner's write has not arrived yet, so they must not be chosen again.
    pub(super) fn still_lost(&self, hosts: &[std::sync::Arc<BareMetalHost>]) -> BTreeSet<String> {
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = BTreeSet::new();
        for host in hosts {
            let key = (host.namespace().unwrap_or_default(), host.name_any());
            if let Some(at) = lost.get(&key).copied() {
                if version(host.as_ref()) <= at {
                    out.insert(key.1);
                } else {
                    lost.remove(&key);
                }
            }
        }
        out
    }

    /// The remembered failure message of a Job.
    pub(super) fn failure(&self, uid: &str) -> Option<String> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).get(uid).cloned()
    }

    pub(super) fn remember_failure(&self, uid: &str, message: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: a few thousand failed Jobs' worth; older entries are simply read again.
        if failures.len() > 4096 {
            failures.clear();
        }
        failures.insert(uid.to_string(), message.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn host(rv: &str) -> Arc<BareMetalHost> {
        let mut h = BareMetalHost::new("server-0", Default::default());
        h.metadata.namespace = Some("metal3".into());
        h.metadata.resource_version = Some(rv.into());
        Arc::new(h)
    }

    #[test]
    fn a_lost_host_is_avoided_until_the_cache_shows_the_winner() {
        let memory = Memory::default();
        memory.lost(&host("5"));
        assert_eq!(memory.still_lost(&[host("5")]), BTreeSet::from(["server-0".to_string()]));
        assert!(memory.still_lost(&[host("6")]).is_empty(), "the cache caught up: the plan sees who won");
        assert!(memory.still_lost(&[host("5")]).is_empty(), "and forgets");
    }
}
