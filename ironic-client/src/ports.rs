//! Port calls.

use reqwest::Method;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{Port, PortCreate};

impl IronicClient {
    /// Creates a port. A MAC address already registered is a
    /// [`crate::Error::Conflict`], unless the create was sent again after its connection
    /// broke and the port with that address is on this node: the first attempt made it.
    pub async fn create_port(&self, port: &PortCreate) -> Result<Port> {
        let request = Request::new(Operation::CreatePort, Method::POST, &["ports"]).json(port)?;
        let sent = self.send_tracked(request).await;
        match sent.result {
            Err(err @ crate::Error::Conflict(_)) if sent.resent_after_reset => {
                match self.find_port_by_address(&port.address).await? {
                    Some(existing) if existing.node_uuid.as_deref() == Some(port.node_uuid.as_str()) => Ok(existing),
                    _ => Err(err),
                }
            }
            result => result?.json(),
        }
    }

    /// Every port of a node (by UUID or name).
    pub async fn list_ports(&self, node: &str) -> Result<Vec<Port>> {
        let params = vec![("node", node.to_owned()), ("detail", "True".to_owned())];
        self.fetch_all(Operation::ListPorts, "ports", params).await
    }

    /// The port with MAC `address`, on any node, if there is one.
    pub async fn find_port_by_address(&self, address: &str) -> Result<Option<Port>> {
        let params = vec![("address", address.to_owned()), ("detail", "True".to_owned())];
        let (ports, _) = self.fetch_page::<Port>(Operation::ListPorts, "ports", params).await?;
        Ok(ports.into_iter().next())
    }

    /// Deletes a port by UUID.
    pub async fn delete_port(&self, uuid: &str) -> Result<()> {
        self.send_unit(Request::new(Operation::DeletePort, Method::DELETE, &["ports", uuid])).await
    }
}
