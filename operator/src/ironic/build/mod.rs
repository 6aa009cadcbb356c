//! The build step: pure functions from the [`Resolved`] inputs (versions, networking, content
//! hash, credentials, TLS material, database connection) to the objects an Ironic needs. One
//! render function per object; nothing here talks to the apiserver or reads the clock, so the
//! same inputs always give the same objects (see the golden tests). The Ironic itself never
//! gets here: only its names, namespace and owner reference, in `Resolved`.
//!
//! Building cannot fail: everything that can be wrong with the inputs was caught when they
//! were validated and resolved.

pub(crate) mod containers;
pub(crate) mod env;
pub(crate) mod jobs;
pub(crate) mod meta;
pub(crate) mod network;
pub(crate) mod pod;
pub(crate) mod secrets;
pub(crate) mod service_monitor;
pub(crate) mod volumes;
pub(crate) mod workload;

#[cfg(test)]
mod dnsmasq_check;
#[cfg(test)]
mod golden;

pub(crate) use super::resolve::Resolved;
use super::tls::cert_manager;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::DynamicObject;

pub(crate) use super::upgrade::UpgradeVersions;
pub(crate) use jobs::Phase;
pub(crate) use workload::Workload;

/// The objects one Ironic needs.
#[derive(Clone, Debug)]
pub(crate) struct Desired {
    pub secrets: Vec<Secret>,
    pub config_maps: Vec<ConfigMap>,
    pub certificate: Option<DynamicObject>,
    pub workload: Workload,
    pub service: Service,
    pub ingress: Option<Ingress>,
    /// The Prometheus operator's ServiceMonitor of the exporter.
    pub service_monitor: Option<DynamicObject>,
    pub pre_upgrade_job: Option<Job>,
    pub post_upgrade_job: Option<Job>,
}

/// Renders every object.
pub(crate) fn build(resolved: &Resolved) -> Desired {
    let mut secrets: Vec<Secret> = secrets::generated_credentials(resolved).into_iter().collect();
    secrets.push(secrets::htpasswd(resolved));
    secrets.extend(secrets::auto_tls(resolved));
    secrets.extend(secrets::csr_tls(resolved));
    let certificate = resolved.tls.certificate.as_ref().map(|request| {
        cert_manager::render(
            request,
            &resolved.namespace,
            resolved.owner.clone(),
            super::names::owner_labels(&resolved.names.ironic),
        )
    });
    let job = |phase| match (&resolved.database, &resolved.upgrade) {
        (Some(db), Some(versions)) => Some(jobs::render(resolved, db, versions, phase)),
        _ => None,
    };
    Desired {
        secrets,
        config_maps: secrets::ca_bundle(resolved).into_iter().collect(),
        certificate,
        workload: workload::render(resolved),
        service: network::service(resolved),
        ingress: network::ingress(resolved),
        service_monitor: service_monitor::render(resolved),
        pre_upgrade_job: job(Phase::Pre),
        post_upgrade_job: job(Phase::Post),
    }
}
