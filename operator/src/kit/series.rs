//! Which Events a publisher made lately, so that one said again becomes a series (its count
//! and last time patched, once per repeat) rather than a new Event, as kube-runtime's
//! `Recorder` did.
//!
//! That recorder kept each Event it made whole (regarding object, note, metadata) for six
//! minutes and looked through all of them at every publish. With a thousand hosts provisioning
//! that was 11.7 MiB of the operator's 48.9 MiB of heap at its peak (design/performance.md),
//! and a pass over every kept Event at every publish. This keeps, per Event, a 64-bit key, its
//! name and namespace, its count and when it was last said, and forgets old ones at most once
//! a minute.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an Event may be repeated as a series: kube-runtime's and client-go's six minutes.
const TTL: Duration = Duration::from_secs(6 * 60);

/// How often old Events are forgotten: a pass over what is kept, so not at every publish.
const SWEEP: Duration = Duration::from_secs(60);

/// The Event last made for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Made {
    namespace: String,
    name: String,
    /// Times said: 1 when created, then its series' count.
    count: i32,
    said: Instant,
}

/// What to do with an Event about to be said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing like it lately: create it.
    Create,
    /// Said lately as `namespace/name`: patch its series to `count`.
    Repeat { namespace: String, name: String, count: i32 },
}

/// The Events made lately, by key. Keys are hashed with a per-process random key (std's
/// SipHash), so no object's name or note can be chosen to make two Events share one.
pub(crate) struct Series {
    hasher: RandomState,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    made: HashMap<u64, Made>,
    swept: Option<Instant>,
}

impl Default for Series {
    fn default() -> Self {
        Self { hasher: RandomState::new(), inner: Mutex::default() }
    }
}

impl Series {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of an Event: everything that makes two Events the same one said again.
    pub(crate) fn key(&self, identity: impl Hash) -> u64 {
        self.hasher.hash_one(identity)
    }

    /// Whether the Event of `key` is new or a repeat, at `now`.
    pub(crate) fn next(&self, key: u64, now: Instant) -> Next {
        let mut inner = self.lock();
        inner.sweep(now);
        match inner.made.get(&key) {
            Some(made) if now.saturating_duration_since(made.said) < TTL => Next::Repeat {
                namespace: made.namespace.clone(),
                name: made.name.clone(),
                count: made.count.saturating_add(1),
            },
            _ => Next::Create,
        }
    }

    /// The Event of `key` was created as `namespace/name` at `now`.
    pub(crate) fn created(&self, key: u64, namespace: String, name: String, now: Instant) {
        self.lock().made.insert(key, Made { namespace, name, count: 1, said: now });
    }

    /// The Event of `key` was said again, its series now at `count`.
    pub(crate) fn repeated(&self, key: u64, count: i32, now: Instant) {
        if let Some(made) = self.lock().made.get_mut(&key) {
            made.count = count;
            made.said = now;
        }
    }

    /// The Event of `key` is gone (a repeat found it deleted): the next one is created.
    pub(crate) fn forget(&self, key: u64) {
        self.lock().made.remove(&key);
    }

    /// How many Events are kept (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().made.len()
    }
}

impl Inner {
    fn sweep(&mut self, now: Instant) {
        if self.swept.is_some_and(|at| now.saturating_duration_since(at) < SWEEP) {
            return;
        }
        self.swept = Some(now);
        self.made.retain(|_, made| now.saturating_duration_since(made.said) < TTL);
        // A burst (a rollout's Events) must not keep its room once it has passed.
        if self.made.len() < self.made.capacity() / 4 {
            self.made.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_said_again_within_six_minutes_continues_its_series() {
        let series = Series::default();
        let (key, start) = (series.key(("host", "Provisioned", "done")), Instant::now());
        assert_eq!(series.next(key, start), Next::Create);
        series.created(key, "ns".into(), "host.1".into(), start);
        let again = start + Duration::from_secs(10);
        let next = series.next(key, again);
        assert_eq!(next, Next::Repeat { namespace: "ns".into(), name: "host.1".into(), count: 2 });
        series.repeated(key, 2, again);
        let third = again + TTL - Duration::from_secs(1);
        assert!(matches!(series.next(key, third), Next::Repeat { count: 3, .. }), "the time counts from the last");
    }

    #[test]
    fn an_event_said_again_after_six_minutes_is_a_new_one() {
        let series = Series::default();
        let (key, start) = (series.key("x"), Instant::now());
        series.created(key, "ns".into(), "host.1".into(), start);
        assert_eq!(series.next(key, start + TTL), Next::Create);
    }

    #[test]
    fn different_events_have_different_keys_and_a_forgotten_one_is_created_again() {
        let series = Series::default();
        let (a, b) = (series.key(("host-a", "Failed", "x")), series.key(("host-b", "Failed", "x")));
        assert_ne!(a, b);
        let now = Instant::now();
        series.created(a, "ns".into(), "host-a.1".into(), now);
        assert_eq!(series.next(b, now), Next::Create);
        series.forget(a);
        assert_eq!(series.next(a, now), Next::Create);
    }

    #[test]
    fn old_events_are_forgotten_at_most_once_a_minute() {
        let series = Series::default();
        let start = Instant::now();
        for i in 0..100 {
            series.created(series.key(i), "ns".into(), format!("e.{i}"), start);
        }
        let _ = series.next(series.key("a sweep before they are old"), start + TTL - Duration::from_secs(30));
        assert_eq!(series.len(), 100, "none old yet");
        let _ = series.next(series.key("old, 30 s after that sweep"), start + TTL);
        assert_eq!(series.len(), 100, "old, but no sweep within a minute of the last");
        let _ = series.next(series.key("a minute after"), start + TTL + Duration::from_secs(30));
        assert_eq!(series.len(), 0, "swept");
    }

    #[test]
    fn a_count_at_its_limit_stays_there() {
        let series = Series::default();
        let (key, now) = (series.key("many"), Instant::now());
        series.created(key, "ns".into(), "e.1".into(), now);
        series.repeated(key, i32::MAX, now);
        assert!(matches!(series.next(key, now), Next::Repeat { count: i32::MAX, .. }));
    }
}
