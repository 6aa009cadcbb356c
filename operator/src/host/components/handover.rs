//! Which firmware updates were handed to Ironic, told by Ironic itself, so that a crash at any
//! point neither flashes an update twice nor loses one.
//!
//! Before it asks Ironic to service a node for updates, the host controller writes a mark in
//! the node's `extra`: the spec's updates, and the node's `provision_updated_at` as it read it
//! then. Ironic changes `provision_updated_at` only when the node's provision state changes,
//! which a servicing does at once (`active` → `servicing`), so:
//! - the mark, and a `provision_updated_at` that moved since: Ironic took the servicing (it
//!   may still run); the updates are handed over and never sent again;
//! - the mark, and the same `provision_updated_at`: the request never reached Ironic, or was
//!   refused; the updates are sent again;
//! - a node in `service failed`: the servicing did not finish; the updates are not handed
//!   over (as baremetal-operator clears `status.updates` when a servicing fails), and ending
//!   that servicing without them removes the mark first.
//!
//! The mark lives in Ironic, not in Kubernetes: it is written in the same place, by the same
//! writer, as the request it witnesses.

use crds::firmware::FirmwareUpdate;
use ironic_client::{JsonObject, ProvisionState};
use serde::{Deserialize, Serialize};

/// The key of the mark in the node's `extra`.
pub(crate) const MARK: &str = "ferrometal_firmware_updates";

/// What the host controller wrote before it asked for a servicing with updates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    /// The spec's updates when they were handed over (the whole list, as baremetal-operator
    /// records them in `status.updates`).
    pub updates: Vec<FirmwareUpdate>,
    /// The node's `provision_updated_at` just before the request.
    pub before: Option<String>,
}

/// The mark in a node's `extra`, if one reads as a mark: anything else there (an
/// administrator's edit) counts as no mark, so at worst an update is flashed again, as after
/// a failed servicing; nothing in `extra` can make the operator skip one it never handed over
/// unless it names exactly the spec's updates.
pub(crate) fn mark_of(extra: &JsonObject) -> Option<Mark> {
    extra.get(MARK).and_then(|value| serde_json::from_value(value.clone()).ok())
}

/// What Ironic shows of a node, for the mark.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeMoment<'a> {
    pub provision_state: Option<&'a ProvisionState>,
    pub provision_updated_at: Option<&'a str>,
}

/// The updates Ironic was handed and has not failed: the mark's, once the node's provision
/// state changed after it was written, unless its servicing failed.
pub(crate) fn handed(mark: Option<&Mark>, node: NodeMoment<'_>) -> Vec<FirmwareUpdate> {
    let Some(mark) = mark else { return Vec::new() };
    let moved = mark.before.as_deref() != node.provision_updated_at;
    if moved && node.provision_state != Some(&ProvisionState::ServiceFailed) {
        mark.updates.clone()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bios(url: &str) -> FirmwareUpdate {
        FirmwareUpdate { component: "bios".into(), url: url.into() }
    }

    fn mark(before: &str) -> Mark {
        Mark { updates: vec![bios("http://h/bios-2.bin")], before: Some(before.into()) }
    }

    fn node<'a>(state: &'a ProvisionState, at: &'a str) -> NodeMoment<'a> {
        NodeMoment { provision_state: Some(state), provision_updated_at: Some(at) }
    }

    #[test]
    fn updates_are_handed_over_once_the_node_moved_after_the_mark() {
        let mark = mark("2026-12-05T01:00:00");
        assert_eq!(handed(Some(&mark), node(&ProvisionState::Servicing, "2026-12-05T01:00:01")), mark.updates);
        assert_eq!(handed(Some(&mark), node(&ProvisionState::Active, "2026-12-05T01:05:00")), mark.updates);
    }

    #[test]
    fn a_request_that_never_reached_ironic_hands_nothing_over() {
        let mark = mark("2026-12-05T01:00:00");
        assert!(handed(Some(&mark), node(&ProvisionState::Active, "2026-12-05T01:00:00")).is_empty());
        assert!(handed(None, node(&ProvisionState::Active, "2026-12-05T01:05:00")).is_empty());
    }

    #[test]
    fn a_failed_servicing_hands_nothing_over() {
        let mark = mark("2026-12-05T01:00:00");
        assert!(handed(Some(&mark), node(&ProvisionState::ServiceFailed, "2026-12-05T01:03:00")).is_empty());
    }

    #[test]
    fn a_mark_reads_back_and_anything_else_in_extra_is_no_mark() {
        let written = mark("2026-12-05T01:00:00");
        let mut extra = JsonObject::new();
        extra.insert(MARK.into(), serde_json::to_value(&written).expect("json"));
        assert_eq!(mark_of(&extra), Some(written));
        extra.insert(MARK.into(), json!({"updates": "all of them"}));
        assert_eq!(mark_of(&extra), None);
        assert_eq!(mark_of(&JsonObject::new()), None);
    }
}
