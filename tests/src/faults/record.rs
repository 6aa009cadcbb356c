//! What the recorder saw, per machine: every Ironic provision state of every node of the
//! machine and every BareMetalHost provisioning state, in order, with when each was first seen;
//! and every NodeSet service Job of the namespace ([`super::jobs`]).

use super::jobs::ServiceJob;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One Ironic node of a machine (a machine has more than one only after Ironic lost its
/// database, or when something created a duplicate).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTrack {
    pub uuid: String,
    /// Provision states in the order they were seen, each once per stay.
    pub states: Vec<(Duration, String)>,
}

/// Everything seen of one machine (one BareMetalHost and the Ironic nodes named after it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineRecord {
    pub nodes: Vec<NodeTrack>,
    /// BareMetalHost `status.provisioning.state`, each once per stay.
    pub host_states: Vec<(Duration, String)>,
    /// The most Ironic nodes that carried the machine's name in one listing.
    pub most_nodes_at_once: usize,
    /// The host carried a finalizer at some point.
    pub had_finalizer: bool,
    /// The host was seen without a finalizer after having one, while not being deleted.
    pub lost_finalizer: bool,
    /// The host was seen with a deletion timestamp.
    pub deleting: bool,
}

impl MachineRecord {
    /// Records one listing's view of the node `uuid` in `state`.
    pub fn saw_node(&mut self, at: Duration, uuid: &str, state: &str) {
        let track = match self.nodes.iter_mut().position(|n| n.uuid == uuid) {
            Some(i) => &mut self.nodes[i],
            None => {
                self.nodes.push(NodeTrack { uuid: uuid.to_string(), states: Vec::new() });
                let last = self.nodes.len() - 1;
                &mut self.nodes[last]
            }
        };
        if track.states.last().map(|(_, s)| s.as_str()) != Some(state) {
            track.states.push((at, state.to_string()));
        }
    }

    /// Records the host's provisioning state and finalizers.
    pub fn saw_host(&mut self, at: Duration, state: &str, has_finalizer: bool, deleting: bool) {
        if self.host_states.last().map(|(_, s)| s.as_str()) != Some(state) {
            self.host_states.push((at, state.to_string()));
        }
        self.deleting |= deleting;
        if has_finalizer {
            self.had_finalizer = true;
        } else if self.had_finalizer && !deleting {
            self.lost_finalizer = true;
        }
    }

    /// The host's last provisioning state seen.
    pub fn host_state(&self) -> &str {
        self.host_states.last().map(|(_, s)| s.as_str()).unwrap_or_default()
    }
}

/// The whole record of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// By BareMetalHost name.
    pub machines: BTreeMap<String, MachineRecord>,
    /// UUIDs of nodes named in the watched namespace's form whose host was never listed.
    pub orphans: BTreeSet<String>,
    /// Provision-state changes of nodes from Ironic's own log (`None` without a log), by
    /// node UUID: what polling can miss between two listings.
    pub transitions: Option<BTreeMap<String, Vec<Transition>>>,
    pub polls: u64,
    /// Listings that failed (Ironic or the apiserver down: expected during faults).
    pub failed_polls: u64,
    /// NodeSet service Jobs, by uid.
    pub jobs: BTreeMap<String, ServiceJob>,
    /// Watch events of Jobs so far: the order of what the watch showed.
    pub job_events: u64,
    /// Times the Job watch listed again (its first listing included): a Job created and
    /// deleted while the watch was broken is not recorded.
    pub job_relists: u64,
    /// NodeSetServices seen with `runOnce: true` at any listing.
    pub run_once: BTreeSet<String>,
}

/// One provision-state change, as Ironic's conductor logs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: String,
    pub to: String,
}

impl Record {
    /// The machine of `uuid`, if any node of a machine had it.
    pub fn machine_of(&self, uuid: &str) -> Option<&str> {
        self.machines.iter().find(|(_, m)| m.nodes.iter().any(|n| n.uuid == uuid)).map(|(name, _)| name.as_str())
    }
}
