//! Status restore (baremetal-operator's pivot and move support): a re-created host whose
//! status is still empty gets it back from its `baremetalhost.metal3.io/status` annotation,
//! which is then dropped.

use crate::host::context::{CONTROLLER, Writer};
use crate::host::error;
use crate::host::metadata;
use crate::host::wake::HostKey;
use crate::kit::{Notice, Notices};
use crds::baremetalhost::annotations::{STATUS, parse_status_annotation};
use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, ProvisioningState};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;

/// The status a re-created host should get back from its status annotation (only when it
/// has none of its own yet), checked as the webhook checks it and brought into range, with
/// what had to be corrected.
fn restorable_status(host: &BareMetalHost, now: Timestamp) -> Option<(BareMetalHostStatus, Vec<&'static str>)> {
    let raw = host.annotations().get(STATUS)?;
    let empty = host
        .status
        .as_ref()
        .is_none_or(|s| s.last_updated.is_none() && s.provisioning.state == ProvisioningState::None);
    if !empty {
        return None;
    }
    // The webhook's parse: a partial annotation restores what it has, the rest defaulting.
    match parse_status_annotation(raw) {
        Ok(mut status) => {
            let corrected = clamp(&mut status, now);
            Some((status, corrected))
        }
        Err(err) => {
            tracing::warn!(error = %err, "ignoring an unreadable status annotation");
            None
        }
    }
}

/// Brings what the annotation's writer chose (anyone who can annotate the host, without the
/// webhook) into the range the reconcile assumes: no time after `now` (a condition time
/// near the end of the calendar would anchor a backoff forever), no negative count. Returns
/// the fields it changed.
pub(super) fn clamp(status: &mut BareMetalHostStatus, now: Timestamp) -> Vec<&'static str> {
    let mut corrected = Vec::new();
    let mut not_after_now = |time: &mut Time, field: &'static str| {
        if time.0 > now {
            time.0 = now;
            if !corrected.contains(&field) {
                corrected.push(field);
            }
        }
    };
    if let Some(t) = status.last_updated.as_mut() {
        not_after_now(t, "lastUpdated");
    }
    for c in status.conditions.iter_mut().flatten() {
        not_after_now(&mut c.last_transition_time, "conditions");
    }
    if let Some(h) = status.operation_history.as_mut() {
        for metric in [&mut h.register, &mut h.inspect, &mut h.provision, &mut h.deprovision].into_iter().flatten() {
            for t in [&mut metric.start, &mut metric.end].into_iter().flatten() {
                not_after_now(t, "operationHistory");
            }
        }
    }
    if status.error_count < 0 {
        status.error_count = 0;
        corrected.push("errorCount");
    }
    if status.provisioning_fail_count.is_some_and(|n| n < 0) {
        status.provisioning_fail_count = Some(0);
        corrected.push("provisioningFailCount");
    }
    corrected
}

/// Restores the status of a re-created host, then drops the annotation; true when it did
/// (the reconcile then starts over from the restored status).
pub(super) async fn run(ctx: Writer<'_>, host: &BareMetalHost, key: &HostKey) -> Result<bool, error::Error> {
    let now = Timestamp::now();
    let Some((mut restored, corrected)) = restorable_status(host, now) else {
        return Ok(false);
    };
    let api: Api<BareMetalHost> = Api::namespaced(ctx.kube.clone(), &key.namespace);
    restored.last_updated = Some(Time(now));
    let written = crate::kit::status::apply(&api, &host.name_any(), &restored).await?;
    ctx.metrics.status_written(CONTROLLER);
    let mut notices = Notices::default();
    notices.push(Notice::normal(
        "StatusRestored",
        format!("status restored from the {STATUS} annotation (state {})", restored.provisioning.state.as_str()),
    ));
    if !corrected.is_empty() {
        notices.push(Notice::warning(
            "StatusRestoreCorrected",
            format!("out-of-range values in the {STATUS} annotation were corrected: {}", corrected.join(", ")),
        ));
    }
    ctx.publisher.publish(&written, notices).await;
    let patched = metadata::patch(&api, &written, metadata::remove_annotations_patch(&written, &[STATUS])).await?;
    ctx.hosts.memory.remember(patched);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;

    fn host(annotations: &[(&str, &str)]) -> BareMetalHost {
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        host.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        host
    }

    #[test]
    fn status_is_restored_only_onto_an_empty_status() {
        let saved = r#"{"errorCount":0,"errorMessage":"","operationalStatus":"OK","poweredOn":true,
            "provisioning":{"ID":"node-1","state":"provisioned"}}"#;
        let fresh = host(&[(STATUS, saved)]);
        let (restored, corrected) = restorable_status(&fresh, now()).expect("a fresh host gets its status back");
        assert!(corrected.is_empty());
        assert_eq!(restored.provisioning.state, ProvisioningState::Provisioned);
        assert_eq!(restored.provisioning.id, "node-1");
        let mut live = fresh.clone();
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = ProvisioningState::Available;
        live.status = Some(status);
        assert!(restorable_status(&live, now()).is_none(), "a host with a status of its own keeps it");
        assert!(restorable_status(&host(&[(STATUS, "not json")]), now()).is_none());
        let (partial, _) = restorable_status(&host(&[(STATUS, r#"{"operationalStatus":"OK"}"#)]), now())
            .expect("a partial annotation, as the webhook admits it, is restored");
        assert_eq!(partial.operational_status, crds::baremetalhost::OperationalStatus::Ok);
        assert!(restorable_status(&host(&[(STATUS, r#"{"bogus":1}"#)]), now()).is_none(), "unknown fields are refused");
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).expect("time")
    }

    #[test]
    fn times_after_now_and_negative_counts_are_clamped() {
        let saved = r#"{"errorCount":-5,"errorType":"inspection error","provisioningFailCount":-1,
            "lastUpdated":"9999-12-30T12:00:00Z",
            "conditions":[{"type":"Degraded","status":"True","reason":"InspectionError","message":"m",
              "lastTransitionTime":"9999-12-30T12:00:00Z"}],
            "operationHistory":{"inspect":{"start":"9999-12-30T11:59:59Z"}},
            "provisioning":{"ID":"node-1","state":"inspecting"}}"#;
        if let Err(err) = parse_status_annotation(saved) {
            panic!("the webhook admits it: {err}");
        }
        let (status, corrected) = restorable_status(&host(&[(STATUS, saved)]), now()).expect("restorable");
        assert_eq!(corrected, ["lastUpdated", "conditions", "operationHistory", "errorCount", "provisioningFailCount"]);
        assert_eq!(status.error_count, 0);
        assert_eq!(status.provisioning_fail_count, Some(0));
        let conditions = status.conditions.as_deref().unwrap_or_default();
        assert!(conditions.iter().all(|c| c.last_transition_time.0 == now()));
        let start = status.operation_history.and_then(|h| h.inspect).and_then(|m| m.start).expect("start");
        assert_eq!(start.0, now());
    }
}
