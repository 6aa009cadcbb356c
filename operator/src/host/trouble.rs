//! Ironic calls that keep failing in a way that passes by itself (a 500, a 409 lock, a
//! timeout, a reset: `ironic_client::Error::is_transient`), per host.
//!
//! Such a failure is not the host's: it is not recorded as its error (no `errorCount`, no
//! error backoff). But it must not be retried silently at a fixed interval either. Each host
//! keeps its own record: the act that failed, how often in a row, and when it may be tried
//! again (the kit's exponential backoff). From the [`SURFACE_AFTER`]th failure on, the host's
//! Degraded condition says what fails; the record goes as soon as the act succeeds or the
//! plan moves on to something else (the node changed, the user changed the host).
//!
//! The outcome of a failed call may have happened (a timeout or a reset after the request
//! went out): the caller marks the host as waiting for a fresh poll, so that the next
//! decision is made from what Ironic shows after the call, never from the snapshot before it.

use crate::host::machine::Act;
use crate::host::wake::HostKey;
use crate::kit::backoff::{Backoff, after};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Consecutive failures of the same act before the host's conditions show them.
pub(super) const SURFACE_AFTER: u32 = 3;
/// Degraded's reason while an Ironic call keeps failing.
pub(super) const IRONIC_CALL_FAILING: &str = "IronicCallFailing";

struct Trouble {
    act: Act,
    message: String,
    attempts: u32,
    retry_at: Instant,
}

/// The failing calls of every host.
pub(super) struct Troubles {
    backoff: Backoff,
    records: Mutex<HashMap<HostKey, Trouble>>,
}

impl Troubles {
    /// Retries start after `base` and double up to `max`.
    pub(super) fn new(base: Duration, max: Duration) -> Self {
        Self { backoff: Backoff::new(base, max), records: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HostKey, Trouble>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `act` failed again with `message` at `now`; returns how long to wait.
    pub(super) fn failed(&self, key: &HostKey, act: Act, message: String, now: Instant) -> Duration {
        let mut records = self.lock();
        if records.get(key).is_some_and(|t| t.act != act) {
            records.remove(key);
            self.backoff.succeeded(&key.to_string());
        }
        let delay = self.backoff.failed(&key.to_string());
        let attempts = self.backoff.failures(&key.to_string());
        records.insert(key.clone(), Trouble { act, message, attempts, retry_at: after(now, delay) });
        delay
    }

    /// How long `act` must still wait before it is tried again; `None` when it may go now.
    pub(super) fn wait(&self, key: &HostKey, act: Act, now: Instant) -> Option<Duration> {
        let records = self.lock();
        let trouble = records.get(key).filter(|t| t.act == act)?;
        (trouble.retry_at > now).then(|| trouble.retry_at.saturating_duration_since(now))
    }

    /// What the host's conditions should say, once the same act failed often enough.
    pub(super) fn problem(&self, key: &HostKey) -> Option<String> {
        let records = self.lock();
        let t = records.get(key).filter(|t| t.attempts >= SURFACE_AFTER)?;
        Some(format!("{} attempts in a row to {:?} failed; retrying with backoff: {}", t.attempts, t.act, t.message))
    }

    /// Whether the host's last act failed this way and is being retried.
    pub(super) fn failing(&self, key: &HostKey) -> Option<Act> {
        self.lock().get(key).map(|t| t.act)
    }

    /// The act succeeded, or the plan moved on: the next failure starts afresh.
    pub(super) fn clear(&self, key: &HostKey) {
        if self.lock().remove(key).is_some() {
            self.backoff.succeeded(&key.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironic_client::PowerTarget;

    #[test]
    fn a_failing_act_backs_off_further_each_time_and_is_surfaced_after_a_few() {
        let troubles = Troubles::new(Duration::from_secs(2), Duration::from_secs(60));
        let key = HostKey::new("ns", "h");
        let now = Instant::now();
        let mut delays = Vec::new();
        for attempt in 1..=SURFACE_AFTER {
            assert_eq!(troubles.problem(&key), None, "attempt {attempt} is not surfaced yet");
            delays.push(troubles.failed(&key, Act::Deploy, "HTTP 500".into(), now));
        }
        assert!(delays.windows(2).all(|w| w[1] > w[0]), "{delays:?}");
        let problem = troubles.problem(&key).expect("surfaced");
        assert!(
            problem.contains("3 attempts") && problem.contains("Deploy") && problem.contains("HTTP 500"),
            "{problem}"
        );
        let wait = troubles.wait(&key, Act::Deploy, now).expect("waits");
        assert!(wait >= Duration::from_secs(8), "{wait:?}");
        assert_eq!(troubles.wait(&key, Act::Deploy, now + Duration::from_secs(3600)), None);
        assert_eq!(troubles.wait(&key, Act::Provide, now), None, "another act is not held back");
        assert_eq!(troubles.failing(&key), Some(Act::Deploy));
        troubles.clear(&key);
        assert_eq!(troubles.problem(&key), None);
        let fresh = troubles.failed(&key, Act::Deploy, "again".into(), now);
        assert!(fresh < Duration::from_secs(3), "the count started over: {fresh:?}");
    }

    #[test]
    fn another_act_failing_starts_its_own_count() {
        let troubles = Troubles::new(Duration::from_secs(2), Duration::from_secs(60));
        let key = HostKey::new("ns", "h");
        let now = Instant::now();
        for _ in 0..SURFACE_AFTER {
            troubles.failed(&key, Act::Deploy, "500".into(), now);
        }
        troubles.failed(&key, Act::Power(PowerTarget::On), "timeout".into(), now);
        assert_eq!(troubles.problem(&key), None);
        assert_eq!(troubles.failing(&key), Some(Act::Power(PowerTarget::On)));
    }
}
