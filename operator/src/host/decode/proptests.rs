//! Arbitrary restored statuses and annotations, as a tenant can write them, through the
//! pure parts of a reconcile (parse and clamp the status annotation, decode, plan, derive
//! the conditions): none may panic.

use super::*;
use crate::host::machine;
use crate::host::restore::clamp;
use crds::baremetalhost::annotations::parse_status_annotation;
use proptest::prelude::*;

const STATES: &[&str] = &[
    "",
    "unmanaged",
    "registering",
    "match profile",
    "preparing",
    "ready",
    "available",
    "provisioning",
    "provisioned",
    "externally provisioned",
    "deprovisioning",
    "inspecting",
    "powering off before delete",
    "deleting",
];
const ERRORS: &[&str] = &[
    "provisioned registration error",
    "registration error",
    "inspection error",
    "preparation error",
    "provisioning error",
    "power management error",
    "servicing error",
    "detach error",
];
const ANNOTATIONS: &[&str] = &[
    "baremetalhost.metal3.io/detached",
    "inspect.metal3.io",
    "reboot.metal3.io",
    "reboot.metal3.io/x",
    "baremetalhost.metal3.io/paused",
];

/// Any time jiff can represent, as RFC 3339.
fn time() -> impl Strategy<Value = String> {
    (Timestamp::MIN.as_second()..=Timestamp::MAX.as_second())
        .prop_map(|s| Timestamp::from_second(s).map(|t| t.to_string()).unwrap_or_default())
}

/// A status annotation as anyone who may annotate a host can write it.
fn status_annotation() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(STATES),
        proptest::option::of(proptest::sample::select(ERRORS)),
        any::<i32>(),
        proptest::option::of(any::<i32>()),
        time(),
        time(),
        time(),
        any::<i64>(),
    )
        .prop_map(|(state, error, count, fails, updated, transition, start, generation)| {
            serde_json::json!({
                "provisioning": {"state": state, "ID": "node-1"},
                "errorType": error,
                "errorCount": count,
                "provisioningFailCount": fails,
                "lastUpdated": updated,
                "operationHistory": {"inspect": {"start": start}, "provision": {"start": start, "end": updated}},
                "conditions": [{"type": "Degraded", "status": "True", "reason": "RegistrationError",
                    "message": "m", "observedGeneration": generation, "lastTransitionTime": transition}],
            })
            .to_string()
        })
}

fn annotations() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    proptest::collection::vec((proptest::sample::select(ANNOTATIONS), ".{0,40}"), 0..4)
}

/// Decodes and plans `host` with `status` as a reconcile does, and derives its conditions.
fn run(host: &BareMetalHost, mut status: BareMetalHostStatus, now: Timestamp) {
    let creds = credentials("1");
    let d = decoded(host, &status, &creds, present(PowerState::On, Some("boom")), now);
    let _ = machine::plan(&d.facts);
    let d = decoded(host, &status, &creds, NodeView::Missing, now);
    let _ = machine::plan(&d.facts);
    status::set_conditions(&mut status, host.meta().generation, None, None, true, now);
    status::record_failure(&mut status, ErrorType::Registration, "again");
}

proptest! {
    #[test]
    fn restored_statuses_and_annotations_never_panic(
        raw in status_annotation(),
        extra in annotations(),
        now in time(),
        generation in any::<i64>(),
    ) {
        let now: Timestamp = now.parse().unwrap_or(Timestamp::UNIX_EPOCH);
        let mut h = with_bmc(host(&[]), "redfish://1.2.3.4/redfish/v1/Systems/1");
        h.metadata.generation = Some(generation);
        h.metadata.annotations = Some(extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        h.metadata.deletion_timestamp = (generation % 2 == 0).then_some(Time(now));
        if let Ok(mut status) = parse_status_annotation(&raw) {
            // What the operator acts on: the annotation as restored...
            let unclamped = status.clone();
            let _ = clamp(&mut status, now);
            prop_assert!(status.error_count >= 0);
            prop_assert!(status.last_updated.as_ref().is_none_or(|t| t.0 <= now));
            run(&h, status, now);
            // ...and as it would be, had someone written it straight into the status.
            run(&h, unclamped, now);
        }
    }
}
