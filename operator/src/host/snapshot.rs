//! The poller's picture of the nodes that belong to hosts, kept from full
//! lists (which replace it) and deltas (which only add and change): pure, so
//! the rules for waking a host are tested without Ironic.

use crate::host::refresh::may_refresh;
use crate::host::wake::HostKey;
use ironic_client::{NodeStatusSummary, ProvisionState};
use std::collections::HashMap;

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

/// Whether Ironic is working on the node: a provision state Ironic moves on from by itself,
/// which every plan waits through, or a power change under way, which ends within a power
/// action (a host deciding during one would be refused by the node's lock, or wait). Its host
/// is woken when the node leaves, which is a change. The states that wait for an agent, the
/// failures and servicing (which the host's status shows) are not among them.
pub(super) fn working(node: &NodeStatusSummary) -> bool {
    use ProvisionState as P;
    let moving = matches!(
        node.provision_state,
        Some(
            P::Verifying
                | P::Inspecting
                | P::Cleaning
                | P::Deploying
                | P::Deleting
                | P::Adopting
                | P::Rescuing
                | P::Unrescuing
        )
    );
    node.target_power_state.is_some() || (node.target_provision_state.is_some() && moving)
}

/// Whether a change from `before` to `after` wakes the host. A node that went on working (or
/// started to) with nothing else a status shows changed (power, errors, maintenance, fault)
/// does not: its host would only decide to wait, at the cost of a reconcile.
fn wakes(before: &NodeStatusSummary, after: &NodeStatusSummary) -> bool {
    let shown_alike = before.uuid == after.uuid
        && before.power_state == after.power_state
        && before.last_error == after.last_error
        && before.maintenance == after.maintenance
        && before.maintenance_reason == after.maintenance_reason
        && before.fault == after.fault;
    differs(before, after) && !(working(after) && shown_alike)
}

/// The host a node belongs to, if its name is one of ours in a watched namespace.
fn owner(node: &NodeStatusSummary, watched: &impl Fn(&str) -> bool) -> Option<HostKey> {
    let key = HostKey::from_node_name(node.name.as_deref()?)?;
    watched(&key.namespace).then_some(key)
}

/// The nodes of hosts, by host, and each node's host by UUID (a delta names
/// nodes by what they are now; the UUID finds what they were).
#[derive(Default)]
pub(super) struct Snapshot {
    nodes: HashMap<HostKey, NodeStatusSummary>,
    hosts: HashMap<String, HostKey>,
    /// For the nodes whose last transitions refreshed nothing of their firmware
    /// ([`may_refresh`]), the `provision_updated_at` of the last that may have.
    refreshed: HashMap<HostKey, Option<String>>,
}

/// Carries what is known of the last firmware refresh of `key`'s node from `before` to `after`.
fn carry(
    refreshed: &mut HashMap<HostKey, Option<String>>,
    key: &HostKey,
    before: Option<&NodeStatusSummary>,
    after: &NodeStatusSummary,
) {
    // The time of the last refresh, when it is not the node's last transition.
    let kept = match before {
        Some(before) if !may_refresh(before, after) => {
            Some(refreshed.get(key).cloned().unwrap_or_else(|| before.provision_updated_at.clone()))
        }
        _ => None,
    };
    match kept {
        Some(at) if at != after.provision_updated_at => refreshed.insert(key.clone(), at),
        _ => refreshed.remove(key),
    };
}

impl Snapshot {
    /// The node of `host`.
    pub(super) fn get(&self, host: &HostKey) -> Option<&NodeStatusSummary> {
        self.nodes.get(host)
    }

    /// Whether `host` holds Ironic to no work a provisioning slot stands for: its node is gone,
    /// back in `enroll`, or resting in a failure state (whatever target it keeps), with no
    /// power change under way. A host Ironic works for, or one about to ask (its node
    /// `manageable`, `available` or `active`), never rests.
    pub(super) fn rests(&self, host: &HostKey) -> bool {
        self.nodes.get(host).is_none_or(|node| {
            let resting_state = node
                .provision_state
                .as_ref()
                .is_some_and(|state| *state == ProvisionState::Enroll || state.is_failure());
            resting_state && !node.is_busy()
        })
    }

    /// Whether any node is in the middle of a transition.
    pub(super) fn any_busy(&self) -> bool {
        self.nodes.values().any(NodeStatusSummary::is_busy)
    }

    /// The node of `host`, by UUID, and when Ironic may last have refreshed what it holds of
    /// its firmware: the `provision_updated_at` of the last transition that may have.
    pub(super) fn firmware_refreshed(&self, host: &HostKey) -> Option<(&str, Option<&str>)> {
        let node = self.nodes.get(host)?;
        let at = match self.refreshed.get(host) {
            Some(at) => at.as_deref(),
            None => node.provision_updated_at.as_deref(),
        };
        Some((node.uuid.as_str(), at))
    }

    /// Whether the node of `host` is [`working`].
    pub(super) fn working(&self, host: &HostKey) -> bool {
        self.nodes.get(host).is_some_and(working)
    }

    /// Replaces everything with a full list; returns the hosts whose node
    /// appeared, disappeared or changed in a way that [`wakes`] them.
    pub(super) fn replace(&mut self, nodes: Vec<NodeStatusSummary>, watched: impl Fn(&str) -> bool) -> Vec<HostKey> {
        let old = std::mem::take(&mut self.nodes);
        self.hosts.clear();
        let mut changed = Vec::new();
        for node in nodes {
            let Some(key) = owner(&node, &watched) else { continue };
            if old.get(&key).is_none_or(|before| wakes(before, &node)) {
                changed.push(key.clone());
            }
            carry(&mut self.refreshed, &key, old.get(&key), &node);
            self.hosts.insert(node.uuid.clone(), key.clone());
            self.nodes.insert(key, node);
        }
        self.refreshed.retain(|key, _| self.nodes.contains_key(key));
        changed.extend(old.into_keys().filter(|key| !self.nodes.contains_key(key)));
        changed.sort();
        changed.dedup();
        changed
    }

    /// Adds and changes the nodes of a delta; returns the hosts whose node
    /// appeared, moved to another name or changed in a way that [`wakes`] them. Nodes absent from a delta
    /// are unchanged, not gone.
    pub(super) fn merge(&mut self, nodes: Vec<NodeStatusSummary>, watched: impl Fn(&str) -> bool) -> Vec<HostKey> {
        let mut changed = Vec::new();
        for node in nodes {
            let key = owner(&node, &watched);
            if let Some(before) = self.hosts.get(&node.uuid).filter(|before| key.as_ref() != Some(*before)).cloned() {
                // Renamed away from the host it belonged to.
                self.hosts.remove(&node.uuid);
                self.nodes.remove(&before);
                self.refreshed.remove(&before);
                changed.push(before);
            }
            let Some(key) = key else { continue };
            if self.nodes.get(&key).is_none_or(|before| wakes(before, &node)) {
                changed.push(key.clone());
            }
            carry(&mut self.refreshed, &key, self.nodes.get(&key), &node);
            if let Some(replaced) = self.nodes.get(&key).filter(|before| before.uuid != node.uuid) {
                self.hosts.remove(&replaced.uuid);
            }
            self.hosts.insert(node.uuid.clone(), key.clone());
            self.nodes.insert(key, node);
        }
        changed.sort();
        changed.dedup();
        changed
    }

    /// Forgets the node of a deleted host: a delta never shows a node gone.
    pub(super) fn remove(&mut self, host: &HostKey) {
        if let Some(node) = self.nodes.remove(host) {
            self.hosts.remove(&node.uuid);
        }
        self.refreshed.remove(host);
    }
}

/// Nodes and snapshots for the tests of the snapshot and the poller.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use ironic_client::{PowerState, ProvisionState};

    /// A powered-on node named `name` in `state`.
    pub(in crate::host) fn node(name: &str, state: &str) -> NodeStatusSummary {
        NodeStatusSummary {
            uuid: format!("uuid-{name}"),
            name: Some(name.to_string()),
            provision_state: Some(ProvisionState::from(state)),
            power_state: Some(PowerState::On),
            ..NodeStatusSummary::default()
        }
    }

    /// `node` with Ironic moving it to `target`.
    pub(in crate::host) fn moving(name: &str, state: &str, target: &str) -> NodeStatusSummary {
        let mut node = node(name, state);
        node.target_provision_state = Some(ProvisionState::from(target));
        node
    }

    /// A snapshot of a full list of `nodes`, every namespace watched.
    pub(in crate::host) fn snapshot(nodes: &[NodeStatusSummary]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        snapshot.replace(nodes.to_vec(), |_| true);
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{moving, node, snapshot};
    use super::*;
    use ironic_client::{PowerState, ProvisionState};

    fn key(name: &str) -> HostKey {
        HostKey::new("ns", name)
    }

    #[test]
    fn a_full_list_wakes_only_changed_appeared_and_vanished_nodes() {
        let mut s = snapshot(&[node("ns~a", "active"), node("ns~b", "active"), node("ns~c", "available")]);
        let mut b = node("ns~b", "active");
        b.power_state = Some(PowerState::Off);
        let changed = s.replace(vec![node("ns~a", "active"), b, node("ns~d", "enroll")], |_| true);
        assert_eq!(changed, vec![key("b"), key("c"), key("d")]);
        assert!(s.get(&key("c")).is_none());
    }

    #[test]
    fn a_delta_changes_what_it_shows_and_keeps_the_rest() {
        let mut s = snapshot(&[node("ns~a", "active"), node("ns~b", "available")]);
        let changed =
            s.merge(vec![node("ns~a", "active"), node("ns~b", "deploying"), node("ns~c", "enroll")], |_| true);
        assert_eq!(changed, vec![key("b"), key("c")], "a node shown unchanged wakes nobody");
        assert!(s.get(&key("a")).is_some(), "a delta never removes");
        assert_eq!(s.get(&key("b")).and_then(|n| n.provision_state.clone()), Some(ProvisionState::from("deploying")));
    }

    #[test]
    fn a_renamed_node_leaves_its_old_host_in_a_delta() {
        let mut s = snapshot(&[node("ns~a", "active")]);
        let mut renamed = node("ns~a", "active");
        renamed.name = Some("someone-else".into());
        assert_eq!(s.merge(vec![renamed], |_| true), vec![key("a")]);
        assert!(s.get(&key("a")).is_none());
    }

    #[test]
    fn a_host_whose_node_was_replaced_keeps_only_the_new_one() {
        let mut s = snapshot(&[node("ns~a", "active")]);
        let mut new = node("ns~a", "enroll");
        new.uuid = "uuid-second".into();
        assert_eq!(s.merge(vec![new], |_| true), vec![key("a")]);
        assert_eq!(s.hosts.len(), 1, "the first node's UUID no longer names the host");
        s.remove(&key("a"));
        assert!(s.hosts.is_empty() && s.get(&key("a")).is_none());
    }

    #[test]
    fn a_node_going_on_working_wakes_nobody_until_it_shows_something_else_or_leaves() {
        let mut s = snapshot(&[node("ns~a", "manageable"), node("ns~b", "manageable")]);
        assert!(s.merge(vec![moving("ns~a", "cleaning", "available")], |_| true).is_empty(), "its host would wait");
        assert!(s.working(&key("a")));
        let mut off = moving("ns~a", "cleaning", "available");
        off.power_state = Some(PowerState::Off);
        assert_eq!(s.merge(vec![off], |_| true), vec![key("a")], "the host's status shows power");
        let mut failing = moving("ns~b", "inspecting", "manageable");
        failing.maintenance = true;
        assert_eq!(s.replace(vec![node("ns~a", "available"), failing], |_| true), vec![key("a"), key("b")]);
    }

    #[test]
    fn a_power_change_under_way_wakes_nobody_until_the_power_changed() {
        let mut s = snapshot(&[node("ns~a", "active")]);
        let mut rebooting = node("ns~a", "active");
        rebooting.target_power_state = Some(PowerState::from("rebooting"));
        assert!(s.merge(vec![rebooting.clone()], |_| true).is_empty());
        rebooting.power_state = Some(PowerState::Off);
        assert_eq!(s.merge(vec![rebooting], |_| true), vec![key("a")], "the host's status shows power");
        assert_eq!(s.merge(vec![node("ns~a", "active")], |_| true), vec![key("a")], "done");
    }

    #[test]
    fn failures_agent_waits_and_servicing_wake_their_hosts() {
        let mut s = snapshot(&[node("ns~a", "active"), node("ns~b", "active"), node("ns~c", "available")]);
        let moved = vec![
            moving("ns~a", "deploy failed", "active"),
            moving("ns~b", "servicing", "active"),
            moving("ns~c", "wait call-back", "active"),
        ];
        assert_eq!(s.merge(moved, |_| true), vec![key("a"), key("b"), key("c")]);
    }

    /// `node` in `state`, its provision state changed at `at`, without automated cleaning.
    fn at(name: &str, state: &str, at: &str) -> NodeStatusSummary {
        let mut node = node(name, state);
        node.provision_updated_at = Some(at.into());
        node.automated_clean = Some(false);
        node
    }

    fn refreshed(s: &Snapshot, host: &str) -> Option<String> {
        s.firmware_refreshed(&key(host)).and_then(|(_, at)| at.map(str::to_owned))
    }

    #[test]
    fn the_last_firmware_refresh_is_kept_through_provide_and_deploy_and_renewed_by_a_servicing() {
        let mut s = snapshot(&[at("ns~a", "manageable", "t1")]);
        assert_eq!(refreshed(&s, "a").as_deref(), Some("t1"), "verified: as the node shows");
        s.merge(vec![at("ns~a", "available", "t2")], |_| true);
        s.merge(vec![at("ns~a", "active", "t3")], |_| true);
        assert_eq!(refreshed(&s, "a").as_deref(), Some("t1"), "provide without cleaning and a deployment");
        s.replace(vec![at("ns~a", "active", "t3")], |_| true);
        assert_eq!(refreshed(&s, "a").as_deref(), Some("t1"), "a full list showing the same keeps it");
        s.merge(vec![at("ns~a", "servicing", "t4")], |_| true);
        assert_eq!(refreshed(&s, "a").as_deref(), Some("t4"), "servicing refreshes");
    }

    #[test]
    fn what_is_kept_of_a_node_goes_with_it() {
        let nodes =
            || vec![at("ns~a", "manageable", "t1"), at("ns~b", "manageable", "t1"), at("ns~c", "manageable", "t1")];
        let mut s = snapshot(&nodes());
        s.merge(["a", "b", "c"].map(|name| at(&format!("ns~{name}"), "available", "t2")).into(), |_| true);
        assert_eq!(s.refreshed.len(), 3);
        s.remove(&key("a"));
        let mut renamed = at("ns~b", "available", "t2");
        renamed.name = Some("someone-else".into());
        s.merge(vec![renamed], |_| true);
        assert!(refreshed(&s, "a").is_none() && refreshed(&s, "b").is_none());
        assert_eq!(s.refreshed.len(), 1, "a host deleted and a node renamed away keep nothing");
        let mut replaced = at("ns~c", "available", "t2");
        replaced.uuid = "uuid-second".into();
        s.merge(vec![replaced], |_| true);
        assert_eq!(refreshed(&s, "c").as_deref(), Some("t2"), "another node under the name: its own time");
        s.replace(vec![], |_| true);
        assert!(s.refreshed.is_empty(), "a full list without the node");
    }

    #[test]
    fn a_conductor_taking_the_lock_wakes_nobody() {
        let mut s = snapshot(&[node("ns~a", "active")]);
        let mut locked = node("ns~a", "active");
        locked.reservation = Some("conductor-1".into());
        assert!(s.replace(vec![locked.clone()], |_| true).is_empty());
        assert!(s.merge(vec![locked], |_| true).is_empty());
    }

    #[test]
    fn a_repeated_failure_with_the_same_message_is_still_a_change() {
        let mut first = node("ns~a", "enroll");
        first.last_error = Some("401".into());
        first.provision_updated_at = Some("2026-01-01T00:00:00".into());
        let mut again = first.clone();
        again.provision_updated_at = Some("2026-01-01T00:01:00".into());
        assert_eq!(snapshot(&[first]).merge(vec![again], |_| true), vec![key("a")]);
    }

    #[test]
    fn nodes_of_other_owners_and_namespaces_are_ignored() {
        let nodes = vec![node("standalone", "active"), node("ns~a", "active"), node("other~b", "active")];
        let mut s = Snapshot::default();
        assert_eq!(s.replace(nodes.clone(), |ns| ns == "ns"), vec![key("a")]);
        assert!(s.merge(nodes, |ns| ns == "ns").is_empty());
        assert_eq!(s.nodes.len(), 1);
    }
}
