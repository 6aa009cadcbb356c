//! The state machine, state by state: every planned transition is one the machine allows.

use super::states::allowed;
use super::*;
use crds::baremetalhost::annotations::DetachedDeleteAction;
use ironic_client::PowerState;

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
    assert_eq!(plan(&f), Plan::Fail { error: ErrorType::Registration, message: "401 Unauthorized".into(), then: None });
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
fn unsupported_settings_stop_the_host_in_preparing_until_removed() {
    let refused = Some("not supported: spec.raid (…)".to_string());
    // An available host asked for RAID goes back to preparing, before anything is provisioned.
    let available = Facts {
        unsupported: refused.clone(),
        provision_requested: true,
        ..facts(S::Available, node("available", None))
    };
    assert_eq!(transition(&available), S::Preparing);
    let preparing = Facts { unsupported: refused.clone(), ..facts(S::Preparing, node("manageable", None)) };
    assert_eq!(
        plan(&preparing),
        Plan::Fail { error: ErrorType::Preparation, message: "not supported: spec.raid (…)".into(), then: None }
    );
    let recorded = Facts { error_type: Some(ErrorType::Preparation), ..preparing.clone() };
    assert_eq!(plan(&recorded), Plan::Idle, "recorded once, not retried while the spec asks for it");
    let removed = Facts { unsupported: None, ..recorded };
    assert_eq!(transition(&removed), S::Available, "removing the field lets the host move on");
    assert!(allowed(S::Available, S::Preparing));
}

#[test]
fn new_bios_settings_are_applied_in_preparing_before_anything_is_provisioned() {
    let available =
        Facts { bios_change: true, provision_requested: true, ..facts(S::Available, node("available", None)) };
    assert_eq!(transition(&available), S::Preparing, "back to preparing, not on to provisioning");
    let preparing = |state| Facts { bios_change: true, ..facts(S::Preparing, node(state, None)) };
    assert_eq!(plan(&preparing("available")), act(Act::Manage), "a manual clean starts from manageable");
    assert_eq!(plan(&preparing("manageable")), act(Act::ApplyBios));
    let cleaning = Facts { bios_change: true, ..facts(S::Preparing, node("clean wait", Some("manageable"))) };
    assert_eq!(plan(&cleaning), Plan::Wait);
    let failed =
        Facts { bios_change: true, ..facts(S::Preparing, with_error(node("clean failed", None), "BMC said no")) };
    assert!(matches!(plan(&failed), Plan::Fail { error: ErrorType::Preparation, .. }), "{:?}", plan(&failed));
    let applied = Facts { bios_change: false, ..preparing("manageable") };
    assert_eq!(transition(&applied), S::Available);
    let unread = Facts { bios_pending: true, ..applied };
    assert_eq!(plan(&unread), Plan::Wait, "wanted settings not yet read hold the host in preparing");
    let about_to_provision =
        Facts { bios_pending: true, provision_requested: true, ..facts(S::Available, node("available", None)) };
    assert_eq!(transition(&about_to_provision), S::Preparing, "an available host waits for them in preparing");
    // A provisioned host is never taken back for BIOS settings: that is servicing.
    let provisioned = Facts { bios_change: true, ..facts(S::Provisioned, node("active", None)) };
    assert!(!matches!(plan(&provisioned), Plan::Transition(_) | Plan::Act { act: Act::ApplyBios, .. }));
}

#[test]
fn a_provisioned_host_is_serviced_for_its_firmware_updates_at_its_reboot_only_when_their_policy_allows() {
    let off = |updates_allowed, bios_allowed| Facts {
        updates_change: true,
        updates_on_reboot: updates_allowed,
        bios_change: true,
        bios_on_reboot: bios_allowed,
        ..facts(S::Provisioned, powered(node("active", None), PowerState::Off))
    };
    assert_eq!(plan(&off(true, false)), act(Act::Service), "updates alone are reason enough");
    assert_eq!(plan(&off(false, true)), act(Act::Service), "and settings alone");
    assert_eq!(plan(&off(false, false)), act(Act::Power(PowerTarget::On)), "neither allowed: powered on as it is");
    let recorded = |wanted| Facts {
        error_type: Some(ErrorType::Servicing),
        updates_change: wanted,
        updates_on_reboot: true,
        ..facts(S::Provisioned, with_error(node("service failed", None), "BMC said no"))
    };
    assert_eq!(plan(&recorded(true)), retry(Act::Service), "tried again while updates are wanted");
    assert_eq!(plan(&recorded(false)), retry(Act::AbortServicing), "abandoned once none are");
}

#[test]
fn a_provisioned_host_is_serviced_for_its_bios_settings_at_its_reboot_only_when_its_policy_allows() {
    let off = |allowed| Facts {
        bios_change: true,
        bios_on_reboot: allowed,
        ..facts(S::Provisioned, powered(node("active", None), PowerState::Off))
    };
    assert_eq!(plan(&off(true)), act(Act::Service), "off and wanted on: serviced instead of powered on");
    assert_eq!(plan(&off(false)), act(Act::Power(PowerTarget::On)), "no policy: powered on as it is");
    let running = Facts { bios_change: true, bios_on_reboot: true, ..facts(S::Provisioned, node("active", None)) };
    assert_eq!(plan(&running), Plan::Idle, "a running host waits for its reboot");
    let held_off = Facts { power: PowerGoal::Off { hard: false }, ..off(true) };
    assert_eq!(plan(&held_off), Plan::Idle, "not while the reboot annotation holds it off");
    for state in ["servicing", "service wait"] {
        let busy =
            Facts { bios_change: true, bios_on_reboot: true, ..facts(S::Provisioned, node(state, Some("active"))) };
        assert_eq!(plan(&busy), Plan::Wait, "{state}");
    }
    let failed = |wanted| Facts {
        bios_change: wanted,
        bios_on_reboot: true,
        ..facts(S::Provisioned, with_error(node("service failed", None), "BMC said no"))
    };
    assert!(matches!(plan(&failed(true)), Plan::Fail { error: ErrorType::Servicing, then: None, .. }));
    let recorded = |wanted| Facts { error_type: Some(ErrorType::Servicing), ..failed(wanted) };
    assert_eq!(plan(&recorded(true)), retry(Act::Service), "tried again while still wanted");
    assert_eq!(plan(&recorded(false)), retry(Act::AbortServicing), "abandoned once no longer wanted");
    let unknown = Facts { bios_change: false, bios_pending: true, ..recorded(false) };
    assert_eq!(plan(&unknown), Plan::Wait, "what is wanted is not known yet: neither retried nor aborted");
    // Deleted, or given another image, while its servicing failed: aborted, then undeployed.
    let leaving = Facts { error_type: None, ..facts(S::Deprovisioning, node("service failed", None)) };
    assert_eq!(plan(&leaving), act(Act::AbortServicing));
    // Whatever servicing does, the host stays provisioned: no transition, no undeploy.
    for f in [off(true), off(false), running, failed(true), recorded(true), recorded(false)] {
        assert!(!matches!(plan(&f), Plan::Transition(_) | Plan::Act { act: Act::Undeploy | Act::DeleteNode, .. }));
    }
}

#[test]
fn a_data_image_is_handled_at_power_on_before_servicing_and_never_moves_the_host() {
    let off = |due| Facts {
        data_image_due: due,
        externally_provisioned: true,
        bios_change: true,
        bios_on_reboot: true,
        ..facts(S::ExternallyProvisioned, powered(node("active", None), PowerState::Off))
    };
    assert_eq!(plan(&off(true)), act(Act::DataImage), "the data image first");
    assert_eq!(plan(&off(false)), act(Act::Service), "then servicing");
    let plain = Facts { data_image_due: true, ..facts(S::Provisioned, powered(node("active", None), PowerState::Off)) };
    assert_eq!(plan(&plain), act(Act::DataImage));
    let busy = Facts { data_image_due: true, ..facts(S::Provisioned, node("active", Some("active"))) };
    assert_eq!(plan(&busy), Plan::Wait, "never while Ironic moves the node");
    // The host keeps its state: no transition, no undeploy, no node deleted.
    for f in [off(true), plain, busy] {
        assert!(!matches!(plan(&f), Plan::Transition(_) | Plan::Act { act: Act::Undeploy | Act::DeleteNode, .. }));
    }
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
fn a_host_that_cleans_nothing_provides_its_node_before_it_takes_a_slot() {
    let asked = |node| Facts { provision_requested: true, cleaning_disabled: true, ..facts(S::Available, node) };
    assert_eq!(plan(&asked(node("manageable", None))), act(Act::Provide));
    assert_eq!(plan(&asked(node("cleaning", Some("available")))), Plan::Wait, "its provide under way");
    assert_eq!(transition(&asked(node("available", None))), S::Provisioning, "provided: the slot is taken now");
    let cleaning = Facts { provision_requested: true, ..facts(S::Available, node("manageable", None)) };
    assert_eq!(transition(&cleaning), S::Provisioning, "a provide that cleans takes the slot first");
    let failed = Facts { error_type: Some(ErrorType::Preparation), ..asked(node("manageable", None)) };
    assert_eq!(transition(&failed), S::Provisioning, "after a failure, provided within the slot as before");
    let mut provided = node("available", None);
    if let NodeView::Present(n) = &mut provided {
        n.automated_clean = Some(false);
    }
    let cleaning_since = Facts { provision_requested: true, ..facts(S::Available, provided) };
    assert_eq!(plan(&cleaning_since), act(Act::Manage), "provided without cleaning, then cleaning asked for");
    let idle = Facts { cleaning_disabled: true, ..facts(S::Available, node("manageable", None)) };
    assert_eq!(plan(&idle), Plan::Idle, "nothing is provided before provisioning is asked for");
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
fn a_deployment_that_left_the_node_off_is_powered_on_before_the_host_is_provisioned() {
    let off = powered(node("active", None), PowerState::Off);
    assert_eq!(plan(&facts(S::Provisioning, off.clone())), act(Act::Power(PowerTarget::On)));
    // Fake hardware reports no power state at all until asked.
    let unknown = match node("active", None) {
        NodeView::Present(mut n) => {
            n.power_state = None;
            NodeView::Present(n)
        }
        other => other,
    };
    assert_eq!(plan(&facts(S::Provisioning, unknown)), act(Act::Power(PowerTarget::On)));
    let powering = match off.clone() {
        NodeView::Present(mut n) => {
            n.target_power_state = Some(PowerState::On);
            NodeView::Present(n)
        }
        other => other,
    };
    assert_eq!(plan(&facts(S::Provisioning, powering)), Plan::Wait);
    assert_eq!(transition(&facts(S::Provisioning, node("active", None))), S::Provisioned, "on: provisioned");
    // Anything but the plain case is left to the provisioned state's power management.
    let keep_off = Facts { power: PowerGoal::Off { hard: false }, ..facts(S::Provisioning, off.clone()) };
    assert_eq!(transition(&keep_off), S::Provisioned);
    let failed = Facts { power_attempt_failed: true, ..facts(S::Provisioning, off.clone()) };
    assert_eq!(transition(&failed), S::Provisioned);
    let error = Facts { error_type: Some(ErrorType::PowerManagement), ..facts(S::Provisioning, off.clone()) };
    assert_eq!(transition(&error), S::Provisioned);
    let reboot_in_place = Facts { power: PowerGoal::Reboot { hard: false }, ..facts(S::Provisioning, off) };
    assert_eq!(transition(&reboot_in_place), S::Provisioned);
}

#[test]
fn a_failed_deployment_is_recorded_then_cleaned_up_and_retried() {
    // As Ironic shows it: a failure state keeps its target (`deploy failed` → `active`).
    let failed = with_error(node("deploy failed", Some("active")), "bad image");
    let f = facts(S::Provisioning, failed);
    assert_eq!(plan(&f), Plan::Fail { error: ErrorType::Provisioning, message: "bad image".into(), then: None });
    let without_target = facts(S::Provisioning, with_error(node("deploy failed", None), "bad image"));
    assert_eq!(plan(&without_target), plan(&f), "with or without its target, a failed deployment rests");
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
            assert!(!matches!(p, Plan::Act { act: Act::Deploy | Act::Provide, .. }), "{state:?}/{node_state}: {p:?}");
        }
    }
    let external = Facts { externally_provisioned: true, ..facts(S::ExternallyProvisioned, node("manageable", None)) };
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
    let rebooted = Facts { power: PowerGoal::Off { hard: false }, reboot_oneshot: true, ..facts(S::Provisioned, off) };
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
    assert_eq!(plan(&deleting(S::PoweringOffBeforeDelete, node("available", None))), act(Act::Power(PowerTarget::Off)));
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
fn a_host_being_deleted_powers_off_a_node_resting_in_clean_failed_rather_than_waiting_for_its_kept_target() {
    let deleting = |state, node| Facts { deleting: true, ..facts(state, node) };
    let failed = node("clean failed", Some("available"));
    assert_eq!(plan(&deleting(S::PoweringOffBeforeDelete, failed)), act(Act::Power(PowerTarget::Off)));
    let cleaning = node("cleaning", Some("available"));
    assert_eq!(plan(&deleting(S::PoweringOffBeforeDelete, cleaning)), Plan::Wait);
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

#[test]
fn a_host_whose_status_was_lost_while_its_node_is_active_is_adopted() {
    assert_eq!(transition(&facts(S::Registering, node("active", None))), S::Provisioned);
    let external = Facts { externally_provisioned: true, ..facts(S::Registering, node("active", None)) };
    assert_eq!(transition(&external), S::ExternallyProvisioned);
    assert_eq!(plan(&facts(S::Registering, node("active", Some("deleted")))), Plan::Wait, "busy: wait");
}

#[test]
fn deleting_a_host_whose_node_ironic_lost_registers_and_cleans_it_before_release() {
    let deleting = |state, node| Facts { deleting: true, ..facts(state, node) };
    assert_eq!(plan(&deleting(S::Deprovisioning, NodeView::Missing)), act(Act::Register));
    assert_eq!(plan(&deleting(S::Deprovisioning, node("enroll", None))), act(Act::Register));
    assert_eq!(plan(&deleting(S::Deprovisioning, node("manageable", None))), act(Act::Provide));
    assert_eq!(plan(&deleting(S::Deprovisioning, node("cleaning", Some("available")))), Plan::Wait);
    assert_eq!(transition(&deleting(S::Deprovisioning, node("available", None))), S::PoweringOffBeforeDelete);
    let no_bmc = Facts { has_bmc: false, ..deleting(S::Deprovisioning, NodeView::Missing) };
    assert_eq!(transition(&no_bmc), S::PoweringOffBeforeDelete);
    let detached = Facts { detached_status: true, ..deleting(S::Deprovisioning, NodeView::Missing) };
    assert_eq!(plan(&detached), Plan::Release, "a detached host is released as it is");
    let given_up = Facts { error_count: 4, ..deleting(S::Deprovisioning, NodeView::Missing) };
    assert_eq!(transition(&given_up), S::Deleting, "registration failures still give up");
}

#[test]
fn only_calls_and_detaching_reach_ironic_so_a_host_without_our_finalizer_can_still_report_an_error() {
    let failed = plan(&facts(S::Registering, with_error(node("enroll", None), "401 Unauthorized")));
    assert!(matches!(failed, Plan::Fail { .. }) && !failed.reaches_ironic());
    assert!(!plan(&facts(S::Registering, node("verifying", Some("manageable")))).reaches_ironic());
    assert!(!Plan::Transition(S::Registering).reaches_ironic());
    assert!(plan(&facts(S::Registering, NodeView::Missing)).reaches_ironic(), "registering creates a node");
    assert!(Plan::Detach.reaches_ironic());
}

#[test]
fn with_shards_a_node_missing_from_the_poll_is_looked_for_by_name_before_its_host_moves_on() {
    let unsure = |state, deleting| Facts { missing_unsure: true, deleting, ..facts(state, NodeView::Missing) };
    assert_eq!(plan(&unsure(S::Deprovisioning, false)), act(Act::Register), "not available before it is cleaned");
    assert_eq!(plan(&unsure(S::Deprovisioning, true)), act(Act::Register));
    assert_eq!(plan(&unsure(S::PoweringOffBeforeDelete, true)), act(Act::Register), "powered off first");
    assert_eq!(plan(&unsure(S::Provisioned, false)), act(Act::Register));
    let no_bmc = Facts { has_bmc: false, ..unsure(S::Deprovisioning, false) };
    assert_eq!(transition(&no_bmc), S::Available, "nothing to register it with");
}
