//! Bulk status: every node's poller-relevant fields in as few requests as
//! Ironic allows.
//!
//! One `GET /v1/nodes?fields=…&limit=1000` returns up to 1000 nodes (Ironic's
//! default `[api]max_limit`), so watching N hosts costs ⌈N/1000⌉ requests per
//! poll instead of N. Asking only for the status fields keeps each page small
//! and keeps Ironic from serialising `driver_info`, `properties` and the rest.

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::types::{DEFAULT_PAGE_SIZE, NodeListQuery, NodeStatusSummary, STATUS_FIELDS};

impl IronicClient {
    /// The status of every node.
    pub async fn node_statuses(&self) -> Result<Vec<NodeStatusSummary>> {
        self.node_statuses_matching(&NodeListQuery::new()).await
    }

    /// The status of every node matching `filter`'s filters (its fields,
    /// limit and marker are ignored).
    pub async fn node_statuses_matching(&self, filter: &NodeListQuery) -> Result<Vec<NodeStatusSummary>> {
        let query = NodeListQuery {
            fields: STATUS_FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            limit: Some(DEFAULT_PAGE_SIZE),
            marker: None,
            ..filter.clone()
        };
        self.fetch_all(Operation::NodeStatus, "nodes", query.params()).await
    }
}
