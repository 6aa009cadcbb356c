//! What every controller shares: the client, the watched namespaces, the
//! metrics, and the identity it reports events under.

use crate::events::Events;
use crate::metrics::Metrics;
use kube::api::Api;
use kube::{Client, Resource};
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
}

impl Context {
    /// One Api per watched namespace, or one cluster-wide Api.
    pub fn apis<K>(&self) -> Vec<Api<K>>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        if self.namespaces.is_empty() {
            vec![Api::all(self.client.clone())]
        } else {
            self.namespaces.iter().map(|ns| Api::namespaced(self.client.clone(), ns)).collect()
        }
    }

    /// An Event publisher reporting as `controller`.
    pub fn events(&self, controller: &str) -> Events {
        Events::new(self.client.clone(), controller, &self.identity)
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }
}
