//! The plan of a host being deleted.

use super::node::{last_error, plan_with_node};
use super::{Act, Facts, NodeView, Plan, act};
use crds::baremetalhost::{ErrorType, ProvisioningState};
use ironic_client::{PowerState, PowerTarget, ProvisionState};

use ProvisioningState as S;

/// Deletion (`checkInitiateDelete` and the states after it). A detached
/// host skips deprovisioning and powering off; after more than three
/// failures the controller gives up and deletes the node anyway, as
/// baremetal-operator does.
pub(super) fn plan_delete(f: &Facts) -> Plan {
    let delaying_detached = f
        .detach
        .as_ref()
        .is_some_and(|d| d.delete_action == Some(crds::baremetalhost::annotations::DetachedDeleteAction::Delay));
    if delaying_detached {
        return Plan::Idle;
    }
    if f.detach.is_some() || f.detached_status {
        return match f.node {
            NodeView::Missing => Plan::Release,
            _ => Plan::Detach,
        };
    }
    let deletion_state = matches!(f.state, S::Deprovisioning | S::PoweringOffBeforeDelete | S::Deleting);
    if deletion_state && f.error_count > 3 {
        return if f.state == S::Deleting { act(Act::DeleteNode) } else { Plan::Transition(S::Deleting) };
    }
    if deletion_state && f.error_type.is_some() && f.in_backoff {
        return Plan::Backoff;
    }
    match f.state {
        S::None | S::Unmanaged => Plan::Release,
        S::Registering => Plan::Transition(S::Deleting),
        S::Provisioning | S::Provisioned => Plan::Transition(S::Deprovisioning),
        S::Deprovisioning => match &f.node {
            NodeView::Unknown => Plan::Wait,
            // Ironic lost the node (its database) while the machine still runs a tenant's
            // image: register it again so that cleaning runs before the machine is released.
            // Without a BMC there is nothing to register; failures count towards giving up.
            NodeView::Missing if f.has_bmc => act(Act::Register),
            NodeView::Missing => Plan::Transition(S::PoweringOffBeforeDelete),
            // Registered again (or managed after a failed cleaning): clean on the way to
            // available.
            NodeView::Present(node)
                if node.provision_state == Some(ProvisionState::Manageable)
                    && node.target_provision_state.is_none() =>
            {
                act(Act::Provide)
            }
            NodeView::Present(node) => match plan_with_node(f, S::Deprovisioning, node) {
                Plan::Transition(S::Available) => Plan::Transition(S::PoweringOffBeforeDelete),
                other => other,
            },
        },
        S::PoweringOffBeforeDelete => match &f.node {
            NodeView::Unknown => Plan::Wait,
            // Perhaps only outside the shards polled: found by name, it is powered off first.
            NodeView::Missing if f.missing_unsure && f.has_bmc => act(Act::Register),
            NodeView::Missing => Plan::Transition(S::Deleting),
            NodeView::Present(node) if node.target_power_state.is_some() => Plan::Wait,
            // A failure state keeps its target yet rests: it is powered off and deleted.
            NodeView::Present(node) if node.is_moving() => Plan::Wait,
            NodeView::Present(node) => {
                if node.power_state == Some(PowerState::On) && !f.disable_power_off {
                    if f.power_attempt_failed && f.error_type.is_none() {
                        return Plan::Fail {
                            error: ErrorType::PowerManagement,
                            message: last_error(node, "cannot power off"),
                            then: None,
                        };
                    }
                    Plan::Act { act: Act::Power(PowerTarget::Off), retry: f.error_type.is_some() }
                } else {
                    Plan::Transition(S::Deleting)
                }
            }
        },
        S::Deleting => act(Act::DeleteNode),
        _ => Plan::Transition(S::PoweringOffBeforeDelete),
    }
}
