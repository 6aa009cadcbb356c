//! One bulk poll of Ironic for all hosts.
//!
//! baremetal-operator GETs every host's node on every reconcile and
//! requeues each host every few seconds while it moves (60 s when it rests),
//! so Ironic serves O(hosts) requests per interval. Here one task lists
//! every node with only the status fields (`GET /v1/nodes?fields=…`, 1000
//! nodes per page), keeps the result as a snapshot, and wakes the reconcile
//! of exactly the hosts whose node changed. Reconciles read the snapshot
//! instead of asking Ironic. The poll runs every few seconds while any node
//! is busy or a host waits for the outcome of a call it made, and once a
//! minute otherwise: in steady state Ironic sees one request per minute
//! (per thousand nodes), however many hosts there are.

use crate::host::connection::Provisioner;
use crate::host::machine::NodeView;
use crate::host::wake::{HostKey, Wakeups};
use crate::kit::backoff::after;
use ironic_client::NodeStatusSummary;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Whether two observations of a node differ in anything a reconcile acts on.
/// The lock holder (`reservation`) is left out: conductors take the lock for
/// their periodic tasks, which would wake hosts for nothing.
pub(super) fn differs(a: &NodeStatusSummary, b: &NodeStatusSummary) -> bool {
    a.uuid != b.uuid
        || a.provision_state != b.provision_state
        || a.target_provision_state != b.target_provision_state
        || a.power_state != b.power_state
        || a.target_power_state != b.target_power_state
        || a.last_error != b.last_error
        || a.maintenance != b.maintenance
        || a.maintenance_reason != b.maintenance_reason
        || a.fault != b.fault
        || a.provision_updated_at != b.provision_updated_at
}

/// The hosts whose node appeared, disappeared or changed between two polls.
pub(super) fn changed_hosts(
    old: &HashMap<HostKey, NodeStatusSummary>,
    new: &HashMap<HostKey, NodeStatusSummary>,
) -> Vec<HostKey> {
    let mut changed: Vec<HostKey> = new
        .iter()
        .filter(|(key, node)| old.get(*key).is_none_or(|before| differs(before, node)))
        .map(|(key, _)| key.clone())
        .chain(old.keys().filter(|key| !new.contains_key(*key)).cloned())
        .collect();
    changed.sort();
    changed
}

/// Whether a node is in the middle of a transition.
pub(super) fn is_busy(node: &NodeStatusSummary) -> bool {
    node.is_busy()
}

/// The nodes of one poll that belong to hosts, by host.
pub(super) fn index(
    nodes: Vec<NodeStatusSummary>,
    watched: impl Fn(&str) -> bool,
) -> HashMap<HostKey, NodeStatusSummary> {
    nodes
        .into_iter()
        .filter_map(|node| {
            let key = HostKey::from_node_name(node.name.as_deref()?)?;
            watched(&key.namespace).then_some((key, node))
        })
        .collect()
}

#[derive(Default)]
struct State {
    /// The last successful poll; `None` before the first.
    nodes: Option<HashMap<HostKey, NodeStatusSummary>>,
    /// Sequence number of the latest poll started.
    started: u64,
    /// Hosts that called Ironic, with the latest poll started at the time:
    /// they are woken once a poll that started later has completed.
    pending: HashMap<HostKey, u64>,
}

/// The poller and its snapshot.
pub(super) struct Poller {
    state: Mutex<State>,
    kick: Notify,
    wakeups: Arc<Wakeups>,
    fast: Duration,
    slow: Duration,
}

impl Poller {
    pub(super) fn new(wakeups: Arc<Wakeups>, fast: Duration, slow: Duration) -> Self {
        Self { state: Mutex::new(State::default()), kick: Notify::new(), wakeups, fast, slow }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node of `host` as last seen.
    pub(super) fn view(&self, host: &HostKey) -> NodeView {
        let state = self.lock();
        match &state.nodes {
            None => NodeView::Unknown,
            Some(nodes) => match nodes.get(host) {
                Some(node) => NodeView::Present(Box::new(node.clone())),
                None => NodeView::Missing,
            },
        }
    }

    /// Records that `host` just called Ironic: it is woken once a poll that
    /// started after the call has completed, and polling speeds up.
    pub(super) fn expect_change(&self, host: &HostKey) {
        {
            let mut state = self.lock();
            let started = state.started;
            state.pending.insert(host.clone(), started);
        }
        self.kick.notify_one();
    }

    /// Whether `host` still waits for a poll after its last call.
    pub(super) fn is_pending(&self, host: &HostKey) -> bool {
        self.lock().pending.contains_key(host)
    }

    /// Forgets a deleted host.
    pub(super) fn forget(&self, host: &HostKey) {
        self.lock().pending.remove(host);
    }

    /// Whether the next poll should come soon.
    fn urgent(&self) -> bool {
        let state = self.lock();
        !state.pending.is_empty() || state.nodes.as_ref().is_some_and(|nodes| nodes.values().any(is_busy))
    }

    /// Polls until `shutdown`. `after_poll` runs after every attempt with
    /// whether it succeeded (the metrics are synchronised there).
    pub(super) async fn run(&self, provisioner: &Provisioner, shutdown: CancellationToken, after_poll: impl Fn(bool)) {
        if !provisioner.configured() {
            tracing::warn!("no Ironic configured; the bulk poller is idle");
            shutdown.cancelled().await;
            return;
        }
        let mut failures: u32 = 0;
        loop {
            let started_at = Instant::now();
            let succeeded = self.poll_once(provisioner).await;
            after_poll(succeeded);
            failures = if succeeded { 0 } else { failures.saturating_add(1) };
            let interval = if failures > 0 {
                // Ironic is unreachable: retry quickly at first, then back off.
                self.fast.saturating_mul(2u32.saturating_pow(failures.min(5) - 1)).min(self.slow)
            } else if self.urgent() {
                self.fast
            } else {
                self.slow
            };
            let mut deadline = after(started_at, interval);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep_until(deadline) => break,
                    () = self.kick.notified() => {
                        // A host just acted: look again soon, but give Ironic
                        // a moment to get going.
                        deadline = deadline.min(after(Instant::now(), self.fast));
                    }
                }
            }
        }
    }

    /// One poll: list, diff, wake. Returns whether it succeeded.
    async fn poll_once(&self, provisioner: &Provisioner) -> bool {
        let seq = {
            let mut state = self.lock();
            state.started += 1;
            state.started
        };
        let client = match provisioner.client().await {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(error = %err, "cannot poll Ironic");
                return false;
            }
        };
        let nodes = match client.node_statuses().await {
            Ok(nodes) => nodes,
            Err(err) => {
                tracing::warn!(error = %err, "bulk poll of Ironic nodes failed");
                return false;
            }
        };
        let fresh = index(nodes, |ns| self.wakeups.watches(ns));
        let mut wake = Vec::new();
        {
            let mut state = self.lock();
            match &state.nodes {
                Some(old) => wake.extend(changed_hosts(old, &fresh)),
                // The first poll: every host with a node learns about it.
                None => wake.extend(fresh.keys().cloned()),
            }
            let done: Vec<HostKey> =
                state.pending.iter().filter(|(_, at)| **at < seq).map(|(key, _)| key.clone()).collect();
            for key in done {
                state.pending.remove(&key);
                wake.push(key);
            }
            state.nodes = Some(fresh);
        }
        wake.sort();
        wake.dedup();
        if !wake.is_empty() {
            tracing::debug!(hosts = wake.len(), "waking hosts whose node changed");
        }
        for key in &wake {
            self.wakeups.wake(key);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironic_client::{PowerState, ProvisionState};

    fn node(name: &str, state: &str) -> NodeStatusSummary {
        NodeStatusSummary {
            uuid: format!("uuid-{name}"),
            name: Some(name.to_string()),
            provision_state: Some(ProvisionState::from(state)),
            power_state: Some(PowerState::On),
            ..NodeStatusSummary::default()
        }
    }

    fn snapshot(nodes: &[NodeStatusSummary]) -> HashMap<HostKey, NodeStatusSummary> {
        index(nodes.to_vec(), |_| true)
    }

    #[test]
    fn only_changed_appeared_and_vanished_nodes_wake_their_host() {
        let old = snapshot(&[node("ns~a", "active"), node("ns~b", "active"), node("ns~c", "available")]);
        let mut b = node("ns~b", "active");
        b.power_state = Some(PowerState::Off);
        let new = snapshot(&[node("ns~a", "active"), b, node("ns~d", "enroll")]);
        assert_eq!(
            changed_hosts(&old, &new),
            vec![HostKey::new("ns", "b"), HostKey::new("ns", "c"), HostKey::new("ns", "d")]
        );
    }

    #[test]
    fn a_conductor_taking_the_lock_wakes_nobody() {
        let old = snapshot(&[node("ns~a", "active")]);
        let mut locked = node("ns~a", "active");
        locked.reservation = Some("conductor-1".into());
        assert!(changed_hosts(&old, &snapshot(&[locked])).is_empty());
    }

    #[test]
    fn a_repeated_failure_with_the_same_message_is_still_a_change() {
        let mut first = node("ns~a", "enroll");
        first.last_error = Some("401".into());
        first.provision_updated_at = Some("2026-01-01T00:00:00".into());
        let mut again = first.clone();
        again.provision_updated_at = Some("2026-01-01T00:01:00".into());
        assert_eq!(changed_hosts(&snapshot(&[first]), &snapshot(&[again])), vec![HostKey::new("ns", "a")]);
    }

    #[test]
    fn nodes_of_other_owners_and_namespaces_are_ignored() {
        let nodes = vec![node("standalone", "active"), node("ns~a", "active"), node("other~b", "active")];
        let indexed = index(nodes, |ns| ns == "ns");
        assert_eq!(indexed.keys().cloned().collect::<Vec<_>>(), vec![HostKey::new("ns", "a")]);
    }

    #[test]
    fn views_distinguish_unknown_missing_and_present() {
        let poller = Poller::new(Arc::new(Wakeups::default()), Duration::from_secs(1), Duration::from_secs(60));
        let key = HostKey::new("ns", "a");
        assert_eq!(poller.view(&key), NodeView::Unknown);
        poller.lock().nodes = Some(snapshot(&[node("ns~b", "active")]));
        assert_eq!(poller.view(&key), NodeView::Missing);
        poller.lock().nodes = Some(snapshot(&[node("ns~a", "active")]));
        assert!(matches!(poller.view(&key), NodeView::Present(n) if n.uuid == "uuid-ns~a"));
    }

    #[test]
    fn pending_hosts_make_polling_urgent() {
        let poller = Poller::new(Arc::new(Wakeups::default()), Duration::from_secs(1), Duration::from_secs(60));
        let key = HostKey::new("ns", "a");
        assert!(!poller.urgent());
        poller.expect_change(&key);
        assert!(poller.is_pending(&key) && poller.urgent());
        poller.forget(&key);
        assert!(!poller.urgent());
        let mut busy = node("ns~a", "deploying");
        busy.target_provision_state = Some(ProvisionState::Active);
        poller.lock().nodes = Some(snapshot(&[busy]));
        assert!(poller.urgent());
    }
}
