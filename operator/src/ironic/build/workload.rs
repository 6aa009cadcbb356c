//! The workload: a one-replica Deployment, or a DaemonSet with `highAvailability`.

use super::meta::meta;
use super::pod;
use crate::ironic::names;
use crate::ironic::resolve::Resolved;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The Deployment or the DaemonSet.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Workload {
    Deployment(Box<Deployment>),
    DaemonSet(Box<DaemonSet>),
}

impl Workload {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Deployment(_) => "Deployment",
            Self::DaemonSet(_) => "DaemonSet",
        }
    }
}

pub(crate) fn render(resolved: &Resolved) -> Workload {
    let metadata = meta(
        resolved,
        resolved.names.workload(),
        names::common_labels(&resolved.names.ironic, &resolved.version.version.to_string()),
    );
    let selector = LabelSelector { match_labels: Some(names::selector(&resolved.names)), ..Default::default() };
    let template = pod::template(resolved);
    if resolved.settings.high_availability {
        Workload::DaemonSet(Box::new(DaemonSet {
            metadata,
            spec: Some(DaemonSetSpec { selector, template, ..Default::default() }),
            status: None,
        }))
    } else {
        Workload::Deployment(Box::new(Deployment {
            metadata,
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                selector,
                template,
                // Two Ironic conductors must never share one database or one set of hosts.
                strategy: Some(DeploymentStrategy { type_: Some("Recreate".to_string()), rolling_update: None }),
                ..Default::default()
            }),
            status: None,
        }))
    }
}
