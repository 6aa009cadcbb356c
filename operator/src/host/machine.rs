//! The provisioning state machine, as baremetal-operator has it, as a pure
//! function: from what is known about a host and its Ironic node ([`Facts`])
//! to the one next thing to do ([`Plan`]).
//!
//! The reconciler gathers the facts (spec, status, annotations, the node as
//! the last bulk poll saw it), asks [`plan`], and executes the answer. Every
//! answer is a single step: one state change, one Ironic call, or waiting.
//! Ironic calls are followed by waiting for the next bulk poll, so a decision
//! is never taken twice on the same stale observation.

use crds::baremetalhost::annotations::DetachedAnnotation;
use crds::baremetalhost::{ErrorType, ProvisioningState};
use ironic_client::{NodeStatusSummary, PowerState, PowerTarget, ProvisionState};

use ProvisioningState as S;

/// The node as the bulk poll last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeView {
    /// No poll has completed yet (or the last one is older than the host's
    /// last action): nothing can be decided about the node.
    Unknown,
    /// Ironic has no node of this name.
    Missing,
    /// The node's state.
    Present(Box<NodeStatusSummary>),
}

/// What power the host should have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerGoal {
    On,
    /// Off: `spec.online: false`, or held off by reboot annotations. `hard`
    /// skips the ACPI shutdown.
    Off {
        hard: bool,
    },
    /// A reboot in place, for hosts that must never be powered off.
    Reboot {
        hard: bool,
    },
}

/// Everything [`plan`] decides from.
#[derive(Clone, Debug)]
pub struct Facts {
    pub state: ProvisioningState,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The BMC address is set.
    pub has_bmc: bool,
    /// The detached annotation, parsed.
    pub detach: Option<DetachedAnnotation>,
    /// `status.operationalStatus` is `detached`.
    pub detached_status: bool,
    pub externally_provisioned: bool,
    pub inspection_disabled: bool,
    /// The `inspect.metal3.io` annotation asks for a new inspection.
    pub inspect_requested: bool,
    /// An image or custom deploy is set and the host should be online.
    pub provision_requested: bool,
    /// Provisioned: the image (or custom deploy) differs from what was provisioned.
    pub image_changed: bool,
    /// Provisioning: the image differs from the one being provisioned.
    pub provisioning_target_changed: bool,
    /// Inspection was started by us and has not finished.
    pub inspection_started: bool,
    /// The credentials Secret changed since Ironic was last given it.
    pub credentials_changed: bool,
    /// The error recorded in status, if any.
    pub error_type: Option<ErrorType>,
    /// The error's retry time has not come yet.
    pub in_backoff: bool,
    pub error_count: i32,
    /// Our last power change did not reach its target.
    pub power_attempt_failed: bool,
    pub power: PowerGoal,
    /// The one-shot reboot annotation is present.
    pub reboot_oneshot: bool,
    pub disable_power_off: bool,
    pub node: NodeView,
}

impl Default for Facts {
    fn default() -> Self {
        Self {
            state: S::None,
            deleting: false,
            has_bmc: true,
            detach: None,
            detached_status: false,
            externally_provisioned: false,
            inspection_disabled: false,
            inspect_requested: false,
            provision_requested: false,
            image_changed: false,
            provisioning_target_changed: false,
            inspection_started: false,
            credentials_changed: false,
            error_type: None,
            in_backoff: false,
            error_count: 0,
            power_attempt_failed: false,
            power: PowerGoal::On,
            reboot_oneshot: false,
            disable_power_off: false,
            node: NodeView::Unknown,
        }
    }
}

/// An Ironic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Find the node by name or create it (with its port), refresh its
    /// credentials when they changed, and `manage` it when in `enroll`.
    Register,
    /// Send new credentials to an enrolled node (no state change).
    UpdateCredentials,
    /// `manage`: back to manageable (from available, clean failed…).
    Manage,
    Inspect,
    /// Read the inventory, write HardwareData, move on to preparing.
    FinishInspection,
    /// `provide` (with automated cleaning as the host asks).
    Provide,
    /// Set the instance info and deploy.
    Deploy,
    /// Set the instance info and adopt (a host already running its image).
    Adopt,
    /// `deleted` (with automated cleaning as the host asks).
    Undeploy,
    Power(PowerTarget),
    /// Remove the node from Ironic, then release the host.
    DeleteNode,
}

/// The next step for a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to do until something changes (steady state).
    Idle,
    /// A retry is due later: the error backoff has not expired.
    Backoff,
    /// Ironic is working on the node: wait for the poller to see a change.
    Wait,
    /// Move to another provisioning state.
    Transition(ProvisioningState),
    /// Record a failure, optionally moving on to another state.
    Fail { error: ErrorType, message: String, then: Option<ProvisioningState> },
    /// Call Ironic. `retry` marks a retry after a recorded failure.
    Act { act: Act, retry: bool },
    /// Remove the node from Ironic without deprovisioning.
    Detach,
    /// Clear the one-shot reboot annotation (the host went down).
    ClearReboot,
    /// Remove the finalizer: nothing is left in Ironic.
    Release,
}

fn act(act: Act) -> Plan {
    Plan::Act { act, retry: false }
}

fn retry(act: Act) -> Plan {
    Plan::Act { act, retry: true }
}

/// States that take a provisioning slot (`--provisioning-limit`).
pub fn is_busy(state: ProvisioningState) -> bool {
    matches!(state, S::Inspecting | S::Provisioning | S::Deprovisioning)
}

/// States in which the host is on its way somewhere.
pub fn is_transitional(state: ProvisioningState) -> bool {
    matches!(
        state,
        S::Registering
            | S::Inspecting
            | S::Preparing
            | S::MatchProfile
            | S::Provisioning
            | S::Deprovisioning
            | S::PoweringOffBeforeDelete
            | S::Deleting
    )
}

/// States a host may be detached from Ironic in, without `force`.
pub fn detach_allowed(state: ProvisioningState) -> bool {
    matches!(state, S::Provisioned | S::ExternallyProvisioned | S::Available | S::Ready)
}

/// The error class of failures in a state.
pub fn error_type_of(state: ProvisioningState) -> ErrorType {
    match state {
        S::None | S::Unmanaged | S::Registering => ErrorType::Registration,
        S::Inspecting => ErrorType::Inspection,
        S::Preparing | S::MatchProfile | S::Available | S::Ready => ErrorType::Preparation,
        S::Provisioning | S::Deprovisioning => ErrorType::Provisioning,
        S::Provisioned | S::ExternallyProvisioned => ErrorType::ProvisionedRegistration,
        S::PoweringOffBeforeDelete | S::Deleting => ErrorType::PowerManagement,
    }
}

/// Every transition of the machine (baremetal-operator's
/// `host_state_machine.go`, plus the deletion path), for tests and docs.
pub fn allowed(from: ProvisioningState, to: ProvisioningState) -> bool {
    let deletion = match from {
        S::None | S::Unmanaged | S::Registering => to == S::Deleting,
        S::Provisioning | S::Provisioned => to == S::Deprovisioning,
        S::Deprovisioning => to == S::PoweringOffBeforeDelete,
        S::PoweringOffBeforeDelete => to == S::Deleting,
        S::Deleting => false,
        _ => to == S::PoweringOffBeforeDelete,
    };
    deletion
        || matches!(
            (from, to),
            (S::None, S::Registering | S::Unmanaged)
                | (S::Unmanaged, S::Registering)
                | (S::Registering, S::ExternallyProvisioned | S::Preparing | S::Inspecting)
                | (S::Inspecting, S::Preparing)
                | (S::Preparing | S::MatchProfile, S::Available)
                | (S::Available | S::Ready, S::ExternallyProvisioned | S::Inspecting | S::Provisioning)
                | (S::Provisioning, S::Provisioned | S::Deprovisioning)
                | (S::Provisioned, S::Deprovisioning)
                | (S::Deprovisioning, S::Available)
                | (S::ExternallyProvisioned, S::Provisioned)
        )
}

/// The state after registration.
fn after_registration(f: &Facts) -> ProvisioningState {
    if f.externally_provisioned {
        S::ExternallyProvisioned
    } else if f.inspection_disabled {
        S::Preparing
    } else {
        S::Inspecting
    }
}

/// The next step for a host.
pub fn plan(f: &Facts) -> Plan {
    if f.deleting {
        return plan_delete(f);
    }
    if let Some(detach) = &f.detach
        && (f.detached_status || detach_allowed(f.state) || detach.force)
    {
        return match f.node {
            NodeView::Missing if f.detached_status => Plan::Idle,
            _ => Plan::Detach,
        };
    }
    if f.error_type.is_some() && f.in_backoff {
        return Plan::Backoff;
    }
    match f.state {
        S::None => Plan::Transition(if f.has_bmc { S::Registering } else { S::Unmanaged }),
        S::Unmanaged if f.has_bmc => Plan::Transition(S::Registering),
        S::Unmanaged => Plan::Idle,
        S::Registering => plan_registering(f),
        state => match &f.node {
            NodeView::Unknown => Plan::Wait,
            // Nothing to deprovision: the node is gone.
            NodeView::Missing if state == S::Deprovisioning => Plan::Transition(S::Available),
            // Ironic lost the node (a restart with an empty database, a
            // detach undone): register it again; provisioned hosts are then
            // adopted, never deployed again.
            NodeView::Missing => act(Act::Register),
            NodeView::Present(node) => plan_with_node(f, state, node),
        },
    }
}

fn last_error(node: &NodeStatusSummary, fallback: &str) -> String {
    node.last_error.clone().filter(|e| !e.is_empty()).unwrap_or_else(|| fallback.to_string())
}

/// A failure Ironic reports: recorded first, retried with `recover` once the
/// backoff expired (a recorded error with an expired backoff).
fn failed(f: &Facts, error: ErrorType, message: String, recover: Act) -> Plan {
    if f.error_type.is_some() { retry(recover) } else { Plan::Fail { error, message, then: None } }
}

fn plan_registering(f: &Facts) -> Plan {
    match &f.node {
        NodeView::Unknown => Plan::Wait,
        NodeView::Missing => act(Act::Register),
        NodeView::Present(node) => {
            let busy = node.target_provision_state.is_some();
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
                Some(_) => Plan::Transition(after_registration(f)),
            }
        }
    }
}

fn plan_with_node(f: &Facts, state: ProvisioningState, node: &NodeStatusSummary) -> Plan {
    let busy = node.target_provision_state.is_some();
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
    match state {
        S::Inspecting => match ps {
            _ if busy => Plan::Wait,
            ProvisionState::Manageable if f.inspection_started => act(Act::FinishInspection),
            ProvisionState::Manageable => act(Act::Inspect),
            ProvisionState::Available => act(Act::Manage),
            ProvisionState::InspectFailed => {
                failed(f, ErrorType::Inspection, last_error(node, "inspection failed"), Act::Inspect)
            }
            _ => Plan::Wait,
        },
        S::Preparing | S::MatchProfile => match ps {
            _ if busy => Plan::Wait,
            ProvisionState::Manageable | ProvisionState::Available => Plan::Transition(S::Available),
            ProvisionState::CleanFailed => {
                failed(f, ErrorType::Preparation, last_error(node, "cleaning failed"), Act::Manage)
            }
            _ => Plan::Wait,
        },
        S::Available | S::Ready => {
            if f.externally_provisioned {
                return Plan::Transition(S::ExternallyProvisioned);
            }
            if f.inspect_requested && !f.inspection_disabled {
                return Plan::Transition(S::Inspecting);
            }
            if f.provision_requested {
                return Plan::Transition(S::Provisioning);
            }
            match ps {
                _ if busy => Plan::Wait,
                ProvisionState::Manageable | ProvisionState::Available => plan_power(f, node),
                ProvisionState::CleanFailed => {
                    failed(f, ErrorType::Preparation, last_error(node, "cleaning failed"), Act::Manage)
                }
                _ => Plan::Idle,
            }
        }
        S::Provisioning => {
            if f.provisioning_target_changed {
                return Plan::Transition(S::Deprovisioning);
            }
            match ps {
                _ if busy => Plan::Wait,
                ProvisionState::Manageable => act(Act::Provide),
                ProvisionState::Available => act(Act::Deploy),
                ProvisionState::Active => Plan::Transition(S::Provisioned),
                ProvisionState::DeployFailed => {
                    if f.error_type.is_some() {
                        // Retry from scratch: clean the failed attempt away first.
                        Plan::Transition(S::Deprovisioning)
                    } else {
                        Plan::Fail {
                            error: ErrorType::Provisioning,
                            message: last_error(node, "deployment failed"),
                            then: None,
                        }
                    }
                }
                ProvisionState::CleanFailed => {
                    failed(f, ErrorType::Provisioning, last_error(node, "cleaning failed"), Act::Manage)
                }
                _ => Plan::Wait,
            }
        }
        S::Provisioned | S::ExternallyProvisioned => {
            if state == S::ExternallyProvisioned && !f.externally_provisioned {
                return Plan::Transition(S::Provisioned);
            }
            if state == S::Provisioned && f.image_changed {
                return Plan::Transition(S::Deprovisioning);
            }
            match ps {
                _ if busy => Plan::Wait,
                ProvisionState::Active => plan_power(f, node),
                ProvisionState::Manageable => act(Act::Adopt),
                // Adoption starts from manageable.
                ProvisionState::Available => act(Act::Manage),
                ProvisionState::AdoptFailed => {
                    failed(f, ErrorType::ProvisionedRegistration, last_error(node, "adoption failed"), Act::Adopt)
                }
                _ => Plan::Idle,
            }
        }
        S::Deprovisioning => match ps {
            ProvisionState::Deploying | ProvisionState::Deleting | ProvisionState::Cleaning => Plan::Wait,
            ProvisionState::CleanWait if busy => Plan::Wait,
            // A deployment waiting for its agent can be torn down.
            ProvisionState::Active | ProvisionState::DeployFailed | ProvisionState::DeployWait => act(Act::Undeploy),
            _ if busy => Plan::Wait,
            ProvisionState::Available | ProvisionState::Manageable => Plan::Transition(S::Available),
            ProvisionState::Error => {
                failed(f, ErrorType::Provisioning, last_error(node, "deprovisioning failed"), Act::Undeploy)
            }
            ProvisionState::CleanFailed => {
                failed(f, ErrorType::Provisioning, last_error(node, "cleaning failed"), Act::Manage)
            }
            _ => Plan::Wait,
        },
        // Handled by plan_delete; reached only if deletion was cancelled,
        // which Kubernetes does not allow.
        S::PoweringOffBeforeDelete | S::Deleting => Plan::Idle,
        S::None | S::Unmanaged | S::Registering => Plan::Idle,
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

/// Deletion (`checkInitiateDelete` and the states after it). A detached
/// host skips deprovisioning and powering off; after more than three
/// failures the controller gives up and deletes the node anyway, as
/// baremetal-operator does.
fn plan_delete(f: &Facts) -> Plan {
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
            NodeView::Missing => Plan::Transition(S::PoweringOffBeforeDelete),
            NodeView::Present(node) => match plan_with_node(f, S::Deprovisioning, node) {
                Plan::Transition(S::Available) => Plan::Transition(S::PoweringOffBeforeDelete),
                // Re-registration is pointless for a host on its way out.
                Plan::Act { act: Act::Register, .. } => Plan::Transition(S::PoweringOffBeforeDelete),
                other => other,
            },
        },
        S::PoweringOffBeforeDelete => match &f.node {
            NodeView::Unknown => Plan::Wait,
            NodeView::Missing => Plan::Transition(S::Deleting),
            NodeView::Present(node) if node.target_power_state.is_some() => Plan::Wait,
            NodeView::Present(node) if node.target_provision_state.is_some() => Plan::Wait,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::annotations::DetachedDeleteAction;

    fn node(state: &str, target: Option<&str>) -> NodeView {
        NodeView::Present(Box::new(NodeStatusSummary {
            uuid: "u".into(),
            name: Some("ns~h".into()),
            provision_state: Some(state.into()),
            target_provision_state: target.map(Into::into),
            power_state: Some(PowerState::On),
            ..NodeStatusSummary::default()
        }))
    }

    fn with_error(mut view: NodeView, error: &str) -> NodeView {
        if let NodeView::Present(n) = &mut view {
            n.last_error = Some(error.into());
        }
        view
    }

    fn powered(mut view: NodeView, power: PowerState) -> NodeView {
        if let NodeView::Present(n) = &mut view {
            n.power_state = Some(power);
        }
        view
    }

    fn facts(state: ProvisioningState, node: NodeView) -> Facts {
        Facts { state, node, ..Facts::default() }
    }

    fn transition(f: &Facts) -> ProvisioningState {
        match plan(f) {
            Plan::Transition(to) => {
                assert!(allowed(f.state, to), "{:?} -> {to:?} is not a transition of the machine", f.state);
                to
            }
            other => panic!("expected a transition from {:?}, got {other:?}", f.state),
        }
    }

    #[test]
    fn new_hosts_register_or_stay_unmanaged() {
        assert_eq!(transition(&facts(S::None, NodeView::Unknown)), S::Registering);
        let no_bmc = Facts { has_bmc: false, ..facts(S::None, NodeView::Unknown) };
        assert_eq!(transition(&no_bmc), S::Unmanaged);
        assert_eq!(plan(&Facts { has_bmc: false, ..facts(S::Unmanaged, NodeView::Unknown) }), Plan::Idle);
        assert_eq!(transition(&facts(S::Unmanaged, NodeView::Unknown)), S::Registering);
    }

    #[test]
    fn registration_creates_manages_then_moves_on() {
        assert_eq!(plan(&facts(S::Registering, NodeView::Missing)), act(Act::Register));
        assert_eq!(plan(&facts(S::Registering, node("enroll", None))), act(Act::Register));
        assert_eq!(plan(&facts(S::Registering, node("verifying", Some("manageable")))), Plan::Wait);
        assert_eq!(transition(&facts(S::Registering, node("manageable", None))), S::Inspecting);
        let no_inspection = Facts { inspection_disabled: true, ..facts(S::Registering, node("manageable", None)) };
        assert_eq!(transition(&no_inspection), S::Preparing);
        let external = Facts { externally_provisioned: true, ..facts(S::Registering, node("manageable", None)) };
        assert_eq!(transition(&external), S::ExternallyProvisioned);
    }

    #[test]
    fn bad_credentials_fail_registration_until_the_secret_changes() {
        let failed_manage = with_error(node("enroll", None), "401 Unauthorized");
        let f = facts(S::Registering, failed_manage.clone());
        assert_eq!(
            plan(&f),
            Plan::Fail { error: ErrorType::Registration, message: "401 Unauthorized".into(), then: None }
        );
        let recorded = Facts { error_type: Some(ErrorType::Registration), in_backoff: true, ..f.clone() };
        assert_eq!(plan(&recorded), Plan::Backoff);
        let expired = Facts { in_backoff: false, ..recorded.clone() };
        assert_eq!(plan(&expired), retry(Act::Register));
        let fixed = Facts { credentials_changed: true, in_backoff: false, ..recorded };
        assert_eq!(plan(&fixed), act(Act::Register));
    }

    #[test]
    fn inspection_runs_once_and_collects_the_data() {
        assert_eq!(plan(&facts(S::Inspecting, node("manageable", None))), act(Act::Inspect));
        assert_eq!(plan(&facts(S::Inspecting, node("inspect wait", Some("manageable")))), Plan::Wait);
        let done = Facts { inspection_started: true, ..facts(S::Inspecting, node("manageable", None)) };
        assert_eq!(plan(&done), act(Act::FinishInspection));
        let failed = with_error(node("inspect failed", None), "no CPUs");
        assert!(matches!(plan(&facts(S::Inspecting, failed)), Plan::Fail { error: ErrorType::Inspection, .. }));
        assert_eq!(transition(&facts(S::Preparing, node("manageable", None))), S::Available);
    }

    #[test]
    fn available_hosts_provision_inspect_or_get_adopted() {
        let f = Facts { provision_requested: true, ..facts(S::Available, node("manageable", None)) };
        assert_eq!(transition(&f), S::Provisioning);
        let f = Facts { inspect_requested: true, ..facts(S::Available, node("manageable", None)) };
        assert_eq!(transition(&f), S::Inspecting);
        let f = Facts { externally_provisioned: true, ..facts(S::Available, node("manageable", None)) };
        assert_eq!(transition(&f), S::ExternallyProvisioned);
        assert_eq!(plan(&facts(S::Available, node("manageable", None))), Plan::Idle);
    }

    #[test]
    fn provisioning_provides_deploys_and_finishes() {
        assert_eq!(plan(&facts(S::Provisioning, node("manageable", None))), act(Act::Provide));
        assert_eq!(plan(&facts(S::Provisioning, node("cleaning", Some("available")))), Plan::Wait);
        assert_eq!(plan(&facts(S::Provisioning, node("available", None))), act(Act::Deploy));
        assert_eq!(plan(&facts(S::Provisioning, node("wait call-back", Some("active")))), Plan::Wait);
        assert_eq!(transition(&facts(S::Provisioning, node("active", None))), S::Provisioned);
        let cancelled =
            Facts { provisioning_target_changed: true, ..facts(S::Provisioning, node("deploying", Some("active"))) };
        assert_eq!(transition(&cancelled), S::Deprovisioning);
    }

    #[test]
    fn a_failed_deployment_is_recorded_then_cleaned_up_and_retried() {
        let failed = with_error(node("deploy failed", None), "bad image");
        let f = facts(S::Provisioning, failed);
        assert_eq!(plan(&f), Plan::Fail { error: ErrorType::Provisioning, message: "bad image".into(), then: None });
        let recorded = Facts { error_type: Some(ErrorType::Provisioning), in_backoff: true, ..f };
        assert_eq!(plan(&recorded), Plan::Backoff);
        assert_eq!(transition(&Facts { in_backoff: false, ..recorded }), S::Deprovisioning);
    }

    #[test]
    fn provisioned_hosts_deprovision_when_the_image_goes() {
        let f = Facts { image_changed: true, ..facts(S::Provisioned, node("active", None)) };
        assert_eq!(transition(&f), S::Deprovisioning);
        assert_eq!(plan(&facts(S::Deprovisioning, node("active", None))), act(Act::Undeploy));
        assert_eq!(plan(&facts(S::Deprovisioning, node("wait call-back", Some("active")))), act(Act::Undeploy));
        assert_eq!(plan(&facts(S::Deprovisioning, node("cleaning", Some("available")))), Plan::Wait);
        assert_eq!(transition(&facts(S::Deprovisioning, node("available", None))), S::Available);
        assert_eq!(transition(&facts(S::Deprovisioning, NodeView::Missing)), S::Available);
    }

    #[test]
    fn a_provisioned_host_whose_node_vanished_is_registered_and_adopted_never_deployed() {
        assert_eq!(plan(&facts(S::Provisioned, NodeView::Missing)), act(Act::Register));
        assert_eq!(plan(&facts(S::Provisioned, node("enroll", None))), act(Act::Register));
        assert_eq!(plan(&facts(S::Provisioned, node("manageable", None))), act(Act::Adopt));
        assert_eq!(plan(&facts(S::Provisioned, node("adopting", Some("active")))), Plan::Wait);
        assert_eq!(plan(&facts(S::Provisioned, node("active", None))), Plan::Idle);
        for state in [S::Provisioned, S::ExternallyProvisioned] {
            for node_state in ["enroll", "manageable", "available", "adopt failed", "active"] {
                let p = plan(&facts(state, node(node_state, None)));
                assert!(
                    !matches!(p, Plan::Act { act: Act::Deploy | Act::Provide, .. }),
                    "{state:?}/{node_state}: {p:?}"
                );
            }
        }
        let external =
            Facts { externally_provisioned: true, ..facts(S::ExternallyProvisioned, node("manageable", None)) };
        assert_eq!(plan(&external), act(Act::Adopt));
        assert_eq!(transition(&facts(S::ExternallyProvisioned, node("active", None))), S::Provisioned);
    }

    #[test]
    fn power_follows_online_and_reboot_annotations() {
        let off = powered(node("active", None), PowerState::Off);
        assert_eq!(plan(&facts(S::Provisioned, off.clone())), act(Act::Power(PowerTarget::On)));
        let want_off = Facts { power: PowerGoal::Off { hard: false }, ..facts(S::Provisioned, node("active", None)) };
        assert_eq!(plan(&want_off), act(Act::Power(PowerTarget::SoftOff)));
        let hard = Facts { power: PowerGoal::Off { hard: true }, ..want_off.clone() };
        assert_eq!(plan(&hard), act(Act::Power(PowerTarget::Off)));
        let rebooted =
            Facts { power: PowerGoal::Off { hard: false }, reboot_oneshot: true, ..facts(S::Provisioned, off) };
        assert_eq!(plan(&rebooted), Plan::ClearReboot);
        let failed = Facts { power_attempt_failed: true, ..want_off.clone() };
        assert!(matches!(plan(&failed), Plan::Fail { error: ErrorType::PowerManagement, .. }));
        let escalated = Facts { error_type: Some(ErrorType::PowerManagement), ..want_off };
        assert_eq!(plan(&escalated), retry(Act::Power(PowerTarget::Off)));
        let in_place = Facts { power: PowerGoal::Reboot { hard: true }, ..facts(S::Provisioned, node("active", None)) };
        assert_eq!(plan(&in_place), act(Act::Power(PowerTarget::Reboot)));
    }

    #[test]
    fn deletion_follows_the_state() {
        let deleting = |state, node| Facts { deleting: true, ..facts(state, node) };
        assert_eq!(plan(&deleting(S::None, NodeView::Missing)), Plan::Release);
        assert_eq!(transition(&deleting(S::Registering, node("enroll", None))), S::Deleting);
        assert_eq!(transition(&deleting(S::Provisioned, node("active", None))), S::Deprovisioning);
        assert_eq!(transition(&deleting(S::Provisioning, node("deploying", Some("active")))), S::Deprovisioning);
        assert_eq!(transition(&deleting(S::Available, node("manageable", None))), S::PoweringOffBeforeDelete);
        assert_eq!(
            transition(&deleting(S::Inspecting, node("inspecting", Some("manageable")))),
            S::PoweringOffBeforeDelete
        );
        assert_eq!(plan(&deleting(S::Deprovisioning, node("active", None))), act(Act::Undeploy));
        assert_eq!(transition(&deleting(S::Deprovisioning, node("available", None))), S::PoweringOffBeforeDelete);
        assert_eq!(
            plan(&deleting(S::PoweringOffBeforeDelete, node("available", None))),
            act(Act::Power(PowerTarget::Off))
        );
        let off = powered(node("available", None), PowerState::Off);
        assert_eq!(transition(&deleting(S::PoweringOffBeforeDelete, off)), S::Deleting);
        assert_eq!(plan(&deleting(S::Deleting, node("available", None))), act(Act::DeleteNode));
        let stuck = Facts {
            error_count: 4,
            error_type: Some(ErrorType::PowerManagement),
            in_backoff: true,
            ..deleting(S::PoweringOffBeforeDelete, node("available", None))
        };
        assert_eq!(transition(&stuck), S::Deleting);
    }

    #[test]
    fn detached_hosts_leave_ironic_without_deprovisioning() {
        let detach = Some(DetachedAnnotation::default());
        let f = Facts { detach: detach.clone(), ..facts(S::Provisioned, node("active", None)) };
        assert_eq!(plan(&f), Plan::Detach);
        let done = Facts { detached_status: true, ..Facts { node: NodeView::Missing, ..f.clone() } };
        assert_eq!(plan(&done), Plan::Idle);
        // Not while provisioning, unless forced.
        let busy = Facts { detach: detach.clone(), ..facts(S::Provisioning, node("deploying", Some("active"))) };
        assert_eq!(plan(&busy), Plan::Wait);
        let forced = Facts { detach: Some(DetachedAnnotation { force: true, ..Default::default() }), ..busy };
        assert_eq!(plan(&forced), Plan::Detach);
        // Deleting a detached host never deprovisions.
        let gone = Facts { deleting: true, ..done.clone() };
        assert_eq!(plan(&gone), Plan::Release);
        let still_there = Facts { deleting: true, ..f };
        assert_eq!(plan(&still_there), Plan::Detach);
        let delayed = Facts {
            detach: Some(DetachedAnnotation { delete_action: Some(DetachedDeleteAction::Delay), force: false }),
            ..gone
        };
        assert_eq!(plan(&delayed), Plan::Idle);
        // Removing the annotation registers the host again (and adopts it).
        let reattached = Facts { detached_status: true, ..facts(S::Provisioned, NodeView::Missing) };
        assert_eq!(plan(&reattached), act(Act::Register));
    }

    #[test]
    fn busy_states_are_the_capacity_consumers() {
        let busy: Vec<_> = [
            S::None,
            S::Unmanaged,
            S::Registering,
            S::Inspecting,
            S::Preparing,
            S::Available,
            S::Provisioning,
            S::Provisioned,
            S::ExternallyProvisioned,
            S::Deprovisioning,
            S::PoweringOffBeforeDelete,
            S::Deleting,
        ]
        .into_iter()
        .filter(|s| is_busy(*s))
        .collect();
        assert_eq!(busy, [S::Inspecting, S::Provisioning, S::Deprovisioning]);
    }

    #[test]
    fn nothing_is_decided_without_a_poll() {
        for state in [S::Inspecting, S::Available, S::Provisioning, S::Provisioned] {
            assert_eq!(plan(&facts(state, NodeView::Unknown)), Plan::Wait, "{state:?}");
        }
    }
}
