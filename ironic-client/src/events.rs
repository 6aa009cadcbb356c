//! Redfish event subscriptions of a node's BMC, through Ironic's redfish vendor passthru
//! (`create_subscription`, `delete_subscription`, `get_subscription`, `get_all_subscriptions`):
//! synchronous calls to the BMC.

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{EventSubscription, EventSubscriptionCreate};

fn passthru(op: Operation, method: Method, ident: &str, name: &str) -> Request {
    Request::new(op, method, &["nodes", ident, "vendor_passthru"]).query([("method", name.to_string())])
}

impl IronicClient {
    /// Creates a subscription on the node's BMC; answers it with the BMC's id. Not sent again
    /// after a connection reset: a second send would make a second subscription.
    pub async fn create_event_subscription(
        &self,
        ident: &str,
        subscription: &EventSubscriptionCreate,
    ) -> Result<EventSubscription> {
        let request = passthru(Operation::CreateEventSubscription, Method::POST, ident, "create_subscription")
            .once_if_reset()
            .json(subscription)?;
        self.send_json(request).await
    }

    /// Deletes the subscription `id` from the node's BMC.
    pub async fn delete_event_subscription(&self, ident: &str, id: &str) -> Result<()> {
        let request = passthru(Operation::DeleteEventSubscription, Method::DELETE, ident, "delete_subscription")
            .json(&json!({ "id": id }))?;
        self.send_unit(request).await
    }

    /// The subscription `id` of the node's BMC.
    pub async fn event_subscription(&self, ident: &str, id: &str) -> Result<EventSubscription> {
        let request = passthru(Operation::GetEventSubscription, Method::GET, ident, "get_subscription")
            .json(&json!({ "id": id }))?;
        self.send_json(request).await
    }

    /// The ids of the node's BMC's subscriptions (the last segment of each member's path).
    pub async fn event_subscription_ids(&self, ident: &str) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Member {
            #[serde(rename = "@odata.id")]
            path: String,
        }
        #[derive(Deserialize)]
        struct Collection {
            #[serde(rename = "Members", default)]
            members: Vec<Member>,
        }
        let request = passthru(Operation::ListEventSubscriptions, Method::GET, ident, "get_all_subscriptions");
        let collection: Collection = self.send_json(request).await?;
        Ok(collection
            .members
            .into_iter()
            .filter_map(|m| m.path.trim_end_matches('/').rsplit('/').next().map(str::to_string))
            .collect())
    }
}
