use super::parts::{components_part, owned_settings, settings_part};
use super::*;
use crds::baremetalhost::BareMetalHostStatus;
use crds::condition::READY;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents, HostFirmwareSettings, HostFirmwareSettingsStatus};
use crds::nodeset::{FirmwareSettings, firmware_hash};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn wanted(value: &str) -> FirmwareSettings {
    FirmwareSettings::from([("ProcTurboMode".to_string(), IntOrString::String(value.into()))])
}

fn bmh(name: &str) -> BareMetalHost {
    let mut host = BareMetalHost::default();
    host.metadata.name = Some(name.into());
    host.metadata.namespace = Some("metal3".into());
    host.status = Some(BareMetalHostStatus { operational_status: OperationalStatus::Ok, ..Default::default() });
    host
}

fn rebooted_for(mut host: BareMetalHost, hash: &str) -> BareMetalHost {
    host.metadata.annotations = Some([(FIRMWARE_REBOOT_ANNOTATION.to_string(), hash.to_string())].into());
    host
}

fn failed(mut host: BareMetalHost) -> BareMetalHost {
    if let Some(status) = host.status.as_mut() {
        status.error_type = Some(ErrorType::Servicing);
        status.error_message = "the BMC refused a setting".into();
    }
    host
}

/// A settings object asking for `spec`, read at `observed` (its generation is 2), its `Ready`.
fn object(spec: FirmwareSettings, observed: i64, ready: (&str, &str)) -> HostFirmwareSettings {
    let mut object = HostFirmwareSettings::default();
    object.metadata.generation = Some(2);
    object.spec.settings = spec;
    let condition = Condition {
        type_: READY.into(),
        status: ready.0.into(),
        reason: ready.1.into(),
        message: format!("{} says so", ready.1),
        observed_generation: Some(observed),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ),
    };
    object.status = Some(HostFirmwareSettingsStatus {
        observed_generation: Some(observed),
        conditions: vec![condition],
        ..Default::default()
    });
    object
}

/// A provisioned host that wants `ProcTurboMode: Disabled`, approved, its settings `object`.
fn host<'a>(name: &'a str, bmh: &'a BareMetalHost, object: Option<&HostFirmwareSettings>) -> FirmwareHost<'a> {
    wanting(name, bmh, object, wanted("Disabled"))
}

fn wanting<'a>(
    name: &'a str,
    bmh: &'a BareMetalHost,
    object: Option<&HostFirmwareSettings>,
    wanted: FirmwareSettings,
) -> FirmwareHost<'a> {
    let desired = firmware_hash(&wanted, &[]);
    let parts = settings_part(object, &wanted).into_iter().collect();
    FirmwareHost { name, bmh, approved: desired.clone(), desired, applied: None, serving: true, parts }
}

fn desired() -> String {
    firmware_hash(&wanted("Disabled"), &[]).unwrap_or_default()
}

fn none() -> BTreeSet<String> {
    BTreeSet::new()
}

#[test]
fn hosts_that_serve_get_their_settings_handed_over_only_as_max_unavailable_allows_by_name() {
    let (a, b, c) = (bmh("a"), bmh("b"), bmh("c"));
    let untouched = object(FirmwareSettings::new(), 2, ("True", "SettingsMatch"));
    let hosts = [host("a", &a, Some(&untouched)), host("b", &b, Some(&untouched)), host("c", &c, Some(&untouched))];
    let plan = plan(&hosts, 1, false, &none());
    assert_eq!(plan.writes.iter().map(|w| w.hostname.as_str()).collect::<Vec<_>>(), ["a"]);
    assert_eq!(plan.stages["a"], Stage::Written);
    assert_eq!(plan.stages["b"], Stage::Queued);
    assert_eq!(plan.stages["c"], Stage::Queued);
    assert!(plan.reboots.is_empty(), "nothing is rebooted before its settings are read");
    assert_eq!(plan.writes[0].body()["kind"], "HostFirmwareSettings");
}

#[test]
fn settings_on_their_way_count_as_started_and_a_read_for_an_older_spec_settles_nothing() {
    let a = bmh("a");
    let stale = object(wanted("Disabled"), 1, ("True", "SettingsMatch"));
    let hosts = [host("a", &a, Some(&stale))];
    assert!(started(&hosts).contains("a"));
    let plan = plan(&hosts, 0, false, &none());
    assert_eq!(plan.stages["a"], Stage::Written);
    assert_eq!(plan.applied["a"], None);
    assert!(plan.writes.is_empty(), "handed over once");
}

#[test]
fn a_host_awaiting_its_reboot_is_rebooted_once_with_the_hash_in_the_same_request() {
    let a = bmh("a");
    let waiting = object(wanted("Disabled"), 2, ("False", "AwaitingReboot"));
    let plan_now = plan(&[host("a", &a, Some(&waiting))], 1, false, &none());
    assert_eq!(plan_now.stages["a"], Stage::Rebooting);
    let (hostname, patch) = &plan_now.reboots[0];
    assert_eq!(hostname, "a");
    assert_eq!(patch["metadata"]["annotations"][REBOOT_PREFIX], "");
    assert_eq!(patch["metadata"]["annotations"][FIRMWARE_REBOOT_ANNOTATION], desired());

    // Seen again before the servicing starts (or after a crash): the hash on the machine says
    // the reboot was asked for.
    let marked = rebooted_for(bmh("a"), &desired());
    let again = plan(&[host("a", &marked, Some(&waiting))], 0, false, &none());
    assert_eq!(again.stages["a"], Stage::Rebooting);
    assert!(again.reboots.is_empty());
}

#[test]
fn a_host_in_a_service_job_is_never_rebooted() {
    let a = bmh("a");
    let waiting = object(wanted("Disabled"), 2, ("False", "AwaitingReboot"));
    let plan = plan(&[host("a", &a, Some(&waiting))], 1, false, &BTreeSet::from(["a".to_string()]));
    assert!(plan.reboots.is_empty());
    assert_eq!(plan.stages["a"], Stage::Written);
}

#[test]
fn settings_the_object_says_match_for_the_spec_written_settle_the_host() {
    let a = bmh("a");
    let matched = object(wanted("Disabled"), 2, ("True", "SettingsMatch"));
    let plan = plan(&[host("a", &a, Some(&matched))], 0, false, &none());
    assert_eq!(plan.stages["a"], Stage::Settled);
    assert_eq!(plan.applied["a"], Some(desired()));
}

#[test]
fn a_servicing_error_fails_the_host_and_stops_every_new_start_of_a_host_that_serves() {
    let (a, b, c) = (failed(bmh("a")), bmh("b"), bmh("c"));
    let handed = object(wanted("Disabled"), 2, ("False", "AwaitingReboot"));
    let untouched = object(FirmwareSettings::new(), 2, ("True", "SettingsMatch"));
    let mut new_host = host("c", &c, Some(&untouched));
    new_host.serving = false;
    let hosts = [host("a", &a, Some(&handed)), host("b", &b, Some(&untouched)), new_host];
    let plan = plan(&hosts, 5, false, &none());
    assert!(matches!(&plan.stages["a"], Stage::Failed(why) if why.contains("refused")));
    assert_eq!(plan.stages["b"], Stage::Queued);
    assert_eq!(plan.stages["c"], Stage::Written, "a host not provisioned yet is not held");
    assert!(plan.reboots.is_empty(), "a failed host is not rebooted again: the host controller retries");
    assert_eq!(
        plan.marks,
        [("a".to_string(), json!({"metadata": {"annotations": {FIRMWARE_REBOOT_ANNOTATION: desired()}}}))]
    );
    assert_eq!(plan.failed(), [("a", "the BMC refused a setting")]);
}

#[test]
fn settings_that_fix_a_failed_servicing_are_handed_over_to_that_host() {
    let a = failed(rebooted_for(bmh("a"), "old"));
    let handed_before = object(wanted("refused-by-bmc"), 2, ("False", "AwaitingReboot"));
    let plan_now = plan(&[host("a", &a, Some(&handed_before))], 1, false, &none());
    assert_eq!(plan_now.writes.len(), 1);
    assert_eq!(plan_now.writes[0].spec, json!({"settings": wanted("Disabled")}));

    // Handed over, the failed servicing is the host controller's to retry: the hash is marked
    // on the machine so that no reboot follows, and the slot stays taken.
    let handed = object(wanted("Disabled"), 2, ("False", "AwaitingReboot"));
    let hosts = [host("a", &a, Some(&handed))];
    assert!(started(&hosts).contains("a"));
    let retried = plan(&hosts, 0, false, &none());
    assert!(retried.reboots.is_empty());
    assert_eq!(retried.marks.len(), 1);
    let marked = rebooted_for(failed(bmh("a")), &desired());
    let again = plan(&[host("a", &marked, Some(&handed))], 0, false, &none());
    assert!(again.marks.is_empty() && again.reboots.is_empty());
}

#[test]
fn new_settings_of_a_host_that_serves_wait_for_their_approval_and_a_new_host_needs_none() {
    let (a, b) = (bmh("a"), bmh("b"));
    let untouched = object(FirmwareSettings::new(), 2, ("True", "SettingsMatch"));
    let mut serving = host("a", &a, Some(&untouched));
    serving.approved = None;
    let mut new_host = host("b", &b, Some(&untouched));
    new_host.approved = None;
    new_host.serving = false;
    let plan = plan(&[serving, new_host], 0, false, &none());
    assert_eq!(plan.stages["a"], Stage::Pending);
    assert_eq!(plan.writes.iter().map(|w| w.hostname.as_str()).collect::<Vec<_>>(), ["b"]);
}

#[test]
fn a_host_that_wants_nothing_or_has_what_it_wants_is_left_alone() {
    let a = bmh("a");
    let untouched = object(FirmwareSettings::new(), 2, ("True", "SettingsMatch"));
    let nothing = wanting("a", &a, Some(&untouched), FirmwareSettings::new());
    let carried = object(wanted("Disabled"), 2, ("True", "SettingsMatch"));
    let mut has_it = host("b", &a, Some(&carried));
    has_it.applied = has_it.desired.clone();
    let plan = plan(&[nothing, has_it], 5, false, &none());
    assert_eq!(plan.stages["a"], Stage::Settled);
    assert_eq!(plan.stages["b"], Stage::Settled);
    assert!(plan.writes.is_empty() && plan.reboots.is_empty());
}

#[test]
fn a_missing_policy_or_invalid_settings_hold_the_host_with_the_objects_words() {
    let a = bmh("a");
    let refused = object(wanted("Disabled"), 2, ("False", "ServicingNotAllowed"));
    let plan = plan(&[host("a", &a, Some(&refused))], 0, false, &none());
    assert_eq!(plan.stages["a"], Stage::Blocked("ServicingNotAllowed says so".into()));
    assert!(plan.stages["a"].in_flight());
    assert!(plan.reboots.is_empty());
}

#[test]
fn a_failed_service_job_stops_new_starts_and_a_host_without_a_settings_object_waits() {
    let (a, b) = (bmh("a"), bmh("b"));
    let untouched = object(FirmwareSettings::new(), 2, ("True", "SettingsMatch"));
    let plan = plan(&[host("a", &a, Some(&untouched)), host("b", &b, None)], 3, true, &none());
    assert_eq!(plan.stages["a"], Stage::Queued);
    assert_eq!(plan.stages["b"], Stage::NoObject(Kind::Settings));
}

/// The object as the operator's apply of `keys` leaves it in `managedFields`.
fn applied_by_operator(mut object: HostFirmwareSettings, keys: &[&str]) -> HostFirmwareSettings {
    let settings: serde_json::Map<String, Value> = keys.iter().map(|k| (format!("f:{k}"), json!({}))).collect();
    object.metadata.managed_fields = Some(vec![
        serde_json::from_value(
            json!({"manager": crate::FIELD_MANAGER, "operation": "Apply", "apiVersion": "metal3.io/v1alpha1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:settings": settings}}}),
        )
        .expect("an entry"),
        serde_json::from_value(json!({"manager": "kubectl", "operation": "Apply", "apiVersion": "metal3.io/v1alpha1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:settings": {"f:QuietBoot": {}}}}}))
        .expect("an entry"),
    ]);
    object
}

#[test]
fn the_settings_the_operator_applied_are_read_from_managed_fields_and_no_one_elses() {
    let object =
        applied_by_operator(object(wanted("Disabled"), 2, ("True", "SettingsMatch")), &["ProcTurboMode", "L2Cache"]);
    assert_eq!(owned_settings(&object), ["L2Cache", "ProcTurboMode"]);
}

#[test]
fn a_setting_no_longer_wanted_is_taken_back_from_a_settled_host_and_all_once_none_are_wanted() {
    let a = bmh("a");
    let mut spec = wanted("Disabled");
    spec.insert("L2Cache".into(), IntOrString::String("refused-by-bmc".into()));
    let stale = applied_by_operator(object(spec, 2, ("False", "AwaitingReboot")), &["ProcTurboMode", "L2Cache"]);
    let mut settled = host("a", &a, Some(&stale));
    settled.applied = settled.desired.clone();
    assert_eq!(plan(std::slice::from_ref(&settled), 0, false, &none()).stages["a"], Stage::Queued);
    let plan_now = plan(&[settled], 1, false, &none());
    assert_eq!(plan_now.stages["a"], Stage::Written, "handed over again, with a slot: it may need a reboot");
    assert_eq!(plan_now.writes.len(), 1);
    assert_eq!(plan_now.writes[0].spec, json!({"settings": wanted("Disabled")}));

    let released = plan(&[wanting("a", &a, Some(&stale), FirmwareSettings::new())], 0, false, &none());
    assert_eq!(released.stages["a"], Stage::Settled, "taken back without a slot: it asks nothing new");
    assert_eq!(released.writes[0].body()["spec"]["settings"], json!({}));
}

#[test]
fn a_host_that_never_had_settings_handed_over_and_wants_none_is_never_written() {
    let a = bmh("a");
    let untouched = object(
        FirmwareSettings::from([("QuietBoot".to_string(), IntOrString::String("false".into()))]),
        2,
        ("True", "SettingsMatch"),
    );
    let nothing = wanting("a", &a, Some(&untouched), FirmwareSettings::new());
    assert!(nothing.parts.is_empty());
    assert!(plan(&[nothing], 1, false, &none()).writes.is_empty());
}

/// A components object asking for `updates`, read for them, its `Ready`.
fn components(updates: Vec<FirmwareUpdate>, ready: (&str, &str)) -> HostFirmwareComponents {
    let settings = object(FirmwareSettings::new(), 2, ready);
    let mut object = HostFirmwareComponents::default();
    object.metadata.generation = Some(2);
    object.spec.updates = updates;
    object.status = Some(crds::firmware::HostFirmwareComponentsStatus {
        observed_generation: Some(2),
        conditions: settings.status.map(|s| s.conditions).unwrap_or_default(),
        ..Default::default()
    });
    object
}

fn bios_update() -> FirmwareUpdate {
    FirmwareUpdate { component: "bios".into(), url: "http://images/bios-1.1.bin".into() }
}

#[test]
fn updates_are_handed_to_the_components_object_and_a_host_reboots_once_both_objects_say_so() {
    let a = bmh("a");
    let empty = components(vec![], ("True", "UpToDate"));
    let updates = vec![bios_update()];
    let desired = firmware_hash(&FirmwareSettings::new(), &updates);
    let parts = components_part(Some(&empty), &updates).into_iter().collect();
    let host =
        FirmwareHost { name: "a", bmh: &a, approved: desired.clone(), desired, applied: None, serving: true, parts };
    let handed = plan(std::slice::from_ref(&host), 1, false, &none());
    assert_eq!(handed.writes[0].body()["kind"], "HostFirmwareComponents");
    assert_eq!(handed.writes[0].spec, json!({"updates": [{"component": "bios", "url": "http://images/bios-1.1.bin"}]}));

    // Settings matched, updates waiting for the reboot: one reboot for both.
    let waiting = components(updates.clone(), ("False", "AwaitingReboot"));
    let matched = object(wanted("Disabled"), 2, ("True", "SettingsMatch"));
    let desired = firmware_hash(&wanted("Disabled"), &updates);
    let parts = settings_part(Some(&matched), &wanted("Disabled"))
        .into_iter()
        .chain(components_part(Some(&waiting), &updates))
        .collect();
    let both =
        FirmwareHost { name: "a", bmh: &a, approved: desired.clone(), desired, applied: None, serving: true, parts };
    let rebooting = plan(&[both], 1, false, &none());
    assert_eq!(rebooting.stages["a"], Stage::Rebooting);
    assert_eq!(rebooting.reboots.len(), 1);
    assert!(rebooting.writes.is_empty());
}

#[test]
fn a_host_without_a_components_object_waits_naming_it() {
    let a = bmh("a");
    let updates = vec![bios_update()];
    let desired = firmware_hash(&FirmwareSettings::new(), &updates);
    let parts = components_part(None, &updates).into_iter().collect();
    let host =
        FirmwareHost { name: "a", bmh: &a, approved: desired.clone(), desired, applied: None, serving: true, parts };
    let plan = plan(&[host], 1, false, &none());
    assert_eq!(plan.stages["a"], Stage::NoObject(Kind::Components));
    assert_eq!(plan.stages["a"].message().as_deref(), Some("its BareMetalHost has no HostFirmwareComponents yet"));
}

fn servicing(mut host: BareMetalHost) -> BareMetalHost {
    if let Some(status) = host.status.as_mut() {
        status.operational_status = OperationalStatus::Servicing;
    }
    host
}

#[test]
fn a_machine_being_serviced_for_an_older_hash_still_counts_and_is_handed_nothing_until_it_is_back() {
    let b = servicing(rebooted_for(bmh("b"), "older"));
    let older = object(wanted("Enabled"), 2, ("False", "AwaitingReboot"));
    let hosts = [host("b", &b, Some(&older))];
    assert!(started(&hosts).contains("b"), "it holds its slot whatever is wanted now");
    let plan = plan(&hosts, 1, false, &none());
    assert_eq!(plan.stages["b"], Stage::Servicing);
    assert!(plan.writes.is_empty() && plan.reboots.is_empty());

    // The same after a revert to what it had: not settled while it is serviced.
    let mut reverted = host("b", &b, Some(&older));
    reverted.applied = reverted.desired.clone();
    assert_eq!(super::plan(&[reverted], 1, false, &none()).stages["b"], Stage::Servicing);
}

#[test]
fn a_machine_rebooting_after_the_nodesets_reboot_counts_until_it_is_on_again() {
    let mut off = rebooted_for(bmh("a"), &desired());
    off.spec.online = true;
    if let Some(status) = off.status.as_mut() {
        status.powered_on = false;
    }
    let matched = object(wanted("Disabled"), 2, ("True", "SettingsMatch"));
    let hosts = [host("a", &off, Some(&matched))];
    assert!(started(&hosts).contains("a"));
    assert_eq!(plan(&hosts, 1, false, &none()).stages["a"], Stage::Rebooting, "not settled while off");
}

#[test]
fn objects_that_already_say_what_is_wanted_still_wait_for_their_approval_and_slot_before_a_reboot() {
    let a = bmh("a");
    let staged = object(wanted("Disabled"), 2, ("False", "AwaitingReboot"));
    let hosts = [host("a", &a, Some(&staged))];
    assert!(!started(&hosts).contains("a"));
    let queued = plan(&hosts, 0, false, &none());
    assert_eq!(queued.stages["a"], Stage::Queued);
    assert!(queued.reboots.is_empty());
    let mut unapproved = host("a", &a, Some(&staged));
    unapproved.approved = None;
    assert_eq!(plan(&[unapproved], 1, false, &none()).stages["a"], Stage::Pending);
    let granted = plan(&hosts, 1, false, &none());
    assert_eq!(granted.reboots.len(), 1);
    assert!(granted.writes.is_empty());
}

#[test]
fn a_fix_for_a_failed_host_is_handed_to_it_first_and_the_others_wait_for_it() {
    let (a, b) = (bmh("a"), failed(rebooted_for(bmh("b"), "refused")));
    let settled_before = object(wanted("Enabled"), 2, ("True", "SettingsMatch"));
    let refused = object(wanted("refused-by-bmc"), 2, ("False", "AwaitingReboot"));
    let hosts = [host("a", &a, Some(&settled_before)), host("b", &b, Some(&refused))];
    let plan = plan(&hosts, 1, false, &none());
    assert_eq!(plan.stages["a"], Stage::Queued, "the rollout stays stopped while b has not recovered");
    assert!(matches!(plan.stages["b"], Stage::Failed(_)));
    assert_eq!(plan.writes.iter().map(|w| w.hostname.as_str()).collect::<Vec<_>>(), ["b"]);
    assert!(plan.reboots.is_empty());
}
