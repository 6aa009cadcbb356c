//! Installing the operator on a cluster, generated from code so that what is shipped is what
//! the code needs:
//!
//! - [`rbac`]: the one table of every resource and verb each part of the operator uses, and
//!   the roles rendered from it;
//! - [`manifests`]: the kustomize tree under `config/` (`ferrometal manifests`): CRDs,
//!   ServiceAccount and roles, the Deployment, the webhook Service and configuration, the
//!   cert-manager variant and the optional features' roles;
//! - [`bundle`]: the OLM bundles under `bundle/` and `bundle.Dockerfile` (and the sharded
//!   one under `bundle-sharded/`; `ferrometal bundle --version X`), whose CSVs carry the same
//!   Deployments and RBAC as `config/` (and `config/shards`).
//!
//! `design/install.md` explains the choices.

pub(crate) mod bundle;
#[cfg(test)]
mod checked_in;
pub(crate) mod manifests;
pub(crate) mod rbac;
mod yaml;

pub(crate) use yaml::to_yaml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The operator's name: its Deployment, ServiceAccount, and the prefix of its other objects.
pub const NAME: &str = "ferrometal";
/// The namespace the manifests install into by default.
pub const DEFAULT_NAMESPACE: &str = "ferrometal-system";
/// The operator image, without tag.
pub(crate) const IMAGE_REPOSITORY: &str = "ghcr.io/ferrometal/ferrometal";
/// The Service in front of the webhook servers.
pub(crate) const WEBHOOK_SERVICE: &str = "ferrometal-webhook-service";
/// The Service in front of the metrics endpoints.
pub(crate) const METRICS_SERVICE: &str = "ferrometal-metrics";
/// The port the webhook server listens on (the Service serves it on 443).
pub(crate) const WEBHOOK_PORT: u16 = 9443;
/// The port of /healthz, /readyz and /metrics.
pub(crate) const HEALTH_PORT: u16 = 8081;
/// The Secret cert-manager writes the webhook's serving certificate to, in the cert-manager
/// variant.
pub const CERT_MANAGER_SECRET: &str = "ferrometal-webhook-server-cert";
/// Where the Deployment mounts a provided webhook certificate (kubebuilder's path).
pub const MOUNTED_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// Where OLM mounts the webhook certificate it makes.
pub(crate) const OLM_CERT_DIR: &str = "/apiserver.local.config/certificates";

/// The image of a version: `ghcr.io/ferrometal/ferrometal:<version>`.
pub fn image(version: &str) -> String {
    format!("{IMAGE_REPOSITORY}:{version}")
}

/// Where the webhook's serving certificate comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookCertificates {
    /// The operator makes it, keeps it in a Secret and publishes its CA in the
    /// ValidatingWebhookConfiguration (needs that permission).
    SelfManaged,
    /// cert-manager issues it into a Secret the Deployment mounts, and its cainjector fills the
    /// configuration's caBundle.
    CertManager,
    /// OLM makes it, mounts it, and registers the webhooks from the CSV.
    Olm,
}

/// What an install looks like: where, watching what, from which image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The operator's namespace.
    pub namespace: String,
    /// Watched namespaces; empty watches the whole cluster (ClusterRoles), otherwise Roles
    /// only, one per watched namespace.
    pub watch_namespaces: Vec<String>,
    /// Where an Ironic may run; none listed means the operator's own namespace.
    pub ironic_namespaces: crds::ironic::IronicNamespaces,
    pub image: String,
    /// The shards of `shards/`, the install that divides the hosts among replicas.
    pub shards: Vec<String>,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_NAMESPACE.to_string(),
            watch_namespaces: Vec::new(),
            ironic_namespaces: crds::ironic::IronicNamespaces::default(),
            image: image(env!("CARGO_PKG_VERSION")),
            shards: manifests::shards::DEFAULT_SHARDS.iter().map(|s| (*s).to_string()).collect(),
        }
    }
}

impl Layout {
    /// The labels every installed object carries.
    pub fn labels(&self) -> BTreeMap<String, String> {
        [("app.kubernetes.io/name".to_string(), NAME.to_string())].into()
    }

    /// The labels selecting the operator's pods.
    pub fn selector(&self) -> BTreeMap<String, String> {
        [
            ("app.kubernetes.io/name".to_string(), NAME.to_string()),
            ("app.kubernetes.io/component".to_string(), "operator".to_string()),
        ]
        .into()
    }

    /// Who the roles are granted to.
    pub fn grantee(&self) -> rbac::render::Grantee {
        rbac::render::Grantee {
            namespace: self.namespace.clone(),
            service_account: NAME.to_string(),
            watch_namespaces: self.watch_namespaces.clone(),
            ironic_namespaces: self.ironic_namespaces.clone(),
            labels: self.labels(),
        }
    }

    /// True when the operator watches the whole cluster.
    pub fn cluster_wide(&self) -> bool {
        self.watch_namespaces.is_empty()
    }
}

/// A generated file: its path below the output directory and its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: PathBuf,
    pub content: String,
}

/// Why manifests or a bundle could not be generated or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot render YAML")]
    Yaml(#[from] serde_saphyr::SerializeError),
    #[error("cannot render the CRDs")]
    Crds(#[from] crds::CrdRenderError),
    #[error("cannot parse the sample {file}")]
    Sample {
        file: String,
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    #[error("no sample {0} in crds/samples")]
    MissingSample(String),
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid version {0:?}: a bundle version is semantic (X.Y.Z)")]
    Version(String),
    #[error("invalid --shards")]
    Shards(#[source] crate::host::shard::Error),
}

/// Writes `files` below `dir`, replacing what `generated` names: the directories the
/// generator owns are emptied first, so a file it no longer makes does not linger.
pub(crate) fn write(dir: &Path, owned_dirs: &[&str], files: &[File]) -> Result<(), Error> {
    for owned in owned_dirs {
        let path = dir.join(owned);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|source| Error::Write { path: path.clone(), source })?;
        }
    }
    for file in files {
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Write { path: parent.to_path_buf(), source })?;
        }
        std::fs::write(&path, &file.content).map_err(|source| Error::Write { path: path.clone(), source })?;
    }
    Ok(())
}
