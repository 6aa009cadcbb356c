//! When Ironic last refreshed what it holds of a node's firmware, as far as the polls show.
//!
//! Ironic reads a node's BIOS settings (and firmware components, vendor and boot mode) into its
//! database only when it verifies the node (`manage`), when cleaning runs (its start and end),
//! and when servicing does (`conductor/utils.py` `node_update_cache`, called from `verify.py`,
//! `cleaning.py` and `servicing.py` in Ironic 39). A deployment, an inspection, and a `provide`
//! with automated cleaning off refresh nothing. A read of the settings made since the last
//! refresh would show the same, so the firmware controllers skip it.

use ironic_client::{NodeStatusSummary, ProvisionState};

/// Whether a node seen as `before`, then as `after`, may have had its firmware caches refreshed
/// in between. Only transitions known to refresh nothing say no; anything else may have.
pub(super) fn may_refresh(before: &NodeStatusSummary, after: &NodeStatusSummary) -> bool {
    use ProvisionState as P;
    if before.uuid != after.uuid {
        return true;
    }
    if before.provision_updated_at == after.provision_updated_at {
        // No provision-state transition since.
        return false;
    }
    let (from, to) = (before.provision_state.as_ref(), after.provision_state.as_ref());
    if from == to {
        // Back where it was: what passed in between (a servicing, a manual clean) is unknown.
        return true;
    }
    let deploying = |s: Option<&P>| {
        matches!(s, Some(P::Available | P::Deploying | P::DeployWait | P::DeployHold | P::DeployFailed | P::Active))
    };
    let inspecting = |s: Option<&P>| matches!(s, Some(P::Manageable | P::Inspecting | P::InspectWait));
    let deployed = deploying(from) && deploying(to) && to != Some(&P::Available);
    let inspected = inspecting(from) && inspecting(to);
    !(deployed || inspected || skipped_cleaning(before, after))
}

/// `provide` with automated cleaning off: `manageable` to `available`, perhaps through
/// `cleaning` (its target then `available`; a manual clean's is `manageable`).
fn skipped_cleaning(before: &NodeStatusSummary, after: &NodeStatusSummary) -> bool {
    use ProvisionState as P;
    let providing = |n: &NodeStatusSummary| {
        n.provision_state == Some(P::Cleaning) && n.target_provision_state == Some(P::Available)
    };
    let from = before.provision_state == Some(P::Manageable) || providing(before);
    let to = after.provision_state == Some(P::Available) || providing(after);
    after.automated_clean == Some(false) && from && to
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
        assert!(may_refresh(&seen("manageable", None, "1"), &seen("manageable", None, "2")), "a manual clean");
    }

    #[test]
    fn a_deployment_an_inspection_and_a_provide_without_cleaning_refresh_nothing() {
        let steps = [
            (seen("manageable", None, "1"), seen("available", None, "2")),
            (seen("manageable", None, "1"), seen("cleaning", Some("available"), "2")),
            (seen("cleaning", Some("available"), "1"), seen("available", None, "2")),
            (seen("available", None, "1"), seen("deploying", Some("active"), "2")),
            (seen("deploying", Some("active"), "1"), seen("active", None, "2")),
            (seen("available", None, "1"), seen("active", None, "2")),
            (seen("manageable", None, "1"), seen("inspecting", Some("manageable"), "2")),
            (seen("inspecting", Some("manageable"), "1"), seen("manageable", None, "2")),
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
