//! Retry delays after host errors: exponential, with jitter, as
//! baremetal-operator spaces them (1-2 minutes after the first error,
//! doubling up to about 4-8.5 hours).
//!
//! The jitter is derived from the host's UID and the error count rather than
//! drawn at random, so every reconcile of the same host computes the same
//! retry time while different hosts still spread out.

use sha2::{Digest, Sha256};
use std::time::Duration;

/// The delay before retrying after the `count`th consecutive error: `base`
/// doubled per earlier error, at most `max`, then stretched by a jitter
/// factor in [1, 2).
pub fn error_backoff(count: i32, base: Duration, max: Duration, seed: &str) -> Duration {
    let exponent = u32::try_from(count.saturating_sub(1).clamp(0, 30)).unwrap_or(0);
    let scaled = base.saturating_mul(2u32.saturating_pow(exponent)).min(max.max(base));
    scaled.mul_f64(1.0 + jitter_fraction(seed, count))
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
pub fn spread(interval: Duration) -> Duration {
    interval.mul_f64(1.0 + rand::random::<f64>() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn the_first_retry_comes_after_one_to_two_base_delays() {
        for seed in ["a", "b", "c", "d"] {
            let d = error_backoff(1, MINUTE, 256 * MINUTE, seed);
            assert!(d >= MINUTE && d < 2 * MINUTE, "{d:?}");
        }
    }

    #[test]
    fn delays_double_and_stop_growing_at_the_maximum() {
        for count in 1..=20 {
            let d = error_backoff(count, MINUTE, 256 * MINUTE, "host");
            let expected = MINUTE * 2u32.pow((count - 1).min(8) as u32);
            assert!(d >= expected && d < 2 * expected, "count {count}: {d:?} vs {expected:?}");
        }
        assert!(error_backoff(i32::MAX, MINUTE, 256 * MINUTE, "host") < 512 * MINUTE);
        // A count of zero (no error) behaves like the first error.
        assert!(error_backoff(0, MINUTE, 256 * MINUTE, "host") < 2 * MINUTE);
    }

    #[test]
    fn the_jitter_is_stable_per_host_and_differs_between_hosts() {
        let a1 = error_backoff(3, MINUTE, 256 * MINUTE, "uid-a");
        let a2 = error_backoff(3, MINUTE, 256 * MINUTE, "uid-a");
        assert_eq!(a1, a2);
        let distinct: std::collections::BTreeSet<_> =
            (0..20).map(|i| error_backoff(3, MINUTE, 256 * MINUTE, &format!("uid-{i}"))).collect();
        assert!(distinct.len() > 15, "jitter spreads hosts out: {distinct:?}");
    }

    #[test]
    fn spread_adds_at_most_a_tenth() {
        for _ in 0..100 {
            let d = spread(Duration::from_secs(100));
            assert!(d >= Duration::from_secs(100) && d <= Duration::from_secs(110), "{d:?}");
        }
    }
}
