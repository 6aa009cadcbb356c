//! The status of a HostFirmwareSettings, case by case.

use super::*;
use crds::firmware::{HostFirmwareSettingsSpec, SettingSchema};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;

fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).expect("time"))
}

fn hfs(wanted: &[(&str, IntOrString)]) -> HostFirmwareSettings {
    let settings = wanted.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let mut hfs = HostFirmwareSettings::new("server-0", HostFirmwareSettingsSpec { settings });
    hfs.metadata.generation = Some(3);
    hfs
}

fn reading() -> Reading {
    let turbo = SettingSchema {
        attribute_type: Some("Enumeration".into()),
        allowable_values: Some(vec!["Enabled".into(), "Disabled".into()]),
        ..SettingSchema::default()
    };
    Reading {
        settings: BTreeMap::from([("ProcTurboMode".into(), "Enabled".into())]),
        schema: BTreeMap::from([("ProcTurboMode".into(), turbo)]),
    }
}

fn read(reading: &Reading) -> Observed<'_> {
    Observed::Read {
        reading,
        schema: SchemaReference { namespace: "metal3".into(), name: "schema-1".into() },
        serviced: None,
    }
}

fn condition<'a>(status: &'a HostFirmwareSettingsStatus, type_: &str) -> (&'a str, &'a str) {
    let c = find(&status.conditions, type_).expect("condition");
    (c.status.as_str(), c.reason.as_str())
}

fn turbo(value: &str) -> (&'static str, IntOrString) {
    ("ProcTurboMode", IntOrString::String(value.into()))
}

#[test]
fn settings_read_are_published_with_their_schema_and_the_generation() {
    let reading = reading();
    let outcome = compute(&hfs(&[]), &read(&reading), &at(10));
    let status = outcome.status.expect("a first status");
    assert_eq!(status.settings["ProcTurboMode"], "Enabled");
    assert_eq!(status.firmware_schema.as_ref().map(|s| s.name.as_str()), Some("schema-1"));
    assert_eq!(status.observed_generation, Some(3));
    assert_eq!(status.last_updated, Some(at(10)));
    assert_eq!(condition(&status, VALID), ("True", "Success"));
    assert_eq!(condition(&status, CHANGE_DETECTED), ("False", "Success"));
    assert_eq!(condition(&status, "Ready"), ("True", "SettingsMatch"));
    assert_eq!(outcome.notices.reasons(), ["SettingsRead"]);
}

#[test]
fn the_same_reading_again_writes_nothing_and_announces_nothing() {
    let reading = reading();
    let mut object = hfs(&[turbo("Disabled")]);
    object.status = compute(&object, &read(&reading), &at(10)).status;
    let again = compute(&object, &read(&reading), &at(20));
    assert!(again.status.is_none(), "{:?}", again.status);
    assert!(again.notices.is_empty());
}

#[test]
fn a_valid_wanted_value_that_differs_is_a_change_detected() {
    let reading = reading();
    let outcome = compute(&hfs(&[turbo("Disabled")]), &read(&reading), &at(10));
    assert!(outcome.change_detected);
    let status = outcome.status.expect("status");
    assert_eq!(condition(&status, CHANGE_DETECTED), ("True", "Success"));
    assert_eq!(condition(&status, VALID), ("True", "Success"));
    assert_eq!(condition(&status, "Ready"), ("False", "ChangeDetected"));
    assert_eq!(outcome.notices.reasons(), ["SettingsRead", "ChangeDetected"]);
    assert_eq!(outcome.waiting, Settings::from([("ProcTurboMode".into(), "Disabled".into())]), "the host waits for it");
}

#[test]
fn a_provisioned_host_says_whether_its_policy_lets_servicing_apply_the_change() {
    let reading = reading();
    let object = hfs(&[turbo("Disabled")]);
    let schema = SchemaReference { namespace: "metal3".into(), name: "schema-1".into() };
    let with = |serviced| Observed::Read { reading: &reading, schema: schema.clone(), serviced };
    let refused = compute(&object, &with(Some(false)), &at(10)).status.expect("status");
    assert_eq!(condition(&refused, "Ready"), ("False", "ServicingNotAllowed"));
    let message = &find(&refused.conditions, "Ready").expect("ready").message;
    assert!(message.contains("HostUpdatePolicy named server-0") && message.contains("onReboot"), "{message}");
    let allowed = compute(&object, &with(Some(true)), &at(10));
    assert_eq!(condition(&allowed.status.expect("status"), "Ready"), ("False", "AwaitingReboot"));
    assert!(!allowed.waiting.is_empty(), "the host controller is told either way: it reads the policy itself");
}

#[test]
fn a_value_the_schema_refuses_is_invalid_with_the_reason_and_one_warning() {
    let reading = reading();
    let mut object = hfs(&[turbo("Sometimes")]);
    let outcome = compute(&object, &read(&reading), &at(10));
    let status = outcome.status.expect("status");
    assert_eq!(condition(&status, VALID), ("False", "ConfigurationError"));
    let message = &find(&status.conditions, VALID).expect("valid").message;
    assert!(message.contains("spec.settings[ProcTurboMode]") && message.contains("Sometimes"), "{message}");
    assert_eq!(condition(&status, "Ready"), ("False", "InvalidSettings"));
    assert!(outcome.notices.reasons().contains(&"ValidationFailed"));
    assert!(outcome.waiting.is_empty(), "nothing invalid is applied");
    object.status = Some(status);
    assert!(compute(&object, &read(&reading), &at(20)).notices.is_empty(), "warned once, not every read");
}

#[test]
fn the_host_reaching_the_wanted_value_clears_the_change_with_an_event() {
    let mut object = hfs(&[turbo("Disabled")]);
    object.status = compute(&object, &read(&reading()), &at(10)).status;
    let mut applied = reading();
    applied.settings.insert("ProcTurboMode".into(), "Disabled".into());
    let outcome = compute(&object, &read(&applied), &at(20));
    let status = outcome.status.expect("status");
    assert_eq!(condition(&status, CHANGE_DETECTED), ("False", "Success"));
    assert_eq!(condition(&status, "Ready"), ("True", "SettingsMatch"));
    assert_eq!(outcome.notices.reasons(), ["SettingsMatch"]);
}

#[test]
fn unread_keeps_what_was_read_and_says_why_in_ready() {
    let mut object = hfs(&[]);
    object.status = compute(&object, &read(&reading()), &at(10)).status;
    let unread = Observed::Unread { reason: "Detached", message: "the host is detached".into() };
    let outcome = compute(&object, &unread, &at(20));
    assert!(outcome.waiting.is_empty(), "nothing is applied on what was not read now");
    let status = outcome.status.expect("status");
    assert_eq!(status.settings["ProcTurboMode"], "Enabled");
    assert_eq!(condition(&status, "Ready"), ("False", "Detached"));
}

#[test]
fn before_anything_is_read_only_a_password_is_invalid() {
    let unread = Observed::Unread { reason: "NotRead", message: "not yet".into() };
    let waiting = compute(&hfs(&[turbo("Anything")]), &unread, &at(10)).status.expect("status");
    assert_eq!(condition(&waiting, VALID), ("True", "Success"));
    assert_eq!(condition(&waiting, CHANGE_DETECTED), ("True", "Success"));
    let password = hfs(&[("AdminPassword", IntOrString::String("x".into()))]);
    let refused = compute(&password, &unread, &at(10)).status.expect("status");
    assert_eq!(condition(&refused, VALID), ("False", "ConfigurationError"));
}

#[test]
fn an_integer_wanted_value_matches_its_text_in_the_status() {
    let mut reading = reading();
    reading.settings.insert("NumCores".into(), "8".into());
    reading
        .schema
        .insert("NumCores".into(), SettingSchema { attribute_type: Some("Integer".into()), ..Default::default() });
    let outcome = compute(&hfs(&[("NumCores", IntOrString::Int(8))]), &read(&reading), &at(10));
    assert!(!outcome.change_detected);
}
