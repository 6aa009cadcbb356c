//! Power changes (`PUT /v1/nodes/{ident}/states/power`).

use std::time::Duration;

use reqwest::Method;
use serde::Serialize;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::PowerTarget;

#[derive(Serialize)]
struct PowerBody {
    target: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<u64>,
}

impl IronicClient {
    /// Starts a power change. `timeout` bounds the change on the conductor
    /// side (whole seconds, at least 1); for the soft targets it is how long
    /// the OS gets before Ironic gives up, `[conductor]soft_power_off_timeout`
    /// when `None`. Wait for the outcome with
    /// [`IronicClient::wait_for_power_state`].
    pub async fn set_power_state(&self, ident: &str, target: PowerTarget, timeout: Option<Duration>) -> Result<()> {
        let body = PowerBody { target: target.as_str(), timeout: timeout.map(|t| t.as_secs().max(1)) };
        let request =
            Request::new(Operation::SetPowerState, Method::PUT, &["nodes", ident, "states", "power"]).json(&body)?;
        self.send_unit(request).await
    }
}
