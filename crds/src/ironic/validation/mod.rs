//! Validation of `Ironic`: every rule of ironic-standalone-operator's webhook, plus rules for
//! our additions. Pure: the webhook and the controller call the same function.

mod database;
mod dhcp;
mod misc;
mod networking;
mod privilege;
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
    /// Accept overrides that add privileged containers, capabilities or host paths to Ironic's
    /// pods (feature gate `PrivilegedOverrides`, ours, off by default).
    pub allow_privileged_overrides: bool,
}

impl Default for IronicValidationOptions {
    fn default() -> Self {
        Self { allow_high_availability: true, allow_overrides: true, allow_privileged_overrides: false }
    }
}

impl IronicValidationOptions {
    /// Parses `--feature-gates`: `Name=true|false` pairs separated by commas, as Kubernetes
    /// components take them (`HighAvailability=false,Overrides=true`); unnamed gates keep
    /// their default, an unknown gate or value is an error.
    pub fn from_feature_gates(text: &str) -> Result<Self, String> {
        let mut options = Self::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not Name=true|false"))?;
            let value = match value.trim() {
                "true" => true,
                "false" => false,
                other => return Err(format!("feature gate {name}: {other:?} is not true or false")),
            };
            match name.trim() {
                "HighAvailability" => options.allow_high_availability = value,
                "Overrides" => options.allow_overrides = value,
                "PrivilegedOverrides" => options.allow_privileged_overrides = value,
                other => {
                    return Err(format!(
                        "unknown feature gate {other:?} (known: HighAvailability, Overrides, PrivilegedOverrides)"
                    ));
                }
            }
        }
        Ok(options)
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

#[cfg(test)]
mod feature_gate_tests {
    use super::*;

    #[test]
    fn feature_gates_parse_as_kubernetes_writes_them() {
        assert_eq!(IronicValidationOptions::from_feature_gates(""), Ok(IronicValidationOptions::default()));
        let gates =
            IronicValidationOptions::from_feature_gates("HighAvailability=false, Overrides=true").expect("parses");
        assert!(!gates.allow_high_availability && gates.allow_overrides);
        assert!(IronicValidationOptions::from_feature_gates("Overrides").is_err());
        assert!(IronicValidationOptions::from_feature_gates("Overrides=yes").is_err());
        assert!(IronicValidationOptions::from_feature_gates("Nonsense=true").is_err());
    }
}
