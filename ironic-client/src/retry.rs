//! Retry policy: capped exponential backoff with jitter.
//!
//! What is retried is decided by [`crate::Error::is_retryable`]: NodeLocked,
//! no free conductor workers, other 503s, failed connects and connection
//! resets. Everything else (invalid state, conflicts, auth, 500s, timeouts)
//! goes straight back to the caller, because sending it again cannot help or
//! might do twice what the first attempt already did.
//!
//! Beside it, [`crate::Error::is_transient`] tells a caller which of the errors it gets back
//! are worth sending again later itself (the retryable ones once the client gave up, and
//! timeouts, 500s and conflicts, which only a caller that looks at the node first may repeat),
//! and which say something about the request or the node.

use std::time::Duration;

use rand::Rng;

/// How often and how patiently a retryable failure is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included. 1 disables retries.
    pub max_attempts: u32,
    /// The delay before the first retry (before jitter).
    pub initial_backoff: Duration,
    /// The ceiling every delay is capped at (before jitter).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// Six attempts, 250 ms doubling to at most 4 s: at most about 7.75 s of
    /// waiting, which outlasts the locks Ironic takes for synchronous work
    /// (validation, power sync) without hiding a node that is busy for
    /// minutes (deploying) from the caller for long.
    fn default() -> Self {
        Self { max_attempts: 6, initial_backoff: Duration::from_millis(250), max_backoff: Duration::from_secs(4) }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// Whether another attempt may follow attempt number `attempt` (1-based).
    pub fn allows_another(&self, attempt: u32) -> bool {
        attempt < self.max_attempts
    }

    /// The un-jittered delay after attempt `attempt` (1-based):
    /// `initial * 2^(attempt-1)`, capped at `max_backoff`.
    pub fn base_delay(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(31);
        self.initial_backoff.saturating_mul(1u32 << exp).min(self.max_backoff)
    }

    /// The delay to sleep after attempt `attempt`: uniformly random in
    /// `[base/2, base]`. The jitter spreads out clients that failed together
    /// (they hit the same lock or the same full backlog); keeping the lower
    /// half keeps the delay from collapsing to zero.
    pub fn delay(&self, attempt: u32) -> Duration {
        let base = self.base_delay(attempt);
        let half = base / 2;
        let spread = u64::try_from((base - half).as_micros()).unwrap_or(u64::MAX);
        half + Duration::from_micros(rand::rng().random_range(0..=spread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_delay_doubles_up_to_the_cap() {
        let p = RetryPolicy::default();
        let ms = |a| p.base_delay(a).as_millis();
        assert_eq!([ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(40)], [250, 500, 1000, 2000, 4000, 4000, 4000]);
    }

    #[test]
    fn jittered_delay_stays_within_bounds() {
        let p = RetryPolicy::default();
        for attempt in 1..10 {
            let base = p.base_delay(attempt);
            for _ in 0..200 {
                let d = p.delay(attempt);
                assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d:?} vs {base:?}");
            }
        }
    }

    #[test]
    fn attempts_are_bounded() {
        let p = RetryPolicy::default();
        assert!(p.allows_another(5));
        assert!(!p.allows_another(6));
        assert!(!RetryPolicy::none().allows_another(1));
    }
}
