//! Host identities and the channel that wakes a host's reconcile from
//! outside Kubernetes: the bulk poller (its node changed) and the capacity
//! limiter (a provisioning slot freed up). Each controller (one per watched
//! namespace) subscribes with its namespace and receives only its hosts.

use crds::baremetalhost::BareMetalHost;
use futures::Stream;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::fmt;
use std::sync::RwLock;
use tokio::sync::mpsc;

/// A host, by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct HostKey {
    pub namespace: String,
    pub name: String,
}

/// Separates namespace and host name in Ironic node names, as in
/// baremetal-operator (`~` cannot appear in either).
pub(super) const NODE_NAME_SEPARATOR: char = '~';

impl HostKey {
    pub(super) fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    pub(super) fn of(host: &BareMetalHost) -> Self {
        Self::new(host.namespace().unwrap_or_default(), host.name_any())
    }

    /// The Ironic node name, `<namespace>~<name>`.
    pub(super) fn node_name(&self) -> String {
        format!("{}{NODE_NAME_SEPARATOR}{}", self.namespace, self.name)
    }

    /// The host a node name belongs to, if it is one of ours.
    pub(super) fn from_node_name(node_name: &str) -> Option<Self> {
        let (namespace, name) = node_name.split_once(NODE_NAME_SEPARATOR)?;
        (!namespace.is_empty() && !name.is_empty() && !name.contains(NODE_NAME_SEPARATOR))
            .then(|| Self::new(namespace, name))
    }

    pub(super) fn object_ref(&self) -> ObjectRef<BareMetalHost> {
        ObjectRef::new(&self.name).within(&self.namespace)
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

type Subscriber = (Option<String>, mpsc::UnboundedSender<ObjectRef<BareMetalHost>>);

/// Why a host was woken, counted in `ferrometal_host_wakes_total`: what a provisioned host's
/// reconciles come from, beside its own events and requeues.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
pub(crate) enum Cause {
    /// The bulk poll saw its node change.
    Poll,
    /// A provisioning slot freed up.
    Slot,
    /// Its HostFirmwareSettings were read.
    Settings,
    /// Its HostFirmwareComponents were read.
    Components,
    /// Another writer changed it while its reconcile ran (the watch event was set aside until
    /// the reconcile's own writes had answered).
    Change,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    cause: Cause,
}

/// Fans wake-ups out to the controllers.
#[derive(Default)]
pub(super) struct Wakeups {
    subscribers: RwLock<Vec<Subscriber>>,
    counts: Family<CauseLabels, Counter>,
}

impl Wakeups {
    /// A stream of hosts to reconcile, for `Controller::reconcile_on`:
    /// those of `namespace`, or all with `None`.
    pub(super) fn subscribe(
        &self,
        namespace: Option<String>,
    ) -> impl Stream<Item = ObjectRef<BareMetalHost>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers.write().unwrap_or_else(|e| e.into_inner()).push((namespace, tx));
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
    }

    /// Wake-ups counted in the process's metrics, by cause: the same counters for every
    /// start of the host controller.
    pub(super) fn exported(metrics: &crate::metrics::Metrics) -> Self {
        let counts = metrics.registered(
            "host_wakes",
            "Host reconciles asked for, by cause: the poll, a freed slot, a firmware read, a change set aside",
            Family::default,
        );
        Self { counts, ..Self::default() }
    }

    /// Wakes the reconcile of `host`, for `cause`.
    pub(super) fn wake(&self, host: &HostKey, cause: Cause) {
        self.counts.get_or_create(&CauseLabels { cause }).inc();
        let subscribers = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        for (namespace, tx) in subscribers.iter() {
            if namespace.as_deref().is_none_or(|ns| ns == host.namespace) {
                // A closed channel means that controller stopped; nothing to do.
                let _ = tx.send(host.object_ref());
            }
        }
    }

    /// How many controllers subscribed; it only grows, so a change means a
    /// namespace may have started being watched.
    pub(super) fn scopes(&self) -> usize {
        self.subscribers.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether `namespace` is watched by any controller.
    pub(super) fn watches(&self, namespace: &str) -> bool {
        let subscribers = self.subscribers.read().unwrap_or_else(|e| e.into_inner());
        subscribers.iter().any(|(ns, _)| ns.as_deref().is_none_or(|ns| ns == namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn node_names_round_trip() {
        let key = HostKey::new("metal3", "worker-0");
        assert_eq!(key.node_name(), "metal3~worker-0");
        assert_eq!(HostKey::from_node_name("metal3~worker-0"), Some(key));
        assert_eq!(HostKey::from_node_name("standalone-node"), None);
        assert_eq!(HostKey::from_node_name("~x"), None);
        assert_eq!(HostKey::from_node_name("a~b~c"), None);
    }

    #[tokio::test]
    async fn wakeups_reach_the_controller_of_the_namespace() {
        let wakeups = Wakeups::default();
        let mut a = Box::pin(wakeups.subscribe(Some("a".into())));
        let mut all = Box::pin(wakeups.subscribe(None));
        wakeups.wake(&HostKey::new("b", "h1"), Cause::Poll);
        wakeups.wake(&HostKey::new("a", "h2"), Cause::Poll);
        assert_eq!(a.next().await.map(|r| r.name), Some("h2".to_string()));
        assert_eq!(all.next().await.map(|r| r.name), Some("h1".to_string()));
        assert_eq!(all.next().await.map(|r| r.name), Some("h2".to_string()));
        assert!(wakeups.watches("a") && wakeups.watches("zzz"));
    }

    #[test]
    fn a_controller_started_again_counts_its_wakes_on_the_same_exported_counter() {
        let metrics = crate::metrics::Metrics::new();
        for _ in 0..2 {
            Wakeups::exported(&metrics).wake(&HostKey::new("ns", "h"), Cause::Poll);
        }
        let text = metrics.encode();
        assert_eq!(text.matches("# TYPE ferrometal_host_wakes counter").count(), 1, "{text}");
        assert!(text.contains("ferrometal_host_wakes_total{cause=\"Poll\"} 2"), "{text}");
    }
}
