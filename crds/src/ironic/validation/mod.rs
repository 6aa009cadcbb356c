//! Validation of `Ironic`: every rule of ironic-standalone-operator's webhook, plus rules for
//! our additions. Pure: the webhook and the controller call the same function.

mod database;
mod dhcp;
mod misc;
mod networking;
mod tls;

use super::IronicSpec;
use crate::validation::{Errors, FieldError};

/// Switches that ironic-standalone-operator keeps behind feature gates. Both default to
/// allowed: ferrometal treats highAvailability and overrides as supported features, but an
/// operator flag can still turn either off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IronicValidationOptions {
    /// Accept `highAvailability: true` (feature gate `HighAvailability`).
    pub allow_high_availability: bool,
    /// Accept `overrides` (feature gate `Overrides`).
    pub allow_overrides: bool,
}

impl Default for IronicValidationOptions {
    fn default() -> Self {
        Self { allow_high_availability: true, allow_overrides: true }
    }
}

/// Validates an Ironic spec on create (`old` is `None`) or update (`old` is the stored spec).
/// Returns every violation; empty means valid.
pub fn validate_ironic(
    spec: &IronicSpec,
    old: Option<&IronicSpec>,
    options: &IronicValidationOptions,
) -> Vec<FieldError> {
    let mut errors = Errors::default();
    misc::validate_high_availability(&mut errors, spec, options);
    misc::validate_version(&mut errors, spec);
    misc::validate_extra_config(&mut errors, spec);
    misc::validate_prometheus_exporter(&mut errors, spec);
    misc::validate_networking_service(&mut errors, spec);
    misc::validate_overrides(&mut errors, spec, options);
    database::validate_database(&mut errors, spec, old);
    networking::validate_networking(&mut errors, spec);
    dhcp::validate_dhcp(&mut errors, spec);
    tls::validate_tls(&mut errors, spec);
    errors.into_vec()
}
