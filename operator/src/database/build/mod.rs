//! Pure render functions, one per object of a managed database: the StatefulSet, the headless
//! Service, the backup volume and the two Jobs (`mariadb-upgrade` and the logical backup).
//! The Secrets are rendered next to the logic that decides their content
//! ([`super::credentials`], [`super::tls`]).
//!
//! Every object sets only fields Kubernetes 1.20 knows: server-side apply on 1.20 rejects
//! unknown fields on built-in types.

pub(crate) mod jobs;
pub(crate) mod service;
pub(crate) mod stateful_set;
pub(crate) mod storage;

#[cfg(test)]
mod golden;

use super::names::Names;
use super::tls::Material;
use crds::ironic::{Ironic, ManagedDatabase};
use k8s_openapi::api::core::v1::{
    EnvVar, EnvVarSource, PodSecurityContext, SecretKeySelector, SecurityContext, Volume,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Resource;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

/// User and group of `mysql` in the official MariaDB image. The pod runs as them from the
/// start, and `fsGroup` makes the volumes and the certificate readable to them.
pub(crate) const MARIADB_UID: i64 = 999;
/// The container's name.
pub const CONTAINER: &str = "mariadb";
/// Where MariaDB keeps its data in the official image.
pub(crate) const DATA_DIR: &str = "/var/lib/mysql";
/// Where MariaDB finds its certificate.
pub const SERVER_TLS_DIR: &str = "/etc/mysql/tls";
/// Where clients (the Jobs) find the CA; the same path Ironic's pods use.
pub const CLIENT_CA_DIR: &str = "/certs/ca/mariadb";
/// Where MariaDB finds its init file (`--init-file`): the accounts, applied at every start.
pub const INIT_DIR: &str = "/etc/mysql/ferrometal";

/// Size and class of a volume claim.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimSettings {
    pub size: Quantity,
    pub storage_class: Option<String>,
}

/// What the builders need.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The owner.
    pub ironic: &'a Ironic,
    pub names: &'a Names,
    pub namespace: &'a str,
    pub managed: &'a ManagedDatabase,
    /// The Service's fully qualified name, where the Jobs connect.
    pub host: String,
    /// The image the StatefulSet runs: the upgrade sequence decides when it changes.
    pub image: &'a str,
    /// The data volume's claim template. Immutable in a StatefulSet, so once created it is
    /// rendered as it was; the driver grows the claim itself.
    pub claim: ClaimSettings,
    /// TLS the server serves, when it does.
    pub tls: Option<&'a Material>,
    /// Whether it also refuses clear text on the network (with `tls` only): not while Ironic's
    /// pods move to or away from the CA.
    pub require_tls: bool,
    /// [`crate::database::account::digest`] of the maintenance password's hash: a new password
    /// restarts the server, which applies it from its init file.
    pub account_digest: String,
    /// Retries of a Job's pod before the Job fails.
    pub job_backoff_limit: i32,
    /// How long a Job may run.
    pub job_deadline_seconds: i64,
}

impl Inputs<'_> {
    /// Metadata of an object the Ironic owns.
    pub fn meta(&self, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.to_string()),
            labels: Some(labels),
            owner_references: self.ironic.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        }
    }

    /// Metadata of a Secret the database owns.
    pub fn secret_meta(&self) -> ObjectMeta {
        self.meta(String::new(), self.names.labels())
    }
}

/// An environment variable from a Secret's key.
pub(crate) fn secret_env(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_string(),
                key: key.to_string(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A plain environment variable.
pub(crate) fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.to_string(), value: Some(value.into()), ..Default::default() }
}

/// A Secret volume readable by the `mysql` group (the key must be, for MariaDB).
pub(crate) fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.to_string(),
        secret: Some(k8s_openapi::api::core::v1::SecretVolumeSource {
            secret_name: Some(secret.to_string()),
            default_mode: Some(0o440),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) use crate::kit::pod::mount;

/// Runs as `mysql`, with the volumes' group set to it.
pub(crate) fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_user: Some(MARIADB_UID),
        run_as_group: Some(MARIADB_UID),
        run_as_non_root: Some(true),
        fs_group: Some(MARIADB_UID),
        ..Default::default()
    }
}

/// No privilege escalation and no capabilities: MariaDB needs none; the runtime's default
/// seccomp profile.
pub(crate) fn container_security() -> SecurityContext {
    crate::kit::pod::restricted_container()
}
