//! The host's status: what each step changes in it (pure functions), the
//! conditions, and when a write is warranted at all.

use crate::host::machine::is_transitional;
use crate::kit::condition::{AS_EXPECTED, Conditions, NOTHING_WRONG, set_all};
use crds::baremetalhost::{
    BareMetalHost, BareMetalHostStatus, ErrorType, OperationMetric, OperationalStatus, ProvisioningState,
};
use crds::condition::{self, TRUE};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use ProvisioningState as S;

/// Condition reason when no provisioner is configured.
pub(super) const PROVISIONER_NOT_CONFIGURED: &str = "ProvisionerNotConfigured";

/// A CamelCase name for a state, used as condition reason and event reason.
pub(super) fn state_reason(state: ProvisioningState) -> &'static str {
    match state {
        S::None => "Unknown",
        S::Unmanaged => "Unmanaged",
        S::Registering => "Registering",
        S::MatchProfile => "MatchProfile",
        S::Preparing => "Preparing",
        S::Ready | S::Available => "Available",
        S::Provisioning => "Provisioning",
        S::Provisioned => "Provisioned",
        S::ExternallyProvisioned => "ExternallyProvisioned",
        S::Deprovisioning => "Deprovisioning",
        S::Inspecting => "Inspecting",
        S::PoweringOffBeforeDelete => "PoweringOffBeforeDelete",
        S::Deleting => "Deleting",
    }
}

/// A CamelCase name for an error class.
pub(super) fn error_reason(error: ErrorType) -> &'static str {
    match error {
        ErrorType::ProvisionedRegistration => "ProvisionedRegistrationError",
        ErrorType::Registration => "RegistrationError",
        ErrorType::Inspection => "InspectionError",
        ErrorType::Preparation => "PreparationError",
        ErrorType::Provisioning => "ProvisioningError",
        ErrorType::PowerManagement => "PowerManagementError",
        ErrorType::Servicing => "ServicingError",
        ErrorType::Detach => "DetachError",
    }
}

fn time(now: Timestamp) -> Time {
    Time(now)
}

fn history(status: &mut BareMetalHostStatus) -> &mut crds::baremetalhost::OperationHistory {
    status.operation_history.get_or_insert_with(Default::default)
}

fn start(metric: &mut Option<OperationMetric>, now: Timestamp) {
    *metric = Some(OperationMetric { start: Some(time(now)), end: None });
}

fn end(metric: &mut Option<OperationMetric>, now: Timestamp) {
    if let Some(m) = metric.as_mut() {
        m.end = Some(time(now));
    }
}

/// Moves `status` from its state to `to`, with the bookkeeping baremetal-
/// operator does on the way: operation history, the image being or having
/// been provisioned, and error counters on success.
pub(super) fn apply_transition(
    status: &mut BareMetalHostStatus,
    host: &BareMetalHost,
    to: ProvisioningState,
    now: Timestamp,
) {
    let from = status.provisioning.state;
    let spec = &host.spec;
    if host.metadata.deletion_timestamp.is_some()
        && !matches!(from, S::Deprovisioning | S::PoweringOffBeforeDelete | S::Deleting)
        && matches!(to, S::Deprovisioning | S::PoweringOffBeforeDelete | S::Deleting)
    {
        // Deletion starts a new operation: the failures of provisioning must not hasten the
        // rule that gives up on deprovisioning after a few failures.
        status.error_count = 0;
    }
    match from {
        S::Registering => end(&mut history(status).register, now),
        S::Provisioning if to == S::Provisioned => end(&mut history(status).provision, now),
        S::Deprovisioning => end(&mut history(status).deprovision, now),
        _ => {}
    }
    match to {
        S::Registering => start(&mut history(status).register, now),
        // The inspect call itself records its start (see `inspection_started`).
        S::Inspecting => history(status).inspect = None,
        S::Provisioning => {
            start(&mut history(status).provision, now);
            status.last_attempted_image = spec.image.clone();
            status.provisioning.custom_deploy = spec.custom_deploy.clone();
        }
        S::Provisioned => {
            if from == S::ExternallyProvisioned {
                // The image is the one already running: nothing to deploy or remove.
                status.provisioning.image = spec.image.clone();
            } else {
                status.provisioning.image = status.last_attempted_image.clone().or_else(|| spec.image.clone());
                status.provisioning_fail_count = None;
            }
            status.provisioning.custom_deploy = spec.custom_deploy.clone();
            status.provisioning.boot_mode = Some(spec.boot_mode.unwrap_or_default());
            status.provisioning.root_device_hints = spec.root_device_hints.clone();
        }
        S::ExternallyProvisioned => {
            status.provisioning.image = spec.image.clone();
        }
        S::Deprovisioning => start(&mut history(status).deprovision, now),
        S::Available if from == S::Deprovisioning => {
            status.provisioning.image = None;
            status.provisioning.custom_deploy = None;
        }
        _ => {}
    }
    status.provisioning.state = to;
    // Reaching a new state means the last operation worked. The cycle that
    // retries a failed deployment (deprovision, then provision again) is one
    // operation, so the count (and with it the backoff) carries over it.
    if !matches!(to, S::Deprovisioning | S::Provisioning) && from != S::Deprovisioning {
        status.error_count = 0;
    }
    clear_error(status);
    if status.operational_status == OperationalStatus::Delayed {
        status.operational_status = OperationalStatus::Ok;
    }
}

/// Records a failure: the class, the message, one more in the count.
pub(super) fn record_failure(status: &mut BareMetalHostStatus, error: ErrorType, message: &str) {
    status.error_type = Some(error);
    status.error_message = message.to_string();
    status.error_count = status.error_count.saturating_add(1);
    if error == ErrorType::Provisioning && status.provisioning.state == S::Provisioning {
        status.provisioning_fail_count = Some(status.provisioning_fail_count.unwrap_or(0).saturating_add(1));
    }
}

/// Clears the error class and message; the count stays until an operation
/// succeeds, so repeated failures keep backing off.
pub(super) fn clear_error(status: &mut BareMetalHostStatus) {
    status.error_type = None;
    status.error_message.clear();
}

/// The operational status that follows from the rest.
pub(super) fn operational_status(
    status: &BareMetalHostStatus,
    detached: bool,
    delayed: bool,
    servicing: bool,
) -> OperationalStatus {
    if status.error_type.is_some() {
        OperationalStatus::Error
    } else if servicing {
        OperationalStatus::Servicing
    } else if detached {
        OperationalStatus::Detached
    } else if delayed {
        OperationalStatus::Delayed
    } else if status.provisioning.state == S::Unmanaged {
        OperationalStatus::Discovered
    } else {
        OperationalStatus::Ok
    }
}

/// Sets Ready, Progressing and Degraded from the rest of the status.
/// `problem` is a configuration problem of the controller itself (no
/// provisioner), reported as Degraded. `waiting` is what the step waits for (the host's deploy
/// image): Progressing says so, whatever else holds. `failed_now` moves Degraded's
/// transition time to now: it is the anchor of the retry backoff.
pub(super) fn set_conditions(
    status: &mut BareMetalHostStatus,
    generation: Option<i64>,
    problem: Option<(&str, String)>,
    waiting: Option<&str>,
    failed_now: bool,
    now: Timestamp,
) {
    let make = Conditions::new(generation, time(now));
    let state = status.provisioning.state;
    let mut conditions = status.conditions.take().unwrap_or_default();
    let stable = matches!(state, S::Available | S::Ready | S::Provisioned | S::ExternallyProvisioned);
    let healthy = status.error_type.is_none() && problem.is_none();
    let failure = match (&problem, status.error_type) {
        (Some((reason, message)), _) => Some((*reason, message.clone())),
        (None, Some(error)) => Some((error_reason(error), status.error_message.clone())),
        (None, None) => None,
    };
    let (ready_reason, ready_message) = failure.clone().unwrap_or((state_reason(state), String::new()));
    let delayed = status.operational_status == OperationalStatus::Delayed;
    let progressing = ((is_transitional(state) || delayed) && healthy) || waiting.is_some();
    let (progressing_reason, progressing_message) = match waiting {
        Some(why) => (WAITING_FOR_IMAGE, why),
        None if delayed => ("Delayed", "waiting for a provisioning slot (--provisioning-limit)"),
        None => (state_reason(state), ""),
    };
    let degraded = match failure {
        Some((reason, message)) => make.make(condition::DEGRADED, true, reason, message),
        None => make.make(condition::DEGRADED, false, AS_EXPECTED, NOTHING_WRONG),
    };
    set_all(
        &mut conditions,
        [
            make.make(condition::READY, stable && healthy, ready_reason, ready_message),
            make.make(condition::PROGRESSING, progressing, progressing_reason, progressing_message),
            degraded,
        ],
    );
    if failed_now && let Some(c) = conditions.iter_mut().find(|c| c.type_ == condition::DEGRADED) {
        c.last_transition_time = time(now);
    }
    status.conditions = Some(conditions);
}

/// The reason Progressing gives while a step waits for the host's deploy image.
pub(super) const WAITING_FOR_IMAGE: &str = "WaitingForImage";

/// When the error was recorded: the anchor of its retry backoff.
pub(super) fn error_recorded_at(status: &BareMetalHostStatus) -> Option<Timestamp> {
    let conditions = status.conditions.as_deref().unwrap_or_default();
    condition::find(conditions, condition::DEGRADED)
        .filter(|c| c.status == TRUE)
        .map(|c| c.last_transition_time.0)
        .or_else(|| status.last_updated.as_ref().map(|t| t.0))
}

/// The generation the error was recorded at: a newer spec retries at once.
pub(super) fn error_generation(status: &BareMetalHostStatus) -> Option<i64> {
    let conditions = status.conditions.as_deref().unwrap_or_default();
    condition::find(conditions, condition::DEGRADED).and_then(|c| c.observed_generation)
}

/// Whether two statuses differ in anything but `lastUpdated` and condition
/// transition times: only then is a write warranted.
pub(super) fn differs(a: &BareMetalHostStatus, b: &BareMetalHostStatus) -> bool {
    let strip = |s: &BareMetalHostStatus| {
        let mut s = s.clone();
        s.last_updated = None;
        s.conditions = None;
        s
    };
    if strip(a) != strip(b) {
        return true;
    }
    let (ca, cb) = (a.conditions.as_deref().unwrap_or_default(), b.conditions.as_deref().unwrap_or_default());
    ca.len() != cb.len()
        || ca
            .iter()
            .zip(cb)
            .any(|(x, y)| !condition::same_ignoring_time(x, y) || x.last_transition_time != y.last_transition_time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{BareMetalHostSpec, Image, ImageFormat};

    fn host_with_image() -> BareMetalHost {
        let spec = BareMetalHostSpec {
            image: Some(Image {
                url: "http://i/live.iso".into(),
                format: Some(ImageFormat::LiveIso),
                ..Default::default()
            }),
            online: true,
            ..Default::default()
        };
        BareMetalHost::new("h", spec)
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).expect("timestamp")
    }

    #[test]
    fn provisioning_records_the_attempted_image_and_success_the_provisioned_one() {
        let host = host_with_image();
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = S::Available;
        apply_transition(&mut status, &host, S::Provisioning, now());
        assert_eq!(status.last_attempted_image, host.spec.image);
        assert!(status.provisioning.image.is_none());
        apply_transition(&mut status, &host, S::Provisioned, now());
        assert_eq!(status.provisioning.image, host.spec.image);
        let history = status.operation_history.as_ref().expect("history");
        assert!(history.provision.as_ref().is_some_and(|m| m.start.is_some() && m.end.is_some()));
        apply_transition(&mut status, &host, S::Deprovisioning, now());
        apply_transition(&mut status, &host, S::Available, now());
        assert!(status.provisioning.image.is_none());
    }

    #[test]
    fn failures_count_until_an_operation_succeeds() {
        let host = host_with_image();
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = S::Provisioning;
        record_failure(&mut status, ErrorType::Provisioning, "boom");
        assert_eq!((status.error_count, status.provisioning_fail_count), (1, Some(1)));
        // The cleanup after a failed deployment keeps the count.
        apply_transition(&mut status, &host, S::Deprovisioning, now());
        assert_eq!((status.error_type, status.error_count), (None, 1));
        apply_transition(&mut status, &host, S::Available, now());
        assert_eq!(status.error_count, 1);
        apply_transition(&mut status, &host, S::Provisioning, now());
        record_failure(&mut status, ErrorType::Provisioning, "boom");
        assert_eq!(status.error_count, 2);
        status.provisioning.state = S::Provisioning;
        apply_transition(&mut status, &host, S::Provisioned, now());
        assert_eq!((status.error_count, status.provisioning_fail_count), (0, None));
    }

    #[test]
    fn operational_status_reflects_errors_servicing_detach_and_delay() {
        let mut status = BareMetalHostStatus::default();
        assert_eq!(operational_status(&status, false, false, false), OperationalStatus::Ok);
        assert_eq!(operational_status(&status, true, false, false), OperationalStatus::Detached);
        assert_eq!(operational_status(&status, false, true, false), OperationalStatus::Delayed);
        assert_eq!(operational_status(&status, true, true, true), OperationalStatus::Servicing);
        status.provisioning.state = S::Unmanaged;
        assert_eq!(operational_status(&status, false, false, false), OperationalStatus::Discovered);
        record_failure(&mut status, ErrorType::Registration, "x");
        assert_eq!(operational_status(&status, true, true, true), OperationalStatus::Error);
    }

    #[test]
    fn conditions_follow_the_state_and_errors() {
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = S::Provisioned;
        set_conditions(&mut status, Some(3), None, None, false, now());
        let conditions = status.conditions.clone().unwrap_or_default();
        assert!(condition::is_true(&conditions, condition::READY));
        assert!(!condition::is_true(&conditions, condition::PROGRESSING));
        assert!(!condition::is_true(&conditions, condition::DEGRADED));
        record_failure(&mut status, ErrorType::PowerManagement, "BMC said no");
        let later = Timestamp::from_second(1_800_000_100).expect("timestamp");
        set_conditions(&mut status, Some(3), None, None, true, later);
        let conditions = status.conditions.clone().unwrap_or_default();
        let degraded = condition::find(&conditions, condition::DEGRADED).expect("degraded");
        assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), (TRUE, "PowerManagementError"));
        assert_eq!(error_recorded_at(&status), Some(later));
        assert_eq!(error_generation(&status), Some(3));
        set_conditions(&mut status, Some(3), Some((PROVISIONER_NOT_CONFIGURED, "none".into())), None, false, later);
        let conditions = status.conditions.clone().unwrap_or_default();
        assert_eq!(
            condition::find(&conditions, condition::READY).map(|c| c.reason.as_str()),
            Some(PROVISIONER_NOT_CONFIGURED)
        );
    }

    #[test]
    fn a_host_waiting_for_its_image_says_so_once_even_with_an_error_recorded() {
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = S::Provisioning;
        record_failure(&mut status, ErrorType::Provisioning, "its image could not be built");
        set_conditions(&mut status, Some(2), None, Some("waiting for its image"), false, now());
        let conditions = status.conditions.clone().unwrap_or_default();
        let progressing = condition::find(&conditions, condition::PROGRESSING).expect("progressing");
        assert_eq!((progressing.status.as_str(), progressing.reason.as_str()), (TRUE, WAITING_FOR_IMAGE));
        let mut again = status.clone();
        let later = Timestamp::from_second(1_900_000_000).expect("ts");
        set_conditions(&mut again, Some(2), None, Some("waiting for its image"), false, later);
        assert!(!differs(&status, &again), "the next reconcile writes nothing");
    }

    #[test]
    fn a_write_is_warranted_only_by_real_changes() {
        let mut a = BareMetalHostStatus::default();
        a.provisioning.state = S::Available;
        set_conditions(&mut a, Some(1), None, None, false, now());
        let mut b = a.clone();
        b.last_updated = Some(Time(now()));
        assert!(!differs(&a, &b));
        set_conditions(&mut b, Some(1), None, None, false, Timestamp::from_second(1_900_000_000).expect("ts"));
        assert!(!differs(&a, &b), "recomputing the same conditions keeps their times");
        b.powered_on = true;
        assert!(differs(&a, &b));
    }

    #[test]
    fn deletion_resets_the_error_count_of_provisioning() {
        let mut host = host_with_image();
        let mut status = BareMetalHostStatus { error_count: 3, ..Default::default() };
        status.provisioning.state = S::Provisioned;
        apply_transition(&mut status, &host, S::Deprovisioning, now());
        assert_eq!(status.error_count, 3, "a deprovisioning that is not a deletion keeps the count");
        host.metadata.deletion_timestamp = Some(time(now()));
        status.provisioning.state = S::Provisioned;
        apply_transition(&mut status, &host, S::Deprovisioning, now());
        assert_eq!(status.error_count, 0);
        status.error_count = 2;
        apply_transition(&mut status, &host, S::PoweringOffBeforeDelete, now());
        assert_eq!(status.error_count, 2, "within deletion the count goes on");
    }
}
