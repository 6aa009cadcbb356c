//! The build step: pure functions from an Ironic and its resolved inputs (versions, content
//! hash, credentials, TLS material, database connection) to the objects it needs. One render
//! function per object; nothing here talks to the apiserver or reads the clock, so the same
//! inputs always give the same objects (see the golden tests).
//!
//! Building cannot fail: everything that can be wrong with the inputs was caught when they
//! were validated and resolved.

pub mod containers;
pub mod env;
pub mod jobs;
pub mod network;
pub mod pod;
pub mod secrets;
pub mod volumes;
pub mod workload;

#[cfg(test)]
mod golden;

use super::Config;
use super::credentials::ApiCredentials;
use super::database::DatabaseConnection;
use super::linked::CaReference;
use super::names::Names;
use super::tls::{TlsMaterial, TlsPlan, cert_manager};
use super::version::ResolvedVersion;
use crds::ironic::Ironic;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{DynamicObject, ObjectMeta};
use std::collections::BTreeMap;

pub use jobs::{Phase, UpgradeVersions};
pub use workload::Workload;

/// Everything the builders need.
pub struct Inputs<'a> {
    pub ironic: &'a Ironic,
    pub names: Names,
    pub namespace: String,
    pub config: &'a Config,
    pub version: &'a ResolvedVersion,
    pub credentials: &'a ApiCredentials,
    pub tls: &'a TlsPlan,
    pub database: Option<&'a DatabaseConnection>,
    /// CA bundle for BMC connections.
    pub bmc_ca: Option<CaReference>,
    /// CA bundle for image servers, with the key in use.
    pub trusted_ca: Option<(CaReference, String)>,
    /// Digest of every Secret and ConfigMap the pods use.
    pub content_hash: String,
    /// The upgrade the Jobs are for, when Jobs are needed.
    pub upgrade: Option<UpgradeVersions>,
}

impl Inputs<'_> {
    /// The serving certificate, when the pods serve TLS.
    pub fn tls_material(&self) -> Option<&TlsMaterial> {
        self.tls.material.as_ref()
    }

    /// Where the pods find the trusted CA bundle.
    pub fn trusted_ca_path(&self) -> Option<String> {
        self.trusted_ca.as_ref().map(|(_, key)| env::trusted_ca_file(key))
    }
}

/// Metadata of an owned object.
pub fn meta(inputs: &Inputs<'_>, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(inputs.namespace.clone()),
        labels: Some(labels),
        owner_references: crate::apply::owner_reference(inputs.ironic).map(|o| vec![o]),
        ..Default::default()
    }
}

/// The objects one Ironic needs.
#[derive(Clone, Debug)]
pub struct Desired {
    pub secrets: Vec<Secret>,
    pub config_maps: Vec<ConfigMap>,
    pub certificate: Option<DynamicObject>,
    pub workload: Workload,
    pub service: Service,
    pub ingress: Option<Ingress>,
    pub pre_upgrade_job: Option<Job>,
    pub post_upgrade_job: Option<Job>,
}

/// Renders every object.
pub fn build(inputs: &Inputs<'_>) -> Desired {
    let mut secrets: Vec<Secret> = secrets::generated_credentials(inputs).into_iter().collect();
    secrets.push(secrets::htpasswd(inputs));
    secrets.extend(secrets::auto_tls(inputs));
    let certificate = inputs.tls.certificate.as_ref().map(|request| {
        cert_manager::render(
            request,
            &inputs.namespace,
            crate::apply::owner_reference(inputs.ironic),
            super::names::owner_labels(&inputs.names.ironic),
        )
    });
    let job = |phase| match (inputs.database, &inputs.upgrade) {
        (Some(db), Some(versions)) => Some(jobs::render(inputs, db, versions, phase)),
        _ => None,
    };
    Desired {
        secrets,
        config_maps: secrets::ca_bundle(inputs).into_iter().collect(),
        certificate,
        workload: workload::render(inputs),
        service: network::service(inputs),
        ingress: network::ingress(inputs),
        pre_upgrade_job: job(Phase::Pre),
        post_upgrade_job: job(Phase::Post),
    }
}
