//! A node's BIOS settings and firmware components, as Ironic cached them.

use reqwest::Method;
use serde::Deserialize;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{BiosSetting, FirmwareComponent};

impl IronicClient {
    /// A node's BIOS settings with their registry (`GET /v1/nodes/{id}/bios?detail=True`):
    /// empty until Ironic has cached them (when the node is managed, and after cleaning or
    /// servicing), and for drivers without a BIOS interface.
    pub async fn list_bios_settings(&self, ident: &str) -> Result<Vec<BiosSetting>> {
        #[derive(Deserialize)]
        struct Settings {
            bios: Vec<BiosSetting>,
        }
        let request = Request::new(Operation::ListBiosSettings, Method::GET, &["nodes", ident, "bios"])
            .query([("detail", "True".to_string())]);
        let settings: Settings = self.send_json(request).await?;
        Ok(settings.bios)
    }

    /// A node's firmware components (`GET /v1/nodes/{id}/firmware`): empty until Ironic has
    /// cached them (when the node is managed, at inspection, around cleaning and servicing,
    /// after a firmware update), and for drivers without a firmware interface.
    pub async fn list_firmware_components(&self, ident: &str) -> Result<Vec<FirmwareComponent>> {
        #[derive(Deserialize)]
        struct Components {
            firmware: Vec<FirmwareComponent>,
        }
        let request = Request::new(Operation::ListFirmwareComponents, Method::GET, &["nodes", ident, "firmware"]);
        let components: Components = self.send_json(request).await?;
        Ok(components.firmware)
    }
}
