//! Whether the apiserver serves an optional API (a CRD another project installs, such as the
//! Prometheus operator's ServiceMonitor), asked of API discovery and remembered for a while.
//!
//! One discovery request per API and refresh interval, shared by every reconcile of the
//! controller that holds the cache: without it, each reconcile of each object would ask again,
//! forever. An answer lives `refresh` long, so an API installed (or removed) later is seen
//! within that time; a write that finds the API gone calls [`Discovery::forget`], so the next
//! reconcile asks again at once. Failures are not remembered: they are retried with the
//! reconcile.

use super::error::{KubeError, Verb};
use kube::Client;
use kube::api::ApiResource;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The remembered answers of API discovery.
#[derive(Debug)]
pub(crate) struct Discovery {
    refresh: Duration,
    /// Per `group/version/plural`: served or not, and when that was learned.
    seen: Mutex<HashMap<String, (bool, Instant)>>,
}

fn key(resource: &ApiResource) -> String {
    format!("{}/{}", resource.api_version, resource.plural)
}

impl Discovery {
    /// A cache whose answers live `refresh` long.
    pub(crate) fn new(refresh: Duration) -> Self {
        Self { refresh, seen: Mutex::default() }
    }

    /// How long an answer lives: how soon an API installed later is seen.
    pub(crate) fn refresh(&self) -> Duration {
        self.refresh
    }

    /// Whether the apiserver serves `resource` (its group, version and plural), from the cache
    /// while the answer is fresh, else from discovery. A group or version the apiserver does
    /// not know (404) is an answer: not served.
    pub(crate) async fn serves(&self, client: &Client, resource: &ApiResource) -> Result<bool, KubeError> {
        if let Some(served) = self.cached(resource, Instant::now()) {
            return Ok(served);
        }
        let served = match client.list_api_group_resources(&resource.api_version).await {
            Ok(list) => list.resources.iter().any(|r| r.name == resource.plural),
            Err(err) if super::error::code(&err) == Some(404) => false,
            Err(err) => return Err(KubeError::new(Verb::Get, "API", resource.api_version.clone(), err)),
        };
        self.remember(resource, served, Instant::now());
        Ok(served)
    }

    /// Drops the answer about `resource`: a write found it gone, or it is worth asking again.
    pub(crate) fn forget(&self, resource: &ApiResource) {
        self.lock().remove(&key(resource));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (bool, Instant)>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cached(&self, resource: &ApiResource, now: Instant) -> Option<bool> {
        let seen = self.lock();
        let (served, at) = seen.get(&key(resource))?;
        (now.saturating_duration_since(*at) < self.refresh).then_some(*served)
    }

    fn remember(&self, resource: &ApiResource, served: bool, now: Instant) {
        self.lock().insert(key(resource), (served, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::GroupVersionKind;

    fn resource(kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("monitoring.coreos.com", "v1", kind), plural)
    }

    #[test]
    fn an_answer_is_kept_for_the_refresh_interval_then_asked_again() {
        let discovery = Discovery::new(Duration::from_secs(300));
        let monitors = resource("ServiceMonitor", "servicemonitors");
        let start = Instant::now();
        assert_eq!(discovery.cached(&monitors, start), None, "nothing known yet");
        discovery.remember(&monitors, false, start);
        assert_eq!(discovery.cached(&monitors, start + Duration::from_secs(299)), Some(false));
        assert_eq!(discovery.cached(&monitors, start + Duration::from_secs(300)), None, "stale: ask again");
        assert_eq!(discovery.refresh(), Duration::from_secs(300));
    }

    #[test]
    fn answers_are_per_resource_and_can_be_forgotten() {
        let discovery = Discovery::new(Duration::from_secs(300));
        let (monitors, rules) =
            (resource("ServiceMonitor", "servicemonitors"), resource("PrometheusRule", "prometheusrules"));
        let now = Instant::now();
        discovery.remember(&monitors, true, now);
        assert_eq!(discovery.cached(&rules, now), None, "another plural of the same group is its own question");
        discovery.forget(&monitors);
        assert_eq!(discovery.cached(&monitors, now), None);
    }
}
