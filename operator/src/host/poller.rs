//! The bulk poll of Ironic for all hosts.
//!
//! baremetal-operator GETs every host's node on every reconcile and
//! requeues each host every few seconds while it moves (60 s when it rests),
//! so Ironic serves O(hosts) requests per interval. Here one task watches
//! every node's status fields (`GET /v1/nodes?fields=…`), keeps them as a
//! snapshot, and wakes the reconcile of exactly the hosts whose node changed.
//! Reconciles read the snapshot instead of asking Ironic.
//!
//! Most polls ask only for the nodes written since the last one
//! (`ironic_client::ChangeCursor`): what a poll costs Ironic follows what
//! moved, not how many nodes there are. A full list comes first, every
//! [`FULL_EVERY`], whenever a host created a node it did not write after or
//! removed one (a delta shows neither a node never written since its
//! creation nor one gone), when a
//! namespace starts being watched, after a failed poll (Ironic may have
//! restarted without its database), when the endpoint changes, for a host
//! whose call found its node gone, and whenever the client finds a delta
//! unsafe (`ironic_client::ChangeCursor`: the node written last deleted, a
//! lost database, a clock ahead). The poll runs every few seconds while any
//! node is busy or a host waits for the outcome of a call it made, and once a
//! minute otherwise, never more often than [`POLL_SHARE`] times what the last
//! poll took: a slow Ironic is not asked faster than it answers.

use crate::host::connection::Provisioner;
use crate::host::machine::NodeView;
use crate::host::snapshot::Snapshot;
use crate::host::wake::{Cause, HostKey, Wakeups};
use crate::kit::backoff::after;
use ironic_client::{ChangeCursor, StatusList};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often a full list catches what deltas cannot show: nodes deleted or
/// created outside the operator, and changes written more than
/// `ironic_client::CHANGE_MARGIN` out of order.
pub(super) const FULL_EVERY: Duration = ironic_client::DEFAULT_FULL_EVERY;
/// The longest a reconcile waits for the first poll to end. A full list of 5000 nodes took
/// 2 s here; an Ironic that drops packets ends the poll only at the client's timeout (30 s by
/// default), and a host must not wait that long to report what needs no Ironic. Past it, the
/// host decides without the nodes, and the first poll wakes it.
const FIRST_LOOK: Duration = Duration::from_secs(10);
/// The poller waits at least this many times what its last poll took before
/// the next, so it keeps at most a share of one Ironic API worker busy.
const POLL_SHARE: u32 = 4;

/// The interval before the next poll: `wanted`, or longer when the last poll
/// took more than its share.
pub(super) fn paced(wanted: Duration, took: Duration) -> Duration {
    wanted.max(took.saturating_mul(POLL_SHARE))
}

/// Where the next look starts, and the Ironic it was looking at.
type Cursor = (ChangeCursor, Option<String>);

/// What a host waits for after calling Ironic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Look {
    /// Any poll that started after the call.
    Changes,
    /// A full list that started after the call: the call may have created a
    /// node it did not write after, or removed one.
    Full,
}

/// Takes out of `pending` the hosts a completed poll (sequence `seq`, full or not) answers:
/// those that called before it started, and waited for any poll or this was a full list.
fn settle(pending: &mut HashMap<HostKey, (u64, Look)>, seq: u64, full: bool) -> Vec<HostKey> {
    let done: Vec<HostKey> = pending
        .iter()
        .filter(|(_, (at, look))| *at < seq && (full || *look == Look::Changes))
        .map(|(key, _)| key.clone())
        .collect();
    for key in &done {
        pending.remove(key);
    }
    done
}

#[derive(Default)]
struct State {
    /// What the polls showed; `None` before the first succeeded.
    nodes: Option<Snapshot>,
    /// Sequence number of the latest poll started.
    started: u64,
    /// Hosts that called Ironic, with the latest poll started at the time and
    /// what they wait for: they are woken once such a poll that started later
    /// has completed.
    pending: HashMap<HostKey, (u64, Look)>,
    /// Pending hosts whose reconcile came and put its work off until the poll: the poll that
    /// answers wakes them whatever it shows.
    put_off: HashSet<HostKey>,
    /// Hosts whose reconcile looked before the first poll completed, and so decided on
    /// nothing: the first poll wakes them whatever it shows, and only them (a host reconciled
    /// later saw the poll's nodes already). Empty from then on.
    blind: HashSet<HostKey>,
    /// How many scopes were watched at the start of the last full list.
    scopes_listed: usize,
}

impl State {
    /// Takes in the list of poll `seq` (started with `scopes` watched); returns the hosts to
    /// wake: those whose node changed, and those the poll answers unless their node is
    /// [`working`](crate::host::snapshot::working) (the host would only wait, and is woken when
    /// the node leaves).
    fn take(&mut self, list: StatusList, seq: u64, scopes: usize, watched: impl Fn(&str) -> bool) -> Vec<HostKey> {
        let first = self.nodes.is_none();
        let snapshot = self.nodes.get_or_insert_with(Snapshot::default);
        let was_full = list.is_full();
        let mut wake = match list {
            StatusList::Full(nodes) => snapshot.replace(nodes, watched),
            StatusList::Changed(nodes) => snapshot.merge(nodes, watched),
        };
        if first {
            // Every node is new to the first poll, but only the hosts that looked before it
            // have anything to learn from it.
            wake = std::mem::take(&mut self.blind).into_iter().collect();
        }
        let answered = settle(&mut self.pending, seq, was_full);
        let put_off = &mut self.put_off;
        wake.extend(answered.into_iter().filter(|key| put_off.remove(key) || !snapshot.working(key)));
        if was_full {
            self.scopes_listed = scopes;
        }
        wake.sort();
        wake.dedup();
        wake
    }
}

/// The poller and its snapshot.
pub(super) struct Poller {
    state: Mutex<State>,
    kick: Notify,
    /// Whether the first poll ended (or there is no Ironic to poll): reconciles wait for it.
    first: watch::Sender<bool>,
    wakeups: Arc<Wakeups>,
    fast: Duration,
    slow: Duration,
    /// The shards whose nodes are listed; empty: every node.
    shards: Vec<String>,
}

impl Poller {
    pub(super) fn new(wakeups: Arc<Wakeups>, fast: Duration, slow: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            kick: Notify::new(),
            first: watch::Sender::new(false),
            wakeups,
            fast,
            slow,
            shards: Vec::new(),
        }
    }

    /// Waits until the first poll ended, at most [`FIRST_LOOK`]. A controller that just
    /// started reconciles every host at once, each in a moment while the first poll lists
    /// every node; a host that looked before the poll ended would decide nothing and be
    /// reconciled again when it did.
    pub(super) async fn first_look(&self) {
        let mut ended = self.first.subscribe();
        // Past the wait the host decides on what it has; the first poll will wake it.
        let _ = tokio::time::timeout(FIRST_LOOK, ended.wait_for(|ended| *ended)).await;
    }

    /// Lists only the nodes of `shards`: those of the hosts this replica serves.
    #[must_use]
    pub(super) fn of_shards(self, shards: Vec<String>) -> Self {
        Self { shards, ..self }
    }

    /// A cursor that starts with a full list of this poller's nodes, at `endpoint`.
    fn cursor(&self, endpoint: Option<String>) -> Cursor {
        (ChangeCursor::new(FULL_EVERY).with_shards(self.shards.clone()), endpoint)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node of `host` as last seen; before the first poll, `Unknown`, and the first poll
    /// wakes the host.
    pub(super) fn view(&self, host: &HostKey) -> NodeView {
        let mut state = self.lock();
        match &state.nodes {
            None => {
                state.blind.insert(host.clone());
                NodeView::Unknown
            }
            Some(snapshot) => match snapshot.get(host) {
                Some(node) => NodeView::Present(Box::new(node.clone())),
                None => NodeView::Missing,
            },
        }
    }

    /// The UUID of `host`'s node and when Ironic may last have refreshed what it holds of its
    /// firmware (`Snapshot::firmware_refreshed`).
    pub(super) fn firmware_refreshed(&self, host: &HostKey) -> Option<(String, Option<String>)> {
        let state = self.lock();
        let (uuid, at) = state.nodes.as_ref()?.firmware_refreshed(host)?;
        Some((uuid.to_owned(), at.map(str::to_owned)))
    }

    /// Of `hosts`, those the last poll shows resting ([`Snapshot::rests`]): their provisioning
    /// slots are free for others while they rest. None before a full list covered every
    /// namespace watched, and never a host waiting for a look after its last call, which that
    /// poll may predate.
    pub(super) fn resting<'a>(&self, hosts: impl IntoIterator<Item = &'a HostKey>) -> HashSet<HostKey> {
        let state = self.lock();
        // Until a full list covered every namespace watched, a node missing may be unlisted.
        let Some(snapshot) = state.nodes.as_ref().filter(|_| state.scopes_listed == self.wakeups.scopes()) else {
            return HashSet::new();
        };
        hosts.into_iter().filter(|key| !state.pending.contains_key(*key) && snapshot.rests(key)).cloned().collect()
    }

    /// Records that `host` just called Ironic and waits for `look`: it is woken once such a
    /// poll, started after the call, has completed; meanwhile polling speeds up.
    pub(super) fn expect(&self, host: &HostKey, look: Look) {
        {
            let mut state = self.lock();
            let started = state.started;
            let entry = state.pending.entry(host.clone()).or_insert((started, look));
            // A host that waits for a full list keeps waiting for one.
            *entry = (started, if entry.1 == Look::Full { Look::Full } else { look });
        }
        self.kick.notify_one();
    }

    /// Whether `host` still waits for a poll after its last call.
    #[cfg(test)]
    fn is_pending(&self, host: &HostKey) -> bool {
        self.lock().pending.contains_key(host)
    }

    /// Whether `host` still waits for a poll after its last call; if so, its reconcile puts
    /// its work off until then, and the poll that answers wakes it even if its node is working
    /// (whatever woke it, a change of its spec or a freed slot, is not lost).
    pub(super) fn put_off(&self, host: &HostKey) -> bool {
        let mut state = self.lock();
        let pending = state.pending.contains_key(host);
        if pending {
            state.put_off.insert(host.clone());
        }
        pending
    }

    /// Forgets a deleted host, and its node: a delta never shows a node gone.
    pub(super) fn forget(&self, host: &HostKey) {
        let mut state = self.lock();
        state.pending.remove(host);
        state.put_off.remove(host);
        state.blind.remove(host);
        if let Some(snapshot) = state.nodes.as_mut() {
            snapshot.remove(host);
        }
    }

    /// Whether the next poll should come soon.
    fn urgent(&self) -> bool {
        let state = self.lock();
        !state.pending.is_empty() || state.nodes.as_ref().is_some_and(Snapshot::any_busy)
    }

    /// Whether the next poll must list every node.
    fn wants_full(&self) -> bool {
        let state = self.lock();
        state.nodes.is_none()
            || state.scopes_listed != self.wakeups.scopes()
            || state.pending.values().any(|(_, look)| *look == Look::Full)
    }

    /// Polls until `shutdown`. `after_poll` runs after every attempt with
    /// whether it succeeded (the metrics are synchronised there).
    pub(super) async fn run(&self, provisioner: &Provisioner, shutdown: CancellationToken, after_poll: impl Fn(bool)) {
        if !provisioner.configured() {
            tracing::warn!("no Ironic configured; the bulk poller is idle");
            self.first.send_replace(true);
            shutdown.cancelled().await;
            return;
        }
        let mut failures: u32 = 0;
        let mut cursor = self.cursor(None);
        loop {
            let started_at = Instant::now();
            // After a failed poll Ironic may have restarted and lost its nodes: list them all.
            let succeeded = self.poll_once(provisioner, &mut cursor, failures > 0).await;
            // Ended, whether or not it succeeded: an unreachable Ironic holds no reconcile up.
            self.first.send_replace(true);
            after_poll(succeeded);
            failures = if succeeded { 0 } else { failures.saturating_add(1) };
            let interval = if failures > 0 {
                // Ironic is unreachable: retry quickly at first, then back off.
                self.fast.saturating_mul(2u32.saturating_pow(failures.min(5) - 1)).min(self.slow)
            } else if self.urgent() {
                paced(self.fast, started_at.elapsed())
            } else {
                paced(self.slow, started_at.elapsed())
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

    /// One poll: list (every node or the changed ones), diff, wake. Returns whether it
    /// succeeded.
    async fn poll_once(&self, provisioner: &Provisioner, cursor: &mut Cursor, full: bool) -> bool {
        let full = full || self.wants_full();
        let (seq, scopes) = {
            let mut state = self.lock();
            state.started += 1;
            (state.started, self.wakeups.scopes())
        };
        let client = match provisioner.client().await {
            Ok(client) => client,
            Err(err) => {
                tracing::warn!(error = %err, "cannot poll Ironic");
                return false;
            }
        };
        // Another Ironic (the resource's endpoint moved): what was seen of the last one says
        // nothing of this one's nodes.
        let endpoint = client.endpoint().as_str();
        if cursor.1.as_deref() != Some(endpoint) {
            *cursor = self.cursor(Some(endpoint.to_owned()));
        }
        let cursor = &mut cursor.0;
        let list = match client.node_status_changes(cursor, full).await {
            Ok(list) => list,
            Err(err) => {
                tracing::warn!(error = %err, "bulk poll of Ironic nodes failed");
                return false;
            }
        };
        let watched = |ns: &str| self.wakeups.watches(ns);
        let wake = self.lock().take(list, seq, scopes, watched);
        if !wake.is_empty() {
            tracing::debug!(hosts = wake.len(), "waking hosts whose node changed");
        }
        for key in &wake {
            self.wakeups.wake(key, Cause::Poll);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::snapshot::fixtures::{moving, node, snapshot};
    use ironic_client::{ProvisionState, StatusList};

    fn poller() -> Poller {
        Poller::new(Arc::new(Wakeups::default()), Duration::from_secs(1), Duration::from_secs(60))
    }

    #[test]
    fn views_distinguish_unknown_missing_and_present() {
        let poller = poller();
        let key = HostKey::new("ns", "a");
        assert_eq!(poller.view(&key), NodeView::Unknown);
        poller.lock().nodes = Some(snapshot(&[node("ns~b", "active")]));
        assert_eq!(poller.view(&key), NodeView::Missing);
        poller.lock().nodes = Some(snapshot(&[node("ns~a", "active")]));
        assert!(matches!(poller.view(&key), NodeView::Present(n) if n.uuid == "uuid-ns~a"));
    }

    #[test]
    fn hosts_rest_when_their_node_is_gone_in_enroll_or_failed_and_not_while_they_wait_for_a_look() {
        let poller = poller();
        let keys: Vec<HostKey> = ["gone", "enroll", "failed", "deploying", "available", "called"]
            .iter()
            .map(|name| HostKey::new("ns", *name))
            .collect();
        assert!(poller.resting(&keys).is_empty(), "nothing is known before the first poll");
        poller.lock().nodes = Some(snapshot(&[
            node("ns~enroll", "enroll"),
            moving("ns~failed", "deploy failed", "active"),
            moving("ns~deploying", "deploying", "active"),
            node("ns~available", "available"),
            node("ns~called", "clean failed"),
        ]));
        poller.expect(&keys[5], Look::Changes);
        let _scope = poller.wakeups.subscribe(Some("ns".into()));
        assert!(poller.resting(&keys).is_empty(), "no full list of the namespace yet: a node missing may be unlisted");
        poller.lock().scopes_listed = 1;
        let resting = poller.resting(&keys);
        let names: std::collections::BTreeSet<&str> = resting.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["enroll", "failed", "gone"].into_iter().collect());
    }

    #[test]
    fn the_first_poll_wakes_the_hosts_that_looked_before_it_and_no_other() {
        let poller = poller();
        let (early, without_node, late) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"), HostKey::new("ns", "c"));
        let (deleted, called) = (HostKey::new("ns", "d"), HostKey::new("ns", "e"));
        assert_eq!(poller.view(&early), NodeView::Unknown);
        assert_eq!(poller.view(&without_node), NodeView::Unknown);
        assert_eq!(poller.view(&deleted), NodeView::Unknown);
        poller.forget(&deleted);
        poller.expect(&called, Look::Changes);
        let first = StatusList::Full(vec![node("ns~a", "active"), node("ns~c", "active"), node("ns~e", "active")]);
        let mut woken = poller.lock().take(first, 1, 0, |_| true);
        woken.sort();
        assert_eq!(woken, vec![early, without_node, called], "c is new to the poll but never looked; d is gone");
        assert!(matches!(poller.view(&late), NodeView::Present(_)), "a later look sees the poll");
        let again = StatusList::Full(vec![node("ns~a", "active"), node("ns~c", "active"), node("ns~e", "active")]);
        assert!(poller.lock().take(again, 2, 0, |_| true).is_empty(), "nothing changed since");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_waits_for_the_first_poll_to_end_but_no_longer_than_the_first_look() {
        let ended = poller();
        let waiting = tokio::time::timeout(Duration::from_secs(1), ended.first_look()).await;
        assert!(waiting.is_err(), "no poll has ended yet");
        ended.first.send_replace(true);
        let after = tokio::time::timeout(Duration::from_millis(1), ended.first_look()).await;
        assert!(after.is_ok(), "the first poll ended");
        let never = poller();
        let started = Instant::now();
        never.first_look().await;
        let waited = started.elapsed();
        assert!(
            waited >= FIRST_LOOK && waited < FIRST_LOOK * 2,
            "an Ironic that never answers holds a host {waited:?}"
        );
    }

    #[test]
    fn pending_hosts_make_polling_urgent() {
        let poller = poller();
        let key = HostKey::new("ns", "a");
        assert!(!poller.urgent());
        poller.expect(&key, Look::Changes);
        assert!(poller.is_pending(&key) && poller.urgent());
        poller.forget(&key);
        assert!(!poller.urgent());
        let mut busy = node("ns~a", "deploying");
        busy.target_provision_state = Some(ProvisionState::Active);
        poller.lock().nodes = Some(snapshot(&[busy]));
        assert!(poller.urgent());
    }

    #[test]
    fn the_first_poll_a_new_scope_and_a_host_that_made_or_removed_a_node_ask_for_a_full_list() {
        let poller = poller();
        assert!(poller.wants_full(), "nothing seen yet");
        poller.lock().nodes = Some(snapshot(&[]));
        assert!(!poller.wants_full());
        let _scope = poller.wakeups.subscribe(Some("ns".into()));
        assert!(poller.wants_full(), "a namespace started being watched");
        poller.lock().scopes_listed = 1;
        let key = HostKey::new("ns", "a");
        poller.expect(&key, Look::Changes);
        assert!(!poller.wants_full(), "a state change shows in a delta");
        poller.expect(&key, Look::Full);
        poller.expect(&key, Look::Changes);
        assert!(poller.wants_full(), "a later call does not take back the wait for a full list");
    }

    #[test]
    fn a_delta_answers_hosts_that_wait_for_any_poll_and_a_full_list_answers_all() {
        let (a, b, c) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"), HostKey::new("ns", "c"));
        let mut pending: HashMap<HostKey, (u64, Look)> =
            [(a.clone(), (1, Look::Changes)), (b.clone(), (1, Look::Full)), (c.clone(), (2, Look::Changes))].into();
        assert_eq!(settle(&mut pending, 2, false), vec![a], "c called after the poll started");
        assert!(pending.contains_key(&b), "a delta does not show the node b made or removed");
        let mut done = settle(&mut pending, 3, true);
        done.sort();
        assert_eq!(done, vec![b, c]);
        assert!(pending.is_empty());
    }

    #[test]
    fn a_host_that_called_ironic_is_not_woken_by_a_poll_showing_its_node_working_but_once_it_leaves() {
        let poller = poller();
        let key = HostKey::new("ns", "a");
        poller.lock().nodes = Some(snapshot(&[node("ns~a", "available")]));
        poller.expect(&key, Look::Changes);
        let deploying = StatusList::Changed(vec![moving("ns~a", "deploying", "active")]);
        assert!(poller.lock().take(deploying, 1, 0, |_| true).is_empty(), "it would only wait");
        assert!(!poller.is_pending(&key), "the poll answered its call");
        let active = StatusList::Changed(vec![node("ns~a", "active")]);
        assert_eq!(poller.lock().take(active, 2, 0, |_| true), vec![key]);
    }

    #[test]
    fn a_host_that_put_work_off_until_the_poll_is_woken_by_it_even_with_its_node_working() {
        let poller = poller();
        let key = HostKey::new("ns", "a");
        poller.lock().nodes = Some(snapshot(&[node("ns~a", "available")]));
        poller.expect(&key, Look::Changes);
        assert!(poller.put_off(&key), "its spec changed while it waited for the poll");
        let deploying = StatusList::Changed(vec![moving("ns~a", "deploying", "active")]);
        assert_eq!(poller.lock().take(deploying, 1, 0, |_| true), vec![key.clone()]);
        assert!(!poller.put_off(&key), "answered: nothing to put off any more");
    }

    #[test]
    fn a_host_that_called_ironic_is_woken_by_a_poll_showing_its_node_waiting_for_an_agent() {
        let poller = poller();
        let key = HostKey::new("ns", "a");
        poller.lock().nodes = Some(snapshot(&[moving("ns~a", "deploying", "active")]));
        poller.expect(&key, Look::Changes);
        let waiting = StatusList::Changed(vec![moving("ns~a", "wait call-back", "active")]);
        assert_eq!(poller.lock().take(waiting, 1, 0, |_| true), vec![key], "a deprovisioning host tears it down");
    }

    #[test]
    fn forgetting_a_host_drops_its_node_which_no_delta_would() {
        let poller = poller();
        poller.lock().nodes = Some(snapshot(&[node("ns~a", "active")]));
        let key = HostKey::new("ns", "a");
        poller.forget(&key);
        assert_eq!(poller.view(&key), NodeView::Missing);
    }

    #[test]
    fn a_slow_poll_spaces_the_next_out() {
        assert_eq!(paced(Duration::from_secs(3), Duration::from_millis(200)), Duration::from_secs(3));
        assert_eq!(paced(Duration::from_secs(3), Duration::from_secs(2)), Duration::from_secs(8));
        assert_eq!(paced(Duration::from_secs(3), Duration::MAX), Duration::MAX);
    }
}
