//! Redfish event subscriptions, made through the redfish vendor interface.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A subscription to ask a BMC for (`create_subscription`'s arguments, Redfish's names).
#[derive(Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct EventSubscriptionCreate {
    /// Where the BMC posts its events.
    pub destination: String,
    /// A string the BMC returns with every event.
    pub context: String,
    /// `Redfish`.
    pub protocol: String,
    /// Headers the BMC sends with every event, one name and value per map: secret (an
    /// `Authorization` header), redacted from traces and scrubbed from errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub http_headers: Vec<BTreeMap<String, String>>,
}

impl std::fmt::Debug for EventSubscriptionCreate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&String> = self.http_headers.iter().flat_map(|h| h.keys()).collect();
        f.debug_struct("EventSubscriptionCreate")
            .field("destination", &self.destination)
            .field("context", &self.context)
            .field("protocol", &self.protocol)
            .field("http_headers", &names)
            .finish()
    }
}

/// A subscription as the BMC reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct EventSubscription {
    /// The BMC's id of the subscription.
    pub id: String,
    /// Where the BMC posts its events.
    pub destination: Option<String>,
    /// The string it sends back with every event.
    pub context: Option<String>,
    /// `Redfish`.
    pub protocol: Option<String>,
    /// The kinds of event it posts (`Alert`).
    pub event_types: Vec<String>,
}
