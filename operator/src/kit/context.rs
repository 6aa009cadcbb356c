//! What every controller shares: the client, the watched namespaces, the metrics, and the
//! identity it reports Events under; and the one fan-out over the watched namespaces.

use super::events::Publisher;
use crate::metrics::Metrics;
use k8s_openapi::NamespaceResourceScope;
use kube::api::Api;
use kube::{Client, Resource};
use std::fmt;
use std::sync::Arc;

/// Shared by every controller of one operator process.
#[derive(Clone)]
pub struct Context {
    pub client: Client,
    pub metrics: Arc<Metrics>,
    /// Namespaces to watch; empty means all.
    pub namespaces: Vec<String>,
    /// This replica's identity.
    pub identity: String,
    /// Feature gates, applied alike by the controllers and the webhook.
    pub features: crds::ironic::IronicValidationOptions,
    /// The namespaces where an Ironic may run, applied alike by the Ironic controller and the
    /// webhook.
    pub ironic_namespaces: crds::ironic::IronicNamespaces,
    /// Host pools opened to NodeSets of other namespaces, applied alike by the NodeSet
    /// controller and the webhook.
    pub host_pools: crds::nodeset::HostPools,
    /// Where hosts may make Ironic reach, applied alike by the host controller and the webhook.
    pub host_access: crds::baremetalhost::access::HostAccess,
    /// The operator's own ServiceAccount, which no NodeSetService may run as.
    pub reserved_account: Option<crds::nodesetservice::ReservedAccount>,
}

impl Context {
    /// One scope per watched namespace, or one for the whole cluster.
    pub fn scopes(&self) -> Vec<Scope> {
        if self.namespaces.is_empty() {
            vec![Scope { client: self.client.clone(), namespace: None }]
        } else {
            self.namespaces
                .iter()
                .map(|ns| Scope { client: self.client.clone(), namespace: Some(ns.clone()) })
                .collect()
        }
    }

    /// An Event publisher reporting as `controller`.
    pub fn publisher(&self, controller: &str) -> Publisher {
        Publisher::new(self.client.clone(), controller, &self.identity)
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }
}

/// What one controller instance watches: a namespace, or every namespace.
#[derive(Clone)]
pub struct Scope {
    client: Client,
    namespace: Option<String>,
}

impl Scope {
    /// The namespace, `None` for the whole cluster.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The parts of this scope within `namespaces` (`None`: every namespace): a scope of one
    /// namespace is itself or nothing; the cluster's is one scope per namespace listed.
    pub fn within(&self, namespaces: Option<&std::collections::BTreeSet<String>>) -> Vec<Scope> {
        match (&self.namespace, namespaces) {
            (_, None) => vec![self.clone()],
            (Some(own), Some(listed)) if listed.contains(own) => vec![self.clone()],
            (Some(_), Some(_)) => Vec::new(),
            (None, Some(listed)) => {
                listed.iter().map(|ns| Scope { client: self.client.clone(), namespace: Some(ns.clone()) }).collect()
            }
        }
    }

    /// An Api over this scope.
    pub fn api<K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>>(&self) -> Api<K> {
        match &self.namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "namespace {namespace}"),
            None => f.write_str("all namespaces"),
        }
    }
}
