//! A node's virtual media, attached and detached through Ironic (API 1.89; read 1.93).
//!
//! Attaching and detaching are asynchronous in Ironic: the request takes the node's lock and
//! returns at once (`204`), the conductor downloads the image, publishes it and inserts it
//! through the BMC; a failure lands in the node's `last_error` ("Could not attach device …").

use reqwest::Method;
use serde::Serialize;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{VirtualMedia, VirtualMediaDevice};

impl IronicClient {
    /// Attaches the image at `image_url` (http or https) as `device`
    /// (`POST /v1/nodes/{id}/vmedia`): Ironic downloads it and serves it to the BMC from its
    /// own web server.
    pub async fn attach_virtual_media(&self, ident: &str, device: VirtualMediaDevice, image_url: &str) -> Result<()> {
        #[derive(Serialize)]
        struct Attach<'a> {
            device_type: &'a str,
            image_url: &'a str,
        }
        let body = Attach { device_type: device.as_str(), image_url };
        let request = Request::new(Operation::AttachVirtualMedia, Method::POST, &["nodes", ident, "vmedia"])
            .once_if_reset()
            .json(&body)?;
        self.send_unit(request).await
    }

    /// Ejects what `device` holds (`DELETE /v1/nodes/{id}/vmedia?device_types=…`).
    pub async fn detach_virtual_media(&self, ident: &str, device: VirtualMediaDevice) -> Result<()> {
        let request = Request::new(Operation::DetachVirtualMedia, Method::DELETE, &["nodes", ident, "vmedia"])
            .query([("device_types", device.as_str().to_string())]);
        self.send_unit(request).await
    }

    /// The node's virtual CDs and DVDs as its BMC reports them (`GET /v1/nodes/{id}/vmedia`,
    /// API 1.93): a synchronous call to the BMC, refused while the node is locked.
    pub async fn list_virtual_media(&self, ident: &str) -> Result<Vec<VirtualMedia>> {
        self.send_json(Request::new(Operation::ListVirtualMedia, Method::GET, &["nodes", ident, "vmedia"])).await
    }
}
