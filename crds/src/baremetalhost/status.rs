//! `BareMetalHost.status`, as baremetal-operator reports it.

use super::hardware::HardwareDetails;
use super::spec::{BootMode, CustomDeploy, FirmwareConfig, Image, RaidConfig, RootDeviceHints};
use k8s_openapi::api::core::v1::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state of a host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct BareMetalHostStatus {
    /// Manageable, Provisioned, Ready, AvailableForProvisioning, Progressing and Healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
    /// Errors since the last successful operation.
    #[schemars(extend("default" = 0))]
    pub error_count: i32,
    /// Last error reported by the provisioning subsystem; empty when none.
    pub error_message: String,
    /// Class of the last error, when operationalStatus is error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<ErrorType>,
    /// Last credentials validated as working.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good_credentials: Option<CredentialsStatus>,
    /// Deprecated: inspection data; see the HardwareData of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<HardwareDetails>,
    /// Deprecated: name of the matching hardware profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_profile: Option<String>,
    /// Image of the last provisioning attempt, used with provisioningFailCount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_image: Option<Image>,
    /// When this status was last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,
    /// Start and end of the last register, inspect, provision and deprovision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_history: Option<OperationHistory>,
    /// "" (unknown), OK, discovered, error, delayed, detached or servicing.
    pub operational_status: OperationalStatus,
    /// Detected power state; may lag while an operation runs.
    pub powered_on: bool,
    /// What the provisioner is doing with the host.
    pub provisioning: ProvisionStatus,
    /// Consecutive failed provisioning attempts of lastAttemptedImage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_fail_count: Option<i32>,
    /// Last credentials sent to the provisioner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tried_credentials: Option<CredentialsStatus>,
}

/// The provisioner's view of the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionStatus {
    /// Boot mode used to provision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_mode: Option<BootMode>,
    /// Custom deploy procedure applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_deploy: Option<CustomDeploy>,
    /// Firmware settings applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<FirmwareConfig>,
    /// Ironic node UUID.
    #[serde(rename = "ID")]
    pub id: String,
    /// Image last provisioned successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// RAID configuration applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid: Option<RaidConfig>,
    /// Root device hints used to provision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_device_hints: Option<RootDeviceHints>,
    /// Provisioning state (see ProvisioningState).
    pub state: ProvisioningState,
}

/// A Secret of BMC credentials and the resourceVersion that was used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsStatus {
    /// The Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<SecretReference>,
    /// Its resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_version: Option<String>,
}

/// Timing of the last run of each operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationHistory {
    /// Deprovisioning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprovision: Option<OperationMetric>,
    /// Inspection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspect: Option<OperationMetric>,
    /// Provisioning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision: Option<OperationMetric>,
    /// Registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<OperationMetric>,
}

/// Start and end of an operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationMetric {
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Time>,
    /// When it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Time>,
}

/// Provisioning states, with baremetal-operator's exact strings. Values: "" (unknown),
/// unmanaged, registering, "match profile" (legacy), preparing, ready (deprecated alias of
/// available), available, provisioning, provisioned, "externally provisioned",
/// deprovisioning, inspecting, "powering off before delete", deleting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ProvisioningState {
    /// Not yet known.
    #[default]
    #[serde(rename = "")]
    None,
    /// Not enough information to register (no BMC details).
    #[serde(rename = "unmanaged")]
    Unmanaged,
    /// Being registered with Ironic.
    #[serde(rename = "registering")]
    Registering,
    /// Legacy state, no longer used.
    #[serde(rename = "match profile")]
    MatchProfile,
    /// Cleaning and applying RAID/firmware settings.
    #[serde(rename = "preparing")]
    Preparing,
    /// Deprecated name of available.
    #[serde(rename = "ready")]
    Ready,
    /// Ready to be provisioned.
    #[serde(rename = "available")]
    Available,
    /// An image is being written.
    #[serde(rename = "provisioning")]
    Provisioning,
    /// An image was written and the host runs it.
    #[serde(rename = "provisioned")]
    Provisioned,
    /// Provisioned by something else; only power is managed.
    #[serde(rename = "externally provisioned")]
    ExternallyProvisioned,
    /// The image is being removed.
    #[serde(rename = "deprovisioning")]
    Deprovisioning,
    /// The ramdisk is collecting hardware details.
    #[serde(rename = "inspecting")]
    Inspecting,
    /// Powering off before the host is deleted.
    #[serde(rename = "powering off before delete")]
    PoweringOffBeforeDelete,
    /// Being removed from Ironic before deletion.
    #[serde(rename = "deleting")]
    Deleting,
}

impl ProvisioningState {
    /// The string baremetal-operator uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Unmanaged => "unmanaged",
            Self::Registering => "registering",
            Self::MatchProfile => "match profile",
            Self::Preparing => "preparing",
            Self::Ready => "ready",
            Self::Available => "available",
            Self::Provisioning => "provisioning",
            Self::Provisioned => "provisioned",
            Self::ExternallyProvisioned => "externally provisioned",
            Self::Deprovisioning => "deprovisioning",
            Self::Inspecting => "inspecting",
            Self::PoweringOffBeforeDelete => "powering off before delete",
            Self::Deleting => "deleting",
        }
    }
}

/// Operational status. Values: "" (unknown), OK, discovered, error, delayed, detached,
/// servicing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum OperationalStatus {
    /// Not yet known.
    #[default]
    #[serde(rename = "")]
    Unknown,
    /// Configured correctly and manageable.
    #[serde(rename = "OK")]
    Ok,
    /// Partially configured, e.g. BMC address without credentials.
    #[serde(rename = "discovered")]
    Discovered,
    /// An error occurred; see errorType and errorMessage.
    #[serde(rename = "error")]
    Error,
    /// Waiting for capacity: too many hosts are provisioning at once.
    #[serde(rename = "delayed")]
    Delayed,
    /// Detached from the provisioner by the detached annotation.
    #[serde(rename = "detached")]
    Detached,
    /// Undergoing servicing (firmware updates or settings on a provisioned host).
    #[serde(rename = "servicing")]
    Servicing,
}

/// Error classes, with baremetal-operator's exact strings. Values: "provisioned registration
/// error", "registration error", "inspection error", "preparation error", "provisioning
/// error", "power management error", "servicing error", "detach error".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum ErrorType {
    /// A provisioned host could not be registered again.
    #[serde(rename = "provisioned registration error")]
    ProvisionedRegistration,
    /// The BMC could not be reached or refused the credentials.
    #[serde(rename = "registration error")]
    Registration,
    /// Inspection failed.
    #[serde(rename = "inspection error")]
    Inspection,
    /// Cleaning or RAID/firmware configuration failed.
    #[serde(rename = "preparation error")]
    Preparation,
    /// Provisioning or deprovisioning failed.
    #[serde(rename = "provisioning error")]
    Provisioning,
    /// The power state could not be changed.
    #[serde(rename = "power management error")]
    PowerManagement,
    /// Servicing steps failed.
    #[serde(rename = "servicing error")]
    Servicing,
    /// The host could not be detached from the provisioner.
    #[serde(rename = "detach error")]
    Detach,
}
