//! Kubernetes Events on transitions. Events are best effort: a failure to
//! publish one is logged and never fails a reconcile.

use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// Publishes Events for one controller.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    pub fn new(client: kube::Client, controller: &str, instance: &str) -> Self {
        let reporter = Reporter { controller: controller.to_string(), instance: Some(instance.to_string()) };
        Self { recorder: Recorder::new(client, reporter) }
    }

    /// A Normal event about `object`.
    pub async fn normal<K: Resource<DynamicType = ()>>(&self, object: &K, reason: &str, action: &str, note: String) {
        self.publish(object, EventType::Normal, reason, action, note).await;
    }

    /// A Warning event about `object`.
    pub async fn warning<K: Resource<DynamicType = ()>>(&self, object: &K, reason: &str, action: &str, note: String) {
        self.publish(object, EventType::Warning, reason, action, note).await;
    }

    async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event =
            Event { type_, reason: reason.to_string(), note: Some(note), action: action.to_string(), secondary: None };
        if let Err(err) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(reason, error = %err, "cannot publish event");
        }
    }
}
