//! The per-node summary a poller needs, fetched for all nodes at once.

use serde::Deserialize;

use super::{PowerState, ProvisionState, null_as_default};

/// The fields [`NodeStatusSummary`] is built from; the `fields` of the bulk
/// status query. Ironic does not accept `updated_at` there, so
/// `provision_updated_at` marks change instead. Besides the status, one small
/// setting a client compares before acting (`automated_clean`, a boolean) rides
/// along, so that acting needs no read of its own; the large dictionaries
/// (`instance_info`, `properties`, `driver_info`) stay out, since every poll
/// would carry them for every node.
pub const STATUS_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "provision_state",
    "target_provision_state",
    "power_state",
    "target_power_state",
    "last_error",
    "maintenance",
    "maintenance_reason",
    "fault",
    "reservation",
    "provision_updated_at",
    "automated_clean",
];

/// What a poller needs to know about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NodeStatusSummary {
    /// The node's UUID.
    pub uuid: String,
    /// The node's name.
    pub name: Option<String>,
    /// The provision state.
    pub provision_state: Option<ProvisionState>,
    /// The target of an ongoing transition; `None` when idle.
    pub target_provision_state: Option<ProvisionState>,
    /// The power state; `None` until known.
    pub power_state: Option<PowerState>,
    /// The target of an ongoing power change; `None` when idle.
    pub target_power_state: Option<PowerState>,
    /// The error of the last failed operation.
    pub last_error: Option<String>,
    /// Whether the node is in maintenance.
    #[serde(deserialize_with = "null_as_default")]
    pub maintenance: bool,
    /// Why it is in maintenance.
    pub maintenance_reason: Option<String>,
    /// Why Ironic put it in maintenance itself.
    pub fault: Option<String>,
    /// The conductor holding its lock.
    pub reservation: Option<String>,
    /// When the provision state last changed (RFC 3339).
    pub provision_updated_at: Option<String>,
    /// Whether `provide` and undeploy clean automatically; `None` when the node
    /// follows the conductor's `[conductor]automated_clean`.
    pub automated_clean: Option<bool>,
}

impl NodeStatusSummary {
    /// Whether a provision or power transition is under way.
    pub fn is_busy(&self) -> bool {
        self.is_moving() || self.target_power_state.is_some()
    }

    /// Whether Ironic is moving the node to its provision target. A failure
    /// state keeps its target (`deploy failed` → `active`, Ironic's state
    /// machine) yet rests until it is asked again, so it is not moving.
    pub fn is_moving(&self) -> bool {
        self.target_provision_state.is_some() && !self.provision_state.as_ref().is_some_and(ProvisionState::is_failure)
    }

    /// Whether the node's last transition failed: a failure state, or a
    /// fall back to `enroll` with `last_error` set (a failed `manage`).
    pub fn has_failed(&self) -> bool {
        match &self.provision_state {
            Some(state) if state.is_failure() => true,
            Some(ProvisionState::Enroll) => self.target_provision_state.is_none() && self.last_error.is_some(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(state: ProvisionState, target: Option<ProvisionState>) -> NodeStatusSummary {
        NodeStatusSummary { provision_state: Some(state), target_provision_state: target, ..Default::default() }
    }

    #[test]
    fn a_node_deploying_is_moving_and_busy() {
        let n = node(ProvisionState::Deploying, Some(ProvisionState::Active));
        assert!(n.is_moving() && n.is_busy());
    }

    #[test]
    fn a_node_resting_in_deploy_failed_keeps_its_target_yet_is_neither_moving_nor_busy() {
        let n = node(ProvisionState::DeployFailed, Some(ProvisionState::Active));
        assert!(!n.is_moving() && !n.is_busy() && n.has_failed());
    }

    #[test]
    fn a_node_resting_in_clean_failed_or_without_a_target_is_not_moving() {
        assert!(!node(ProvisionState::CleanFailed, Some(ProvisionState::Available)).is_moving());
        assert!(!node(ProvisionState::Active, None).is_moving());
        assert!(!node(ProvisionState::Active, None).is_busy());
    }

    #[test]
    fn a_failed_node_whose_power_changes_is_busy_but_not_moving() {
        let n = NodeStatusSummary {
            target_power_state: Some(PowerState::Off),
            ..node(ProvisionState::DeployFailed, Some(ProvisionState::Active))
        };
        assert!(!n.is_moving() && n.is_busy());
    }
}
