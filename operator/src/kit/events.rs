//! Kubernetes Events: collected while a reconcile runs, published after its status write, so
//! an Event never announces what the status does not show. Publishing is best effort: a
//! failure is logged and never fails a reconcile.
//!
//! Events are written here rather than through kube-runtime's `Recorder`, which keeps each
//! Event whole for six minutes (see [`super::series`]).

use super::condition::bounded_message;
use super::names::bounded;
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
    turns: Arc<[tokio::sync::Mutex<()>; TURNS]>,
}

/// How many locks publishes take turns on, a key's publishes always on the same one. Without
/// turns two publishes of one key at once would both find nothing made and create two Events,
/// or both find the same count and patch it once. kube-runtime runs one reconcile of an object
/// at a time, but the publisher does not rely on its callers for that. kube-runtime's recorder
/// held one lock over every publish; with a lock per stripe of keys, publishes about
/// different objects wait on each other only when their keys share a stripe.
const TURNS: usize = 64;

/// The longest a publish waits for its turn.
const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Publisher {
    /// Events reported by `controller` from the replica `instance`.
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> Self {
        Self {
            client,
            controller: controller.to_string(),
            instance: instance.to_string(),
            series: Arc::default(),
            turns: Arc::new(std::array::from_fn(|_| tokio::sync::Mutex::new(()))),
        }
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
        // The modulo keeps the index below TURNS, so the lookup cannot miss. A turn not had
        // within TURN_WAIT (an apiserver stalled on the publish before) is gone without: a
        // repeat said as an Event of its own is better than a reconcile held that long.
        let stripe = &self.turns[(key % TURNS as u64) as usize];
        let _turn = tokio::time::timeout(TURN_WAIT, stripe.lock()).await.ok();
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

/// A new Event, named as kube-runtime's and client-go's are: the object's name (the
/// controller's for an object without one) and the time in nanoseconds. An object without a
/// namespace has its Events in `default`.
fn event(controller: &str, instance: &str, regarding: &ObjectReference, notice: &Notice) -> Event {
    let now = Timestamp::now();
    let object = regarding.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(controller);
    let name = format!("{}.{:x}", bounded(object, NAME_ROOM), now.as_nanosecond());
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

/// Room for the object's name in an Event's: a name's 253 characters less a dot and up to 32
/// hexadecimal digits of time.
const NAME_ROOM: usize = 253 - 1 - 32;

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
    fn an_events_name_is_its_objects_name_and_the_time_within_253_characters() {
        let named = |name: &str| {
            let regarding = ObjectReference { name: Some(name.into()), ..Default::default() };
            event("ferrometal-host", "replica-0", &regarding, &Notice::normal("A", "b"))
                .metadata
                .name
                .unwrap_or_default()
        };
        assert!(named("server-1").starts_with("server-1."));
        let long = named(&"a".repeat(253));
        assert!(long.starts_with(&"a".repeat(200)) && long.len() <= 253, "{long}");
        assert!(named("").starts_with("ferrometal-host."), "no name: the controller's");
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
        assert!(made.series.is_none() && made.event_time.is_some());
    }
}
