//! The status a `BMCEventSubscription` should have after a reconcile (pure): the BMC's id, the
//! last error (baremetal-operator's field), `Ready`, and an Event when `Ready` changes.

use crate::kit::Notices;
use crate::kit::condition::{Conditions, set_all};
use crds::bmceventsubscription::{BMCEventSubscription, BMCEventSubscriptionStatus};
use crds::condition::{READY, find};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// What the reconcile came to.
#[derive(Clone, Debug)]
pub(super) enum Observed {
    /// The BMC has the subscription `id`.
    Subscribed { id: String },
    /// Nothing could be done now (`reason`, `message`, already scrubbed): the id recorded stays.
    Failed { reason: &'static str, message: String },
}

/// The new status, when it differs, and the Events of its transitions.
pub(super) struct Outcome {
    pub status: Option<BMCEventSubscriptionStatus>,
    pub notices: Notices,
}

pub(super) fn compute(subscription: &BMCEventSubscription, observed: &Observed, now: &Time) -> Outcome {
    let old = subscription.status.clone().unwrap_or_default();
    let mut new = old.clone();
    let make = Conditions::new(subscription.metadata.generation, now.clone());
    let ready = match observed {
        Observed::Subscribed { id } => {
            new.subscription_id = id.clone();
            new.error.clear();
            // The generation the BMC's subscription was made or confirmed for: a later one
            // (an edit, headers included) is a new subscription.
            new.observed_generation = subscription.metadata.generation;
            make.make(READY, true, "Subscribed", format!("the host's BMC has the subscription {id}"))
        }
        Observed::Failed { reason, message } => {
            new.error = message.clone();
            make.make(READY, false, reason, message.as_str())
        }
    };
    set_all(&mut new.conditions, [ready]);
    let mut notices = Notices::default();
    let reason = |s: &BMCEventSubscriptionStatus| find(&s.conditions, READY).map(|c| c.reason.clone());
    if reason(&old) != reason(&new)
        && let Some(ready) = find(&new.conditions, READY)
    {
        match observed {
            Observed::Subscribed { .. } => notices.normal("Subscribed", ready.message.clone()),
            Observed::Failed { .. } => notices.warning(ready.reason.clone(), ready.message.clone()),
        }
    }
    Outcome { status: (new != old).then_some(new), notices }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::bmceventsubscription::BMCEventSubscriptionSpec;
    use crds::condition::is_true;

    fn object(status: Option<BMCEventSubscriptionStatus>) -> BMCEventSubscription {
        let mut s = BMCEventSubscription::new("s", BMCEventSubscriptionSpec::default());
        s.metadata.generation = Some(2);
        s.status = status;
        s
    }

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_subscription_the_bmc_has_is_ready_with_its_id_and_no_error() {
        let failed =
            compute(&object(None), &Observed::Failed { reason: "SubscriptionFailed", message: "no".into() }, &now());
        let status = failed.status.expect("written");
        assert_eq!(status.error, "no");
        let done = compute(&object(Some(status)), &Observed::Subscribed { id: "7".into() }, &now());
        let status = done.status.expect("written");
        assert_eq!((status.subscription_id.as_str(), status.error.as_str()), ("7", ""));
        assert!(is_true(&status.conditions, READY));
        assert_eq!(status.observed_generation, Some(2));
        assert_eq!(done.notices.into_iter().count(), 1);
    }

    #[test]
    fn a_failure_keeps_the_id_and_nothing_is_written_twice() {
        let made = compute(&object(None), &Observed::Subscribed { id: "7".into() }, &now()).status;
        let again = compute(&object(made.clone()), &Observed::Subscribed { id: "7".into() }, &now());
        assert!(again.status.is_none() && again.notices.is_empty());
        let mut edited = object(made);
        edited.metadata.generation = Some(3);
        let failed =
            compute(&edited, &Observed::Failed { reason: "IronicUnavailable", message: "down".into() }, &now());
        let status = failed.status.expect("written");
        assert_eq!(status.subscription_id, "7");
        assert_eq!(status.observed_generation, Some(2), "still the generation it was made for");
    }
}
