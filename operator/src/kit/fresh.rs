//! The newest copy of an object a controller knows: its reflector store's, or the one its own
//! last write returned.
//!
//! A watch delivers a write's result a moment after the write. A reconcile that runs in
//! between (woken by something else) would read the older cached copy and act on it: claim a
//! host again, miss a Job it just created, forget a completion it just recorded. [`Recent`]
//! keeps what writes returned until the store has caught up, and hands out the newer copy.
//! Resource versions are compared as numbers, which etcd-backed apiservers use; an object whose
//! version does not parse counts as oldest.

use kube::{Resource, ResourceExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Key = (String, String);

fn key<K: Resource>(object: &K) -> Key {
    (object.namespace().unwrap_or_default(), object.name_any())
}

/// An object's resource version as a number; 0 when absent or opaque.
pub(crate) fn version<K: Resource>(object: &K) -> u64 {
    object.meta().resource_version.as_deref().and_then(|rv| rv.parse().ok()).unwrap_or(0)
}

/// Objects as the controller's own writes returned them, until the store shows them.
pub(crate) struct Recent<K> {
    written: Mutex<HashMap<Key, Arc<K>>>,
    /// Whether copies keep the operator's own apply entry of their managed fields (what the
    /// store of this kind keeps).
    owners: bool,
}

impl<K> Default for Recent<K> {
    fn default() -> Self {
        Self { written: Mutex::default(), owners: false }
    }
}

impl<K> Recent<K> {
    /// Copies kept with the operator's own apply entry of their managed fields, for a kind
    /// whose cache keeps it (`cache::reflected_with_owners`).
    pub(crate) fn with_owners() -> Self {
        Self { written: Mutex::default(), owners: true }
    }
}

impl<K: Resource + Clone> Recent<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<K>>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers what a write returned, as lean as the caches keep it (`cache::lean`, unless
    /// [`Recent::with_owners`]): a copy is kept until the watch shows the write, and for a host
    /// nothing else reconciles that may be long, so its managed fields (most of what an
    /// apiserver returns of a host) would be kept with it for nothing.
    pub(crate) fn remember(&self, mut object: K) -> Arc<K> {
        match self.owners {
            true => crate::kit::cache::own_applies(&mut object),
            false => crate::kit::cache::lean(&mut object),
        }
        let object = Arc::new(object);
        self.lock().insert(key(object.as_ref()), object.clone());
        object
    }

    /// The store has taken `cached` in (a watch event): a remembered copy no newer is dropped
    /// now, rather than at the next reconcile of the object, which may never come.
    pub(crate) fn caught_up(&self, cached: &K) {
        let mut written = self.lock();
        let key = key(cached);
        if written.get(&key).is_some_and(|ours| version(ours.as_ref()) <= version(cached)) {
            written.remove(&key);
        }
    }

    /// Forgets an object (it was deleted).
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        self.lock().remove(&(namespace.to_string(), name.to_string()));
    }

    /// The newer of `cached` and what a write returned; a remembered copy that the store has
    /// caught up with is dropped.
    pub(crate) fn freshest(&self, cached: Arc<K>) -> Arc<K> {
        let mut written = self.lock();
        let key = key(cached.as_ref());
        match written.get(&key) {
            Some(ours) if version(ours.as_ref()) > version(cached.as_ref()) => ours.clone(),
            Some(_) => {
                written.remove(&key);
                cached
            }
            None => cached,
        }
    }

    /// The freshest copy of one object: the store's (`cached`) or what a write returned, also
    /// while the store does not show it yet.
    pub(crate) fn latest(&self, namespace: &str, name: &str, cached: Option<Arc<K>>) -> Option<Arc<K>> {
        match cached {
            Some(cached) => Some(self.freshest(cached)),
            None => self.lock().get(&(namespace.to_string(), name.to_string())).cloned(),
        }
    }

    /// The store's objects with each replaced by its freshest copy, plus the remembered objects
    /// of `namespace` the store does not show yet (just created), for which `wanted` holds.
    pub(crate) fn overlay(&self, cached: Vec<Arc<K>>, namespace: &str, wanted: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        let mut seen: std::collections::HashSet<Key> = std::collections::HashSet::new();
        let mut out: Vec<Arc<K>> = cached
            .into_iter()
            .map(|object| {
                seen.insert(key(object.as_ref()));
                self.freshest(object)
            })
            .collect();
        let written = self.lock();
        let mut extra: Vec<Arc<K>> = written
            .iter()
            .filter(|(k, object)| k.0 == namespace && !seen.contains(*k) && wanted(object))
            .map(|(_, object)| object.clone())
            .collect();
        extra.sort_by_key(|o| o.name_any());
        out.extend(extra);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kube::api::ObjectMeta;

    fn map(name: &str, rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn a_remembered_copy_is_lean_and_dropped_once_a_watch_event_shows_the_write() {
        let recent = Recent::default();
        let mut written = (*map("a", "5")).clone();
        written.metadata.managed_fields = Some(vec![Default::default()]);
        let kept = recent.remember(written);
        assert_eq!(kept.metadata.managed_fields, None, "kept as lean as a cache keeps it");
        let mut owned = (*map("b", "1")).clone();
        let apply = ManagedFieldsEntry {
            manager: Some(crate::FIELD_MANAGER.into()),
            operation: Some("Apply".into()),
            ..Default::default()
        };
        owned.metadata.managed_fields = Some(vec![apply.clone(), Default::default()]);
        let kept = Recent::with_owners().remember(owned);
        assert_eq!(
            kept.metadata.managed_fields,
            Some(vec![apply]),
            "the own apply entry, for a kind whose cache keeps it"
        );
        recent.caught_up(&map("a", "4"));
        assert_eq!(recent.latest("ns", "a", None).map(|m| version(m.as_ref())), Some(5), "an older event keeps it");
        recent.caught_up(&map("a", "5"));
        assert!(recent.latest("ns", "a", None).is_none(), "the event of the write drops it");
    }

    #[test]
    fn the_newer_copy_wins_until_the_store_catches_up() {
        let recent = Recent::default();
        recent.remember((*map("a", "10")).clone());
        assert_eq!(recent.freshest(map("a", "9")).resource_version().as_deref(), Some("10"));
        assert_eq!(recent.freshest(map("a", "11")).resource_version().as_deref(), Some("11"));
        // Caught up: the remembered copy is gone, even an older cache is believed again.
        assert_eq!(recent.freshest(map("a", "9")).resource_version().as_deref(), Some("9"));
    }

    #[test]
    fn objects_created_but_not_yet_cached_are_added_to_the_store_view() {
        let recent = Recent::default();
        recent.remember((*map("new", "12")).clone());
        recent.remember((*map("other", "13")).clone());
        let view = recent.overlay(vec![map("old", "5")], "ns", |m| m.name_any() != "other");
        let names: Vec<_> = view.iter().map(|m| m.name_any()).collect();
        assert_eq!(names, ["old", "new"]);
        assert!(recent.overlay(vec![], "elsewhere", |_| true).is_empty(), "only the namespace asked for");
        recent.forget("ns", "new");
        assert_eq!(recent.overlay(vec![], "ns", |m| m.name_any() == "new").len(), 0);
    }
}
