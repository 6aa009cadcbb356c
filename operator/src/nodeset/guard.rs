//! Deprovision's blast radius (pure).
//!
//! Under `deletionPolicy: Deprovision` a removal is the explicit request the promise asks for,
//! but one edit can remove many hosts at once without meaning to: an emptied `nodes`, a GitOps
//! prune of the NodeSet, a deleted namespace. So at most `maxUnavailable` hosts are
//! deprovisioned in one go, as a rollout changes at most that many; more at once wait for a
//! confirmation that names them on the NodeSet, `ferrometal.io/confirm-deprovision: "h1,h2"`
//! (or `"all"`). Until then they stay claimed and running, and `Degraded` says what to do.

use super::rollout::max_unavailable;
use crds::nodeset::NodeSet;
use kube::ResourceExt;
use std::collections::BTreeSet;

/// The annotation that confirms deprovisioning more than `maxUnavailable` hosts at once.
pub(super) const CONFIRM_ANNOTATION: &str = "ferrometal.io/confirm-deprovision";

/// Of `releasing` (hosts leaving under Deprovision now), those held back for a confirmation;
/// `total` is the number of hosts `maxUnavailable` is taken of.
pub(super) fn held(nodeset: &NodeSet, releasing: &[String], total: usize) -> Vec<String> {
    let budget = max_unavailable(nodeset.spec.rollout.as_ref().and_then(|r| r.max_unavailable.as_ref()), total);
    if releasing.len() <= budget {
        return Vec::new();
    }
    let confirmation = nodeset.annotations().get(CONFIRM_ANNOTATION).map(String::as_str).unwrap_or_default();
    let confirmed: BTreeSet<&str> = confirmation.split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
    if confirmed.contains("all") {
        return Vec::new();
    }
    releasing.iter().filter(|h| !confirmed.contains(h.as_str())).cloned().collect()
}

/// What Degraded says of held hosts.
pub(super) fn message(held: &[String]) -> String {
    format!(
        "{} would be deprovisioned at once, more than maxUnavailable: they stay as they are until the \
         NodeSet is annotated {CONFIRM_ANNOTATION}=\"{}\" (or \"all\"), or they are removed a few at a time",
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
        assert!(held(&nodeset(2, None), &hosts(&["c-0", "c-1"]), 10).is_empty());
    }

    #[test]
    fn more_at_once_wait_for_a_confirmation_naming_them() {
        let releasing = hosts(&["c-0", "c-1", "c-2"]);
        assert_eq!(held(&nodeset(1, None), &releasing, 3), releasing, "an emptied nodes, a deleted NodeSet");
        assert_eq!(held(&nodeset(1, Some("c-0, c-2")), &releasing, 3), ["c-1"]);
        assert!(held(&nodeset(1, Some("all")), &releasing, 3).is_empty());
        assert!(message(&releasing).contains("ferrometal.io/confirm-deprovision=\"c-0,c-1,c-2\""));
    }
}
