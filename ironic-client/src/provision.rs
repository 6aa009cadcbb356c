//! Provisioning transitions (`PUT /v1/nodes/{ident}/states/provision`).
//!
//! Each call returns once Ironic accepted the transition (202); use
//! [`IronicClient::wait_for_provision_state`] to wait for its outcome.

use reqwest::Method;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::redact::Secret;
use crate::transport::Request;
use crate::types::{DeployRequest, ProvisionTarget, Step};
use crate::version::ApiVersion;

impl IronicClient {
    /// Starts a provisioning transition.
    pub async fn set_provision_state(&self, ident: &str, target: &ProvisionTarget) -> Result<()> {
        if matches!(target, ProvisionTarget::Service { disable_ramdisk: true, .. }) {
            self.require("servicing without a ramdisk", ApiVersion::SERVICE_DISABLE_RAMDISK)?;
        }
        let request = Request::new(Operation::SetProvisionState, Method::PUT, &["nodes", ident, "states", "provision"])
            .json(&target.body())?;
        self.send_unit(request).await
    }

    /// `manage`: enroll → verifying → manageable.
    pub async fn manage(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Manage).await
    }

    /// `inspect`: manageable → inspecting → manageable.
    pub async fn inspect(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Inspect).await
    }

    /// `provide`: manageable → (cleaning) → available.
    pub async fn provide(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Provide).await
    }

    /// `active`: available → deploying → active.
    pub async fn deploy(&self, ident: &str, request: DeployRequest) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Deploy(request)).await
    }

    /// `deleted`: active → deleting → (cleaning) → available.
    pub async fn undeploy(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Undeploy).await
    }

    /// `rebuild`: active → deploying → active. Ironic 39 answers 500 unless
    /// `instance_info/image_source` is set.
    pub async fn rebuild(&self, ident: &str, request: DeployRequest) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Rebuild(request)).await
    }

    /// `clean` with `steps`: manageable → cleaning → manageable.
    pub async fn clean(&self, ident: &str, steps: Vec<Step>) -> Result<()> {
        let target = ProvisionTarget::Clean { steps, disable_ramdisk: false };
        self.set_provision_state(ident, &target).await
    }

    /// `adopt`: manageable → adopting → active.
    pub async fn adopt(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Adopt).await
    }

    /// `abort` the current waiting operation.
    pub async fn abort(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Abort).await
    }

    /// `service` with `steps`: active → servicing → active.
    pub async fn service(&self, ident: &str, steps: Vec<Step>) -> Result<()> {
        let target = ProvisionTarget::Service { steps, disable_ramdisk: false };
        self.set_provision_state(ident, &target).await
    }

    /// `rescue` with the rescue user's `password`: active → rescue.
    pub async fn rescue(&self, ident: &str, password: Secret<String>) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Rescue { password }).await
    }

    /// `unrescue`: rescue → active.
    pub async fn unrescue(&self, ident: &str) -> Result<()> {
        self.set_provision_state(ident, &ProvisionTarget::Unrescue).await
    }
}
