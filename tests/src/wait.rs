//! Polling helpers: tests wait for conditions, never for fixed sleeps.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `check` every `interval` until it returns `Some`, or fails after
/// `timeout` with a message naming `what`.
pub async fn until<T, F, Fut>(what: &str, timeout: Duration, interval: Duration, mut check: F) -> crate::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(interval).await;
    }
}

/// Like [`until`], for checks that can fail hard: an `Err` ends the wait at once.
pub async fn until_ok<T, F, Fut>(what: &str, timeout: Duration, interval: Duration, mut check: F) -> crate::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = crate::Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(interval).await;
    }
}
