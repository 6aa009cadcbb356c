//! What each provisioning state is, and the transitions between them.

use crds::baremetalhost::{ErrorType, ProvisioningState};

use ProvisioningState as S;

/// States that take a provisioning slot (`--provisioning-limit`).
pub(crate) fn is_busy(state: ProvisioningState) -> bool {
    matches!(state, S::Inspecting | S::Provisioning | S::Deprovisioning)
}

/// States in which the host is on its way somewhere.
pub(crate) fn is_transitional(state: ProvisioningState) -> bool {
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
pub(crate) fn detach_allowed(state: ProvisioningState) -> bool {
    matches!(state, S::Provisioned | S::ExternallyProvisioned | S::Available | S::Ready)
}

/// The error class of failures in a state.
pub(crate) fn error_type_of(state: ProvisioningState) -> ErrorType {
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
#[cfg(test)]
pub(crate) fn allowed(from: ProvisioningState, to: ProvisioningState) -> bool {
    let deletion = match from {
        S::None | S::Unmanaged | S::Registering => to == S::Deleting,
        S::Provisioning | S::Provisioned => to == S::Deprovisioning,
        // Or straight to deleting, when deprovisioning failed too often (the give-up rule).
        S::Deprovisioning => matches!(to, S::PoweringOffBeforeDelete | S::Deleting),
        S::PoweringOffBeforeDelete => to == S::Deleting,
        S::Deleting => false,
        _ => to == S::PoweringOffBeforeDelete,
    };
    deletion
        || matches!(
            (from, to),
            (S::None, S::Registering | S::Unmanaged)
                | (S::Unmanaged, S::Registering)
                | (S::Registering, S::ExternallyProvisioned | S::Preparing | S::Inspecting | S::Provisioned)
                | (S::Inspecting, S::Preparing)
                | (S::Preparing | S::MatchProfile, S::Available)
                | (S::Available | S::Ready, S::ExternallyProvisioned | S::Inspecting | S::Preparing | S::Provisioning)
                | (S::Provisioning, S::Provisioned | S::Deprovisioning)
                | (S::Provisioned, S::Deprovisioning)
                | (S::Deprovisioning, S::Available)
                | (S::ExternallyProvisioned, S::Provisioned)
        )
}
