//! What the controller remembers between reconciles of a host: the host as its last write
//! returned it (the write cache), the last power change it asked Ironic for, the data image
//! each host settled since it was last seen on, and the way to wake our image builder.

use crate::host::own_writes::OwnWrites;
use crate::host::wake::HostKey;
use crate::kit::fresh::Recent;
use crds::baremetalhost::BareMetalHost;
use ironic_client::PowerTarget;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Shared by the reconciles of every host.
#[derive(Default)]
pub(super) struct Memory {
    /// The host as our last write returned it: newer than the informer's cache until the watch
    /// event arrives. The kit's write cache fits as it is: a host is keyed by its namespace and
    /// name, which are its [`HostKey`] (`HostKey::of`), and every copy remembered here is one
    /// the apiserver returned for that very host; the newer resourceVersion wins, and a copy
    /// the cache caught up with is dropped, with nothing expiring by time.
    written: Recent<BareMetalHost>,
    /// Which watch events are our own writes: a change of our own making wakes no reconcile
    /// (the writer went on from it).
    pub(super) own: OwnWrites,
    /// The last power change asked for.
    power: Mutex<HashMap<HostKey, PowerTarget>>,
    /// The `DataImage` wants each host's step settled since the host was last seen on.
    pub(super) data_images: crate::host::dataimage::Settled,
    /// Wakes our image builder for a host whose image was built from an older network data
    /// Secret.
    pub(super) preprov_reads: crate::host::firmware::ReadAgain<crds::preprovisioningimage::PreprovisioningImage>,
}

impl Memory {
    /// The newer of the cached host and the one we last wrote.
    pub(super) fn freshest(&self, cached: Arc<BareMetalHost>) -> Arc<BareMetalHost> {
        self.written.freshest(cached)
    }

    /// Keeps `host`, as a write returned it, as the freshest copy until the cache catches up,
    /// and returns it.
    pub(super) fn remember(&self, host: BareMetalHost) -> Arc<BareMetalHost> {
        self.own.wrote(&host);
        self.written.remember(host)
    }

    /// The cache took `host` in from a watch event: the copy a write returned is dropped if
    /// it is no newer.
    pub(super) fn cached(&self, host: &BareMetalHost) {
        self.written.caught_up(host);
    }

    pub(super) fn power_attempt(&self, key: &HostKey) -> Option<PowerTarget> {
        self.power.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    pub(super) fn set_power_attempt(&self, key: &HostKey, target: Option<PowerTarget>) {
        let mut power = self.power.lock().unwrap_or_else(|e| e.into_inner());
        match target {
            Some(t) => power.insert(key.clone(), t),
            None => power.remove(key),
        };
    }

    pub(super) fn forget(&self, key: &HostKey) {
        self.written.forget(&key.namespace, &key.name);
        self.own.forget(key);
        self.power.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        self.data_images.forget(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;
    use kube::ResourceExt;

    #[test]
    fn the_freshest_copy_of_a_host_wins() {
        let memory = Memory::default();
        let key = HostKey::new("ns", "h");
        let versioned = |rv: &str| {
            let mut h = BareMetalHost::new("h", BareMetalHostSpec::default());
            h.metadata.namespace = Some("ns".into());
            h.metadata.resource_version = Some(rv.into());
            Arc::new(h)
        };
        memory.remember((*versioned("10")).clone());
        assert_eq!(memory.freshest(versioned("9")).resource_version().as_deref(), Some("10"));
        assert_eq!(memory.freshest(versioned("11")).resource_version().as_deref(), Some("11"));
        // Once the cache caught up, the remembered copy is dropped.
        assert_eq!(memory.freshest(versioned("9")).resource_version().as_deref(), Some("9"));
        // A host that is gone is forgotten with its power change.
        memory.remember((*versioned("12")).clone());
        memory.set_power_attempt(&key, Some(PowerTarget::On));
        memory.forget(&key);
        assert_eq!(memory.freshest(versioned("9")).resource_version().as_deref(), Some("9"));
        assert_eq!(memory.power_attempt(&key), None);
    }
}
