//! The status a `DataImage` should have, from the node's record (pure): what is attached, the
//! last failure of the wanted image, and `Ready`, with an Event when `Ready` changes.

use super::record::Record;
use crate::kit::Notices;
use crate::kit::condition::{Conditions, bounded_message, set_all};
use crate::kit::scrub::scrubbed;
use crds::condition::{READY, find};
use crds::dataimage::{AttachedImageReference, DataImage, DataImageError, DataImageStatus, validate_data_image};
use crds::validation::summarize;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// What the reconcile found.
#[derive(Clone, Debug)]
pub(super) enum Observed {
    /// The node's record.
    Read(Record),
    /// Nothing is attached: the host is gone, or has no node (never registered, or deleted).
    NoNode { reason: &'static str, message: String },
    /// Nothing could be read now (`reason`, `message`); what the status held is kept.
    Unread { reason: &'static str, message: String },
}

/// The new status, when it differs, and the Events of its transitions.
#[derive(Debug)]
pub(super) struct Outcome {
    pub status: Option<DataImageStatus>,
    pub notices: Notices,
    /// The wanted image is attached (nothing waits for the host's power on).
    pub settled: bool,
}

/// The status of `image` after `observed`, at `now`.
pub(super) fn compute(image: &DataImage, observed: &Observed, now: &Time) -> Outcome {
    let old = image.status.clone().unwrap_or_default();
    let mut new = old.clone();
    let url = image.spec.url.as_str();
    match observed {
        Observed::Read(record) => {
            new.attached_image = record.attached.clone().map(|url| AttachedImageReference { url });
            new.error = record.failure.as_ref().filter(|f| f.url == url).map(|f| DataImageError {
                count: i64::from(f.count),
                message: bounded_message(scrubbed(&f.message, &[])),
            });
        }
        Observed::NoNode { .. } => {
            new.attached_image = None;
            new.error = None;
        }
        Observed::Unread { .. } => {}
    }
    let attached = new.attached_image.as_ref().is_some_and(|a| a.url == url);
    let make = Conditions::new(image.metadata.generation, now.clone());
    // Admitted before the webhook was installed (or without it): never handed to Ironic.
    let invalid = validate_data_image(&image.spec);
    let ready = match (observed, attached, &new.error) {
        _ if !invalid.is_empty() => make.make(READY, false, "InvalidURL", summarize(&invalid)),
        (Observed::NoNode { reason, message } | Observed::Unread { reason, message }, _, _) => {
            make.make(READY, false, reason, message.as_str())
        }
        (_, true, _) => make.make(READY, true, "Attached", "the wanted image is in the host's virtual CD"),
        (_, false, Some(error)) => make.make(
            READY,
            false,
            "AttachFailed",
            format!("the last attempt failed ({}; tried again at the host's next power on): {}", error.count, error.message),
        ),
        (_, false, None) => make.make(
            READY,
            false,
            "AwaitingPowerOn",
            "the image is attached when the provisioned host is next powered on (a reboot: the reboot.metal3.io annotation)",
        ),
    };
    set_all(&mut new.conditions, [ready]);
    new.observed_generation = image.metadata.generation;
    let notices = transition(&old, &new);
    let status = (new != old).then(|| DataImageStatus { last_reconciled: Some(now.clone()), ..new });
    Outcome { status, notices, settled: attached }
}

/// An Event when `Ready` changes reason.
fn transition(old: &DataImageStatus, new: &DataImageStatus) -> Notices {
    let mut notices = Notices::default();
    let reason = |s: &DataImageStatus| find(&s.conditions, READY).map(|c| c.reason.clone());
    if let Some(ready) = find(&new.conditions, READY).filter(|_| reason(old) != reason(new)) {
        match ready.reason.as_str() {
            "AttachFailed" => notices.warning("AttachFailed", ready.message.clone()),
            reason => notices.normal(reason, ready.message.clone()),
        }
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::dataimage::record::Failure;
    use crds::condition::is_true;
    use crds::dataimage::DataImageSpec;

    const URL: &str = "http://images.example/data.iso";

    fn image(status: Option<DataImageStatus>) -> DataImage {
        let mut image = DataImage::new("h", DataImageSpec { url: URL.into() });
        image.metadata.generation = Some(3);
        image.status = status;
        image
    }

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    fn read(attached: Option<&str>, failure: Option<Failure>) -> Observed {
        Observed::Read(Record { attached: attached.map(str::to_string), failure, ejecting: false })
    }

    #[test]
    fn the_wanted_image_in_the_record_is_attached_and_ready() {
        let outcome = compute(&image(None), &read(Some(URL), None), &now());
        let status = outcome.status.expect("written");
        assert_eq!(status.attached_image.map(|a| a.url).as_deref(), Some(URL));
        assert!(is_true(&status.conditions, READY));
        assert_eq!(status.observed_generation, Some(3));
        assert!(outcome.settled);
        assert_eq!(outcome.notices.into_iter().count(), 1, "an Event for the transition");
    }

    #[test]
    fn a_failure_of_the_wanted_image_is_its_error_and_one_of_another_is_not() {
        let failure = |url: &str| Some(Failure { url: url.into(), message: "Could not attach: 404".into(), count: 2 });
        let status = compute(&image(None), &read(None, failure(URL)), &now()).status.expect("written");
        assert_eq!(status.error.as_ref().map(|e| e.count), Some(2));
        assert_eq!(find(&status.conditions, READY).map(|c| c.reason.as_str()), Some("AttachFailed"));
        let status = compute(&image(None), &read(None, failure("http://h/old.iso")), &now()).status.expect("written");
        assert_eq!(status.error, None);
        assert_eq!(find(&status.conditions, READY).map(|c| c.reason.as_str()), Some("AwaitingPowerOn"));
    }

    #[test]
    fn nothing_changes_twice_and_an_unread_node_keeps_what_was_attached() {
        let first = compute(&image(None), &read(Some(URL), None), &now()).status;
        let again = compute(&image(first.clone()), &read(Some(URL), None), &now());
        assert!(again.status.is_none() && again.notices.is_empty(), "no write, no Event");
        let unread = Observed::Unread { reason: "IronicUnavailable", message: "down".into() };
        let status = compute(&image(first), &unread, &now()).status.expect("Ready changed");
        assert_eq!(status.attached_image.map(|a| a.url).as_deref(), Some(URL), "kept");
    }

    #[test]
    fn a_url_admitted_without_the_webhook_is_reported_invalid() {
        let mut bad = image(None);
        bad.spec.url = "oci://registry.example/data:1".into();
        let status = compute(&bad, &read(None, None), &now()).status.expect("written");
        assert_eq!(find(&status.conditions, READY).map(|c| c.reason.as_str()), Some("InvalidURL"));
    }

    #[test]
    fn a_host_without_a_node_has_nothing_attached() {
        let attached = compute(&image(None), &read(Some(URL), None), &now()).status;
        let gone = Observed::NoNode { reason: "NoHost", message: "no host".into() };
        let status = compute(&image(attached), &gone, &now()).status.expect("written");
        assert_eq!(status.attached_image, None);
        assert!(!is_true(&status.conditions, READY));
    }
}
