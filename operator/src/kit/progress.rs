//! Where a piece of work stands, in one type for every controller and every step: done,
//! waiting for something that will come, or stopped until a person acts.
//!
//! Steps return it (a rollout, a Job, a database's gate, a whole reconcile), so a step that
//! stops the pipeline says why in words a user reads, and [`super::condition`] turns the final
//! one into Ready, Progressing and Degraded. Errors worth retrying are not progress: they are
//! `Err` values and go to the runner's backoff.

use std::borrow::Cow;
use std::time::Duration;

/// Where a piece of work stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Finished: nothing is left to do.
    Done,
    /// Under way, or waiting for something that will come; `reason` is Progressing's.
    Waiting { reason: Cow<'static, str>, message: String },
    /// Stopped until a person acts; `reason` is Degraded's.
    Failed { reason: Cow<'static, str>, message: String },
}

impl Progress {
    pub fn waiting(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::Waiting { reason: reason.into(), message: message.into() }
    }

    pub fn failed(reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self::Failed { reason: reason.into(), message: message.into() }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done)
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Self::Failed { .. })
    }

    /// The reason and message, unless done.
    pub fn reason_and_message(&self) -> Option<(&str, &str)> {
        match self {
            Self::Done => None,
            Self::Waiting { reason, message } | Self::Failed { reason, message } => Some((reason, message)),
        }
    }

    /// The same progress with its message prefixed (e.g. by the step that reports it).
    pub fn context(self, prefix: &str) -> Self {
        match self {
            Self::Done => Self::Done,
            Self::Waiting { reason, message } => Self::Waiting { reason, message: format!("{prefix}{message}") },
            Self::Failed { reason, message } => Self::Failed { reason, message: format!("{prefix}{message}") },
        }
    }
}

/// How a reconcile ended when nothing failed outright: its progress, and when to look again
/// regardless of watches (a renewal, a poll while waiting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub progress: Progress,
    pub requeue_after: Option<Duration>,
}

impl Outcome {
    /// `progress`, with no deadline of its own.
    pub(crate) fn new(progress: Progress) -> Self {
        Self { progress, requeue_after: None }
    }

    /// Look again after `after` at the latest (the sooner of this and any earlier deadline).
    pub(crate) fn within(mut self, after: Option<Duration>) -> Self {
        self.requeue_after = soonest(self.requeue_after, after);
        self
    }
}

impl From<Progress> for Outcome {
    fn from(progress: Progress) -> Self {
        Self::new(progress)
    }
}

/// The sooner of two optional deadlines.
pub(crate) fn soonest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_keeps_the_soonest_deadline() {
        let outcome = Outcome::new(Progress::Done)
            .within(Some(Duration::from_secs(30)))
            .within(None)
            .within(Some(Duration::from_secs(10)))
            .within(Some(Duration::from_secs(20)));
        assert_eq!(outcome.requeue_after, Some(Duration::from_secs(10)));
    }

    #[test]
    fn context_prefixes_the_message_and_keeps_the_reason() {
        let p = Progress::failed("Halted", "boom").context("the database: ");
        assert_eq!(p.reason_and_message(), Some(("Halted", "the database: boom")));
        assert!(p.is_failed() && !p.is_done());
        assert_eq!(Progress::Done.context("x"), Progress::Done);
    }
}
