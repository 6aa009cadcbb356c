//! Sightings: every shard Lease watched by name, so that a replica sees another's renewal when
//! it is written, not at its next look up to a retry period later, and a Lease released or
//! deleted at once.
//!
//! A holder's term counts from the moment a replica first saw its record (`lease::Observer`),
//! so every period between a renewal and its sighting is added to the handover when a holder
//! dies: reading the Leases every retry period alone makes a takeover up to two periods late
//! (one to see the last renewal, one to look again after the term ended). With the watch the
//! last renewal is seen as it is written, and the elector looks again the moment the term it
//! gives ends ([`due`]). The looks every retry period stay: they renew, and they judge the
//! Leases should a watch be down.

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::time::Instant;

/// One Lease as its watch showed it: its shard, and its spec (that of no holder when deleted).
pub(super) type Sighting = (String, LeaseSpec);

/// The sightings of the Leases `names` gives (shard, Lease name), one watch each: a watch
/// limited to one name is all the Role's rule by name allows.
pub(super) fn watch(api: &Api<Lease>, names: Vec<(String, String)>) -> BoxStream<'static, Sighting> {
    let watches = names.into_iter().map(|(shard, name)| {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        watcher(api.clone(), config)
            .default_backoff()
            .filter_map(move |event| std::future::ready(sighting(&shard, event)))
            .boxed()
    });
    futures::stream::select_all(watches).boxed()
}

/// What a watch event shows of a shard's Lease; `None` for the events that show nothing.
fn sighting(shard: &str, event: Result<watcher::Event<Lease>, watcher::Error>) -> Option<Sighting> {
    match event {
        Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease)) => {
            Some((shard.to_string(), lease.spec.unwrap_or_default()))
        }
        Ok(watcher::Event::Delete(_)) => Some((shard.to_string(), LeaseSpec::default())),
        Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
        // The looks every retry period go on without it; the watch retries with a backoff.
        Err(err) if refused(&err) => {
            tracing::warn!(shard, error = %err, "cannot watch a shard lease; judging it at each look only");
            None
        }
        Err(err) => {
            tracing::debug!(shard, error = %err, "a shard lease watch failed; it starts again");
            None
        }
    }
}

/// Whether a watch failed because the Role does not allow it (one from before the watch), which
/// no retry mends, rather than on the way (a dropped connection, a too old version).
fn refused(err: &watcher::Error) -> bool {
    match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 403,
        watcher::Error::WatchError(status) => status.code == 403,
        _ => false,
    }
}

/// When to look next: at `next` (a retry period after the last look), or sooner, the moment a
/// term another replica holds ends by this replica's count. A term that had ended when the last
/// look (`looked`) began was judged by it already, and does not bring the next one forward.
pub(super) fn due(next: Instant, looked: Instant, ends: impl Iterator<Item = Instant>) -> Instant {
    ends.filter(|end| *end > looked).fold(next, Instant::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use std::time::Duration;

    fn lease(holder: Option<&str>) -> Lease {
        Lease {
            spec: Some(LeaseSpec { holder_identity: holder.map(str::to_string), ..LeaseSpec::default() }),
            ..Lease::default()
        }
    }

    #[test]
    fn a_lease_written_shows_its_spec_and_one_deleted_shows_no_holder() {
        let seen = sighting("a", Ok(watcher::Event::Apply(lease(Some("r2")))));
        assert_eq!(seen.map(|(s, spec)| (s, spec.holder_identity)), Some(("a".into(), Some("r2".into()))));
        let listed = sighting("b", Ok(watcher::Event::InitApply(lease(Some("r1")))));
        assert_eq!(listed.map(|(s, spec)| (s, spec.holder_identity)), Some(("b".into(), Some("r1".into()))));
        let deleted = sighting("c", Ok(watcher::Event::Delete(lease(Some("r2")))));
        assert_eq!(deleted, Some(("c".into(), LeaseSpec::default())), "a deleted Lease is free");
        assert_eq!(sighting("d", Ok(watcher::Event::Init)), None);
        assert_eq!(sighting("d", Ok(watcher::Event::InitDone)), None);
    }

    #[test]
    fn only_a_refusal_counts_as_refused() {
        let status = |code| kube::core::Status { code, ..kube::core::Status::default() };
        let api = |code| kube::Error::Api(Box::new(status(code)));
        assert!(refused(&watcher::Error::InitialListFailed(api(403))));
        assert!(refused(&watcher::Error::WatchError(Box::new(status(403)))));
        assert!(!refused(&watcher::Error::WatchError(Box::new(status(410)))), "a too old version");
        assert!(!refused(&watcher::Error::WatchStartFailed(api(500))));
        assert!(!refused(&watcher::Error::NoResourceVersion));
    }

    #[test]
    fn the_next_look_comes_when_a_term_ends_before_the_retry_period_does() {
        let looked = Instant::now();
        let next = looked + Duration::from_secs(2);
        let soon = looked + Duration::from_millis(700);
        assert_eq!(due(next, looked, [soon, next + Duration::from_secs(9)].into_iter()), soon);
        assert_eq!(due(next, looked, [next + Duration::from_secs(1)].into_iter()), next, "a later end waits");
        assert_eq!(due(next, looked, std::iter::empty()), next, "no other holder");
    }

    #[test]
    fn a_term_the_last_look_saw_ended_does_not_bring_the_next_look_forward() {
        // Its Lease could not be read, or the plan left it free: looking again at once would
        // only spin.
        let looked = Instant::now();
        let next = looked + Duration::from_secs(2);
        let ended = looked.checked_sub(Duration::from_millis(1)).unwrap_or(looked);
        assert_eq!(due(next, looked, [ended, looked].into_iter()), next);
    }
}
