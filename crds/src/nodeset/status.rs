//! `NodeSet.status`: claims, hashes, acknowledged tokens and progress. The only place the
//! controller records anything.

use crate::baremetalhost::ProvisioningState;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Condition types of a NodeSet besides Ready, Progressing and Degraded.
pub mod conditions {
    /// Every host has a provisioned BareMetalHost.
    pub const PROVISIONED: &str = "Provisioned";
    /// Every host runs the configuration approved for it: its desired one, unless that waits
    /// for a new Manual rollout token (reason RolloutPending).
    pub const CONFIGURED: &str = "Configured";
    /// Reason: a Manual rollout waits for spec.rollout.token.
    pub const ROLLOUT_PENDING: &str = "RolloutPending";
    /// Some hosts run what they were provisioned with before the provisioning inputs changed.
    pub const OUTDATED: &str = "Outdated";
}

/// Observed state of a NodeSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSetStatus {
    /// Number of hosts with a claimed BareMetalHost. While it is above zero, the host
    /// selection fields of baremetalSetTemplate are locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_hosts: Option<i32>,
    /// Ready, Progressing, Degraded, Provisioned and Configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
    /// Desired configuration: hash of every host's config hash, the services list and the spec
    /// hash of every listed service. A rollout acknowledges this hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The deletionPolicy in force when this status was written. A host removed from
    /// spec.nodes (or a deleted NodeSet's) is released under the less destructive of this and
    /// the policy in force then: switching to Deprovision and removing hosts in one edit
    /// deprovisions nothing; the switch must be seen first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<super::DeletionPolicy>,
    /// Per host, keyed like spec.nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 1000))]
    pub hosts: Option<BTreeMap<String, HostStatus>>,
    /// Generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Hosts whose machine runs provisioning inputs (image, first-boot data) that have changed
    /// since; each keeps them until its own reprovisionToken changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outdated_hosts: Option<i32>,
    /// Hosts at the configuration approved for them, of the hosts in spec.nodes, as "n/m":
    /// their desired configuration, or, while it waits for a new Manual rollout token (see
    /// pendingHosts), everything the last approval gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_hosts: Option<String>,
    /// Hosts whose desired configuration waits for a new spec.rollout.token (Manual strategy):
    /// they keep the configuration approved for them until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_hosts: Option<i32>,
    /// spec.preProvisioned when this status was written: once a host is configured, the field
    /// is locked to it (its completions are no longer in status to tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_provisioned: Option<bool>,
    /// Hosts whose machine is provisioned (every host of a preProvisioned NodeSet), of the
    /// hosts in spec.nodes, as "n/m".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned_hosts: Option<String>,
    /// The current or last rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
    /// Digests of the ferrometal.io/confirm-deprovision values that confirmed a removal (the
    /// newest 16): a value confirms one removal, never a later one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 16))]
    pub spent_deprovision_confirmations: Option<Vec<String>>,
}

/// One host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostStatus {
    /// Config hash a rollout approved for this host: the host's desired hash when the last
    /// Manual rollout token was given (every reconcile under Automatic). Once configured, the
    /// host gets a new configuration only when its desired hash is this one and the services
    /// are as status.rollout.approvedServices says. Absent: nothing approved for it (a host
    /// added since, or first sight); its bring-up needs no approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_config_hash: Option<String>,
    /// Hash of the BIOS settings (firmwareSettings) a rollout approved for this host, as
    /// approvedConfigHash is for its configuration: a host already provisioned is serviced for
    /// new settings only when their hash is this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_firmware_hash: Option<String>,
    /// Hash of the BIOS settings the host was last seen to have, as its HostFirmwareSettings
    /// reported them matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_firmware_hash: Option<String>,
    /// The claimed BareMetalHost; absent for preProvisioned NodeSets and unclaimed hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bmh_ref: Option<BmhRef>,
    /// Config hash the host's services last completed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_config_hash: Option<String>,
    /// Config hash of the host's effective configuration now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_config_hash: Option<String>,
    /// Hash of the BIOS settings the spec asks for this host now (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_firmware_hash: Option<String>,
    /// Last problem with this host, e.g. no matching BareMetalHost or a failed Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Hash of the provisioning inputs the host was provisioned with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned_hash: Option<String>,
    /// The BareMetalHost's provisioning state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// The provisioning inputs changed since the host was provisioned; it keeps running what
    /// it has until its reprovisionToken changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_outdated: Option<bool>,
    /// Last reprovisionToken acted on (or recorded on first sight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reprovision_token: Option<String>,
    /// The machine's installation this status describes (its uid and the reprovision token it
    /// last acted on): status stands in for the machine's own records only for the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub machine_epoch: Option<String>,
    /// Services completed on this host and what they ran with, as operators before 0.2 wrote
    /// it; read once, never written (what ran is kept in the NodeSet's record ConfigMaps and
    /// on the machines, so status stays bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services_completed: Option<Vec<CompletedService>>,
}

/// Reference to a claimed BareMetalHost.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BmhRef {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID, to notice a BareMetalHost deleted and recreated under the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// A service run that completed on a host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletedService {
    /// When the Job completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// The host's config hash the Job ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// NodeSetService name.
    pub name: String,
    /// Hash of the NodeSetService spec the Job ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_hash: Option<String>,
}

/// A rollout of one configuration to the hosts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// Last spec.rollout.token acted on (Manual strategy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_token: Option<String>,
    /// The services the rollout approved, in spec.services order, each with the spec hash it
    /// had then (none: it did not exist). Configured hosts get new work only while the
    /// services are these; absent: nothing approved (first sight of a Manual NodeSet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_services: Option<Vec<ApprovedService>>,
    /// When every host reached configHash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// The NodeSet's configHash when the rollout started (Manual: when its token was given).
    /// Hosts added or removed since change configHash, not what the rollout approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// Where the rollout stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RolloutPhase>,
    /// When the rollout started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
}

/// A service as a rollout approved it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovedService {
    /// NodeSetService name.
    pub name: String,
    /// Hash of its spec when approved; absent when it did not exist (nothing of it approved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_hash: Option<String>,
}

/// Where a rollout stands. Values: Waiting, RollingOut, Pending, Failed, Complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum RolloutPhase {
    /// Nothing can run yet: hosts are being claimed or provisioned.
    Waiting,
    /// Service Jobs run, or are about to.
    RollingOut,
    /// Manual strategy: the configuration changed and waits for a new spec.rollout.token;
    /// the hosts keep what was approved for them.
    Pending,
    /// A service Job failed; the rollout stopped until the service or the configuration changes.
    Failed,
    /// Every host runs its desired configuration.
    Complete,
}
