//! Retry delays, for every controller: exponential with jitter (the host controller spaces
//! a host's recorded errors this way, as baremetal-operator does: 1-2 minutes after the first,
//! doubling up to about 4-8.5 hours), and the runner's per-object backoff of failed reconciles.
//!
//! The jitter of [`exponential`] is derived from a seed (an object's UID) and the error count
//! rather than drawn at random, so every reconcile of the same object computes the same retry
//! time while different objects still spread out. All arithmetic saturates: counts, bases and
//! maxima come from status and flags.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The delay before retrying after the `count`th consecutive error: `base`
/// doubled per earlier error, at most `max`, then stretched by a jitter
/// factor in [1, 2).
pub(crate) fn exponential(count: i32, base: Duration, max: Duration, seed: &str) -> Duration {
    let exponent = u32::try_from(count.saturating_sub(1).clamp(0, 30)).unwrap_or(0);
    let scaled = base.saturating_mul(2u32.saturating_pow(exponent)).min(max.max(base));
    stretch(scaled, 1.0 + jitter_fraction(seed, count))
}

/// `d` times `factor` (at least 1), saturating at `Duration::MAX` instead of panicking.
fn stretch(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor.max(1.0)).unwrap_or(Duration::MAX)
}

/// A number in [0, 1) fixed by `seed` and `count`.
fn jitter_fraction(seed: &str, count: i32) -> f64 {
    let digest = Sha256::new().chain_update(seed.as_bytes()).chain_update(count.to_le_bytes()).finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    // 53 bits fill an f64 mantissa exactly.
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// `interval` stretched by up to a tenth, at random, so that periodic
/// requeues of many hosts do not line up.
pub(crate) fn spread(interval: Duration) -> Duration {
    stretch(interval, 1.0 + rand::random::<f64>() / 10.0)
}

/// `d` after `from`, or as far as the clock goes: durations come from flags and status, and
/// `Instant + Duration` panics past the clock's end.
pub(crate) fn after(from: tokio::time::Instant, d: Duration) -> tokio::time::Instant {
    // About thirty years is as good as never for a deadline, and fits every clock.
    const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
    from.checked_add(d).or_else(|| from.checked_add(FAR)).unwrap_or(from)
}

/// Sleeps until `at`, or for ever without one: a deadline in a `select!` that may have none.
pub(crate) async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Consecutive reconcile failures per object, and the delay each earns: `base`, doubled per
/// further failure up to `max`, spread by up to a tenth. A success forgets the object.
pub(crate) struct Backoff {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    pub(crate) fn new(base: Duration, max: Duration) -> Self {
        Self { base, max: max.max(base), failures: Mutex::default() }
    }

    /// Counts a failure of `key` and returns how long to wait before retrying it.
    pub(crate) fn failed(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        let exponent = count.saturating_sub(1).min(30);
        spread(self.base.saturating_mul(2u32.saturating_pow(exponent)).min(self.max))
    }

    /// `key` reconciled: its next failure starts from `base` again.
    pub(crate) fn succeeded(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(key);
    }

    /// Consecutive failures of `key` so far.
    pub(crate) fn failures(&self, key: &str) -> u32 {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_after_any_duration_does_not_panic() {
        let now = tokio::time::Instant::now();
        assert_eq!(after(now, Duration::from_secs(5)), now + Duration::from_secs(5));
        assert!(after(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn the_first_retry_comes_after_one_to_two_base_delays() {
        for seed in ["a", "b", "c", "d"] {
            let d = exponential(1, MINUTE, 256 * MINUTE, seed);
            assert!(d >= MINUTE && d < 2 * MINUTE, "{d:?}");
        }
    }

    #[test]
    fn delays_double_and_stop_growing_at_the_maximum() {
        for count in 1..=20 {
            let d = exponential(count, MINUTE, 256 * MINUTE, "host");
            let expected = MINUTE * 2u32.pow((count - 1).min(8) as u32);
            assert!(d >= expected && d < 2 * expected, "count {count}: {d:?} vs {expected:?}");
        }
        assert!(exponential(i32::MAX, MINUTE, 256 * MINUTE, "host") < 512 * MINUTE);
        // A count of zero (no error) behaves like the first error.
        assert!(exponential(0, MINUTE, 256 * MINUTE, "host") < 2 * MINUTE);
    }

    #[test]
    fn the_jitter_is_stable_per_host_and_differs_between_hosts() {
        let a1 = exponential(3, MINUTE, 256 * MINUTE, "uid-a");
        let a2 = exponential(3, MINUTE, 256 * MINUTE, "uid-a");
        assert_eq!(a1, a2);
        let distinct: std::collections::BTreeSet<_> =
            (0..20).map(|i| exponential(3, MINUTE, 256 * MINUTE, &format!("uid-{i}"))).collect();
        assert!(distinct.len() > 15, "jitter spreads hosts out: {distinct:?}");
    }

    #[test]
    fn huge_inputs_saturate_instead_of_panicking() {
        assert!(exponential(i32::MAX, Duration::MAX, Duration::MAX, "host") >= Duration::from_secs(u64::MAX / 2));
        assert_eq!(spread(Duration::MAX), Duration::MAX);
        assert!(exponential(i32::MIN, Duration::ZERO, Duration::ZERO, "host") == Duration::ZERO);
    }

    #[test]
    fn reconcile_failures_back_off_per_object_and_reset_on_success() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(8));
        let delays: Vec<_> = (0..6).map(|_| backoff.failed("a")).collect();
        for (delay, expected) in delays.iter().zip([1, 2, 4, 8, 8, 8]) {
            let expected = Duration::from_secs(expected);
            assert!(*delay >= expected && *delay <= expected.mul_f64(1.1), "{delays:?}");
        }
        assert!(backoff.failed("b") < Duration::from_secs(2), "objects back off independently");
        backoff.succeeded("a");
        assert_eq!(backoff.failures("a"), 0);
        assert!(backoff.failed("a") < Duration::from_secs(2));
    }

    #[test]
    fn spread_adds_at_most_a_tenth() {
        for _ in 0..100 {
            let d = spread(Duration::from_secs(100));
            assert!(d >= Duration::from_secs(100) && d <= Duration::from_secs(110), "{d:?}");
        }
    }
}
