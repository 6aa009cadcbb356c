//! The status of a HostFirmwareComponents, case by case.

use super::*;
use crds::firmware::HostFirmwareComponentsSpec;
use k8s_openapi::jiff::Timestamp;

fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).expect("time"))
}

fn bios(url: &str) -> FirmwareUpdate {
    FirmwareUpdate { component: "bios".into(), url: url.into() }
}

fn hfc(updates: &[FirmwareUpdate]) -> HostFirmwareComponents {
    let mut hfc = HostFirmwareComponents::new("server-0", HostFirmwareComponentsSpec { updates: updates.to_vec() });
    hfc.metadata.generation = Some(2);
    hfc
}

fn ironic() -> Vec<FirmwareComponent> {
    let component = |name: &str, version: &str| FirmwareComponent {
        component: name.into(),
        initial_version: Some(version.into()),
        current_version: Some(version.into()),
        last_version_flashed: None,
        updated_at: None,
    };
    vec![component("bios", "1.0.0"), component("bmc", "1.00"), component("cpld", "3")]
}

fn read<'a>(components: &'a [FirmwareComponent], handed: &[FirmwareUpdate], moment: Moment) -> Observed<'a> {
    Observed::Read { components, handed: handed.to_vec(), moment }
}

fn condition<'a>(status: &'a HostFirmwareComponentsStatus, type_: &str) -> (&'a str, &'a str) {
    let c = find(&status.conditions, type_).expect("condition");
    (c.status.as_str(), c.reason.as_str())
}

const PROVISIONED: Moment = Moment::Provisioned { on_reboot: true };

#[test]
fn bios_bmc_and_nics_are_published_and_nothing_waits_without_updates() {
    let components = ironic();
    let outcome = compute(&hfc(&[]), &read(&components, &[], PROVISIONED), &at(10));
    let status = outcome.status.expect("a first status");
    let names: Vec<&str> = status.components.iter().map(|c| c.component.as_str()).collect();
    assert_eq!(names, ["bios", "bmc"], "other components are left out, as baremetal-operator leaves them");
    assert_eq!(status.components[0].initial_version, "1.0.0");
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(condition(&status, CHANGE_DETECTED), ("False", "OK"));
    assert_eq!(condition(&status, VALID), ("True", "OK"));
    assert_eq!(condition(&status, READY), ("True", "UpToDate"));
    assert!(outcome.waiting.is_empty());
    assert!(!outcome.change_detected);
}

#[test]
fn valid_updates_not_handed_over_wait_for_the_hosts_reboot() {
    let components = ironic();
    let wanted = [bios("http://h/bios-2.bin")];
    let outcome = compute(&hfc(&wanted), &read(&components, &[], PROVISIONED), &at(10));
    let status = outcome.status.expect("status");
    assert_eq!(condition(&status, CHANGE_DETECTED), ("True", "OK"));
    assert_eq!(condition(&status, READY), ("False", "AwaitingReboot"));
    assert_eq!(outcome.waiting, wanted);
    let barred = compute(&hfc(&wanted), &read(&components, &[], Moment::Provisioned { on_reboot: false }), &at(10));
    let ready = find(&barred.status.as_ref().expect("status").conditions, READY).expect("ready").clone();
    assert_eq!(ready.reason, "ServicingNotAllowed");
    assert!(ready.message.contains("HostUpdatePolicy named server-0"), "{}", ready.message);
    assert_eq!(barred.waiting, wanted, "the host decides with its policy; what waits is the same");
}

#[test]
fn handed_over_updates_are_the_status_updates_and_nothing_waits() {
    let components = ironic();
    let wanted = [bios("http://h/bios-2.bin")];
    let outcome = compute(&hfc(&wanted), &read(&components, &wanted, PROVISIONED), &at(10));
    let status = outcome.status.expect("status");
    assert_eq!(status.updates, wanted);
    assert_eq!(condition(&status, CHANGE_DETECTED), ("False", "OK"));
    assert_eq!(condition(&status, READY), ("True", "UpToDate"));
    assert!(outcome.waiting.is_empty());
    let serviced = compute(&hfc(&wanted), &read(&components, &wanted, Moment::Servicing), &at(10));
    assert_eq!(condition(serviced.status.as_ref().expect("status"), READY), ("False", "Servicing"));
    let failed = compute(&hfc(&wanted), &read(&components, &[], Moment::ServicingFailed), &at(10));
    assert_eq!(condition(failed.status.as_ref().expect("status"), READY), ("False", "ServicingFailed"));
    assert_eq!(failed.waiting, wanted, "still waiting: the host decides to retry or end it");
}

#[test]
fn invalid_updates_are_refused_as_a_condition_and_never_wait() {
    let components = ironic();
    let wrong = [FirmwareUpdate { component: "cpld".into(), url: "http://h/cpld.bin".into() }];
    let outcome = compute(&hfc(&wrong), &read(&components, &[], PROVISIONED), &at(10));
    let status = outcome.status.expect("status");
    assert_eq!(condition(&status, VALID), ("False", "InvalidComponent"));
    assert_eq!(condition(&status, READY), ("False", "InvalidComponent"));
    assert!(outcome.waiting.is_empty());
    assert!(outcome.notices.iter().any(|n| n.reason == "ValidationFailed"));
}

#[test]
fn an_unreadable_host_keeps_what_was_read_and_says_why() {
    let components = ironic();
    let wanted = [bios("http://h/bios-2.bin")];
    let first = compute(&hfc(&wanted), &read(&components, &wanted, PROVISIONED), &at(10));
    let mut object = hfc(&wanted);
    object.status = first.status;
    let unread = Observed::Unread { reason: "IronicUnavailable", message: "connection refused".into() };
    let outcome = compute(&object, &unread, &at(20));
    let status = outcome.status.expect("the conditions changed");
    assert_eq!(status.components.len(), 2);
    assert_eq!(status.updates, wanted);
    assert_eq!(condition(&status, READY), ("False", "IronicUnavailable"));
    assert!(outcome.waiting.is_empty(), "nothing is decided on what was not read");
}

#[test]
fn the_same_reading_writes_nothing() {
    let components = ironic();
    let first = compute(&hfc(&[]), &read(&components, &[], PROVISIONED), &at(10));
    let mut object = hfc(&[]);
    object.status = first.status;
    let again = compute(&object, &read(&components, &[], PROVISIONED), &at(20));
    assert!(again.status.is_none());
    assert!(again.notices.is_empty());
}

#[test]
fn ironic_times_with_or_without_an_offset_are_read() {
    assert!(ironic_time("2026-12-05T01:02:03+00:00").is_some());
    assert!(ironic_time("2026-12-05T01:02:03.123456").is_some());
    assert!(ironic_time("yesterday").is_none());
}

#[test]
fn a_host_without_components_can_flash_nothing() {
    let wanted = [bios("http://h/bios-2.bin")];
    let outcome = compute(&hfc(&wanted), &read(&[], &[], PROVISIONED), &at(10));
    assert_eq!(condition(outcome.status.as_ref().expect("status"), READY), ("False", "NoComponents"));
    assert!(outcome.waiting.is_empty());
}
