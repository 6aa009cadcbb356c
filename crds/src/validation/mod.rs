//! Field errors and the small checks every kind's validation shares.
//!
//! Validation is pure: a function takes the new object (and the old one on update) and returns
//! every violation it finds, each with the field path users see in `kubectl` and in conditions,
//! e.g. `spec.networking.dhcp.rangeBegin`. The webhook joins them into one denial; the
//! controllers report them in a condition.

mod duration;
mod names;
pub(crate) mod net;
mod quantity;
pub(crate) mod structural;

pub use duration::{GoDurationError, parse_go_duration};
pub use names::{is_dns1123_label, is_dns1123_subdomain, is_uuid};
pub use net::{IpNet, is_mac_address, parse_ip, parse_ip_net, valid_url};
pub use quantity::{QuantityError, parse_quantity_bytes};

use serde::{Deserialize, Serialize};
use std::fmt;

/// One violation: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Dotted path of the offending field, with `[i]` for list items and `[key]` for map
    /// entries, e.g. `spec.networking.dhcp.extraRanges[1].rangeEnd`.
    pub path: String,
    /// What is wrong, phrased for the user who wrote the object.
    pub message: String,
}

impl FieldError {
    /// A violation at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for FieldError {}

/// Joins violations into the single message a webhook denial or a condition carries.
pub fn summarize(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Collects violations while a validator walks an object.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<FieldError>);

impl Errors {
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(path, message));
    }

    pub(crate) fn into_vec(self) -> Vec<FieldError> {
        self.0
    }
}

/// True when an optional string holds something other than whitespace.
pub(crate) fn is_set(value: &Option<String>) -> bool {
    value.as_deref().is_some_and(|v| !v.trim().is_empty())
}

/// Checks a TCP/UDP port number.
pub(crate) fn check_port(errors: &mut Errors, path: &str, port: Option<i32>) {
    if let Some(port) = port
        && !(1..=65535).contains(&port)
    {
        errors.push(path, format!("{port} is not a valid port (1-65535)"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_error_displays_path_then_message() {
        let e = FieldError::new("spec.version", "is not supported");
        assert_eq!(e.to_string(), "spec.version: is not supported");
    }

    #[test]
    fn summarize_joins_every_error() {
        let errs = vec![FieldError::new("a", "x"), FieldError::new("b", "y")];
        assert_eq!(summarize(&errs), "a: x; b: y");
    }

    #[test]
    fn check_port_rejects_out_of_range_and_accepts_valid() {
        let mut errors = Errors::default();
        check_port(&mut errors, "p", Some(0));
        check_port(&mut errors, "p", Some(70000));
        check_port(&mut errors, "p", Some(6385));
        check_port(&mut errors, "p", None);
        let errs = errors.into_vec();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].message, "0 is not a valid port (1-65535)");
    }
}
