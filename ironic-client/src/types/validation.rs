//! Interface validation (`GET /v1/nodes/{id}/validate`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The verdict on one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InterfaceValidation {
    /// `Some(true)` valid, `Some(false)` invalid, `None` not applicable.
    pub result: Option<bool>,
    /// Why it is invalid or not applicable.
    pub reason: Option<String>,
}

/// The verdict on every interface of a node, by interface name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeValidation(pub BTreeMap<String, InterfaceValidation>);

impl NodeValidation {
    /// The verdict on `interface` (`power`, `management`, `deploy`…).
    pub fn interface(&self, interface: &str) -> Option<&InterfaceValidation> {
        self.0.get(interface)
    }

    /// Whether every interface in `interfaces` validated.
    pub fn all_valid(&self, interfaces: &[&str]) -> bool {
        interfaces.iter().all(|i| self.interface(i).and_then(|v| v.result) == Some(true))
    }

    /// The interfaces that failed validation, with their reasons.
    pub fn failures(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0.iter().filter(|(_, v)| v.result == Some(false)).map(|(k, v)| (k.as_str(), v.reason.as_deref()))
    }
}
