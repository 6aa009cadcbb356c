//! The status a reconcile is drafting, and what has to happen around its write: the Events
//! to publish, the annotations it consumed, the slot it gives back, the HardwareData
//! inspection found. Nothing here writes; `write` does, once execution is done.

use crate::host::machine::NodeView;
use crate::host::status;
use crate::host::wake::HostKey;
use crate::kit::Notices;
use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, HardwareDetails, OperationalStatus, ProvisioningState};
use ironic_client::{PowerState, ProvisionState};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use std::sync::Arc;

/// A status being worked on.
pub(super) struct Draft {
    /// The host as this reconcile started from (and, after a write, as the write returned it).
    pub host: Arc<BareMetalHost>,
    pub key: HostKey,
    /// The status the host has.
    pub before: BareMetalHostStatus,
    pub status: BareMetalHostStatus,
    /// Events, published after the status write.
    pub notices: Notices,
    /// A failure was recorded now: Degraded's transition time is its backoff's anchor.
    pub failed_now: bool,
    /// Waiting for a provisioning slot.
    pub delayed: bool,
    /// Removed from Ironic by the detached annotation.
    pub detached: bool,
    /// A problem of the controller itself (no provisioner), as reason and message.
    pub problem: Option<(&'static str, String)>,
    /// The host left a busy state: its provisioning slot goes back after the write.
    pub release_slot: bool,
    /// One-shot annotations consumed, removed after the write.
    pub remove_annotations: Vec<&'static str>,
    /// What inspection found, for the host's HardwareData.
    pub hardware_data: Option<HardwareDetails>,
    /// The node is being serviced (the operational status says so).
    pub servicing: bool,
    /// What the step waits for before it can call Ironic (the host's deploy image), for the
    /// user: Progressing says so.
    pub waiting: Option<String>,
}

impl Draft {
    pub(super) fn new(host: Arc<BareMetalHost>, key: HostKey) -> Self {
        let before = host.status.clone().unwrap_or_default();
        let detached = before.operational_status == OperationalStatus::Detached;
        Self {
            status: before.clone(),
            before,
            host,
            key,
            notices: Notices::default(),
            failed_now: false,
            delayed: false,
            detached,
            problem: None,
            release_slot: false,
            remove_annotations: Vec::new(),
            hardware_data: None,
            servicing: false,
            waiting: None,
        }
    }

    /// The host was waiting for a slot before this reconcile.
    pub(super) fn was_delayed(&self) -> bool {
        self.before.operational_status == OperationalStatus::Delayed
    }

    /// Takes over what the node tells about the host: its ID, power, and that the
    /// credentials work.
    pub(super) fn observe(&mut self, node: &NodeView) {
        let NodeView::Present(node) = node else {
            return;
        };
        self.servicing = matches!(
            node.provision_state,
            Some(ProvisionState::Servicing | ProvisionState::ServiceWait | ProvisionState::ServiceHold)
        );
        let status = &mut self.status;
        status.provisioning.id = node.uuid.clone();
        if let Some(power) = &node.power_state {
            status.powered_on = *power == PowerState::On;
        }
        let verified = !matches!(node.provision_state, None | Some(ProvisionState::Enroll | ProvisionState::Verifying));
        if verified && status.tried_credentials.is_some() && status.good_credentials != status.tried_credentials {
            status.good_credentials = status.tried_credentials.clone();
        }
    }

    /// Derives the operational status and the conditions; true when the status then differs
    /// from the host's in anything but times, which is what warrants a write.
    ///
    /// While registering, the node's ID alone warrants none: registration's outcome (the state
    /// it leads to, or its error) follows within a poll or two and carries the ID, which costs
    /// one status write per host less. Nothing reads the ID back to find the node: the poll
    /// finds it by name, and a new node of that name is refused by Ironic.
    pub(super) fn settle(&mut self, now: Timestamp) -> bool {
        self.status.operational_status =
            status::operational_status(&self.status, self.detached, self.delayed, self.servicing);
        let problem = self.problem.as_ref().map(|(r, m)| (*r, m.clone()));
        let generation = self.host.meta().generation;
        status::set_conditions(&mut self.status, generation, problem, self.waiting.as_deref(), self.failed_now, now);
        if !status::differs(&self.before, &self.status) {
            return false;
        }
        let registering = |s: &BareMetalHostStatus| s.provisioning.state == ProvisioningState::Registering;
        if registering(&self.before) && registering(&self.status) {
            let mut without_id = self.status.clone();
            without_id.provisioning.id.clone_from(&self.before.provisioning.id);
            return status::differs(&self.before, &without_id);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;
    use ironic_client::NodeStatusSummary;

    /// A draft of a host whose status, in `state`, was written as settled.
    fn draft(state: ProvisioningState) -> Draft {
        let key = HostKey::new("ns", "h");
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        let mut written = Draft::new(Arc::new(host.clone()), key.clone());
        written.status.provisioning.state = state;
        written.settle(Timestamp::from_second(1_800_000_000).expect("time"));
        host.status = Some(written.status);
        Draft::new(Arc::new(host), key)
    }

    fn present(state: &str) -> NodeView {
        NodeView::Present(Box::new(NodeStatusSummary {
            uuid: "node-1".into(),
            provision_state: Some(state.into()),
            ..NodeStatusSummary::default()
        }))
    }

    #[test]
    fn the_node_id_alone_is_written_with_registrations_outcome_not_before() {
        let now = Timestamp::from_second(1_800_000_100).expect("time");
        let mut registering = draft(ProvisioningState::Registering);
        registering.observe(&present("verifying"));
        assert_eq!(registering.status.provisioning.id, "node-1", "drafted, to go with the next write");
        assert!(!registering.settle(now), "no write for the ID alone while registering");
        registering.status.error_count = 1;
        assert!(registering.settle(now), "anything else is written, the ID with it");

        let mut provisioned = draft(ProvisioningState::Provisioned);
        provisioned.observe(&present("active"));
        assert!(provisioned.settle(now), "a node registered again while provisioned is written at once");
    }
}
