//! When Ironic last refreshed what it holds of a node's firmware (its BIOS settings and its
//! firmware components), as far as the polls show.
//!
//! Ironic reads a node's BIOS settings and firmware components into its database when it
//! verifies the node (`manage`), when cleaning runs (its start and end) and when servicing does
//! (`conductor/utils.py` `node_update_cache`, called from `verify.py`, `cleaning.py` and
//! `servicing.py` in Ironic 39), and after the BIOS interface's own steps (`apply_configuration`,
//! `factory_reset`) and the firmware interface's `update`, which run in cleaning and servicing
//! or as deploy steps. It also reads the firmware components when an inspection ends
//! (`conductor/inspection.py`), which is counted as a refresh of both (a BIOS read more per
//! inspection, so one record serves both objects). The operator's deployments ask for no such
//! step (only a custom deploy step, and no instance traits that would bring deploy templates),
//! so a deployment, an inspection's start, and a `provide` with the node's automated cleaning
//! off refresh nothing. A read made since the last refresh would show the same, so the
//! settings' and the components' controllers skip it.

use ironic_client::{NodeStatusSummary, ProvisionState};

/// Whether a node seen as `before`, then as `after`, may have had its firmware refreshed in
/// between. Only transitions known to refresh nothing say no; anything else may have.
pub(super) fn may_refresh(before: &NodeStatusSummary, after: &NodeStatusSummary) -> bool {
    use ProvisionState as P;
    if before.uuid != after.uuid {
        return true;
    }
    let (from, to) = (before.provision_state.as_ref(), after.provision_state.as_ref());
    let same_state = from == to && before.target_provision_state == after.target_provision_state;
    if same_state && before.provision_updated_at == after.provision_updated_at {
        // No provision-state transition since.
        return false;
    }
    // The states Ironic stays in while an agent reports (each heartbeat moves the time) or a
    // step runs, all of them refreshing nothing.
    let moving = |s: Option<&P>| {
        matches!(s, Some(P::Deploying | P::DeployWait | P::DeployHold | P::Inspecting | P::InspectWait))
    };
    if from == to {
        // Still moving, or back where it was: what passed in between a resting state's two
        // sightings (a servicing, a manual clean) is unknown.
        return !moving(to);
    }
    // Deploying from `available`: the operator never rebuilds from `active`, and a node seen
    // `active` and then deploying may have been undeployed and cleaned between the two polls.
    let deploying = |s: Option<&P>| matches!(s, Some(P::Available | P::Deploying | P::DeployWait | P::DeployHold));
    let deployed = deploying(from) && matches!(to, Some(P::Deploying | P::DeployWait | P::DeployHold | P::Active));
    // An inspection under way: its end, back in `manageable`, reads the firmware components.
    let inspecting = |s: Option<&P>| matches!(s, Some(P::Inspecting | P::InspectWait));
    let inspection_runs = (from == Some(&P::Manageable) || inspecting(from)) && inspecting(to);
    !(deployed || inspection_runs || skipped_cleaning(before, after))
}

/// `provide` with the node's automated cleaning off (before and after: a clean under way ran
/// with what the node said when it started): `manageable` to `available`, perhaps through
/// `cleaning` (its target then `available`; a manual clean's is `manageable`).
fn skipped_cleaning(before: &NodeStatusSummary, after: &NodeStatusSummary) -> bool {
    use ProvisionState as P;
    let providing = |n: &NodeStatusSummary| {
        n.provision_state == Some(P::Cleaning) && n.target_provision_state == Some(P::Available)
    };
    let from = before.provision_state == Some(P::Manageable) || providing(before);
    let to = after.provision_state == Some(P::Available) || providing(after);
    let off = before.automated_clean == Some(false) && after.automated_clean == Some(false);
    off && from && to
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node in `state` (moving to `target`), its provision state changed at `at`.
    fn seen(state: &str, target: Option<&str>, at: &str) -> NodeStatusSummary {
        NodeStatusSummary {
            uuid: "u".into(),
            provision_state: Some(ProvisionState::from(state)),
            target_provision_state: target.map(ProvisionState::from),
            provision_updated_at: Some(at.into()),
            automated_clean: Some(false),
            ..NodeStatusSummary::default()
        }
    }

    #[test]
    fn verifying_cleaning_and_servicing_may_refresh() {
        assert!(may_refresh(&seen("verifying", Some("manageable"), "1"), &seen("manageable", None, "2")));
        assert!(may_refresh(&seen("manageable", None, "1"), &seen("cleaning", Some("manageable"), "2")), "manual");
        assert!(may_refresh(&seen("active", None, "1"), &seen("servicing", Some("active"), "2")));
        let mut cleaned = seen("available", None, "2");
        cleaned.automated_clean = None;
        assert!(may_refresh(&seen("manageable", None, "1"), &cleaned), "the conductor's default may clean");
        assert!(may_refresh(&seen("active", None, "1"), &seen("deleting", Some("available"), "2")));
        assert!(may_refresh(&seen("active", None, "1"), &seen("active", None, "2")), "a servicing between polls");
        assert!(
            may_refresh(&seen("manageable", None, "1"), &seen("manageable", None, "2")),
            "a manual clean or an inspection"
        );
        assert!(may_refresh(&seen("cleaning", Some("manageable"), "1"), &seen("manageable", None, "2")));
        assert!(may_refresh(&seen("servicing", Some("active"), "1"), &seen("active", None, "2")));
        assert!(
            may_refresh(&seen("cleaning", Some("manageable"), "1"), &seen("manageable", None, "1")),
            "within the second of the time's precision"
        );
        assert!(
            may_refresh(&seen("active", None, "1"), &seen("deploying", Some("active"), "2")),
            "undeployed, cleaned and deployed again between two polls"
        );
        assert!(
            may_refresh(&seen("inspect wait", Some("manageable"), "1"), &seen("manageable", None, "2")),
            "an inspection's end reads the firmware components"
        );
        let mut cleaning_on = seen("cleaning", Some("available"), "1");
        cleaning_on.automated_clean = None;
        assert!(may_refresh(&cleaning_on, &seen("available", None, "2")), "the clean began with cleaning on");
    }

    #[test]
    fn a_deployment_an_inspections_start_and_a_provide_without_cleaning_refresh_nothing() {
        let steps = [
            (seen("manageable", None, "1"), seen("available", None, "2")),
            (seen("manageable", None, "1"), seen("cleaning", Some("available"), "2")),
            (seen("cleaning", Some("available"), "1"), seen("available", None, "2")),
            (seen("available", None, "1"), seen("deploying", Some("active"), "2")),
            (seen("deploying", Some("active"), "1"), seen("active", None, "2")),
            (seen("available", None, "1"), seen("active", None, "2")),
            (seen("manageable", None, "1"), seen("inspecting", Some("manageable"), "2")),
            (seen("inspecting", Some("manageable"), "1"), seen("inspect wait", Some("manageable"), "2")),
            (seen("wait call-back", Some("active"), "1"), seen("wait call-back", Some("active"), "2")),
            (seen("active", None, "1"), seen("active", None, "1")),
        ];
        for (before, after) in steps {
            assert!(!may_refresh(&before, &after), "{before:?} -> {after:?}");
        }
    }

    #[test]
    fn another_node_under_the_name_may_hold_anything() {
        let mut other = seen("active", None, "1");
        other.uuid = "v".into();
        assert!(may_refresh(&seen("active", None, "1"), &other));
    }
}
