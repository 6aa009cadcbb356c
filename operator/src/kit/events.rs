//! Kubernetes Events: collected while a reconcile runs, published after its status write, so
//! an Event never announces what the status does not show. Publishing is best effort: a
//! failure is logged and never fails a reconcile.
//!
//! Events are written here rather than through kube-runtime's `Recorder`, which keeps each
//! Event whole for six minutes (see [`super::series`]).

use super::condition::bounded_message;
use super::series::{Next, Series};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// Publishes Events for one controller: an `events.k8s.io/v1` Event per notice, or, for one
/// said again about the same object within six minutes (same severity and reason), its
/// series' count and last time patched ([`super::series`]). As with kube-runtime's recorder,
/// which this replaced, a series keeps its first note.
#[derive(Clone)]
pub struct Publisher {
    client: kube::Client,
    controller: String,
    instance: String,
    series: Arc<Series>,
}

impl Publisher {
    /// Events reported by `controller` from the replica `instance`.
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> Self {
        Self { client, controller: controller.to_string(), instance: instance.to_string(), series: Arc::default() }
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
        if let Err(err) = self.say(&object.object_ref(&()), notice).await {
            tracing::warn!(reason = %notice.reason, error = %err, "cannot publish an event");
        }
    }

    async fn say(&self, regarding: &ObjectReference, notice: &Notice) -> Result<(), kube::Error> {
        let r = regarding;
        // kube-runtime's key, so that Events fold as they did: the note is not part of it.
        let key =
            self.series.key((&r.api_version, &r.kind, &r.namespace, &r.name, &r.uid, notice.severity, &notice.reason));
        let now = Instant::now();
        if let Next::Repeat { namespace, name, count } = self.series.next(key, now) {
            let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let series = json!({"series": {"count": count, "lastObservedTime": MicroTime(Timestamp::now())}});
            match events.patch(&name, &PatchParams::default(), &Patch::Merge(&series)).await {
                Ok(_) => {
                    self.series.repeated(key, count, now);
                    return Ok(());
                }
                // Gone (Events expire after an hour by default): say it anew.
                Err(kube::Error::Api(status)) if status.is_not_found() => self.series.forget(key),
                Err(err) => return Err(err),
            }
        }
        let event = event(&self.controller, &self.instance, regarding, notice);
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let made = events.create(&PostParams::default(), &event).await?;
        self.series.created(key, namespace, made.metadata.name.unwrap_or_default(), now);
        Ok(())
    }
}

/// A new Event, named as kube-runtime's and client-go's are: the object's name and the time in
/// nanoseconds, bounded to a valid name. An object without a namespace has its Events in
/// `default`.
fn event(controller: &str, instance: &str, regarding: &ObjectReference, notice: &Notice) -> Event {
    let now = Timestamp::now();
    let object = regarding.name.as_deref().map(event_prefix).filter(|p| !p.is_empty());
    let name = format!("{}.{:x}", object.unwrap_or(controller), now.as_nanosecond());
    Event {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(regarding.namespace.clone().unwrap_or_else(|| "default".to_string())),
            ..Default::default()
        },
        action: Some(ACTION.to_string()),
        reason: Some(notice.reason.clone()),
        note: Some(notice.note.clone()),
        type_: Some(notice.severity.as_str().to_string()),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding.clone()),
        reporting_controller: Some(controller.to_string()),
        reporting_instance: Some(instance.to_string()),
        ..Default::default()
    }
}

/// Every Event's action: what the operator was doing when it happened.
const ACTION: &str = "Reconcile";

/// The first part of an Event's name: the object's name, cut so that the whole (with a dot and
/// up to 32 hexadecimal digits of time) stays within a name's 253 characters, and ending, as
/// a name part must, in a letter or digit.
fn event_prefix(object: &str) -> &str {
    const ROOM: usize = 253 - 1 - 32;
    let cut = object.char_indices().nth(ROOM).map_or(object.len(), |(at, _)| at);
    object[..cut].trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Normal => "Normal",
            Severity::Warning => "Warning",
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

    #[test]
    fn an_events_name_stays_within_253_characters_and_ends_its_part_in_a_letter_or_digit() {
        assert_eq!(event_prefix("server-1"), "server-1");
        let long = format!("{}-{}", "a".repeat(219), "b".repeat(100));
        let prefix = event_prefix(&long);
        assert_eq!(prefix, "a".repeat(219), "cut at 220, the dash dropped");
        assert!(format!("{prefix}.{:x}", u128::MAX).len() <= 253);
        assert_eq!(event_prefix("ü".repeat(300).as_str()).chars().count(), 0, "only ASCII ends a part");
    }

    #[test]
    fn a_new_event_says_who_reported_what_about_which_object() {
        let regarding = ObjectReference { name: Some("server-1".into()), namespace: None, ..Default::default() };
        let made = event("ferrometal-host", "replica-0", &regarding, &Notice::warning("Failed", "no BMC"));
        assert_eq!(made.metadata.namespace.as_deref(), Some("default"), "no namespace: default");
        assert!(made.metadata.name.as_deref().is_some_and(|n| n.starts_with("server-1.")));
        assert_eq!(made.type_.as_deref(), Some("Warning"));
        assert_eq!((made.reason.as_deref(), made.note.as_deref()), (Some("Failed"), Some("no BMC")));
        assert_eq!(made.reporting_instance.as_deref(), Some("replica-0"));
        assert_eq!(made.reporting_controller.as_deref(), Some("ferrometal-host"));
        assert_eq!(made.action.as_deref(), Some("Reconcile"));
        assert_eq!(made.regarding.as_ref(), Some(&regarding));
        let unnamed = ObjectReference { name: Some("ü".into()), ..Default::default() };
        let name = event("ferrometal-host", "replica-0", &unnamed, &Notice::normal("A", "b")).metadata.name;
        assert!(name.is_some_and(|n| n.starts_with("ferrometal-host.")), "no valid part of the name: the controller's");
        assert!(made.series.is_none() && made.event_time.is_some());
    }
}
