//! Volumes of the Ironic pod and where the containers mount them (ironic-image's paths).

use crate::database::Connection;
use crate::ironic::linked::{CaReference, SourceKind};
use crate::ironic::resolve::Resolved;
use crate::kit::pod::secret_volume;
pub(crate) use crate::kit::pod::{empty_dir, mount};
use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, Volume, VolumeMount};

pub(crate) const SHARED_DIR: &str = "/shared";
pub(crate) const AUTH_DIR: &str = "/auth";
pub(crate) const CERTS_DIR: &str = "/certs";
pub(crate) const TRUSTED_CA_DIR: &str = "/certs/ca/trusted";

pub(crate) const SHARED_VOLUME: &str = "ironic-shared";
const AUTH_VOLUME: &str = "ironic-auth";
const CERT_VOLUME: &str = "cert-ironic";
const BMC_CA_VOLUME: &str = "cert-bmc";
const TRUSTED_CA_VOLUME: &str = "trusted-ca";
const DB_AUTH_VOLUME: &str = "auth-mariadb";
const DB_CA_VOLUME: &str = "cert-mariadb";

/// The pod's volumes, the mounts of the ironic and httpd containers, and the shared mount
/// the other containers use.
pub(crate) struct PodVolumes {
    pub volumes: Vec<Volume>,
    pub mounts: Vec<VolumeMount>,
    pub shared: VolumeMount,
}

fn ca_volume(name: &str, reference: &CaReference) -> Volume {
    match reference.kind {
        SourceKind::Secret => secret_volume(name, &reference.name),
        SourceKind::ConfigMap => Volume {
            name: name.to_string(),
            config_map: Some(ConfigMapVolumeSource { name: reference.name.clone(), ..Default::default() }),
            ..Default::default()
        },
    }
}

/// The database client's credentials and CA, for the pods and the upgrade Jobs.
pub(crate) fn database(db: &Connection) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = vec![secret_volume(DB_AUTH_VOLUME, &db.credentials_secret)];
    let mut mounts = vec![mount(DB_AUTH_VOLUME, &format!("{AUTH_DIR}/mariadb"), true)];
    if let Some(ca) = db.ca_secret() {
        volumes.push(secret_volume(DB_CA_VOLUME, ca));
        mounts.push(mount(DB_CA_VOLUME, &format!("{CERTS_DIR}/ca/mariadb"), true));
    }
    (volumes, mounts)
}

pub(crate) fn pod(resolved: &Resolved) -> PodVolumes {
    let shared = mount(SHARED_VOLUME, SHARED_DIR, false);
    let mut volumes = vec![empty_dir(SHARED_VOLUME), secret_volume(AUTH_VOLUME, &resolved.credentials.secret_name)];
    let mut mounts = vec![shared.clone()];
    if resolved.settings.high_availability {
        // JSON RPC clients authenticate with the API credentials.
        mounts.push(mount(AUTH_VOLUME, &format!("{AUTH_DIR}/ironic-rpc"), true));
    }
    if let Some(material) = &resolved.tls.material {
        volumes.push(secret_volume(CERT_VOLUME, &material.secret_name));
        mounts.push(mount(CERT_VOLUME, &format!("{CERTS_DIR}/ironic"), true));
        if resolved.network.serves_vmedia_tls {
            mounts.push(mount(CERT_VOLUME, &format!("{CERTS_DIR}/vmedia"), true));
        }
    }
    if let Some(bmc) = &resolved.bmc_ca {
        volumes.push(ca_volume(BMC_CA_VOLUME, bmc));
        mounts.push(mount(BMC_CA_VOLUME, &format!("{CERTS_DIR}/ca/bmc"), true));
    }
    if let Some((trusted, _)) = &resolved.trusted_ca {
        volumes.push(ca_volume(TRUSTED_CA_VOLUME, trusted));
        mounts.push(mount(TRUSTED_CA_VOLUME, TRUSTED_CA_DIR, true));
    }
    if let Some(db) = &resolved.database {
        let (db_volumes, db_mounts) = database(db);
        volumes.extend(db_volumes);
        mounts.extend(db_mounts);
    }
    PodVolumes { volumes, mounts, shared }
}
