//! The Ironic calls behind each [`Act`]. Every function makes the calls of
//! one step and returns; the outcome is observed by the next bulk poll.
//!
//! Registration looks the node up by name before creating it, so a crash
//! between the create and the status write never leaves a duplicate node.

use crate::host::config::Config;
use crate::host::configdrive::{self, HostIdentity};
use crate::host::driver::{DeployRamdisk, DriverSpec, driver_info, driver_spec, inspect_interface};
use crate::host::hardware;
use crate::host::instance::{DeployInput, automated_clean_patch, boot_mode_capabilities, deploy_settings, patch_for};
use crate::host::machine::Act;
use crate::host::secrets::{self, Credentials, HostDataError};
use crate::host::wake::HostKey;
use crds::baremetalhost::bmc::{BmcAddress, BmcScheme, parse_bmc_address};
use crds::baremetalhost::{
    AutomatedCleaningMode, BareMetalHost, BareMetalHostStatus, Image, InspectionMode, OperationMetric,
    ProvisioningState,
};
use crds::hardwaredata::{HardwareData, HardwareDataSpec};
use ironic_client::{
    ConfigDrive, DeployRequest, DeployStep, IronicClient, Node, NodeCreate, PatchOperation, PortCreate, PowerTarget,
    ProvisionState, Step,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use serde_json::{Value, json};
use std::time::Duration;

/// How long the OS gets to shut down on a soft power off or reboot.
const SOFT_POWER_TIMEOUT: Duration = Duration::from_secs(180);

/// What a step achieved.
#[derive(Debug)]
pub enum Done {
    /// Ironic accepted a request; the poller will see what came of it.
    Called,
    /// Nothing had to be asked of Ironic after all.
    Nothing,
    /// The step completed the state (inspection data collected).
    Transition(ProvisioningState),
    /// The node is gone: the host may go.
    Release,
}

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    /// Something about the host itself: recorded in its status.
    #[error("{0}")]
    Host(String),
    /// Ironic refused or failed.
    #[error(transparent)]
    Ironic(#[from] ironic_client::Error),
    /// Kubernetes refused a write.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

impl From<HostDataError> for ActError {
    fn from(err: HostDataError) -> Self {
        match err {
            HostDataError::Read(_, source) => ActError::Kube(source),
            other => ActError::Host(other.to_string()),
        }
    }
}

/// What a step works with.
pub struct ActInput<'a> {
    pub kube: &'a kube::Client,
    pub client: &'a IronicClient,
    pub config: &'a Config,
    pub host: &'a BareMetalHost,
    pub key: &'a HostKey,
    pub credentials: &'a Credentials,
    /// The node's UUID, when the poll saw it.
    pub node: Option<&'a str>,
    pub now: Timestamp,
}

impl ActInput<'_> {
    fn node_uuid(&self) -> Result<&str, ActError> {
        self.node.ok_or_else(|| ActError::Host("the Ironic node is not known yet".into()))
    }

    fn bmc(&self) -> Result<(BmcAddress, DriverSpec), ActError> {
        let bmc = self
            .host
            .spec
            .bmc
            .as_ref()
            .filter(|b| !b.address.trim().is_empty())
            .ok_or_else(|| ActError::Host("the host has no BMC address".into()))?;
        let address = parse_bmc_address(&bmc.address).map_err(|e| ActError::Host(e.to_string()))?;
        let spec = driver_spec(address.scheme);
        Ok((address, spec))
    }

    fn fast_inspection(&self) -> bool {
        self.host.spec.inspection_mode == Some(InspectionMode::Fast)
    }

    fn boot_mac(&self) -> Option<&str> {
        self.host.spec.boot_mac_address.as_deref().map(str::trim).filter(|m| !m.is_empty())
    }

    fn automated_clean(&self) -> bool {
        self.host.spec.automated_cleaning_mode != Some(AutomatedCleaningMode::Disabled)
    }

    fn deploy_ramdisk(&self, spec: &DriverSpec) -> DeployRamdisk {
        if !spec.uses_deploy_ramdisk {
            return DeployRamdisk::default();
        }
        DeployRamdisk {
            kernel: self.config.deploy_kernel_url.clone(),
            ramdisk: self.config.deploy_ramdisk_url.clone(),
            iso: self.config.deploy_iso_url.clone(),
        }
    }

    /// `driver_info` with the current credentials.
    fn driver_info(&self, address: &BmcAddress, spec: &DriverSpec) -> Result<ironic_client::DriverInfo, ActError> {
        if address.scheme != BmcScheme::Fake {
            if let Some(problem) = &self.credentials.problem {
                return Err(ActError::Host(problem.clone()));
            }
            if self.credentials.value.is_none() {
                return Err(ActError::Host("the host names no BMC credentials Secret".into()));
            }
        }
        let insecure = self.host.spec.bmc.as_ref().and_then(|b| b.disable_certificate_verification).unwrap_or(false);
        Ok(driver_info(address, self.credentials.value.as_ref(), insecure, &self.deploy_ramdisk(spec)))
    }

    fn custom_deploy(&self) -> Option<&str> {
        self.host.spec.custom_deploy.as_ref().map(|c| c.method.as_str()).filter(|m| !m.is_empty())
    }
}

/// Runs one step. `status` receives what the step learned (node ID,
/// credentials tried, inspection data, operation times).
pub async fn run(input: &ActInput<'_>, act: Act, status: &mut BareMetalHostStatus) -> Result<Done, ActError> {
    match act {
        Act::Register => register(input, status).await,
        Act::UpdateCredentials => update_credentials(input, status).await,
        Act::Manage => {
            input.client.manage(input.node_uuid()?).await?;
            Ok(Done::Called)
        }
        Act::Inspect => inspect(input, status).await,
        Act::FinishInspection => finish_inspection(input, status).await,
        Act::Provide => provide(input).await,
        Act::Deploy => deploy(input).await,
        Act::Adopt => adopt(input, status).await,
        Act::Undeploy => undeploy(input).await,
        Act::Power(target) => {
            let timeout =
                matches!(target, PowerTarget::SoftOff | PowerTarget::SoftReboot).then_some(SOFT_POWER_TIMEOUT);
            input.client.set_power_state(input.node_uuid()?, target, timeout).await?;
            Ok(Done::Called)
        }
        Act::DeleteNode => {
            delete_node(input.client, input.key).await?;
            Ok(Done::Release)
        }
    }
}

/// The patch operations setting every `driver_info` key (one operation per
/// key, so that the debug output of a patch hides the secret ones).
fn driver_info_ops(info: &ironic_client::DriverInfo) -> Result<Vec<PatchOperation>, ActError> {
    let Value::Object(map) =
        serde_json::to_value(info).map_err(|e| ActError::Host(format!("cannot encode driver_info: {e}")))?
    else {
        return Ok(Vec::new());
    };
    Ok(map.into_iter().map(|(k, v)| PatchOperation::add(format!("/driver_info/{k}"), v)).collect())
}

fn record_credentials(input: &ActInput<'_>, status: &mut BareMetalHostStatus) {
    if let Some(tried) = &input.credentials.status {
        status.tried_credentials = Some(tried.clone());
    }
}

fn node_create(input: &ActInput<'_>, spec: &DriverSpec, info: ironic_client::DriverInfo) -> NodeCreate {
    let mut create = NodeCreate::new(spec.driver).name(input.key.node_name()).driver_info(info);
    create.interfaces = spec.interfaces.clone();
    create.interfaces.inspect_interface = Some(inspect_interface(spec, input.fast_inspection()).to_string());
    if input.custom_deploy().is_some() {
        create.interfaces.deploy_interface = Some(spec.custom_deploy_interface.to_string());
    } else if input.host.spec.image.as_ref().is_some_and(Image::is_live_iso) {
        create.interfaces.deploy_interface = Some(spec.live_iso_deploy_interface.to_string());
    }
    let boot_mode = input.host.spec.boot_mode.unwrap_or_default();
    create.properties.insert("capabilities".into(), json!(boot_mode_capabilities(None, boot_mode)));
    if let Some(arch) = input.host.spec.architecture.as_deref().filter(|a| !a.is_empty()) {
        create.properties.insert("cpu_arch".into(), json!(arch));
    }
    if input.host.spec.disable_power_off == Some(true) {
        create.disable_power_off = Some(true);
    }
    create
}

async fn ensure_port(client: &IronicClient, node: &Node, mac: &str, created_now: bool) -> Result<(), ActError> {
    if !created_now {
        let ports = client.list_ports(&node.uuid).await?;
        if ports.iter().any(|p| p.address.eq_ignore_ascii_case(mac)) {
            return Ok(());
        }
    }
    let port = PortCreate { pxe_enabled: Some(true), ..PortCreate::new(node.uuid.clone(), mac.to_ascii_lowercase()) };
    match client.create_port(&port).await {
        Ok(_) => Ok(()),
        Err(ironic_client::Error::Conflict(_)) => match client.find_port_by_address(mac).await? {
            Some(p) if p.node_uuid.as_deref() == Some(node.uuid.as_str()) => Ok(()),
            Some(p) => Err(ActError::Host(format!(
                "MAC address {mac} is already registered in Ironic for node {}",
                p.node_uuid.unwrap_or_default()
            ))),
            None => Err(ActError::Host(format!("Ironic refused a port for MAC address {mac}"))),
        },
        Err(e) => Err(e.into()),
    }
}

async fn register(input: &ActInput<'_>, status: &mut BareMetalHostStatus) -> Result<Done, ActError> {
    let (address, spec) = input.bmc()?;
    if spec.needs_mac && input.boot_mac().is_none() {
        return Err(ActError::Host(format!("BMC driver {} requires a bootMACAddress", address.scheme)));
    }
    let info = input.driver_info(&address, &spec)?;
    let name = input.key.node_name();
    let (node, created) = match input.client.find_node(&name).await? {
        Some(node) => (node, false),
        None => {
            let create = node_create(input, &spec, info.clone());
            match input.client.create_node(&create).await {
                Ok(node) => {
                    tracing::info!(node = %node.uuid, driver = spec.driver, "registered the host in Ironic");
                    (node, true)
                }
                // Someone registered it between our lookup and create: look again next time.
                Err(e @ ironic_client::Error::Conflict(_)) => return Err(ActError::Ironic(e)),
                Err(e) => return Err(e.into()),
            }
        }
    };
    status.provisioning.id = node.uuid.clone();
    if let Some(mac) = input.boot_mac() {
        ensure_port(input.client, &node, mac, created).await?;
    }
    let credentials_changed =
        status.tried_credentials.as_ref().and_then(|t| t.credentials_version.as_deref()) != input.credentials.version();
    // The BMC address may change while registering (the webhook allows it
    // then): compare what Ironic shows (secrets come back masked).
    let address_changed = info.keys().any(|k| info.get(k).is_some() && info.get(k) != node.driver_info.get(k));
    if !created && (credentials_changed || address_changed || status.tried_credentials.is_none()) {
        input.client.update_node(&node.uuid, &driver_info_ops(&info)?).await?;
    }
    record_credentials(input, status);
    if node.provision_state == Some(ProvisionState::Enroll) && node.target_provision_state.is_none() {
        input.client.manage(&node.uuid).await?;
        return Ok(Done::Called);
    }
    // The node is past enrollment already: the next poll moves the host on.
    Ok(Done::Called)
}

async fn update_credentials(input: &ActInput<'_>, status: &mut BareMetalHostStatus) -> Result<Done, ActError> {
    let (address, spec) = input.bmc()?;
    let info = input.driver_info(&address, &spec)?;
    input.client.update_node(input.node_uuid()?, &driver_info_ops(&info)?).await?;
    record_credentials(input, status);
    tracing::info!("sent the new BMC credentials to Ironic");
    Ok(Done::Called)
}

async fn inspect(input: &ActInput<'_>, status: &mut BareMetalHostStatus) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    let (_, spec) = input.bmc()?;
    let node = input.client.get_node(uuid).await?;
    let wanted = inspect_interface(&spec, input.fast_inspection());
    if node.interfaces.inspect_interface.as_deref() != Some(wanted) {
        input.client.update_node(uuid, &[PatchOperation::add("/inspect_interface", wanted)]).await?;
    }
    input.client.inspect(uuid).await?;
    let history = status.operation_history.get_or_insert_with(Default::default);
    history.inspect = Some(OperationMetric { start: Some(Time(input.now)), end: None });
    Ok(Done::Called)
}

async fn finish_inspection(input: &ActInput<'_>, status: &mut BareMetalHostStatus) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    let inventory = match input.client.get_inventory(uuid).await {
        Ok(inventory) => Some(inventory),
        // Inspectors that record no inventory (fake) leave nothing to read.
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let details = inventory.as_ref().map(|i| hardware::details(i, input.boot_mac())).unwrap_or_default();
    let namespace = input.host.namespace().unwrap_or_default();
    let mut data = HardwareData::new(&input.host.name_any(), HardwareDataSpec { hardware: Some(details.clone()) });
    data.metadata.namespace = Some(namespace.clone());
    data.metadata.owner_references = crate::apply::owner_reference(input.host).map(|r| vec![r]);
    let api: Api<HardwareData> = Api::namespaced(input.kube.clone(), &namespace);
    crate::apply::apply(&api, &data).await?;
    status.hardware = inventory.is_some().then(|| hardware::summary(&details));
    let history = status.operation_history.get_or_insert_with(Default::default);
    let inspect = history.inspect.get_or_insert_with(Default::default);
    inspect.end = Some(Time(input.now));
    Ok(Done::Transition(ProvisioningState::Preparing))
}

/// Sets automated cleaning as the host asks, when the node differs.
async fn set_automated_clean(input: &ActInput<'_>, uuid: &str) -> Result<(), ActError> {
    let node = input.client.get_node(uuid).await?;
    if let Some(op) = automated_clean_patch(node.automated_clean, input.automated_clean()) {
        input.client.update_node(uuid, &[op]).await?;
    }
    Ok(())
}

async fn provide(input: &ActInput<'_>) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    set_automated_clean(input, uuid).await?;
    input.client.provide(uuid).await?;
    Ok(Done::Called)
}

/// Brings the node's image, deploy interface, root device hints and boot
/// mode to what the host asks for (nothing is sent when it has them).
async fn apply_settings(input: &ActInput<'_>, uuid: &str, image: Option<&Image>) -> Result<(), ActError> {
    let (_, spec) = input.bmc()?;
    let uid = input.host.uid().unwrap_or_default();
    let boot_mode = input.host.spec.boot_mode.unwrap_or_default();
    let settings = deploy_settings(&DeployInput {
        image,
        custom_deploy: input.custom_deploy(),
        boot_mode,
        root_device_hints: input.host.spec.root_device_hints.as_ref(),
        host_uid: &uid,
        driver: &spec,
    });
    let node = input.client.get_node(uuid).await?;
    let ops = patch_for(&node, &settings, Some(boot_mode));
    if !ops.is_empty() {
        input.client.update_node(uuid, &ops).await?;
    }
    Ok(())
}

async fn deploy(input: &ActInput<'_>) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    let image = input.host.spec.image.as_ref();
    apply_settings(input, uuid, image).await?;
    // A live ISO boots as it is: some hardware cannot attach a second
    // virtual medium for a config drive.
    let configdrive = if image.is_some_and(Image::is_live_iso) {
        None
    } else {
        let data = secrets::host_config_data(input.kube, input.host).await?;
        let identity = HostIdentity {
            uid: input.host.uid().unwrap_or_default(),
            namespace: input.key.namespace.clone(),
            name: input.key.name.clone(),
        };
        Some(ConfigDrive::Json(configdrive::build(&identity, &data).map_err(|e| ActError::Host(e.to_string()))?))
    };
    let deploy_steps = input
        .custom_deploy()
        .map(|method| vec![DeployStep { step: Step::new("deploy", method), priority: CUSTOM_DEPLOY_PRIORITY }])
        .unwrap_or_default();
    input.client.deploy(uuid, DeployRequest { configdrive, deploy_steps }).await?;
    tracing::info!(image = image.map(|i| i.url.as_str()).unwrap_or("custom deploy"), "deployment started");
    Ok(Done::Called)
}

/// The priority baremetal-operator gives a custom deploy step.
const CUSTOM_DEPLOY_PRIORITY: u32 = 80;

async fn adopt(input: &ActInput<'_>, status: &BareMetalHostStatus) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    // Adopt what runs on the host: the image provisioned, or for an
    // externally provisioned host the one its spec names.
    let image = status.provisioning.image.as_ref().or(input.host.spec.image.as_ref());
    apply_settings(input, uuid, image).await?;
    input.client.adopt(uuid).await?;
    tracing::info!("adopting the running host");
    Ok(Done::Called)
}

async fn undeploy(input: &ActInput<'_>) -> Result<Done, ActError> {
    let uuid = input.node_uuid()?;
    set_automated_clean(input, uuid).await?;
    input.client.undeploy(uuid).await?;
    Ok(Done::Called)
}

/// Removes the node of `key` from Ironic, in maintenance when its state
/// forbids a plain delete. Nothing is deprovisioned.
pub async fn delete_node(client: &IronicClient, key: &HostKey) -> Result<Done, ActError> {
    let Some(node) = client.find_node(&key.node_name()).await? else {
        return Ok(Done::Nothing);
    };
    let deletable = matches!(
        node.provision_state,
        Some(
            ProvisionState::Enroll
                | ProvisionState::Manageable
                | ProvisionState::Available
                | ProvisionState::AdoptFailed
        )
    ) && node.target_provision_state.is_none();
    if !deletable && node.maintenance != Some(true) {
        client.set_maintenance(&node.uuid, Some("removed by ferrometal without deprovisioning")).await?;
    }
    client.delete_node(&node.uuid).await?;
    tracing::info!(node = %node.uuid, "removed the node from Ironic");
    Ok(Done::Called)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironic_client::DriverInfo;

    #[test]
    fn driver_info_is_patched_key_by_key_without_printing_secrets() {
        let info = DriverInfo::new().with("redfish_address", "http://bmc").with("redfish_password", "hunter2");
        let ops = driver_info_ops(&info).expect("ops");
        assert_eq!(ops.len(), 2);
        assert!(ops.iter().any(|o| o.path() == "/driver_info/redfish_password"));
        assert!(!format!("{ops:?}").contains("hunter2"));
        assert!(serde_json::to_string(&ops).expect("json").contains("hunter2"), "Ironic receives it");
    }
}
