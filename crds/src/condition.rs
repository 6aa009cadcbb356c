//! `metav1.Condition` helpers shared by every controller.
//!
//! Conditions follow the Kubernetes conventions: one entry per type (the list is a map keyed by
//! `type`), `lastTransitionTime` moves only when `status` flips, and each condition carries the
//! generation it was computed from.

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Summary condition: the resource does what its spec asks.
pub const READY: &str = "Ready";
/// The controller is acting to reach the spec (rollout, upgrade, provisioning).
pub const PROGRESSING: &str = "Progressing";
/// Something failed and needs attention; the message says what.
pub const DEGRADED: &str = "Degraded";

/// `status: "True"`.
pub const TRUE: &str = "True";
/// `status: "False"`.
pub const FALSE: &str = "False";
/// `status: "Unknown"`.
pub const UNKNOWN: &str = "Unknown";

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// True when the condition of `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Inserts or replaces the condition of `new.type_`.
///
/// When the status does not change, the existing `lastTransitionTime` is kept, so repeated
/// reconciles do not churn status. Returns true when anything other than the transition time
/// changed, i.e. when a status write (and possibly an Event) is warranted. The list stays sorted
/// by type so that the rendered status is deterministic.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            let changed = !same_ignoring_time(existing, &new);
            *existing = new;
            changed
        }
        None => {
            conditions.push(new);
            conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
            true
        }
    }
}

/// Equality of everything but `lastTransitionTime`.
pub fn same_ignoring_time(a: &Condition, b: &Condition) -> bool {
    a.type_ == b.type_
        && a.status == b.status
        && a.reason == b.reason
        && a.message == b.message
        && a.observed_generation == b.observed_generation
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn cond(type_: &str, status: &str, reason: &str, secs: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::from_second(secs).expect("timestamp")),
        }
    }

    #[test]
    fn set_condition_keeps_transition_time_when_status_is_unchanged() {
        let mut list = vec![cond(READY, FALSE, "A", 10)];
        let changed = set_condition(&mut list, cond(READY, FALSE, "B", 20));
        assert!(changed, "the reason changed");
        assert_eq!(list[0].reason, "B");
        assert_eq!(list[0].last_transition_time, cond(READY, FALSE, "A", 10).last_transition_time);
    }

    #[test]
    fn set_condition_moves_transition_time_when_status_flips() {
        let mut list = vec![cond(READY, FALSE, "A", 10)];
        assert!(set_condition(&mut list, cond(READY, TRUE, "A", 20)));
        assert_eq!(list[0].last_transition_time, cond(READY, TRUE, "A", 20).last_transition_time);
    }

    #[test]
    fn set_condition_reports_no_change_for_identical_input() {
        let mut list = vec![cond(READY, TRUE, "A", 10)];
        assert!(!set_condition(&mut list, cond(READY, TRUE, "A", 99)));
    }

    #[test]
    fn set_condition_appends_and_sorts_new_types() {
        let mut list = vec![cond(READY, TRUE, "A", 10)];
        assert!(set_condition(&mut list, cond(DEGRADED, FALSE, "A", 10)));
        let types: Vec<_> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [DEGRADED, READY]);
        assert!(is_true(&list, READY));
        assert!(!is_true(&list, DEGRADED));
        assert!(find(&list, PROGRESSING).is_none());
    }
}
