//! Which firmware updates a host has, told by Ironic itself, so that a crash at any point
//! neither flashes an update twice nor loses one.
//!
//! The record is a mark in the node's `extra`, written by the host controller before every
//! servicing it asks for and before it ends a failed one:
//! - `done`: per component, the URL of the last update flashed by a servicing that ended in
//!   `active`;
//! - `pending`: the updates of the servicing being asked for, and the node's
//!   `provision_updated_at` read just before the request.
//!
//! Ironic changes `provision_updated_at` only with the provision state, which a servicing
//! changes at once (`active` → `servicing`). So a pending servicing whose time has not moved
//! (and whose node is not servicing) never reached Ironic, or was refused: its updates are
//! sent again. One whose node is servicing has them in flight; one that ended in `active`
//! flashed them (they join `done`); one that ended anywhere else (`service failed`) did not.
//! Every write of the mark carries what was resolved so far, so no later servicing (for BIOS
//! settings alone, say) can make an unresolved one look done.

use crds::firmware::FirmwareUpdate;
use ironic_client::{JsonObject, ProvisionState};
use k8s_openapi::jiff::{Timestamp, civil::DateTime, tz::TimeZone};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The key of the mark in the node's `extra`.
pub(crate) const MARK: &str = "ferrometal_firmware_updates";

/// The updates of a servicing asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pending {
    pub updates: Vec<FirmwareUpdate>,
    /// The node's `provision_updated_at` just before the request.
    pub before: Option<String>,
}

/// What the host controller wrote. Read strictly: anything else under the key (an
/// administrator's edit, an empty object) is no record at all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mark {
    /// Component → URL of the last update flashed.
    pub done: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
}

/// The mark in a node's `extra`, if one reads as a mark: anything else there (an
/// administrator's edit) counts as no mark, so at worst an update is flashed again.
pub(crate) fn mark_of(extra: &JsonObject) -> Option<Mark> {
    extra.get(MARK).and_then(|value| serde_json::from_value(value.clone()).ok())
}

/// What Ironic shows of a node, for the mark.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeMoment<'a> {
    pub provision_state: Option<&'a ProvisionState>,
    pub provision_updated_at: Option<&'a str>,
}

impl NodeMoment<'_> {
    fn servicing(&self) -> bool {
        use ProvisionState as P;
        matches!(self.provision_state, Some(P::Servicing | P::ServiceWait | P::ServiceHold))
    }
}

/// What the mark says once the node is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Component → URL of the last update flashed.
    pub done: BTreeMap<String, String>,
    /// The updates of the servicing running now.
    pub in_flight: Vec<FirmwareUpdate>,
}

/// Whether two of Ironic's times are the same instant (read as times, so that a change of how
/// Ironic writes them is not taken for a change of the state).
fn same_time(a: Option<&str>, b: Option<&str>) -> bool {
    let parse = |text: &str| {
        text.parse::<Timestamp>().ok().or_else(|| {
            let civil = text.parse::<DateTime>().ok()?;
            civil.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp())
        })
    };
    match (a, b) {
        (Some(a), Some(b)) => match (parse(a), parse(b)) {
            (Some(a), Some(b)) => a == b,
            _ => a == b,
        },
        (a, b) => a == b,
    }
}

/// The mark (or, for a node without one, `recorded`: the updates the object last showed
/// handed over, from before the node was registered again) resolved against the node.
pub(crate) fn resolve(mark: Option<&Mark>, recorded: &[FirmwareUpdate], node: NodeMoment<'_>) -> Resolved {
    let Some(mark) = mark else {
        let done = recorded.iter().map(|u| (u.component.clone(), u.url.clone())).collect();
        return Resolved { done, in_flight: Vec::new() };
    };
    let mut resolved = Resolved { done: mark.done.clone(), in_flight: Vec::new() };
    let Some(pending) = &mark.pending else { return resolved };
    let reached = node.servicing() || !same_time(pending.before.as_deref(), node.provision_updated_at);
    match node.provision_state {
        _ if !reached => {}
        _ if node.servicing() => resolved.in_flight = pending.updates.clone(),
        Some(ProvisionState::Active) => {
            resolved.done.extend(pending.updates.iter().map(|u| (u.component.clone(), u.url.clone())));
        }
        // Failed, or gone elsewhere: not flashed (at worst flashed again later, never lost).
        _ => {}
    }
    resolved
}

impl Resolved {
    /// Whether `update` was flashed or is being flashed.
    fn has(&self, update: &FirmwareUpdate) -> bool {
        self.done.get(&update.component) == Some(&update.url) || self.in_flight.contains(update)
    }

    /// The spec's updates Ironic was handed (flashed, or being flashed), in the spec's order:
    /// baremetal-operator's `status.updates`.
    pub(crate) fn handed(&self, spec: &[FirmwareUpdate]) -> Vec<FirmwareUpdate> {
        spec.iter().filter(|u| self.has(u)).cloned().collect()
    }

    /// The spec's updates still to flash.
    pub(crate) fn to_flash(&self, spec: &[FirmwareUpdate]) -> Vec<FirmwareUpdate> {
        spec.iter().filter(|u| !self.has(u)).cloned().collect()
    }

    /// The mark to write before a servicing that flashes `flash` (none: nothing pending), the
    /// node's time read as `before`.
    pub(crate) fn mark(&self, flash: Vec<FirmwareUpdate>, before: Option<&str>) -> Mark {
        let pending = (!flash.is_empty()).then(|| Pending { updates: flash, before: before.map(str::to_string) });
        Mark { done: self.done.clone(), pending }
    }
}

#[cfg(test)]
mod tests;
