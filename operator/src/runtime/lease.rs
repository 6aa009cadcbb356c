//! The rules of the leader Lease, without I/O: when a Lease is ours, free or
//! someone else's, what we write to take, renew or release it, and how long
//! a renewal lets us lead.
//!
//! Expiry is judged on this replica's monotonic clock, never by comparing the
//! holder's `renewTime` with our wall clock: a follower notes when it first saw
//! the Lease's current record, and the holder's term ends `leaseDurationSeconds`
//! after that, so clock skew between replicas cannot shorten it. The holder, in
//! turn, counts its term from the moment it *sent* the renewal (before any
//! follower can have seen it) and stops leading a margin before the end.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;
use tokio::time::Instant;

/// How long a lease lasts, when the holder must have renewed it, and how often it tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// `leaseDurationSeconds`: a follower takes the lease over once the holder
    /// has not renewed it for this long.
    pub duration: Duration,
    /// The holder stops leading when it has not renewed for this long, so that
    /// its controllers are stopped before the lease can pass to another replica.
    pub renew_deadline: Duration,
    /// The interval between attempts to take or renew the lease.
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    /// Kubernetes' own components' defaults: 15 s, 10 s, 2 s.
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Lease timings that cannot work.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("the lease duration must be a whole number of seconds, at least 1, not {0:?}")]
    Duration(Duration),
    #[error("the renew deadline ({deadline:?}) must be shorter than the lease duration ({duration:?})")]
    Deadline { deadline: Duration, duration: Duration },
    #[error("the retry period ({retry:?}) must be shorter than the renew deadline ({deadline:?}) and not zero")]
    Retry { retry: Duration, deadline: Duration },
}

impl LeaseTiming {
    /// Checks that a holder can renew before its deadline and stop before the
    /// lease expires.
    pub fn validate(&self) -> Result<(), Error> {
        if self.duration < Duration::from_secs(1)
            || self.duration.subsec_nanos() != 0
            || i32::try_from(self.duration.as_secs()).is_err()
        {
            return Err(Error::Duration(self.duration));
        }
        if self.renew_deadline >= self.duration || self.renew_deadline.is_zero() {
            return Err(Error::Deadline { deadline: self.renew_deadline, duration: self.duration });
        }
        if self.retry_period >= self.renew_deadline || self.retry_period.is_zero() {
            return Err(Error::Retry { retry: self.retry_period, deadline: self.renew_deadline });
        }
        Ok(())
    }

    /// The time between the holder's deadline and the earliest moment another
    /// replica can take the lease over.
    pub fn margin(&self) -> Duration {
        self.duration.saturating_sub(self.renew_deadline)
    }

    /// How long the controllers get to stop after the deadline passed: half the
    /// margin, leaving the other half for a slow scheduler.
    pub fn stop_grace(&self) -> Duration {
        self.margin() / 2
    }

    /// The end of the term that a renewal sent at `sent` gives.
    pub fn deadline_after(&self, sent: Instant) -> Instant {
        crate::kit::backoff::after(sent, self.renew_deadline)
    }

    /// How long a renewal sent at `sent` may wait for the apiserver before it is abandoned
    /// and tried again: half the renew deadline (at least one retry period), never past the
    /// term's `deadline`. A request stuck on a stalled connection or a stalled apiserver
    /// would otherwise use the whole term, and the lease would be lost without a second try.
    pub fn attempt_limit(&self, sent: Instant, deadline: Instant) -> Instant {
        let patience = (self.renew_deadline / 2).max(self.retry_period);
        crate::kit::backoff::after(sent, patience).min(deadline)
    }

    fn seconds(&self) -> i32 {
        i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// Whose the Lease is, as this replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// We hold it: renew it.
    Ours,
    /// Nobody holds it, or the holder let it expire: take it.
    Free,
    /// Another replica holds it until at least `until` (on our clock).
    Held { holder: String, until: Instant },
}

/// What a follower remembers of the Lease: the record it last saw and when
/// that record first appeared.
#[derive(Clone, Debug, Default)]
pub(crate) struct Observer {
    last: Option<(LeaseSpec, Instant)>,
}

impl Observer {
    /// Judges `spec`, read at `now`.
    pub(crate) fn judge(&mut self, spec: &LeaseSpec, identity: &str, now: Instant) -> Verdict {
        let since = match &self.last {
            Some((seen, since)) if seen == spec => *since,
            _ => {
                self.last = Some((spec.clone(), now));
                now
            }
        };
        let holder = spec.holder_identity.as_deref().unwrap_or_default();
        if holder.is_empty() {
            return Verdict::Free;
        }
        if holder == identity {
            return Verdict::Ours;
        }
        // A holder that wrote no duration (or a nonsensical one) has no term to wait out.
        let seconds = spec.lease_duration_seconds.and_then(|s| u64::try_from(s).ok()).unwrap_or(0);
        let until = crate::kit::backoff::after(since, Duration::from_secs(seconds));
        if now >= until { Verdict::Free } else { Verdict::Held { holder: holder.to_string(), until } }
    }
}

/// The spec that makes `identity` the holder, renewed at `now`: a renewal keeps
/// the acquire time and transition count; a takeover restarts them.
pub(crate) fn claim(current: Option<&LeaseSpec>, identity: &str, timing: &LeaseTiming, now: Timestamp) -> LeaseSpec {
    let current = current.cloned().unwrap_or_default();
    let renewing = current.holder_identity.as_deref() == Some(identity);
    let transitions = current.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(timing.seconds()),
        renew_time: Some(MicroTime(now)),
        acquire_time: if renewing { current.acquire_time.clone() } else { Some(MicroTime(now)) },
        lease_transitions: Some(if renewing { transitions } else { transitions.saturating_add(1) }),
        ..current
    }
}

/// The JSON patch that renews `identity`'s Lease at `now`: the `renewTime` and
/// `leaseDurationSeconds` a renewing [`claim`] writes (it keeps the rest), applied only while
/// `identity` holds it (a `test` the apiserver checks, answering 422 when it fails). No
/// resourceVersion: a write that left the holder alone (another replica's request for the
/// shard, an annotation) cannot make the renewal fail, where a replace would get a 409.
pub(crate) fn renewal(identity: &str, timing: &LeaseTiming, now: Timestamp) -> json_patch::Patch {
    json_patch::Patch(vec![
        holder_is(identity),
        set("renewTime", micro_time(now)),
        set("leaseDurationSeconds", timing.seconds().into()),
    ])
}

/// The JSON patch that hands `identity`'s Lease back at `now`, as [`released`] writes it,
/// applied only while `identity` holds it: a request another replica writes onto the Lease
/// between our read and our release does not make the release fail (a replace would get a
/// 409 and leave the shard held until the next look, or until the term ends when stopping).
pub(crate) fn release_patch(identity: &str, now: Timestamp) -> json_patch::Patch {
    use json_patch::{PatchOperation, RemoveOperation};
    json_patch::Patch(vec![
        holder_is(identity),
        PatchOperation::Remove(RemoveOperation { path: spec_field("holderIdentity") }),
        set("leaseDurationSeconds", 1.into()),
        set("renewTime", micro_time(now)),
        set("acquireTime", micro_time(now)),
    ])
}

fn spec_field(field: &str) -> json_patch::jsonptr::PointerBuf {
    json_patch::jsonptr::PointerBuf::from_tokens(["spec", field])
}

/// The test that `identity` holds the Lease (the apiserver answers 422 when it fails).
fn holder_is(identity: &str) -> json_patch::PatchOperation {
    json_patch::PatchOperation::Test(json_patch::TestOperation {
        path: spec_field("holderIdentity"),
        value: identity.into(),
    })
}

/// Sets a field of the spec (`add` replaces a field that is there).
fn set(field: &str, value: serde_json::Value) -> json_patch::PatchOperation {
    json_patch::PatchOperation::Add(json_patch::AddOperation { path: spec_field(field), value })
}

/// `now` as a Lease's `MicroTime` is written.
fn micro_time(now: Timestamp) -> serde_json::Value {
    serde_json::to_value(MicroTime(now)).unwrap_or_else(|_| now.to_string().into())
}

/// The parameters of a Lease's create or replace: the operator's field manager.
pub(crate) fn post_params() -> kube::api::PostParams {
    kube::api::PostParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() }
}

/// The parameters of a Lease's patch: the operator's field manager.
pub(crate) fn patch_params() -> kube::api::PatchParams {
    kube::api::PatchParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() }
}

/// The spec that hands the lease back, as [`release_patch`] writes it (the tests compare the
/// two).
#[cfg(test)]
fn released(current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        renew_time: Some(MicroTime(now)),
        acquire_time: Some(MicroTime(now)),
        ..current.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(holder: &str, seconds: i32, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(Timestamp::from_second(renewed).expect("timestamp"))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_renewal_that_hangs_is_abandoned_in_time_for_another_before_the_deadline() {
        let timing = LeaseTiming::default();
        let sent = Instant::now();
        let deadline = timing.deadline_after(sent);
        let limit = timing.attempt_limit(sent, deadline);
        assert_eq!(limit, sent + Duration::from_secs(5));
        // Late in the term the deadline bounds it.
        let late = sent + Duration::from_secs(8);
        assert_eq!(timing.attempt_limit(late, deadline), deadline);
        // A short deadline still gives an attempt a whole retry period.
        let tight =
            LeaseTiming { renew_deadline: Duration::from_secs(3), retry_period: Duration::from_secs(2), ..timing };
        assert_eq!(tight.attempt_limit(sent, sent + Duration::from_secs(60)), sent + Duration::from_secs(2));
    }

    #[test]
    fn the_defaults_are_valid_and_leave_a_margin() {
        let timing = LeaseTiming::default();
        assert_eq!(timing.validate(), Ok(()));
        assert_eq!(timing.margin(), Duration::from_secs(5));
        assert!(timing.stop_grace() < timing.margin());
    }

    #[test]
    fn timings_that_cannot_work_are_refused() {
        let bad = |duration: f64, deadline: f64, retry: f64| {
            LeaseTiming {
                duration: Duration::from_secs_f64(duration),
                renew_deadline: Duration::from_secs_f64(deadline),
                retry_period: Duration::from_secs_f64(retry),
            }
            .validate()
        };
        assert!(matches!(bad(0.5, 0.2, 0.1), Err(Error::Duration(_))));
        assert!(matches!(bad(4.5, 2.0, 0.5), Err(Error::Duration(_))), "not a whole second");
        assert!(matches!(bad(4.0, 4.0, 0.5), Err(Error::Deadline { .. })));
        assert!(matches!(bad(4.0, 2.0, 2.0), Err(Error::Retry { .. })));
        assert!(matches!(bad(4.0, 2.0, 0.0), Err(Error::Retry { .. })));
        assert_eq!(bad(4.0, 2.5, 0.5), Ok(()));
    }

    #[test]
    fn a_lease_without_a_holder_is_free_and_ours_is_ours() {
        let now = Instant::now();
        let mut observer = Observer::default();
        assert_eq!(observer.judge(&LeaseSpec::default(), "a", now), Verdict::Free);
        let empty = LeaseSpec { holder_identity: Some(String::new()), ..LeaseSpec::default() };
        assert_eq!(observer.judge(&empty, "a", now), Verdict::Free);
        assert_eq!(observer.judge(&held_by("a", 15, 0), "a", now), Verdict::Ours);
    }

    #[test]
    fn another_holder_expires_a_duration_after_its_record_was_first_seen() {
        let start = Instant::now();
        let mut observer = Observer::default();
        let record = held_by("b", 15, 100);
        let held = |until| Verdict::Held { holder: "b".into(), until };
        assert_eq!(observer.judge(&record, "a", start), held(start + Duration::from_secs(15)));
        // The same record seen again later: the term still counts from the first sight.
        let later = start + Duration::from_secs(10);
        assert_eq!(observer.judge(&record, "a", later), held(start + Duration::from_secs(15)));
        assert_eq!(observer.judge(&record, "a", start + Duration::from_secs(15)), Verdict::Free);
        // A renewal (a new record) restarts the term.
        let renewed = held_by("b", 15, 110);
        assert_eq!(observer.judge(&renewed, "a", later), held(later + Duration::from_secs(15)));
    }

    #[test]
    fn the_holders_clock_does_not_matter() {
        // A renewTime from far in the past (a holder with a slow clock) is not expired
        // until we have waited out its duration ourselves.
        let now = Instant::now();
        let mut observer = Observer::default();
        let verdict = observer.judge(&held_by("b", 15, 0), "a", now);
        assert!(matches!(verdict, Verdict::Held { .. }), "{verdict:?}");
    }

    #[test]
    fn a_holder_without_a_duration_has_no_term() {
        let now = Instant::now();
        let spec = LeaseSpec { lease_duration_seconds: None, ..held_by("b", 0, 0) };
        assert_eq!(Observer::default().judge(&spec, "a", now), Verdict::Free);
        let negative = held_by("b", -5, 0);
        assert_eq!(Observer::default().judge(&negative, "a", now), Verdict::Free);
    }

    #[test]
    fn a_takeover_counts_a_transition_and_a_renewal_keeps_the_acquire_time() {
        let timing = LeaseTiming::default();
        let t1 = Timestamp::from_second(1000).expect("timestamp");
        let taken = claim(Some(&held_by("b", 15, 0)), "a", &timing, t1);
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        assert_eq!(taken.acquire_time, Some(MicroTime(t1)));

        let t2 = Timestamp::from_second(1002).expect("timestamp");
        let renewed = claim(Some(&taken), "a", &timing, t2);
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.acquire_time, Some(MicroTime(t1)));
        assert_eq!(renewed.renew_time, Some(MicroTime(t2)));

        let first = claim(None, "a", &timing, t1);
        assert_eq!(first.lease_transitions, Some(1));
        let saturated = LeaseSpec { lease_transitions: Some(i32::MAX), ..held_by("b", 15, 0) };
        assert_eq!(claim(Some(&saturated), "a", &timing, t1).lease_transitions, Some(i32::MAX));
    }

    #[test]
    fn a_released_lease_is_free_to_the_next_observer() {
        let now = Timestamp::from_second(1000).expect("timestamp");
        let spec = released(&held_by("a", 15, 0), now);
        assert_eq!(spec.holder_identity, None);
        assert_eq!(Observer::default().judge(&spec, "b", Instant::now()), Verdict::Free);
    }

    #[test]
    fn the_holder_stops_a_margin_before_any_follower_can_take_over() {
        // A follower sees the renewal no earlier than it was sent; the holder's deadline
        // counts from the send. So the holder always stops `margin` before the takeover.
        let timing = LeaseTiming::default();
        let sent = Instant::now();
        let mut observer = Observer::default();
        let seen = sent + Duration::from_millis(1);
        let Verdict::Held { until, .. } = observer.judge(&held_by("a", 15, 0), "b", seen) else { panic!("held") };
        assert!(timing.deadline_after(sent) + timing.margin() <= until);
    }

    #[test]
    fn a_renewal_patch_writes_what_a_renewing_claim_does_and_only_while_the_lease_is_ours() {
        let timing = LeaseTiming::default();
        let now = Timestamp::from_second(2000).expect("timestamp") + Duration::from_micros(123_456);
        let renewed = |spec: &LeaseSpec, who: &str| {
            let mut doc = serde_json::json!({ "spec": serde_json::to_value(spec).expect("spec") });
            json_patch::patch(&mut doc, &renewal(who, &timing, now))?;
            Ok::<LeaseSpec, json_patch::PatchError>(serde_json::from_value(doc["spec"].take()).expect("spec"))
        };
        let ours = held_by("a", 3, 1000);
        assert_eq!(renewed(&ours, "a").expect("the holder's renewal applies"), claim(Some(&ours), "a", &timing, now));
        let first = LeaseSpec { lease_transitions: None, ..held_by("a", 3, 1000) };
        let written = renewed(&first, "a").expect("applies");
        assert_eq!((written.renew_time, written.lease_transitions), (Some(MicroTime(now)), None), "the rest kept");
        assert!(renewed(&held_by("b", 3, 1000), "a").is_err(), "another's: refused");
        assert!(renewed(&released(&ours, now), "a").is_err(), "released: refused");
    }

    #[test]
    fn a_release_patch_writes_what_a_release_does_and_only_while_the_lease_is_ours() {
        let now = Timestamp::from_second(2000).expect("timestamp") + Duration::from_micros(654_321);
        let patched = |spec: &LeaseSpec, who: &str| {
            let mut doc = serde_json::json!({ "spec": serde_json::to_value(spec).expect("spec") });
            json_patch::patch(&mut doc, &release_patch(who, now))?;
            Ok::<LeaseSpec, json_patch::PatchError>(serde_json::from_value(doc["spec"].take()).expect("spec"))
        };
        let ours = LeaseSpec { acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)), ..held_by("a", 15, 1000) };
        assert_eq!(patched(&ours, "a").expect("the holder's release applies"), released(&ours, now));
        assert!(patched(&held_by("b", 15, 1000), "a").is_err(), "another's: refused");
    }
}
