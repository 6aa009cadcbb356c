//! `Ironic` (`ironic.metal3.io/v1alpha1`): an Ironic deployment, compatible with metal3's
//! ironic-standalone-operator v0.11. Existing YAML is accepted unchanged; our additions (TLS
//! modes, managed MariaDB, tolerations, a richer status) are optional fields.

pub mod components;
pub mod database;
pub mod names;
pub mod namespaces;
pub mod networking;
pub mod overrides;
pub mod status;
pub mod tls;
pub mod validation;
pub mod versions;

pub use components::{
    DeployRamdisk, ExtraConfig, Images, Inspection, NetworkingService, PrometheusExporter, ProviderNetwork,
    ProviderNetworkType, SwitchPortMode,
};
pub use database::{Database, DatabaseBackup, DatabaseStorage, ManagedDatabase, ManagedDatabaseTls};
pub use namespaces::IronicNamespaces;
pub use networking::{Dhcp, DhcpRange, Ingress, IpAddressManager, Keepalived, KeepalivedVip, Networking};
pub use overrides::{AgentImages, CpuArchitecture, Overrides};
pub use status::{
    DatabaseBackupStatus, DatabaseMode, DatabaseStatus, DatabaseUpgradeStatus, DatabaseUpgradeStep, IronicStatus,
    ResolvedImages, TlsStatus, UpgradePhase, UpgradeStatus, WorkloadStatus,
};
pub use tls::{
    AutoTls, CertManagerTls, CsrTls, IssuerKind, IssuerRef, ReferenceKind, ResourceReference, ResourceReferenceWithKey,
    Tls, TlsMode,
};
pub use validation::{IronicValidationOptions, validate_ironic};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSON};
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The label naming the `Ironic` an object was made for (ironic-standalone-operator's key): on
/// everything an Ironic's controller and its database module create for it.
pub const IRONIC_LABEL: &str = "ironic.metal3.io/ironic";

/// Message shared by the database immutability rule and its CEL twin.
pub const DATABASE_IMMUTABLE_MESSAGE: &str = "cannot change to a new database or remove it";

/// Desired state of an Ironic deployment.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "ironic.metal3.io",
    version = "v1alpha1",
    kind = "Ironic",
    namespaced,
    status = "IronicStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "An Ironic deployment (API, conductor, image server, optional DHCP), compatible with metal3's ironic-standalone-operator.",
    printcolumn(
        name = "Requested Version",
        type_ = "string",
        json_path = ".status.requestedVersion",
        description = "Currently requested version",
        priority = 1
    ),
    printcolumn(
        name = "Installed Version",
        type_ = "string",
        json_path = ".status.installedVersion",
        description = "Currently installed version"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#,
        description = "Is ready"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(oldSelf.database) || (has(self.database) && has(self.database.managed) == has(oldSelf.database.managed) && (has(self.database.host) ? (has(oldSelf.database.host) && self.database.host == oldSelf.database.host) : !has(oldSelf.database.host)) && (has(self.database.name) ? (has(oldSelf.database.name) && self.database.name == oldSelf.database.name) : !has(oldSelf.database.name)))").message(DATABASE_IMMUTABLE_MESSAGE))]
#[x_kube(validation = Rule::new("!has(self.highAvailability) || !self.highAvailability || has(self.database)").message("highAvailability requires a database"))]
pub struct IronicSpec {
    /// Secret with the API credentials (`username`, `password`). When empty the operator
    /// generates one and records its name in status.apiCredentialsSecretName.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_credentials_name: Option<String>,
    /// Database persisting Ironic's state; SQLite (lost on pod restart) when unset. Required
    /// for highAvailability. Cannot be replaced or removed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<Database>,
    /// Provisioning/inspection ramdisk settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_ramdisk: Option<DeployRamdisk>,
    /// ironic.conf overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_config: Option<Vec<ExtraConfig>>,
    /// Run Ironic as a DaemonSet (one replica per selected node) instead of a one-replica
    /// Deployment. Requires database; excludes dhcp, networking.ipAddress and keepalived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_availability: Option<bool>,
    /// Container image overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
    /// Inspection settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection: Option<Inspection>,
    /// Networking settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<Networking>,
    /// Ironic Networking Service (switch port management).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking_service: Option<NetworkingService>,
    /// Node labels the Ironic pods must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Low-level changes to the generated pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<Overrides>,
    /// Sensor data collection and the Prometheus exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_exporter: Option<PrometheusExporter>,
    /// TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    /// Ironic version: "latest" or MAJOR.MINOR from the supported list (latest, 38.0, 37.0,
    /// 35.0); 38.0 when unset. With a database, downgrades are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The Ironic CRD as [`crate::all_crds`] serves it. Unlike the derived `Ironic::crd()`, `spec`
/// is optional and defaults to `{}`: ironic-standalone-operator's own sample has an empty
/// `spec:`, which the apiserver receives as null, prunes and then defaults, so the stored object
/// (and what the webhook and the controller read) always has a spec.
pub fn crd() -> CustomResourceDefinition {
    let mut crd = Ironic::crd();
    let schemas = crd.spec.versions.iter_mut().filter_map(|v| v.schema.as_mut()?.open_api_v3_schema.as_mut());
    for schema in schemas {
        schema.required = schema
            .required
            .take()
            .map(|required| required.into_iter().filter(|field| field != "spec").collect::<Vec<_>>())
            .filter(|required| !required.is_empty());
        if let Some(spec) = schema.properties.as_mut().and_then(|p| p.get_mut("spec")) {
            spec.default = Some(JSON(serde_json::json!({})));
        }
    }
    crd
}

impl IronicSpec {
    /// True when deployed as a DaemonSet.
    pub fn high_availability(&self) -> bool {
        self.high_availability.unwrap_or(false)
    }

    /// The TLS mode in force; `None` is plain HTTP, which only `spec.tls.disabled` asks for.
    /// Without any TLS settings the API is served with the operator-managed CA (Auto): its
    /// basic-auth credentials must not cross the host network in clear.
    pub fn tls_mode(&self) -> Option<tls::TlsMode> {
        self.tls.as_ref().map_or(Some(tls::TlsMode::Auto), tls::Tls::effective_mode)
    }
}
