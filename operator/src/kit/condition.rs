//! One way to make a `metav1.Condition`: the generation it describes and the time are given
//! (never read from the clock here, so that pure code stays pure), reasons are made valid and
//! messages bounded, and a [`Progress`] becomes the standard Ready, Progressing and Degraded.

use super::progress::Progress;
use crds::condition::{self, Condition, DEGRADED, FALSE, PROGRESSING, READY, TRUE};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Conditions, Events and status messages carry at most about a kilobyte of text: enough to
/// quote an error, short enough to read in `kubectl describe`. (The API allows 32768.)
pub(crate) const MESSAGE_LIMIT: usize = 1000;
/// The API's limit for a reason.
pub(crate) const REASON_LIMIT: usize = 1024;

/// Degraded's message when nothing is wrong; the CRDs require a message on every condition.
pub(crate) const NOTHING_WRONG: &str = "nothing needs attention";

/// `message` cut to [`MESSAGE_LIMIT`] bytes at a character boundary, marked with an ellipsis.
pub(crate) fn bounded_message(message: impl Into<String>) -> String {
    let mut message = message.into();
    if message.len() > MESSAGE_LIMIT {
        let mut cut = MESSAGE_LIMIT;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// `reason` as the API accepts it (`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, at most 1024):
/// other characters dropped, a letter first, `Unknown` when nothing is left.
pub(crate) fn valid_reason(reason: &str) -> String {
    let mut out: String = reason
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'))
        .skip_while(|c| !c.is_ascii_alphabetic())
        .take(REASON_LIMIT)
        .collect();
    while out.ends_with([',', ':']) {
        out.pop();
    }
    if out.is_empty() { "Unknown".to_string() } else { out }
}

/// Makes the conditions of one status write.
#[derive(Clone, Debug)]
pub(crate) struct Conditions {
    generation: Option<i64>,
    now: Time,
}

impl Conditions {
    pub(crate) fn new(generation: Option<i64>, now: Time) -> Self {
        Self { generation, now }
    }

    /// A condition of `type_`; an empty message becomes the reason.
    pub(crate) fn make(&self, type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Condition {
        self.make_with(type_, if status { TRUE } else { FALSE }, reason, message)
    }

    /// A condition with a status of `True`, `False` or `Unknown`.
    pub(crate) fn make_with(&self, type_: &str, status: &str, reason: &str, message: impl Into<String>) -> Condition {
        let reason = valid_reason(reason);
        let message = message.into();
        let message = if message.trim().is_empty() { reason.clone() } else { bounded_message(message) };
        Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason,
            message,
            observed_generation: self.generation,
            last_transition_time: self.now.clone(),
        }
    }

    /// Ready, Progressing and Degraded for `progress`. `ready` names Ready's reasons for done,
    /// waiting and failed; `done_message` is Ready's message when done.
    pub(crate) fn summary(&self, progress: &Progress, ready: ReadyReasons, done_message: &str) -> [Condition; 3] {
        match progress {
            Progress::Done => [
                self.make(READY, true, ready.done, done_message),
                self.make(PROGRESSING, false, COMPLETE, "every step is done"),
                self.make(DEGRADED, false, AS_EXPECTED, NOTHING_WRONG),
            ],
            Progress::Waiting { reason, message } => [
                self.make(READY, false, ready.waiting, message.as_str()),
                self.make(PROGRESSING, true, reason, message.as_str()),
                self.make(DEGRADED, false, AS_EXPECTED, NOTHING_WRONG),
            ],
            Progress::Failed { reason, message } => [
                self.make(READY, false, ready.failed, message.as_str()),
                self.make(PROGRESSING, false, STOPPED, message.as_str()),
                self.make(DEGRADED, true, reason, message.as_str()),
            ],
        }
    }
}

/// Progressing's reason when nothing is left to do.
pub(crate) const COMPLETE: &str = "Complete";
/// Progressing's reason when a failure stopped the work.
pub(crate) const STOPPED: &str = "Stopped";
/// Degraded's reason when nothing is wrong.
pub(crate) const AS_EXPECTED: &str = "AsExpected";

/// Ready's reasons for each kind of progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadyReasons {
    pub done: &'static str,
    pub waiting: &'static str,
    pub failed: &'static str,
}

/// Sets every condition of `new` in `conditions` (kept sorted, transition times kept while the
/// status stays); true when anything but a transition time changed.
pub(crate) fn set_all(conditions: &mut Vec<Condition>, new: impl IntoIterator<Item = Condition>) -> bool {
    let mut changed = false;
    for c in new {
        changed |= condition::set_condition(conditions, c);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("time"))
    }

    const REASONS: ReadyReasons = ReadyReasons { done: "Available", waiting: "InProgress", failed: "Failed" };

    #[test]
    fn reasons_are_made_valid() {
        assert_eq!(valid_reason("DeploymentAvailable"), "DeploymentAvailable");
        assert_eq!(valid_reason("1 bad-reason:"), "badreason");
        assert_eq!(valid_reason("!!"), "Unknown");
        assert_eq!(valid_reason(&"a".repeat(2000)).len(), REASON_LIMIT);
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let message = bounded_message("é".repeat(800));
        assert!(message.len() <= MESSAGE_LIMIT + '…'.len_utf8() && message.ends_with('…'));
        assert_eq!(bounded_message("short"), "short");
    }

    #[test]
    fn a_failure_degrades_and_stops_progress() {
        let [ready, progressing, degraded] =
            Conditions::new(Some(4), at(10)).summary(&Progress::failed("JobFailed", "exit 1"), REASONS, "fine");
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), (FALSE, "Failed"));
        assert_eq!((progressing.status.as_str(), progressing.reason.as_str()), (FALSE, STOPPED));
        assert_eq!(
            (degraded.status.as_str(), degraded.reason.as_str(), degraded.message.as_str()),
            (TRUE, "JobFailed", "exit 1")
        );
        assert_eq!(degraded.observed_generation, Some(4));
    }

    #[test]
    fn done_is_ready_with_its_message_and_an_empty_message_becomes_the_reason() {
        let builder = Conditions::new(None, at(10));
        let [ready, _, degraded] = builder.summary(&Progress::Done, REASONS, "all good");
        assert_eq!((ready.status.as_str(), ready.message.as_str()), (TRUE, "all good"));
        assert_eq!(degraded.message, NOTHING_WRONG);
        assert_eq!(builder.make("X", true, "Why", "").message, "Why");
    }

    #[test]
    fn setting_the_same_conditions_again_changes_nothing() {
        let mut list = Vec::new();
        let first = Conditions::new(Some(1), at(10)).summary(&Progress::Done, REASONS, "ok");
        assert!(set_all(&mut list, first));
        let again = Conditions::new(Some(1), at(99)).summary(&Progress::Done, REASONS, "ok");
        assert!(!set_all(&mut list, again));
        assert!(list.iter().all(|c| c.last_transition_time == at(10)));
    }
}
