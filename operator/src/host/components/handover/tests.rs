//! The mark's rules, case by case: what a crash, a refusal, a failure or another servicing
//! leaves flashed, in flight or still to flash.

use super::*;
use serde_json::json;

fn update(component: &str, url: &str) -> FirmwareUpdate {
    FirmwareUpdate { component: component.into(), url: url.into() }
}

fn bios() -> FirmwareUpdate {
    update("bios", "http://h/bios-2.bin")
}

fn bmc() -> FirmwareUpdate {
    update("bmc", "http://h/bmc-3.bin")
}

const T0: &str = "2026-12-05T01:00:00+00:00";
const T1: &str = "2026-12-05T01:03:00+00:00";

fn node<'a>(state: &'a ProvisionState, at: &'a str) -> NodeMoment<'a> {
    NodeMoment { provision_state: Some(state), provision_updated_at: Some(at) }
}

/// The mark written before a servicing of `flash` asked for at `T0`, with `done` before it.
fn asked(done: &[FirmwareUpdate], flash: Vec<FirmwareUpdate>) -> Mark {
    let resolved = resolve(None, done, node(&ProvisionState::Active, T0));
    resolved.mark(flash, Some(T0))
}

#[test]
fn a_servicing_that_ended_in_active_flashed_its_updates() {
    let mark = asked(&[], vec![bios()]);
    let resolved = resolve(Some(&mark), &[], node(&ProvisionState::Active, T1));
    assert_eq!(resolved.handed(&[bios()]), [bios()]);
    assert!(resolved.to_flash(&[bios()]).is_empty(), "never flashed twice");
}

#[test]
fn a_servicing_running_has_its_updates_in_flight() {
    let mark = asked(&[], vec![bios()]);
    for state in [ProvisionState::Servicing, ProvisionState::ServiceWait] {
        let resolved = resolve(Some(&mark), &[], node(&state, T1));
        assert_eq!(resolved.in_flight, [bios()]);
        assert_eq!(resolved.handed(&[bios()]), [bios()], "handed over, as baremetal-operator says it");
        assert!(resolved.done.is_empty());
    }
    let same_instant = resolve(Some(&mark), &[], node(&ProvisionState::Servicing, T0));
    assert_eq!(same_instant.in_flight, [bios()], "a node servicing got the request, whatever its time says");
}

#[test]
fn a_request_that_never_reached_ironic_is_sent_again_with_what_was_flashed_before_kept() {
    // bios was flashed; the user adds bmc; the mark for bmc is written; the operator crashes
    // (or the call is refused) before Ironic takes the servicing.
    let mark = asked(&[bios()], vec![bmc()]);
    let resolved = resolve(Some(&mark), &[], node(&ProvisionState::Active, T0));
    assert_eq!(resolved.to_flash(&[bios(), bmc()]), [bmc()], "only bmc again, bios never twice");
    assert_eq!(resolved.handed(&[bios(), bmc()]), [bios()]);
}

#[test]
fn a_failed_servicing_flashed_nothing_of_its_own_and_takes_nothing_flashed_before() {
    let mark = asked(&[bios()], vec![bmc()]);
    let resolved = resolve(Some(&mark), &[], node(&ProvisionState::ServiceFailed, T1));
    assert_eq!(resolved.to_flash(&[bios(), bmc()]), [bmc()]);
    assert_eq!(resolved.handed(&[bios(), bmc()]), [bios()]);
}

#[test]
fn a_later_servicing_cannot_make_an_unresolved_request_look_done() {
    // The request for bmc never reached Ironic; the next servicing (BIOS settings alone)
    // rewrites the mark with what was resolved first: no pending bmc left to be taken as done.
    let stale = asked(&[bios()], vec![bmc()]);
    let resolved = resolve(Some(&stale), &[], node(&ProvisionState::Active, T0));
    let rewritten = resolved.mark(Vec::new(), Some(T0));
    assert_eq!(rewritten.pending, None);
    let after = resolve(Some(&rewritten), &[], node(&ProvisionState::Active, T1));
    assert_eq!(after.to_flash(&[bios(), bmc()]), [bmc()]);
}

#[test]
fn going_back_to_an_earlier_image_is_a_new_flash() {
    let old = update("bios", "http://h/bios-1.bin");
    let mark = asked(std::slice::from_ref(&old), vec![bios()]);
    let flashed = resolve(Some(&mark), &[], node(&ProvisionState::Active, T1));
    assert_eq!(flashed.to_flash(std::slice::from_ref(&old)), [old], "the last flashed image counts, per component");
}

#[test]
fn an_emptied_spec_has_nothing_to_flash_and_nothing_handed() {
    let mark = asked(&[], vec![bios()]);
    let resolved = resolve(Some(&mark), &[], node(&ProvisionState::Active, T1));
    assert!(resolved.to_flash(&[]).is_empty());
    assert!(resolved.handed(&[]).is_empty());
}

#[test]
fn a_node_registered_again_keeps_what_the_object_recorded() {
    let resolved = resolve(None, &[bios()], node(&ProvisionState::Active, T1));
    assert!(resolved.to_flash(&[bios()]).is_empty());
}

#[test]
fn times_are_compared_as_instants() {
    assert!(same_time(Some("2026-12-05T01:00:00+00:00"), Some("2026-12-05T01:00:00")));
    assert!(!same_time(Some("2026-12-05T01:00:00+00:00"), Some("2026-12-05T01:00:01+00:00")));
    assert!(same_time(None, None));
    assert!(!same_time(None, Some(T0)));
}

#[test]
fn a_mark_reads_back_and_anything_else_in_extra_is_no_mark() {
    let written = asked(&[bios()], vec![bmc()]);
    let mut extra = JsonObject::new();
    extra.insert(MARK.into(), serde_json::to_value(&written).expect("json"));
    assert_eq!(mark_of(&extra), Some(written));
    for other in [json!({"done": "all of it"}), json!({}), json!({"updates": [], "before": T0})] {
        extra.insert(MARK.into(), other.clone());
        assert_eq!(mark_of(&extra), None, "{other}");
    }
    assert_eq!(mark_of(&JsonObject::new()), None);
}
