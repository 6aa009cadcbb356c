//! Kubernetes Events: collected while a reconcile runs, published after its status write, so
//! an Event never announces what the status does not show. Publishing is best effort: a
//! failure is logged and never fails a reconcile.

use super::condition::bounded_message;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Normal,
    Warning,
}

/// An Event to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub severity: Severity,
    pub reason: String,
    /// Bounded like a condition's message.
    pub note: String,
}

impl Notice {
    pub fn normal(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self { severity: Severity::Normal, reason: reason.into(), note: bounded_message(note) }
    }

    pub fn warning(reason: impl Into<String>, note: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, reason: reason.into(), note: bounded_message(note) }
    }
}

/// The Events of one reconcile, in the order they happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notices(Vec<Notice>);

impl Notices {
    pub fn push(&mut self, notice: Notice) {
        self.0.push(notice);
    }

    pub fn normal(&mut self, reason: impl Into<String>, note: impl Into<String>) {
        self.push(Notice::normal(reason, note));
    }

    pub fn warning(&mut self, reason: impl Into<String>, note: impl Into<String>) {
        self.push(Notice::warning(reason, note));
    }

    pub fn extend(&mut self, notices: impl IntoIterator<Item = Notice>) {
        self.0.extend(notices);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Notice> {
        self.0.iter()
    }

    /// The reasons, in order (for tests and logs).
    pub fn reasons(&self) -> Vec<&str> {
        self.0.iter().map(|n| n.reason.as_str()).collect()
    }

    pub fn into_vec(self) -> Vec<Notice> {
        self.0
    }
}

impl IntoIterator for Notices {
    type Item = Notice;
    type IntoIter = std::vec::IntoIter<Notice>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Publishes Events for one controller.
#[derive(Clone)]
pub struct Publisher {
    recorder: Recorder,
}

impl Publisher {
    /// Events reported by `controller` from the replica `instance`.
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> Self {
        let reporter = Reporter { controller: controller.to_string(), instance: Some(instance.to_string()) };
        Self { recorder: Recorder::new(client, reporter) }
    }

    /// Publishes every notice about `object`, in order.
    pub async fn publish<K: Resource<DynamicType = ()>>(&self, object: &K, notices: Notices) {
        for notice in notices {
            self.one(object, &notice).await;
        }
    }

    /// Publishes one notice about `object` at once: for the few that must not wait for a
    /// status write (the object is going away).
    pub async fn one<K: Resource<DynamicType = ()>>(&self, object: &K, notice: &Notice) {
        tracing::info!(reason = %notice.reason, note = %notice.note, "event");
        let type_ = match notice.severity {
            Severity::Normal => EventType::Normal,
            Severity::Warning => EventType::Warning,
        };
        let event = Event {
            type_,
            reason: notice.reason.clone(),
            note: Some(notice.note.clone()),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(reason = %notice.reason, error = %err, "cannot publish an event");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_keep_their_order_and_bound_their_notes() {
        let mut notices = Notices::default();
        notices.normal("Claimed", "claimed server-1");
        notices.warning("Failed", "x".repeat(5000));
        assert_eq!(notices.reasons(), ["Claimed", "Failed"]);
        let failed = notices.iter().nth(1).expect("two");
        assert_eq!(failed.severity, Severity::Warning);
        assert!(failed.note.chars().count() <= super::super::condition::MESSAGE_LIMIT + 1);
    }
}
