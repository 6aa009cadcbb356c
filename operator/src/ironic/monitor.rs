//! The ServiceMonitor, part of the apply step: whether the Prometheus operator's API is
//! installed is asked of API discovery (through the controller's [`Discovery`] cache, never
//! assumed), then the ServiceMonitor is applied through the ledger or pruned. It is an extra:
//! an API that is not installed, or a permission that is missing, is said in its own condition,
//! `ServiceMonitorReady`, and the Ironic still becomes Ready (the exporter runs and serves
//! metrics either way).

use super::build::service_monitor::api_resource;
use crate::kit::discovery::Discovery;
use crate::kit::{KubeError, Ledger};
use kube::api::DynamicObject;
use std::time::Duration;

// What `run` does to ServiceMonitors (apply, the prune's list and delete), checked against the
// RBAC table at compile time, as `require_access!` does for typed kinds.
const _: () = {
    use crate::install::rbac::{Verb, kinds::SERVICE_MONITORS, permits, table::IRONIC};
    assert!(
        permits(&IRONIC, SERVICE_MONITORS, &[Verb::List, Verb::Create, Verb::Patch, Verb::Delete]),
        "the RBAC table (operator/src/install/rbac/table.rs) does not grant this access"
    );
};

/// The condition the ServiceMonitor's state is reported in.
pub const SERVICE_MONITOR_READY: &str = "ServiceMonitorReady";

/// Reasons of [`SERVICE_MONITOR_READY`].
pub(crate) mod reasons {
    pub(crate) const CREATED: &str = "ServiceMonitorCreated";
    pub(crate) const CRD_MISSING: &str = "ServiceMonitorCRDMissing";
    pub(crate) const FORBIDDEN: &str = crate::kit::error::FORBIDDEN;
}

/// What became of the ServiceMonitor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Monitoring {
    /// [`SERVICE_MONITOR_READY`]: status, reason, message; `None` (none is wanted) removes it.
    pub condition: Option<(bool, &'static str, String)>,
    /// Look again this soon: the API may be installed later, and discovery is asked again
    /// once the cache's answer is stale.
    pub requeue_after: Option<Duration>,
}

impl Monitoring {
    fn unwanted() -> Self {
        Self::default()
    }

    fn created(name: &str, service: &str) -> Self {
        let message = format!("ServiceMonitor {name} selects the metrics port of Service {service}");
        Self { condition: Some((true, reasons::CREATED, message)), requeue_after: None }
    }

    fn missing(discovery: &Discovery) -> Self {
        let resource = api_resource();
        let message = format!(
            "the Prometheus operator's ServiceMonitor API ({} {}) is not installed, so no ServiceMonitor is \
             created; the exporter runs and serves metrics. Install the Prometheus operator's CRDs (it is looked \
             for again every {} s) or set spec.prometheusExporter.disableServiceMonitor",
            resource.api_version,
            resource.plural,
            discovery.refresh().as_secs()
        );
        Self { condition: Some((false, reasons::CRD_MISSING, message)), requeue_after: Some(discovery.refresh()) }
    }

    fn forbidden(err: &KubeError) -> Self {
        let message = err.user_facing().unwrap_or_else(|| err.to_string());
        Self { condition: Some((false, reasons::FORBIDDEN, message)), requeue_after: None }
    }
}

/// Applies `desired` (or, when `None`, removes an earlier one) where the API is installed.
/// Errors worth retrying are returned; a missing API or permission is the condition.
pub(crate) async fn run(
    ledger: &Ledger,
    discovery: &Discovery,
    desired: Option<&DynamicObject>,
    service: &str,
) -> Result<Monitoring, KubeError> {
    let resource = api_resource();
    let served = match discovery.serves(ledger.client(), &resource).await {
        Ok(served) => served,
        Err(err) if desired.is_some() && err.is_forbidden() => return Ok(Monitoring::forbidden(&err)),
        Err(err) if desired.is_some() => return Err(err),
        // Nothing wanted, and no answer: nothing is known to remove; asked again soon.
        Err(err) => {
            tracing::debug!(error = %crate::kit::error::chain(&err), "no answer from API discovery");
            return Ok(Monitoring { requeue_after: Some(discovery.refresh()), ..Monitoring::unwanted() });
        }
    };
    if !served {
        // Without the API no ServiceMonitor can exist: nothing to prune either.
        return Ok(match desired {
            Some(_) => Monitoring::missing(discovery),
            None => Monitoring::unwanted(),
        });
    }
    let outcome = match desired {
        Some(monitor) => match ledger.apply_dynamic(&resource, monitor.clone()).await {
            Ok(_) => Monitoring::created(&monitor.metadata.name.clone().unwrap_or_default(), service),
            Err(err) if err.is_not_found() => {
                // Removed since discovery answered: ask again next time.
                discovery.forget(&resource);
                return Ok(Monitoring::missing(discovery));
            }
            Err(err) if err.is_forbidden() => return Ok(Monitoring::forbidden(&err)),
            Err(err) => return Err(err),
        },
        None => Monitoring::unwanted(),
    };
    ledger.prune_dynamic(&resource).await?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Verb;
    use crate::kit::condition::valid_reason;
    use crate::kit::error::api_error;

    #[test]
    fn a_missing_api_says_what_to_install_and_asks_again_after_the_refresh() {
        let discovery = Discovery::new(Duration::from_secs(300));
        let missing = Monitoring::missing(&discovery);
        let (ready, reason, message) = missing.condition.expect("a condition");
        assert!(!ready);
        assert_eq!(reason, reasons::CRD_MISSING);
        assert!(message.contains("monitoring.coreos.com/v1 servicemonitors"), "{message}");
        assert!(message.contains("disableServiceMonitor") && message.contains("300 s"), "{message}");
        assert_eq!(missing.requeue_after, Some(Duration::from_secs(300)));
    }

    #[test]
    fn a_missing_permission_names_it() {
        let err = KubeError::new(Verb::Apply, "ServiceMonitor", "ironic-metrics", api_error(403, "forbidden"));
        let (ready, reason, message) = Monitoring::forbidden(&err).condition.expect("a condition");
        assert!(!ready);
        assert_eq!(reason, reasons::FORBIDDEN);
        assert!(message.contains("may not write ServiceMonitor ironic-metrics"), "{message}");
    }

    #[test]
    fn created_names_the_monitor_and_the_service_and_reasons_are_valid() {
        let (ready, reason, message) = Monitoring::created("ironic-metrics", "ironic").condition.expect("a condition");
        assert!(ready && reason == reasons::CREATED);
        assert_eq!(message, "ServiceMonitor ironic-metrics selects the metrics port of Service ironic");
        for reason in [reasons::CREATED, reasons::CRD_MISSING, reasons::FORBIDDEN] {
            assert_eq!(valid_reason(reason), reason);
        }
        assert_eq!(Monitoring::unwanted().condition, None);
    }
}
