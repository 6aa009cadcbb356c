//! The plan of a host whose node Ironic has: what the node's provision state asks for in
//! each of the host's states, and power in the stable ones.

use super::states::error_type_of;
use super::{Act, Facts, NodeView, Plan, PowerGoal, act, retry};
use crds::baremetalhost::{ErrorType, ProvisioningState};
use ironic_client::{NodeStatusSummary, PowerState, PowerTarget, ProvisionState};

use ProvisioningState as S;

/// The state after registration.
pub(super) fn after_registration(f: &Facts) -> ProvisioningState {
    if f.externally_provisioned {
        S::ExternallyProvisioned
    } else if f.inspection_disabled {
        S::Preparing
    } else {
        S::Inspecting
    }
}

pub(super) fn last_error(node: &NodeStatusSummary, fallback: &str) -> String {
    node.last_error.clone().filter(|e| !e.is_empty()).unwrap_or_else(|| fallback.to_string())
}

/// A failure Ironic reports: recorded first, retried with `recover` once the
/// backoff expired (a recorded error with an expired backoff).
fn failed(f: &Facts, error: ErrorType, message: String, recover: Act) -> Plan {
    if f.error_type.is_some() { retry(recover) } else { Plan::Fail { error, message, then: None } }
}

pub(super) fn plan_registering(f: &Facts) -> Plan {
    match &f.node {
        NodeView::Unknown => Plan::Wait,
        NodeView::Missing => act(Act::Register),
        NodeView::Present(node) => {
            let busy = node.is_moving();
            match node.provision_state.as_ref() {
                None => Plan::Wait,
                Some(ProvisionState::Enroll) if busy => Plan::Wait,
                Some(ProvisionState::Enroll) if node.last_error.is_some() && !f.credentials_changed => {
                    failed(f, ErrorType::Registration, last_error(node, "registration failed"), Act::Register)
                }
                Some(ProvisionState::Enroll) => act(Act::Register),
                Some(ProvisionState::Verifying) => Plan::Wait,
                Some(_) if busy => Plan::Wait,
                Some(_) if f.credentials_changed => act(Act::UpdateCredentials),
                // A host whose status was lost (re-created without the status annotation)
                // while its machine runs: adopted as it is, never inspected or deployed again.
                Some(ProvisionState::Active) if !f.externally_provisioned => Plan::Transition(S::Provisioned),
                Some(_) => Plan::Transition(after_registration(f)),
            }
        }
    }
}

/// The plan of a host whose node Ironic has: the node's own demands first (managed again
/// after a re-registration, verified, new credentials), then those of the host's state.
pub(super) fn plan_with_node(f: &Facts, state: ProvisioningState, node: &NodeStatusSummary) -> Plan {
    let busy = node.is_moving();
    let Some(ps) = node.provision_state.clone() else {
        return Plan::Wait;
    };
    if ps == ProvisionState::Enroll && !busy {
        // A node registered again (or whose manage failed) must be managed
        // before anything else.
        if node.last_error.is_some() && !f.credentials_changed {
            return failed(f, error_type_of(state), last_error(node, "registration failed"), Act::Register);
        }
        return act(Act::Register);
    }
    if ps == ProvisionState::Verifying {
        return Plan::Wait;
    }
    if f.credentials_changed && !busy {
        return act(Act::UpdateCredentials);
    }
    let seen = Seen { node, ps, busy };
    match state {
        S::Inspecting => plan_inspecting(f, &seen),
        S::Preparing | S::MatchProfile => plan_preparing(f, &seen),
        S::Available | S::Ready => plan_available(f, &seen),
        S::Provisioning => plan_provisioning(f, &seen),
        S::Provisioned | S::ExternallyProvisioned => plan_provisioned(f, state, &seen),
        S::Deprovisioning => plan_deprovisioning(f, &seen),
        // Handled by plan_delete; reached only if deletion was cancelled,
        // which Kubernetes does not allow.
        S::PoweringOffBeforeDelete | S::Deleting => Plan::Idle,
        S::None | S::Unmanaged | S::Registering => Plan::Idle,
    }
}

/// The node as each state's plan reads it: its provision state, and whether Ironic is still
/// moving it somewhere (a target, unless kept by a failure state: `NodeStatusSummary::is_moving`).
struct Seen<'a> {
    node: &'a NodeStatusSummary,
    ps: ProvisionState,
    busy: bool,
}

fn plan_inspecting(f: &Facts, seen: &Seen<'_>) -> Plan {
    match seen.ps {
        _ if seen.busy => Plan::Wait,
        ProvisionState::Manageable if f.inspection_started => act(Act::FinishInspection),
        ProvisionState::Manageable => act(Act::Inspect),
        ProvisionState::Available => act(Act::Manage),
        ProvisionState::InspectFailed => {
            failed(f, ErrorType::Inspection, last_error(seen.node, "inspection failed"), Act::Inspect)
        }
        _ => Plan::Wait,
    }
}

fn plan_preparing(f: &Facts, seen: &Seen<'_>) -> Plan {
    match seen.ps {
        _ if seen.busy => Plan::Wait,
        // Refused, once: the error (and its conditions) stays until the spec changes.
        ProvisionState::Manageable | ProvisionState::Available if f.unsupported.is_some() => {
            if f.error_type == Some(ErrorType::Preparation) {
                Plan::Idle
            } else {
                let message = f.unsupported.clone().unwrap_or_default();
                Plan::Fail { error: ErrorType::Preparation, message, then: None }
            }
        }
        // BIOS settings are applied by a manual clean, which starts from manageable.
        ProvisionState::Available if f.bios_change => act(Act::Manage),
        ProvisionState::Manageable if f.bios_change => act(Act::ApplyBios),
        // Woken when the firmware controller has read them.
        ProvisionState::Manageable | ProvisionState::Available if f.bios_pending => Plan::Wait,
        ProvisionState::Manageable | ProvisionState::Available => Plan::Transition(S::Available),
        ProvisionState::CleanFailed => {
            failed(f, ErrorType::Preparation, last_error(seen.node, "cleaning failed"), Act::Manage)
        }
        _ => Plan::Wait,
    }
}

fn plan_available(f: &Facts, seen: &Seen<'_>) -> Plan {
    if f.externally_provisioned {
        return Plan::Transition(S::ExternallyProvisioned);
    }
    // As baremetal-operator goes back to preparing when RAID changes: there the
    // refusal is recorded, and nothing is provisioned without what was asked for.
    if f.unsupported.is_some() {
        return Plan::Transition(S::Preparing);
    }
    // New BIOS settings are applied in preparing, as baremetal-operator applies them, before
    // anything is provisioned.
    if f.bios_change || (f.bios_pending && f.provision_requested) {
        return Plan::Transition(S::Preparing);
    }
    if f.inspect_requested && !f.inspection_disabled {
        return Plan::Transition(S::Inspecting);
    }
    if f.provision_requested {
        return provide_before_slot(f, seen);
    }
    match seen.ps {
        _ if seen.busy => Plan::Wait,
        ProvisionState::Manageable | ProvisionState::Available => plan_power(f, seen.node),
        ProvisionState::CleanFailed => {
            failed(f, ErrorType::Preparation, last_error(seen.node, "cleaning failed"), Act::Manage)
        }
        _ => Plan::Idle,
    }
}

/// An available host asked to provision. A `provide` that cleans nothing (automated cleaning
/// disabled) is no provisioning work: it is sent before the host takes a provisioning slot,
/// so that a slot is held only while Ironic deploys, not for the poll round a `provide` takes
/// to show (baremetal-operator provides in `provisioning`; its limit counts only nodes Ironic
/// is cleaning, inspecting, deploying or deleting, which such a `provide` is for a moment). A
/// `provide` that cleans is heavy work and takes the slot first.
fn provide_before_slot(f: &Facts, seen: &Seen<'_>) -> Plan {
    if !f.cleaning_disabled && seen.ps == ProvisionState::Available && seen.node.automated_clean == Some(false) {
        // Provided without cleaning, and cleaning was asked for since (while the host waited
        // for a slot, say): managed again, it is provided with cleaning within the slot.
        return if seen.busy { Plan::Wait } else { act(Act::Manage) };
    }
    if !f.cleaning_disabled || f.error_type.is_some() {
        return Plan::Transition(S::Provisioning);
    }
    match seen.ps {
        _ if seen.busy => Plan::Wait,
        ProvisionState::Manageable => act(Act::Provide),
        _ => Plan::Transition(S::Provisioning),
    }
}

fn plan_provisioning(f: &Facts, seen: &Seen<'_>) -> Plan {
    if f.provisioning_target_changed {
        return Plan::Transition(S::Deprovisioning);
    }
    match seen.ps {
        _ if seen.busy => Plan::Wait,
        ProvisionState::Manageable => act(Act::Provide),
        ProvisionState::Available => act(Act::Deploy),
        ProvisionState::Active => power_on_before_provisioned(f, seen.node),
        ProvisionState::DeployFailed => {
            if f.error_type.is_some() {
                // Retry from scratch: clean the failed attempt away first.
                Plan::Transition(S::Deprovisioning)
            } else {
                Plan::Fail {
                    error: ErrorType::Provisioning,
                    message: last_error(seen.node, "deployment failed"),
                    then: None,
                }
            }
        }
        ProvisionState::CleanFailed => {
            failed(f, ErrorType::Provisioning, last_error(seen.node, "cleaning failed"), Act::Manage)
        }
        _ => Plan::Wait,
    }
}

/// `provisioned` and `externallyProvisioned`: the two move into each other as the spec says.
fn plan_provisioned(f: &Facts, state: ProvisioningState, seen: &Seen<'_>) -> Plan {
    if state == S::ExternallyProvisioned && !f.externally_provisioned {
        return Plan::Transition(S::Provisioned);
    }
    if state == S::Provisioned && f.image_changed {
        return Plan::Transition(S::Deprovisioning);
    }
    match seen.ps {
        ProvisionState::Servicing | ProvisionState::ServiceWait | ProvisionState::ServiceHold => Plan::Wait,
        // Tried again while its settings are still wanted and allowed, abandoned otherwise, as
        // baremetal-operator does; never anything that would leave `active` for good.
        ProvisionState::ServiceFailed => {
            let recover = if f.servicing_wanted() { Act::Service } else { Act::AbortServicing };
            match failed(f, ErrorType::Servicing, last_error(seen.node, "servicing failed"), recover) {
                // What is wanted is not known yet (the firmware controllers' first reads after
                // a restart): neither tried again nor abandoned on a guess.
                Plan::Act { .. } if f.servicing_unknown() => Plan::Wait,
                plan => plan,
            }
        }
        _ if seen.busy => Plan::Wait,
        ProvisionState::Active if f.data_image_due => act(Act::DataImage),
        ProvisionState::Active if servicing_due(f, seen.node) => act(Act::Service),
        ProvisionState::Active => plan_power(f, seen.node),
        ProvisionState::Manageable => act(Act::Adopt),
        // Adoption starts from manageable.
        ProvisionState::Available => act(Act::Manage),
        ProvisionState::AdoptFailed => {
            failed(f, ErrorType::ProvisionedRegistration, last_error(seen.node, "adoption failed"), Act::Adopt)
        }
        _ => Plan::Idle,
    }
}

/// A provisioned host is serviced for the settings and updates it waits for at its reboot, as
/// baremetal-operator services it: when it is off and should be on (after the reboot
/// annotation powered it off, or a power off and on), and only for what its policy allows.
fn servicing_due(f: &Facts, node: &NodeStatusSummary) -> bool {
    f.servicing_wanted()
        && f.power == PowerGoal::On
        && node.target_power_state.is_none()
        && node.power_state == Some(PowerState::Off)
}

fn plan_deprovisioning(f: &Facts, seen: &Seen<'_>) -> Plan {
    let busy = seen.busy;
    match seen.ps {
        ProvisionState::Deploying | ProvisionState::Deleting | ProvisionState::Cleaning => Plan::Wait,
        ProvisionState::CleanWait if busy => Plan::Wait,
        // A deployment waiting for its agent can be torn down.
        ProvisionState::Active | ProvisionState::DeployFailed | ProvisionState::DeployWait => act(Act::Undeploy),
        // A failed servicing is ended first: Ironic undeploys from `active` only.
        ProvisionState::ServiceFailed => act(Act::AbortServicing),
        _ if busy => Plan::Wait,
        ProvisionState::Available | ProvisionState::Manageable => Plan::Transition(S::Available),
        ProvisionState::Error => {
            failed(f, ErrorType::Provisioning, last_error(seen.node, "deprovisioning failed"), Act::Undeploy)
        }
        ProvisionState::CleanFailed => {
            failed(f, ErrorType::Provisioning, last_error(seen.node, "cleaning failed"), Act::Manage)
        }
        _ => Plan::Wait,
    }
}

/// A deployment that left the node off (fake hardware does; a real deployment ends with the
/// machine on) is powered on before the host says it is provisioned, so that `provisioned`
/// and `poweredOn` reach the status in one write instead of two. A power change under way is
/// waited for. Only the plain case is taken here: a host to keep off (or to reboot in place),
/// a power change that failed, or any recorded error moves on to `provisioned` at once, where
/// power is managed as always.
fn power_on_before_provisioned(f: &Facts, node: &NodeStatusSummary) -> Plan {
    let plain = f.power == PowerGoal::On && f.error_type.is_none() && !f.power_attempt_failed;
    match (node.power_state.as_ref(), node.target_power_state.as_ref()) {
        _ if !plain => Plan::Transition(S::Provisioned),
        (_, Some(_)) => Plan::Wait,
        (Some(PowerState::On), None) => Plan::Transition(S::Provisioned),
        (_, None) => act(Act::Power(PowerTarget::On)),
    }
}

/// Power in a stable state: follow `spec.online` and the reboot annotations.
fn plan_power(f: &Facts, node: &NodeStatusSummary) -> Plan {
    if node.target_power_state.is_some() {
        return Plan::Wait;
    }
    let on = node.power_state == Some(PowerState::On);
    let off = node.power_state == Some(PowerState::Off);
    if f.power_attempt_failed && f.error_type.is_none() {
        return Plan::Fail {
            error: ErrorType::PowerManagement,
            message: last_error(node, "the power state did not change"),
            then: None,
        };
    }
    // After a failed soft power off, power off hard.
    let escalate = f.error_type == Some(ErrorType::PowerManagement);
    let power = |target| Plan::Act { act: Act::Power(target), retry: escalate };
    match f.power {
        PowerGoal::On if on => Plan::Idle,
        PowerGoal::On => power(PowerTarget::On),
        PowerGoal::Off { .. } if off => {
            if f.reboot_oneshot {
                Plan::ClearReboot
            } else {
                Plan::Idle
            }
        }
        PowerGoal::Off { hard } => power(if hard || escalate { PowerTarget::Off } else { PowerTarget::SoftOff }),
        PowerGoal::Reboot { hard } => {
            power(if hard || escalate { PowerTarget::Reboot } else { PowerTarget::SoftReboot })
        }
    }
}
