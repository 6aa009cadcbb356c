//! Decoding: what the plan reads and what the Ironic calls get, from one look at the host.

use super::*;
use crate::host::driver::BmcCredentials;
use crds::baremetalhost::{BareMetalHostSpec, BmcDetails, CredentialsStatus};
use crds::condition::{Condition, DEGRADED, TRUE};
use ironic_client::{NodeStatusSummary, PowerState, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

fn host(annotations: &[(&str, &str)]) -> BareMetalHost {
    let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
    host.metadata.namespace = Some("ns".into());
    host.metadata.uid = Some("uid-1".into());
    host.metadata.generation = Some(1);
    host.metadata.annotations =
        Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>());
    host
}

fn with_bmc(mut host: BareMetalHost, address: &str) -> BareMetalHost {
    host.spec.bmc = Some(BmcDetails { address: address.into(), credentials_name: "bmc".into(), ..Default::default() });
    host
}

fn credentials(version: &str) -> Credentials {
    Credentials {
        value: Some(BmcCredentials { username: "admin".into(), password: Secret::new("pw".into()) }),
        status: Some(CredentialsStatus { credentials: None, credentials_version: Some(version.into()) }),
        problem: None,
    }
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("time")
}

fn present(power: PowerState, last_error: Option<&str>) -> NodeView {
    NodeView::Present(Box::new(NodeStatusSummary {
        uuid: "node-1".into(),
        provision_state: Some("active".into()),
        power_state: Some(power),
        last_error: last_error.map(Into::into),
        ..NodeStatusSummary::default()
    }))
}

/// Decodes `host` with `status` at time `now`, with the default configuration
/// (error backoff 1-2 minutes after the first error).
fn decoded(
    host: &BareMetalHost,
    status: &BareMetalHostStatus,
    credentials: &Credentials,
    node: NodeView,
    now: Timestamp,
) -> Decoded {
    let key = HostKey::new("ns", "h");
    let observed = Observed {
        host,
        key: &key,
        status,
        credentials,
        bmc: parse_bmc(&host.spec),
        node,
        power_attempt: None,
        bios: Default::default(),
        updates: Default::default(),
        now,
    };
    decode(&Config::default(), observed)
}

fn failed_at(error: ErrorType, secs: i64, generation: i64) -> BareMetalHostStatus {
    let mut status = BareMetalHostStatus { error_type: Some(error), error_count: 1, ..Default::default() };
    status.conditions = Some(vec![Condition {
        type_: DEGRADED.into(),
        status: TRUE.into(),
        reason: "RegistrationError".into(),
        message: "401".into(),
        observed_generation: Some(generation),
        last_transition_time: Time(at(secs)),
    }]);
    status
}

#[test]
fn reboot_annotations_hold_the_host_off_softly_unless_hard() {
    assert_eq!(reboot_goal(&host(&[])), None);
    assert_eq!(reboot_goal(&host(&[("reboot.metal3.io", "")])), Some((false, true)));
    assert_eq!(reboot_goal(&host(&[("reboot.metal3.io/remediation", "{\"mode\":\"hard\"}")])), Some((true, false)));
    assert_eq!(
        reboot_goal(&host(&[("reboot.metal3.io", "{\"mode\":\"soft\"}"), ("reboot.metal3.io/a", "")])),
        Some((false, true))
    );
    assert_eq!(reboot_goal(&host(&[("reboot.metal3.io.example/x", "")])), None);
}

#[test]
fn one_look_gives_the_plan_its_facts_and_the_calls_their_request() {
    let host = with_bmc(host(&[]), "nonsense://10.0.0.1");
    let d = decoded(&host, &BareMetalHostStatus::default(), &credentials("7"), present(PowerState::On, None), at(0));
    assert!(d.facts.has_bmc, "an address that does not parse is still an address: registration reports it");
    assert!(d.request.bmc.as_ref().is_err_and(|e| e.contains("unknown BMC scheme")));
    assert!(d.facts.credentials_changed, "Ironic was never given version 7");
    assert_eq!(d.request.node.as_deref(), Some("node-1"));
    assert_eq!(d.request.host_uid, "uid-1");
    let without =
        decoded(&self::host(&[]), &BareMetalHostStatus::default(), &Credentials::default(), NodeView::Missing, at(0));
    assert!(!without.facts.has_bmc && without.request.node.is_none());
}

#[test]
fn a_credentials_secret_the_operator_refuses_never_cuts_the_backoff_short() {
    // Never sent, so never tried: without the guard its version differs from the tried one
    // on every reconcile, and each status write retried the registration at once.
    let host = with_bmc(host(&[]), "redfish://10.0.0.1");
    let status = failed_at(ErrorType::Registration, 0, 1);
    let refused = Credentials { value: None, problem: Some("needs a password".into()), ..credentials("3") };
    let waiting = decoded(&host, &status, &refused, NodeView::Unknown, at(30));
    assert!(waiting.facts.in_backoff && waiting.retry_in.is_some(), "waits out its backoff");
    let fixed = decoded(&host, &status, &credentials("4"), NodeView::Unknown, at(30));
    assert!(!fixed.facts.in_backoff, "a Secret fixed to usable credentials retries at once");
}

#[test]
fn a_recorded_error_waits_out_its_backoff_unless_the_user_changed_something() {
    let host = with_bmc(host(&[]), "redfish://10.0.0.1");
    let mut status = failed_at(ErrorType::Registration, 0, 1);
    status.tried_credentials = credentials("1").status;
    let waiting = decoded(&host, &status, &credentials("1"), NodeView::Unknown, at(30));
    assert!(waiting.facts.in_backoff);
    let left = waiting.retry_in.expect("a retry time");
    assert!(left <= Duration::from_secs(120) - Duration::from_secs(30), "{left:?}");
    assert!(!decoded(&host, &status, &credentials("1"), NodeView::Unknown, at(121)).facts.in_backoff, "expired");
    let fixed = decoded(&host, &status, &credentials("2"), NodeView::Unknown, at(30));
    assert!(!fixed.facts.in_backoff && fixed.retry_in.is_none(), "a fixed credentials Secret retries at once");
    let mut edited = host.clone();
    edited.metadata.generation = Some(2);
    assert!(!decoded(&edited, &status, &credentials("1"), NodeView::Unknown, at(30)).facts.in_backoff);
    let other = failed_at(ErrorType::Provisioning, 0, 1);
    assert!(decoded(&host, &other, &credentials("2"), NodeView::Unknown, at(30)).facts.in_backoff);
}

#[test]
fn a_power_change_that_ended_elsewhere_with_an_error_has_failed() {
    let host = with_bmc(host(&[]), "fake://h");
    let key = HostKey::new("ns", "h");
    let status = BareMetalHostStatus::default();
    let none = Credentials::default();
    let observe = |node: NodeView| Observed {
        host: &host,
        key: &key,
        status: &status,
        credentials: &none,
        bmc: parse_bmc(&host.spec),
        node,
        power_attempt: Some(PowerTarget::Off),
        bios: Default::default(),
        updates: Default::default(),
        now: at(0),
    };
    let config = Config::default();
    assert!(decode(&config, observe(present(PowerState::On, Some("BMC said no")))).facts.power_attempt_failed);
    assert!(!decode(&config, observe(present(PowerState::On, None))).facts.power_attempt_failed, "still going");
}

#[test]
fn only_a_deployment_reads_the_config_drive_and_never_for_a_live_iso() {
    let mut host = with_bmc(host(&[]), "fake://h");
    host.spec.image = Some(crds::baremetalhost::Image { url: "http://i/os.qcow2".into(), ..Default::default() });
    let disk = decoded(&host, &BareMetalHostStatus::default(), &Credentials::default(), NodeView::Unknown, at(0));
    assert!(matches!(disk.request.config_drive, ConfigDrive::None), "nothing is read while decoding");
    let deploy = Plan::Act { act: Act::Deploy, retry: false };
    assert!(needs_config_drive(&deploy, &disk.request));
    assert!(!needs_config_drive(&Plan::Act { act: Act::Provide, retry: false }, &disk.request));
    assert!(!needs_config_drive(&Plan::Act { act: Act::Adopt, retry: false }, &disk.request));
    host.spec.image = Some(crds::baremetalhost::Image {
        url: "http://i/live.iso".into(),
        format: Some(crds::baremetalhost::ImageFormat::LiveIso),
        ..Default::default()
    });
    let live = decoded(&host, &BareMetalHostStatus::default(), &Credentials::default(), NodeView::Unknown, at(0));
    assert!(!needs_config_drive(&deploy, &live.request), "a live ISO boots as it is");
}

#[test]
fn a_condition_time_at_the_end_of_the_calendar_neither_panics_nor_waits_longer_than_the_backoff() {
    let mut status = failed_at(ErrorType::Inspection, 0, 1);
    if let Some(c) = status.conditions.as_mut().and_then(|c| c.first_mut()) {
        c.last_transition_time = Time(Timestamp::MAX);
    }
    let host = with_bmc(host(&[]), "ipmi://1.2.3.4");
    let d = decoded(&host, &status, &credentials("1"), NodeView::Missing, at(0));
    let wait = d.retry_in.expect("still backing off");
    assert!(wait <= Duration::from_secs(240), "never more than the backoff itself: {wait:?}");
    status.error_count = i32::MAX;
    let d = decoded(&host, &status, &credentials("1"), NodeView::Missing, Timestamp::MAX);
    assert!(d.retry_in.is_none(), "at the end of the calendar the backoff is over");
}

#[path = "proptests.rs"]
mod proptests;
