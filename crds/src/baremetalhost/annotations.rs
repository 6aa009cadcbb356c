//! Annotations baremetal-operator users put on BareMetalHosts, and the JSON some carry.

use serde::{Deserialize, Serialize};

/// Finalizer that blocks deletion until the host is deprovisioned or detached.
pub const FINALIZER: &str = "baremetalhost.metal3.io";
/// Stops reconciliation entirely (deletion still proceeds).
pub const PAUSED: &str = "baremetalhost.metal3.io/paused";
/// Removes the host from Ironic without deprovisioning it. Optional JSON value:
/// [`DetachedAnnotation`].
pub const DETACHED: &str = "baremetalhost.metal3.io/detached";
/// A JSON copy of the status, used to rebuild status after a move between clusters.
pub const STATUS: &str = "baremetalhost.metal3.io/status";
/// Reboot request: `reboot.metal3.io` (one-shot) or `reboot.metal3.io/<key>` (held until
/// removed). Optional JSON value: [`RebootAnnotation`].
pub const REBOOT_PREFIX: &str = "reboot.metal3.io";
/// Inspection request: empty value re-inspects an available host; `disabled` (deprecated, see
/// spec.inspectionMode) turns inspection off.
pub const INSPECT: &str = "inspect.metal3.io";
/// Value of [`INSPECT`] that disables inspection.
pub const INSPECT_DISABLED: &str = "disabled";
/// Inspection data supplied from outside (JSON of `HardwareDetails`); needs inspection
/// disabled.
pub const HARDWARE_DETAILS: &str = "inspect.metal3.io/hardwaredetails";

/// True for `reboot.metal3.io` and `reboot.metal3.io/<key>`.
pub fn is_reboot_annotation(key: &str) -> bool {
    key == REBOOT_PREFIX
        || key.strip_prefix(REBOOT_PREFIX).and_then(|rest| rest.strip_prefix('/')).is_some_and(|k| !k.is_empty())
}

/// Value of a reboot annotation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebootAnnotation {
    /// hard or soft; an empty annotation means soft, then hard if soft fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RebootMode>,
    /// Reboot even if the host is busy.
    #[serde(default)]
    pub force: bool,
}

/// Reboot modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RebootMode {
    /// Power cycle.
    Hard,
    /// ACPI shutdown, then power on.
    Soft,
}

/// Value of the detached annotation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetachedAnnotation {
    /// What deleting a detached host does: delete it at once (default) or delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_action: Option<DetachedDeleteAction>,
    /// Detach even from states where detaching is normally refused.
    #[serde(default)]
    pub force: bool,
}

/// Delete behaviour of a detached host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DetachedDeleteAction {
    /// Wait before deleting.
    Delay,
    /// Delete immediately, skipping deprovisioning.
    Delete,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reboot_annotation_keys() {
        assert!(is_reboot_annotation("reboot.metal3.io"));
        assert!(is_reboot_annotation("reboot.metal3.io/capm3-remediation"));
        assert!(!is_reboot_annotation("reboot.metal3.io/"));
        assert!(!is_reboot_annotation("reboot.metal3.iox"));
    }

    #[test]
    fn annotation_values_parse() {
        let r: RebootAnnotation = serde_json::from_str(r#"{"mode":"hard","force":true}"#).expect("reboot");
        assert_eq!(r.mode, Some(RebootMode::Hard));
        let d: DetachedAnnotation = serde_json::from_str(r#"{"deleteAction":"delay"}"#).expect("detached");
        assert_eq!(d.delete_action, Some(DetachedDeleteAction::Delay));
        assert!(serde_json::from_str::<RebootAnnotation>(r#"{"mode":"gentle"}"#).is_err());
    }
}
