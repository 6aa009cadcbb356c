//! `NodeSet` (`ferrometal.io/v1alpha1`): a group of hosts keyed by hostname, with provisioning
//! settings and day-2 configuration that is applied in place. See design/nodeset.md for the
//! classification of every field.

mod cel;
pub mod config;
pub mod firmware;
pub mod hash;
pub mod pools;
pub mod selector;
pub mod sources;
pub mod status;
pub mod template;
mod validation;

pub use cel::{
    HOST_SELECTOR_LOCKED_MESSAGE, PRE_PROVISIONED_IMMUTABLE_MESSAGE, SELECTION_LOCKED_MESSAGE,
    TEMPLATE_PRESENCE_MESSAGE,
};
pub use config::{Dns, NetworkConfig, NodeSection, NodeTemplate, Route, Variables};
pub use firmware::{FirmwareSettings, firmware_hash, host_firmware_settings, host_firmware_updates};
pub use hash::{
    EffectiveHostConfig, effective_host_config, effective_host_config_with, host_config_hash, host_config_hash_with,
    nodeset_config_hash, nodeset_config_hash_with, provisioning_hash,
};
pub use pools::HostPools;
pub use sources::{SourceData, SourceKind, SourceRef, Sources, VariablesFromSource};
pub use status::{ApprovedService, BmhRef, CompletedService, HostStatus, NodeSetStatus, RolloutPhase, RolloutStatus};
pub use template::{BaremetalSetTemplate, HardwareReqs, ProvisioningNetwork};
pub use validation::{validate_host_pool, validate_nodeset};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Label put on every claimed BareMetalHost: the NodeSet's name.
pub const NODESET_LABEL: &str = "ferrometal.io/nodeset";
/// Label put on every claimed BareMetalHost: the hostname (key of spec.nodes).
pub const HOSTNAME_LABEL: &str = "ferrometal.io/hostname";
/// Finalizer that applies the deletion policy before a NodeSet goes away.
pub const FINALIZER: &str = "nodeset.ferrometal.io";
/// Label on every service Job (and its inventory Secret): the NodeSetService's name.
pub const SERVICE_LABEL: &str = "ferrometal.io/service";
/// Annotation on a claimed BareMetalHost: the provisioning hash it was provisioned with,
/// written together with its image, so that what a machine runs is recorded on the machine.
pub const PROVISIONED_HASH_ANNOTATION: &str = "ferrometal.io/provisioned-hash";
/// Annotation on a claimed BareMetalHost: the last reprovisionToken acted on, written together
/// with the write that clears its image.
pub const REPROVISION_TOKEN_ANNOTATION: &str = "ferrometal.io/reprovision-token";
/// Annotation on a claimed BareMetalHost: a short digest of every reprovisionToken acted on
/// (the newest 32, comma-separated), so that a token value reprovisions a machine at most once,
/// ever: a GitOps self-heal or an undo that brings an older value back does nothing.
pub const REPROVISION_TOKENS_USED_ANNOTATION: &str = "ferrometal.io/reprovision-tokens-used";
/// Annotation on a claimed BareMetalHost: the reprovisionToken its host had when the NodeSet
/// gave it its image, written with the image. Status is written after the machine, so when that
/// status write is lost the machine still says the token was answered, and its new
/// installation is not taken for a reprovision still to do.
pub const PROVISIONED_TOKEN_ANNOTATION: &str = "ferrometal.io/provisioned-token";
/// Annotation on a claimed BareMetalHost: the services completed on the machine since it was
/// provisioned (JSON, as `status.hosts.<h>.servicesCompleted`). It survives the NodeSet, so a
/// recreated NodeSet adopts the machine without rerunning what already ran.
pub const SERVICES_COMPLETED_ANNOTATION: &str = "ferrometal.io/services-completed";

/// Annotation on a claimed BareMetalHost: the hash of the BIOS settings (firmwareSettings) the
/// NodeSet last rebooted it for, written with the reboot annotation in one request, so a crash
/// neither loses that reboot nor asks for it twice.
pub const FIRMWARE_REBOOT_ANNOTATION: &str = "ferrometal.io/firmware-reboot";

/// Desired state of a group of hosts.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "ferrometal.io",
    version = "v1alpha1",
    kind = "NodeSet",
    namespaced,
    status = "NodeSetStatus",
    shortname = "nset",
    derive = "PartialEq",
    derive = "Default",
    doc = "A group of hosts keyed by hostname: how they are chosen and provisioned, and the day-2 configuration applied to them in place.",
    validation = cel::selection_lock(),
    validation = cel::host_selector_lock(),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#,
        description = "Every host is provisioned and configured"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].reason"#,
        description = "Why the NodeSet is or is not Ready"
    ),
    printcolumn(
        name = "Hosts",
        type_ = "string",
        json_path = ".status.provisionedHosts",
        description = "Hosts provisioned, of the hosts in spec.nodes"
    ),
    printcolumn(
        name = "Configured",
        type_ = "string",
        json_path = ".status.configuredHosts",
        description = "Hosts at the configuration approved for them, of the hosts in spec.nodes"
    ),
    printcolumn(
        name = "Rollout",
        type_ = "string",
        json_path = ".status.rollout.phase",
        description = "Where the rollout of the configuration stands"
    ),
    printcolumn(
        name = "Outdated",
        type_ = "integer",
        json_path = ".status.outdatedHosts",
        description = "Hosts provisioned with inputs since changed (each reprovisioned only for its own new reprovisionToken)",
        priority = 1
    ),
    printcolumn(
        name = "Pending",
        type_ = "integer",
        json_path = ".status.pendingHosts",
        description = "Hosts whose desired configuration waits for a new spec.rollout.token (Manual)",
        priority = 1
    ),
    printcolumn(
        name = "Strategy",
        type_ = "string",
        json_path = ".spec.rollout.strategy",
        description = "Rollout strategy",
        priority = 1
    ),
    printcolumn(
        name = "Config",
        type_ = "string",
        json_path = ".status.configHash",
        description = "Desired configuration hash",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = cel::pre_provisioned_immutable())]
#[x_kube(validation = cel::template_presence())]
pub struct NodeSetSpec {
    /// How hosts are chosen and provisioned. Required unless preProvisioned, forbidden when it
    /// is. Host selection fields lock once a host is claimed; provisioning fields apply only
    /// when a host is provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baremetal_set_template: Option<BaremetalSetTemplate>,
    /// Applied in place: what happens to a host's BareMetalHost when the host is removed from
    /// nodes or the NodeSet is deleted. Retain (default) leaves the machine running and
    /// claimed; Detach also detaches it from Ironic; Deprovision wipes and powers it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Retain"))]
    pub deletion_policy: Option<DeletionPolicy>,
    /// Applied in place: configuration shared by every host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_template: Option<NodeTemplate>,
    /// The hosts, keyed by hostname (a DNS-1123 subdomain of at most 63 characters). Adding a
    /// key claims and provisions a host; removing one releases it per deletionPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 1000))]
    pub nodes: Option<BTreeMap<String, NodeSection>>,
    /// Immutable: the machines already run an OS and are not BareMetalHosts; only services
    /// run on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_provisioned: Option<bool>,
    /// Applied in place: how configuration changes reach provisioned hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    /// Applied in place: NodeSetService names run on every host, in this order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<String>>,
}

impl NodeSet {
    /// The namespace of the NodeSet's BareMetalHosts: `bmhNamespace`, else its own.
    pub fn bmh_namespace(&self) -> String {
        self.spec
            .baremetal_set_template
            .as_ref()
            .and_then(|t| t.bmh_namespace.clone())
            .filter(|n| !n.is_empty())
            .or_else(|| self.metadata.namespace.clone())
            .unwrap_or_default()
    }
}

impl NodeSetSpec {
    /// True for a NodeSet of already-installed machines.
    pub fn pre_provisioned(&self) -> bool {
        self.pre_provisioned.unwrap_or(false)
    }

    /// The deletion policy, defaulted.
    pub fn deletion_policy(&self) -> DeletionPolicy {
        self.deletion_policy.unwrap_or_default()
    }
}

/// How configuration changes roll out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// Hosts configured at the same time: a count or a percentage of the hosts ("25%").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1))]
    pub max_unavailable: Option<IntOrString>,
    /// Automatic (default): changes roll out as soon as they are made. Manual: changes wait
    /// until token changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Automatic"))]
    pub strategy: Option<RolloutStrategy>,
    /// Request (Manual strategy): changing it to a new value starts a rollout of the current
    /// configuration. The controller records it in status.rollout.acknowledgedToken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Rollout strategies. Values: Automatic, Manual.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum RolloutStrategy {
    /// Roll out every change at once, maxUnavailable hosts at a time.
    #[default]
    Automatic,
    /// Roll out when spec.rollout.token changes.
    Manual,
}

/// What happens to a host's BareMetalHost when it leaves the NodeSet. Values: Retain, Detach,
/// Deprovision, from the least to the most destructive (the order `Ord` follows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum DeletionPolicy {
    /// Leave the BareMetalHost as it is, still claimed; the machine keeps running.
    #[default]
    Retain,
    /// As Retain, and detach it from Ironic.
    Detach,
    /// Deprovision it: clear its image and data and power it off.
    Deprovision,
}
