//! `check_setting` against baremetal-operator's `CheckSettingIsValid`, case by case.

use super::schema::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The attribute registry sushy-tools serves, which the test BMCs report.
fn registry() -> BTreeMap<String, SettingSchema> {
    let enumeration = |values: &[&str], read_only| SettingSchema {
        attribute_type: Some("Enumeration".into()),
        allowable_values: Some(values.iter().map(|v| v.to_string()).collect()),
        read_only: Some(read_only),
        ..SettingSchema::default()
    };
    let typed = |kind: &str| SettingSchema { attribute_type: Some(kind.into()), ..SettingSchema::default() };
    BTreeMap::from([
        ("ProcTurboMode".into(), enumeration(&["Enabled", "Disabled"], false)),
        ("SecureBootStatus".into(), enumeration(&["Enabled", "Disabled"], true)),
        ("NumCores".into(), SettingSchema { lower_bound: Some(10), upper_bound: Some(20), ..typed("Integer") }),
        ("Unbounded".into(), typed("Integer")),
        ("L2Cache".into(), SettingSchema { min_length: Some(1), max_length: Some(16), ..typed("String") }),
        ("SerialNumber".into(), typed("String")),
        ("QuietBoot".into(), typed("Boolean")),
        ("SysPassword".into(), typed("Password")),
        ("Untyped".into(), SettingSchema::default()),
        ("Odd".into(), typed("Float")),
    ])
}

fn text(value: &str) -> IntOrString {
    IntOrString::String(value.into())
}

fn check(name: &str, value: IntOrString) -> Result<(), SettingProblem> {
    check_setting(&registry(), name, &value)
}

#[test]
fn what_baremetal_operator_accepts_is_accepted() {
    let accepted = [
        ("ProcTurboMode", text("Disabled")),
        ("NumCores", IntOrString::Int(10)),
        ("NumCores", text("20")),
        ("Unbounded", IntOrString::Int(-5)),
        ("L2Cache", text("10x256 KB")),
        ("SerialNumber", text("")),
        ("QuietBoot", text("false")),
        ("Untyped", text("anything")),
    ];
    for (name, value) in accepted {
        assert_eq!(check(name, value.clone()), Ok(()), "{name} = {value:?}");
    }
}

#[test]
fn what_baremetal_operator_refuses_is_refused_with_its_reason() {
    assert!(matches!(check("Missing", text("x")), Err(SettingProblem::Unknown(_))));
    assert!(matches!(check("SecureBootStatus", text("Disabled")), Err(SettingProblem::ReadOnly(_))));
    assert!(matches!(check("ProcTurboMode", text("enabled")), Err(SettingProblem::NotAllowed { .. })));
    assert!(matches!(check("NumCores", IntOrString::Int(21)), Err(SettingProblem::OutOfBounds { .. })));
    assert!(matches!(check("NumCores", text("9")), Err(SettingProblem::OutOfBounds { .. })));
    assert!(matches!(check("L2Cache", text("")), Err(SettingProblem::BadLength { .. })));
    assert!(matches!(check("L2Cache", text("seventeen bytes!!")), Err(SettingProblem::BadLength { .. })));
    assert!(matches!(check("QuietBoot", text("True")), Err(SettingProblem::NotBoolean { .. })));
    assert!(matches!(check("SysPassword", text("secret")), Err(SettingProblem::Password(_))));
    assert!(matches!(check("Odd", text("1.5")), Err(SettingProblem::UnknownType { .. })));
}

#[test]
fn an_integer_that_is_not_one_is_refused_where_baremetal_operator_would_read_zero() {
    assert!(matches!(check("NumCores", text("ten")), Err(SettingProblem::NotInteger { .. })));
    assert!(matches!(check("Unbounded", text("ten")), Err(SettingProblem::NotInteger { .. })));
}

#[test]
fn the_message_names_the_setting_and_what_it_accepts() {
    let message = check("ProcTurboMode", text("Off")).expect_err("not allowed").to_string();
    assert_eq!(message, r#""ProcTurboMode" must be one of Enabled, Disabled, not "Off""#);
}

#[test]
fn extreme_bounds_from_a_bmc_never_overflow() {
    let schemas = BTreeMap::from([(
        "Huge".to_string(),
        SettingSchema {
            attribute_type: Some("String".into()),
            min_length: Some(i64::MIN),
            max_length: Some(i64::MAX),
            ..SettingSchema::default()
        },
    )]);
    assert_eq!(check_setting(&schemas, "Huge", &text("x")), Ok(()));
}

mod the_object {
    use super::*;
    use crate::firmware::{HostFirmwareSettingsSpec, validate_settings};

    fn spec(settings: &[(&str, IntOrString)]) -> HostFirmwareSettingsSpec {
        HostFirmwareSettingsSpec { settings: settings.iter().map(|(k, v)| (k.to_string(), v.clone())).collect() }
    }

    fn current() -> BTreeMap<String, String> {
        registry().keys().map(|k| (k.clone(), String::new())).collect()
    }

    #[test]
    fn a_password_is_refused_by_its_name_before_anything_is_read() {
        let errors = validate_settings(&spec(&[("AdminPassword", text("x"))]), None, None);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "spec.settings[AdminPassword]");
        assert!(errors[0].message.contains("password"), "{}", errors[0].message);
    }

    #[test]
    fn before_the_settings_are_read_any_other_name_and_value_wait_for_them() {
        assert!(
            validate_settings(&spec(&[("Anything", text("x")), ("NumCores", IntOrString::Int(99))]), None, None)
                .is_empty()
        );
    }

    #[test]
    fn a_setting_the_host_lacks_is_refused_once_its_settings_are_read() {
        let errors = validate_settings(&spec(&[("Missing", text("x"))]), Some(&current()), Some(&registry()));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("not among the host's BIOS settings"), "{}", errors[0].message);
    }

    #[test]
    fn each_value_the_schema_refuses_is_one_error_and_the_valid_ones_none() {
        let wanted = spec(&[
            ("ProcTurboMode", text("Disabled")),
            ("NumCores", IntOrString::Int(99)),
            ("SecureBootStatus", text("Disabled")),
        ]);
        let errors = validate_settings(&wanted, Some(&current()), Some(&registry()));
        let paths: Vec<_> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["spec.settings[NumCores]", "spec.settings[SecureBootStatus]"]);
    }
}
