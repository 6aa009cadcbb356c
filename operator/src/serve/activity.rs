//! What a connection has asked for: requests started and answered, the last answer's time.
//!
//! Idleness is measured in requests, not bytes: an HTTP/2 client that made one request
//! and then only answers the server's keep-alive pings (or sends its own) sends bytes for
//! ever while asking nothing, and must not hold a slot for that.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};

#[derive(Clone)]
pub(super) struct Activity(Arc<State>);

struct State {
    start: Instant,
    requested: AtomicBool,
    in_flight: AtomicUsize,
    /// Milliseconds after `start` when the last request was answered.
    last_done: AtomicU64,
}

/// One request in flight; answered when dropped.
pub(super) struct InFlight(Activity);

impl Drop for InFlight {
    fn drop(&mut self) {
        let state = &self.0.0;
        let millis = u64::try_from(state.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        state.last_done.store(millis, Ordering::Relaxed);
        state.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Activity {
    pub(super) fn new() -> Self {
        Self(Arc::new(State {
            start: Instant::now(),
            requested: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            last_done: AtomicU64::new(0),
        }))
    }

    /// Notes a request; it is answered when the returned guard drops.
    pub(super) fn begin(&self) -> InFlight {
        self.0.requested.store(true, Ordering::Relaxed);
        self.0.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// Whether a request ever came.
    pub(super) fn requested(&self) -> bool {
        self.0.requested.load(Ordering::Relaxed)
    }

    /// Resolves with the reason to close the connection: no request by `first_request_by`,
    /// no request in flight for `idle`, or `max_age` since it opened.
    pub(super) async fn stalled(&self, first_request_by: Instant, idle: Duration, max_age: Duration) -> &'static str {
        let aged = crate::kit::backoff::after(self.0.start, max_age);
        tokio::select! {
            () = sleep_until(aged) => "max_age",
            reason = self.idle(first_request_by, idle) => reason,
        }
    }

    async fn idle(&self, first_request_by: Instant, idle: Duration) -> &'static str {
        sleep_until(first_request_by).await;
        if !self.0.requested.load(Ordering::Relaxed) {
            return "no_request";
        }
        loop {
            if self.0.in_flight.load(Ordering::Relaxed) > 0 {
                // Requests are bounded by the request timeout, well under `idle`.
                sleep(idle).await;
                continue;
            }
            let last = self.0.start + Duration::from_millis(self.0.last_done.load(Ordering::Relaxed));
            let until = crate::kit::backoff::after(last, idle);
            if Instant::now() >= until {
                return "idle";
            }
            sleep_until(until).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(90);
    const AGE: Duration = Duration::from_secs(600);

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_a_request_stalls_at_the_first_request_deadline() {
        let activity = Activity::new();
        let by = Instant::now() + Duration::from_secs(10);
        assert_eq!(activity.stalled(by, IDLE, AGE).await, "no_request");
        assert_eq!(Instant::now(), by);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_idle_one_idle_period_after_its_last_answer() {
        let activity = Activity::new();
        let start = Instant::now();
        let client = activity.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                let request = client.begin();
                sleep(Duration::from_secs(1)).await;
                drop(request);
                sleep(Duration::from_secs(59)).await;
            }
        });
        let reason = activity.stalled(start + Duration::from_secs(10), IDLE, AGE).await;
        assert_eq!(reason, "idle");
        // The fifth request is answered at 241 s; 90 s of no request follow.
        assert_eq!(start.elapsed(), Duration::from_secs(331));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_keeps_the_connection_however_long_it_takes() {
        let activity = Activity::new();
        let start = Instant::now();
        let request = activity.begin();
        let answer = tokio::spawn(async move {
            sleep(Duration::from_secs(200)).await;
            drop(request);
        });
        assert_eq!(activity.stalled(start + Duration::from_secs(10), IDLE, AGE).await, "idle");
        assert!(answer.is_finished());
        assert!(start.elapsed() >= Duration::from_secs(290), "{:?}", start.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_connection_is_closed_at_its_maximum_age() {
        let activity = Activity::new();
        let start = Instant::now();
        let client = activity.clone();
        tokio::spawn(async move {
            loop {
                drop(client.begin());
                sleep(Duration::from_secs(5)).await;
            }
        });
        assert_eq!(activity.stalled(start + Duration::from_secs(10), IDLE, AGE).await, "max_age");
        assert_eq!(start.elapsed(), AGE);
    }
}
