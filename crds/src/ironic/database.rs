//! `spec.database`: ironic-standalone-operator's external MariaDB, and our managed MariaDB.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// MariaDB version a managed database runs when `managed.version` is unset.
pub const DEFAULT_MARIADB_VERSION: &str = "11.4";
/// Repository of the MariaDB image; the tag is the version.
pub const MARIADB_IMAGE_REPOSITORY: &str = "docker.io/library/mariadb";
/// Default size of the managed database's volume.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";
/// Default number of logical backups kept.
pub const DEFAULT_BACKUPS_KEPT: i32 = 3;
/// Default termination grace period of the MariaDB pod: long enough for a slow
/// `innodb_fast_shutdown = 0` shutdown, which MariaDB needs before a version change.
pub const DEFAULT_DATABASE_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 300;

/// The MariaDB image for a version.
pub fn default_mariadb_image(version: &str) -> String {
    format!("{MARIADB_IMAGE_REPOSITORY}:{version}")
}

/// Message shared by the webhook rule and its CEL twin.
pub const MANAGED_TLS_CONFLICT_MESSAGE: &str =
    "certificateName is set but tls.enabled is false: a certificate is only served with TLS on";

/// Message shared by the webhook rule and its CEL twin.
pub const DATABASE_FORMS_MESSAGE: &str =
    "set either credentialsName, host and name (an external database) or managed, not both";

/// The database that persists Ironic's state. Without it Ironic uses SQLite and loses its state
/// on every pod restart; highAvailability requires it.
///
/// Two mutually exclusive forms: external (ironic-standalone-operator's `credentialsName`,
/// `host`, `name`, `tlsCertificateName`) or `managed` (our addition: the operator runs MariaDB).
/// Once set, the database cannot be replaced by another one or removed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.managed) ? !(has(self.credentialsName) || has(self.host) || has(self.name) || has(self.tlsCertificateName)) : (has(self.credentialsName) && has(self.host) && has(self.name))").message(DATABASE_FORMS_MESSAGE))]
pub struct Database {
    /// External form: Secret with `username` and `password` (mounted at /auth/mariadb).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_name: Option<String>,
    /// External form: IP address or host name of the database server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Our addition. Managed form: the operator runs MariaDB for this Ironic, with upgrade-safe
    /// shutdown and optional backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed: Option<ManagedDatabase>,
    /// External form: database name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// External form: Secret with a CA or certificate for verifying the server. Without it the
    /// connection is unencrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_certificate_name: Option<String>,
}

impl Database {
    /// True for the managed form.
    pub fn is_managed(&self) -> bool {
        self.managed.is_some()
    }
}

/// A MariaDB the operator runs: a one-replica StatefulSet with a volume, a headless Service and
/// generated credentials (their Secret is named in `status.database.credentialsSecretName`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedDatabase {
    /// Optional logical backup (mariadb-dump) before every MariaDB version change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<DatabaseBackup>,
    /// MariaDB image; by default the official image for `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Resources of the MariaDB container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Volume for the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<DatabaseStorage>,
    /// Grace period of the MariaDB pod, long enough for a clean InnoDB shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 300), range(min = 30))]
    pub termination_grace_period_seconds: Option<i64>,
    /// TLS of the MariaDB server. On unless `tls.enabled` is false: the operator makes a CA and
    /// a serving certificate (or serves `tls.certificateName`), MariaDB requires TLS on the
    /// network, and Ironic verifies the server with the CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ManagedDatabaseTls>,
    /// MariaDB version (MAJOR.MINOR, e.g. "11.4"); the operator's default when unset. A change
    /// runs the upgrade-safe sequence; downgrades are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ManagedDatabase {
    /// The backup settings when backups are on (present and not `enabled: false`).
    pub fn backups(&self) -> Option<&DatabaseBackup> {
        self.backup.as_ref().filter(|b| b.enabled != Some(false))
    }

    /// The MariaDB version, defaulted.
    pub fn version(&self) -> &str {
        self.version.as_deref().unwrap_or(DEFAULT_MARIADB_VERSION)
    }

    /// The MariaDB image, defaulted from the version.
    pub fn image(&self) -> String {
        self.image.clone().unwrap_or_else(|| default_mariadb_image(self.version()))
    }

    /// The termination grace period, defaulted.
    pub fn termination_grace_period_seconds(&self) -> i64 {
        self.termination_grace_period_seconds.unwrap_or(DEFAULT_DATABASE_TERMINATION_GRACE_PERIOD_SECONDS)
    }
}

/// A PersistentVolumeClaim's size and class. The class cannot change once set; the size can
/// grow but not shrink.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)").message("storageClassName is immutable"))]
pub struct DatabaseStorage {
    /// Requested size, 10Gi by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// StorageClass; the cluster default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

impl DatabaseStorage {
    /// The size, defaulted.
    pub fn size(&self) -> Quantity {
        self.size.clone().unwrap_or_else(|| Quantity(DEFAULT_STORAGE_SIZE.to_string()))
    }
}

/// Logical backups taken before MariaDB version changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseBackup {
    /// Run a mariadb-dump Job before each version change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How many backups to keep; older ones are removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3), range(min = 1))]
    pub keep: Option<i32>,
    /// Volume the backups are written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<DatabaseStorage>,
}

impl DatabaseBackup {
    /// Number of backups kept, defaulted.
    pub fn keep(&self) -> i32 {
        self.keep.unwrap_or(DEFAULT_BACKUPS_KEPT)
    }
}

/// TLS for the managed database: on by default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.certificateName) && has(self.enabled) && !self.enabled)").message(MANAGED_TLS_CONFLICT_MESSAGE))]
pub struct ManagedDatabaseTls {
    /// Secret with the server certificate and key (`tls.crt`, `tls.key`) and the CA that signs
    /// them (`ca.crt`), served instead of the operator's own. When unset, the operator makes a
    /// CA and a serving certificate for the database and renews them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_name: Option<String>,
    /// Serve MariaDB over TLS and require it on the network; true when unset. false opts out:
    /// MariaDB and Ironic then talk in clear text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
}

impl ManagedDatabase {
    /// Whether the managed database serves TLS: unless `tls.enabled` is false. A
    /// `certificateName` next to `enabled: false` is refused by validation; should one get
    /// through, the certificate wins (secure by default).
    pub fn tls_enabled(&self) -> bool {
        let Some(tls) = &self.tls else {
            return true;
        };
        tls.enabled != Some(false) || tls.certificate_name.as_deref().is_some_and(|n| !n.trim().is_empty())
    }
}
