//! The status a reconcile is drafting, and what has to happen around its write: the Events
//! to publish, the annotations it consumed, the slot it gives back, the HardwareData
//! inspection found. Nothing here writes; `write` does, once execution is done.

use crate::host::machine::NodeView;
use crate::host::status;
use crate::host::wake::HostKey;
use crate::kube::Notices;
use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, HardwareDetails, OperationalStatus};
use ironic_client::{PowerState, ProvisionState};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use std::sync::Arc;

/// A status being worked on.
pub struct Draft {
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
}

impl Draft {
    pub fn new(host: Arc<BareMetalHost>, key: HostKey) -> Self {
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
        }
    }

    /// The host was waiting for a slot before this reconcile.
    pub fn was_delayed(&self) -> bool {
        self.before.operational_status == OperationalStatus::Delayed
    }

    /// Takes over what the node tells about the host: its ID, power, and that the
    /// credentials work.
    pub fn observe(&mut self, node: &NodeView) {
        let NodeView::Present(node) = node else {
            return;
        };
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
    pub fn settle(&mut self, now: Timestamp) -> bool {
        self.status.operational_status = status::operational_status(&self.status, self.detached, self.delayed);
        let problem = self.problem.as_ref().map(|(r, m)| (*r, m.clone()));
        status::set_conditions(&mut self.status, self.host.meta().generation, problem, self.failed_now, now);
        status::differs(&self.before, &self.status)
    }
}
