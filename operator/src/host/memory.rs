//! What the controller remembers between reconciles of a host: the host as its last write
//! returned it (the write cache), and the last power change it asked Ironic for.

use crate::host::wake::HostKey;
use crds::baremetalhost::BareMetalHost;
use ironic_client::PowerTarget;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Shared by the reconciles of every host.
#[derive(Default)]
pub struct Memory {
    /// The host as our last write returned it: newer than the informer's
    /// cache until the watch event arrives.
    written: Mutex<HashMap<HostKey, Arc<BareMetalHost>>>,
    /// The last power change asked for.
    power: Mutex<HashMap<HostKey, PowerTarget>>,
}

fn resource_version(host: &BareMetalHost) -> u64 {
    host.resource_version().and_then(|rv| rv.parse().ok()).unwrap_or(0)
}

impl Memory {
    /// The newer of the cached host and the one we last wrote.
    pub fn freshest(&self, key: &HostKey, cached: Arc<BareMetalHost>) -> Arc<BareMetalHost> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        match written.get(key) {
            Some(ours) if resource_version(ours) > resource_version(&cached) => ours.clone(),
            Some(_) => {
                written.remove(key);
                cached
            }
            None => cached,
        }
    }

    /// Keeps `host` as the freshest copy until the cache catches up, and returns it.
    pub fn remember(&self, key: &HostKey, host: BareMetalHost) -> Arc<BareMetalHost> {
        let host = Arc::new(host);
        self.written.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), host.clone());
        host
    }

    pub fn power_attempt(&self, key: &HostKey) -> Option<PowerTarget> {
        self.power.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    pub fn set_power_attempt(&self, key: &HostKey, target: Option<PowerTarget>) {
        let mut power = self.power.lock().unwrap_or_else(|e| e.into_inner());
        match target {
            Some(t) => power.insert(key.clone(), t),
            None => power.remove(key),
        };
    }

    pub fn forget(&self, key: &HostKey) {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        self.power.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;

    #[test]
    fn the_freshest_copy_of_a_host_wins() {
        let memory = Memory::default();
        let key = HostKey::new("ns", "h");
        let versioned = |rv: &str| {
            let mut h = BareMetalHost::new("h", BareMetalHostSpec::default());
            h.metadata.resource_version = Some(rv.into());
            Arc::new(h)
        };
        memory.remember(&key, (*versioned("10")).clone());
        assert_eq!(memory.freshest(&key, versioned("9")).resource_version().as_deref(), Some("10"));
        assert_eq!(memory.freshest(&key, versioned("11")).resource_version().as_deref(), Some("11"));
        // Once the cache caught up, the remembered copy is dropped.
        assert_eq!(memory.freshest(&key, versioned("9")).resource_version().as_deref(), Some("9"));
    }
}
