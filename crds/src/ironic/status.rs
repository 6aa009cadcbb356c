//! `Ironic.status`: everything the operator derives. The operator never writes spec.

use super::tls::{ResourceReferenceWithKey, TlsMode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Condition reasons of `Ready`, as ironic-standalone-operator sets them.
pub mod reasons {
    /// Objects are being created or rolled out.
    pub const DEPLOYMENT_IN_PROGRESS: &str = "DeploymentInProgress";
    /// Ironic is up and answers.
    pub const DEPLOYMENT_AVAILABLE: &str = "DeploymentAvailable";
    /// Something failed; the message says what.
    pub const DEPLOYMENT_FAILED: &str = "DeploymentFailed";
}

/// Condition type: the database is reachable, authenticates and has the expected version.
pub const DATABASE_READY: &str = "DatabaseReady";

/// Observed state of an Ironic deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct IronicStatus {
    /// Credentials Secret the operator generated because spec.apiCredentialsName is empty
    /// (ironic-standalone-operator writes this name into spec; we never write spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_credentials_secret_name: Option<String>,
    /// URL clients use for the Ironic API, e.g. `https://ironic.metal3.svc:6385`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// Where clients find the CA that signs the API certificate (a ConfigMap the operator
    /// publishes, or the user's Secret). Absent without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_ref: Option<ResourceReferenceWithKey>,
    /// Ready (reasons DeploymentInProgress, DeploymentAvailable, DeploymentFailed),
    /// Progressing, Degraded and DatabaseReady.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Option<Vec<Condition>>,
    /// State of the database, external or managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseStatus>,
    /// URL of the image server (httpd) hosts download images and the ramdisk from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_server_endpoint: Option<String>,
    /// Images the operator resolved from spec.images and the version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ResolvedImages>,
    /// Version running, set once the deployment is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_version: Option<String>,
    /// Generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Version last requested (spec.version resolved against the supported list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_version: Option<String>,
    /// TLS state: mode, Secrets and expiry of the serving certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStatus>,
    /// Progress of a version upgrade; absent when none has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeStatus>,
    /// The workload running Ironic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadStatus>,
}

/// Images in use, after defaulting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedImages {
    /// ramdisk-downloader image, absent when the downloader is disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_ramdisk_downloader: Option<String>,
    /// Ironic image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ironic: Option<String>,
    /// Keepalived image, when keepalived runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalived: Option<String>,
    /// MariaDB image of a managed database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mariadb: Option<String>,
}

/// The Deployment or DaemonSet running Ironic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    /// Deployment (one replica) or DaemonSet (highAvailability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// TLS as the operator applied it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsStatus {
    /// Secret holding the operator-managed CA (mode Auto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_name: Option<String>,
    /// cert-manager Certificate the operator created (mode CertManager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_name: Option<String>,
    /// The CertificateSigningRequest in flight, while one is (mode CertificateSigningRequest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_signing_request_name: Option<String>,
    /// Mode in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TlsMode>,
    /// Expiry of the serving certificate in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
    /// When the operator (Auto, CertificateSigningRequest) or cert-manager renews the serving
    /// certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal_time: Option<Time>,
    /// Secret with the serving certificate mounted into the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_secret_name: Option<String>,
}

/// Database state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// Managed database: Secret with the password of MariaDB's `root`, who may log in only from
    /// inside the MariaDB pod (its socket: the entrypoint, the readiness probe, the preStop
    /// hook). Never mounted into Ironic's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_secret_name: Option<String>,
    /// Managed database with TLS: Secret with the CA (key `tls.crt`) Ironic verifies the server
    /// with, mounted at /certs/ca/mariadb.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_name: Option<String>,
    /// Secret with the credentials Ironic uses: generated for a managed database, the user's
    /// for an external one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_name: Option<String>,
    /// Host Ironic connects to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Managed database: the MariaDB image the StatefulSet runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Most recent logical backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup: Option<DatabaseBackupStatus>,
    /// Managed database: Secret with the credentials of the maintenance account, the network
    /// account of the operator's checks and the backup Job, with only the privileges they need
    /// (the account that runs mariadb-upgrade during a version change shares its password).
    /// Never mounted into Ironic's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_secret_name: Option<String>,
    /// External or Managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DatabaseMode>,
    /// Ironic's alembic schema revision read from the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_revision: Option<String>,
    /// Server version reported by MariaDB (`SELECT VERSION()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// StatefulSet of a managed database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful_set_name: Option<String>,
    /// Progress of a managed MariaDB version change; absent when none has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<DatabaseUpgradeStatus>,
}

/// How the database is provided. Values: External, Managed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum DatabaseMode {
    /// A server the user runs.
    External,
    /// MariaDB run by the operator.
    Managed,
}

/// A managed MariaDB version change, step by step. A failed step stops the sequence and
/// touches no data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseUpgradeStatus {
    /// Attempt of the sequence, from 1; a retry after a failure (the annotation
    /// `ironic.ferrometal.io/retry-database-upgrade`) starts the next attempt at the failed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    /// Name of the logical backup Job of this change, once it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_job_name: Option<String>,
    /// Since when the current step has met errors that may pass (an unreachable server, an
    /// image being pulled); the step fails when they last longer than the operator's step
    /// timeout. Absent while the step progresses normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Time>,
    /// Image before the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_image: Option<String>,
    /// Version before the change (recorded before the StatefulSet rolls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_version: Option<String>,
    /// Why the last step failed; absent unless step is Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the change started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// Current or last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<DatabaseUpgradeStep>,
    /// Step that failed, when step is Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<DatabaseUpgradeStep>,
    /// Value of the retry annotation this attempt answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_token: Option<String>,
    /// When the current step started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<Time>,
    /// Image after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_image: Option<String>,
    /// Target version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_version: Option<String>,
    /// Name of the `mariadb-upgrade` Job of this change, once it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_job_name: Option<String>,
}

/// Steps of a MariaDB version change, in order. Values: Backup, SlowShutdownEnabled,
/// RollingOut, RunningMariadbUpgrade, VerifyingVersion, Completed, Failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum DatabaseUpgradeStep {
    /// A logical backup Job runs (when backups are enabled).
    Backup,
    /// `innodb_fast_shutdown` reads 0 (the server starts with it): the next stop is the slow one.
    SlowShutdownEnabled,
    /// The StatefulSet rolls to the new image.
    RollingOut,
    /// The `mariadb-upgrade` Job runs.
    RunningMariadbUpgrade,
    /// The new server version is checked.
    VerifyingVersion,
    /// Done; Ironic's schema upgrade may run.
    Completed,
    /// A step failed; see failedStep and message.
    Failed,
}

/// A logical backup Job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseBackupStatus {
    /// When the backup finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// File name of the dump on the backup volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Name of the Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// MariaDB version the dump was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

/// An Ironic version upgrade: pre-upgrade Job (schema), rollout, post-upgrade Job (online
/// data migrations). Jobs run only with a database; with SQLite an upgrade is a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStatus {
    /// Version before the upgrade ("" for a first installation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_version: Option<String>,
    /// Why the upgrade stopped, quoting the failed Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Current or last phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<UpgradePhase>,
    /// Name of the post-upgrade Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_upgrade_job_name: Option<String>,
    /// Name of the pre-upgrade Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_upgrade_job_name: Option<String>,
    /// When the upgrade started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// Target version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_version: Option<String>,
}

/// Phases of an Ironic upgrade, in order. Values: PreUpgrade, RollingOut, PostUpgrade,
/// Completed, Failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::schema_util::drop_description)]
pub enum UpgradePhase {
    /// The schema upgrade Job runs; the old version keeps serving.
    PreUpgrade,
    /// The new pods roll out.
    RollingOut,
    /// The online data migration Job runs.
    PostUpgrade,
    /// Done.
    Completed,
    /// A Job failed; nothing was deleted and the old version, if any, keeps running.
    Failed,
}
