//! Deprovision's blast radius (pure).
//!
//! Under `deletionPolicy: Deprovision` a removal is the explicit request the promise asks for,
//! but one edit can remove many hosts at once without meaning to: an emptied `nodes`, a GitOps
//! prune of the NodeSet, a deleted namespace. So at most `maxUnavailable` hosts are
//! deprovisioned in one go, as a rollout changes at most that many; more at once wait for a
//! confirmation that names them on the NodeSet, `ferrometal.io/confirm-deprovision: "h1,h2"`
//! (or `"all"`). Until then they stay claimed and running, and `Degraded` says what to do.
//!
//! A confirmation confirms one removal: once hosts it let go are released, status records its
//! value as spent (a digest, `status.spentDeprovisionConfirmations`), and it confirms nothing
//! more. Otherwise an `all` left on the NodeSet after a planned scale-in would wave through,
//! months later, the very mass removal the guard is for (a GitOps prune, a deleted namespace).

use super::rollout::max_unavailable;
use crate::kit::digest;
use crds::nodeset::NodeSet;
use kube::ResourceExt;
use std::collections::BTreeSet;

/// The annotation that confirms deprovisioning more than `maxUnavailable` hosts at once.
pub(super) const CONFIRM_ANNOTATION: &str = "ferrometal.io/confirm-deprovision";

/// Spent confirmations remembered: enough for years of planned scale-ins, bounded so status
/// stays small.
pub(super) const SPENT_KEPT: usize = 16;

/// What the guard decides of hosts leaving under Deprovision.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Verdict {
    /// Those held back for a confirmation.
    pub held: Vec<String>,
    /// The digest of the confirmation that let the others go, when one had to.
    pub confirmed_by: Option<String>,
}

/// The digest a confirmation is remembered by once spent.
fn confirmation_digest(confirmation: &str) -> String {
    digest::short(confirmation.as_bytes(), 8)
}

/// The NodeSet's confirmation, unless empty or spent on an earlier removal.
fn live_confirmation(nodeset: &NodeSet) -> Option<(&str, String)> {
    let value = nodeset.annotations().get(CONFIRM_ANNOTATION).map(String::as_str).filter(|v| !v.trim().is_empty())?;
    let digest = confirmation_digest(value);
    let spent = nodeset.status.as_ref().and_then(|s| s.spent_deprovision_confirmations.as_ref());
    (!spent.is_some_and(|spent| spent.contains(&digest))).then_some((value, digest))
}

/// Of `releasing` (hosts leaving under Deprovision now), those held back for a confirmation;
/// `total` is the number of hosts `maxUnavailable` is taken of.
pub(super) fn held(nodeset: &NodeSet, releasing: &[String], total: usize) -> Verdict {
    let budget = max_unavailable(nodeset.spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref()), total);
    if releasing.len() <= budget {
        return Verdict::default();
    }
    let Some((confirmation, digest)) = live_confirmation(nodeset) else {
        return Verdict { held: releasing.to_vec(), confirmed_by: None };
    };
    let confirmed: BTreeSet<&str> = confirmation.split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
    let held: Vec<String> = if confirmed.contains("all") {
        Vec::new()
    } else {
        releasing.iter().filter(|h| !confirmed.contains(h.as_str())).cloned().collect()
    };
    let confirmed_by = (held.len() < releasing.len()).then_some(digest);
    Verdict { held, confirmed_by }
}

/// The spent confirmations after `spent_now` let hosts go: the newest last, the oldest dropped.
pub(super) fn spent_after(previous: Option<&Vec<String>>, spent_now: Option<&String>) -> Option<Vec<String>> {
    let previous = previous.into_iter().flatten().map(String::as_str);
    let added: Vec<&str> = spent_now.map(String::as_str).into_iter().collect();
    let spent = digest::remember(previous, &added, SPENT_KEPT);
    (!spent.is_empty()).then_some(spent)
}

/// What Degraded says of held hosts.
pub(super) fn message(held: &[String]) -> String {
    format!(
        "{} would be deprovisioned at once, more than maxUnavailable: they stay as they are until the \
         NodeSet is annotated {CONFIRM_ANNOTATION}=\"{}\" (or \"all\"; a value that confirmed an earlier \
         removal confirms nothing more), or they are removed a few at a time",
        held.join(", "),
        held.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nodeset(max_unavailable: u32, confirm: Option<&str>) -> NodeSet {
        let mut n: NodeSet = serde_json::from_value(json!({
            "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "computes", "namespace": "metal3"},
            "spec": {"preProvisioned": true, "rollout": {"maxUnavailable": max_unavailable}}
        }))
        .expect("nodeset");
        if let Some(value) = confirm {
            n.annotations_mut().insert(CONFIRM_ANNOTATION.into(), value.into());
        }
        n
    }

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn up_to_max_unavailable_hosts_go_without_a_confirmation() {
        assert_eq!(held(&nodeset(2, None), &hosts(&["c-0", "c-1"]), 10), Verdict::default());
    }

    #[test]
    fn more_at_once_wait_for_a_confirmation_naming_them() {
        let releasing = hosts(&["c-0", "c-1", "c-2"]);
        assert_eq!(held(&nodeset(1, None), &releasing, 3).held, releasing, "an emptied nodes, a deleted NodeSet");
        let named = held(&nodeset(1, Some("c-0, c-2")), &releasing, 3);
        assert_eq!((named.held, named.confirmed_by.is_some()), (vec!["c-1".to_string()], true));
        assert!(held(&nodeset(1, Some("all")), &releasing, 3).held.is_empty());
        assert!(message(&releasing).contains("ferrometal.io/confirm-deprovision=\"c-0,c-1,c-2\""));
    }

    #[test]
    fn a_confirmation_spent_on_an_earlier_removal_confirms_nothing_more() {
        let releasing = hosts(&["c-0", "c-1", "c-2"]);
        let mut n = nodeset(1, Some("all"));
        let first = held(&n, &releasing, 3);
        assert!(first.held.is_empty());
        n.status = Some(crds::nodeset::NodeSetStatus {
            spent_deprovision_confirmations: spent_after(None, first.confirmed_by.as_ref()),
            ..Default::default()
        });
        assert_eq!(held(&n, &releasing, 3).held, releasing, "an all left behind waves nothing through");
        n.annotations_mut().insert(CONFIRM_ANNOTATION.into(), "all, 2027-01-04".into());
        assert!(held(&n, &releasing, 3).held.is_empty(), "a new value confirms");
    }

    #[test]
    fn spent_confirmations_are_bounded_the_newest_kept() {
        let mut spent = None;
        for i in 0..SPENT_KEPT + 3 {
            spent = spent_after(spent.as_ref(), Some(&format!("d{i}")));
        }
        let spent = spent.expect("spent");
        assert_eq!(spent.len(), SPENT_KEPT);
        assert_eq!(spent.last().map(String::as_str), Some(format!("d{}", SPENT_KEPT + 2).as_str()));
        assert_eq!(spent_after(Some(&spent), None).as_ref(), Some(&spent), "nothing spent, nothing changes");
    }
}
