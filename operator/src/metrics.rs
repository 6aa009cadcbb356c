//! Prometheus metrics, served on /metrics by the health server.
//!
//! Counters are readable in-process too, so tests and benchmarks can assert
//! on work done (reconciles, status writes, Ironic calls) without scraping.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};
use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ControllerLabels {
    pub controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ErrorLabels {
    pub controller: String,
    pub error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ServerLabels {
    pub server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CutLabels {
    pub server: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    pub verb: &'static str,
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ShardLeaseLabels {
    pub attempt: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OperationLabels {
    pub operation: String,
}

/// The operator's metrics.
pub struct Metrics {
    registry: Mutex<Registry>,
    /// The metrics registered by name, each once: a controller started again (a replica's
    /// shards changed) gets the same counters back, where registering anew would expose one
    /// name twice, which Prometheus refuses.
    named: Mutex<HashMap<&'static str, Box<dyn Any + Send>>>,
    reconciles: Family<ControllerLabels, Counter>,
    failures: Family<ErrorLabels, Counter>,
    durations: Family<ControllerLabels, Histogram>,
    status_writes: Family<ControllerLabels, Counter>,
    ironic_requests: Family<OperationLabels, Counter>,
    apiserver_requests: Family<RequestLabels, Counter>,
    leader: Gauge,
    lease_renewal_failures: Counter,
    shard_lease_failures: Family<ShardLeaseLabels, Counter>,
    connections: Family<ServerLabels, Gauge>,
    connections_cut: Family<CutLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("ferrometal");
        let reconciles = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        let durations = Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 16))
        });
        let status_writes = Family::<ControllerLabels, Counter>::default();
        let ironic_requests = Family::<OperationLabels, Counter>::default();
        registry.register("reconciles", "Reconciles run, by controller", reconciles.clone());
        registry.register("reconcile_failures", "Reconciles that failed, by controller and error", failures.clone());
        registry.register("reconcile_duration_seconds", "Time spent in a reconcile, by controller", durations.clone());
        registry.register("status_writes", "Status subresource writes, by controller", status_writes.clone());
        registry.register("ironic_requests", "Requests sent to Ironic's API, by operation", ironic_requests.clone());
        let apiserver_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_requests",
            "Requests sent to the Kubernetes apiserver, by verb (get, watch, create, update, patch, delete) and resource",
            apiserver_requests.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica runs the controllers (with leader election: while it holds the lease)",
            leader.clone(),
        );
        let lease_renewal_failures = Counter::default();
        registry.register(
            "leader_lease_renewal_failures",
            "Attempts to renew the held leader lease that failed or timed out",
            lease_renewal_failures.clone(),
        );
        let shard_lease_failures = Family::<ShardLeaseLabels, Counter>::default();
        registry.register(
            "shard_lease_failures",
            "Reads and writes of shard Leases that failed, timed out or lost a race, by what was \
             attempted (read, take, renewal, request, release)",
            shard_lease_failures.clone(),
        );
        let connections = Family::<ServerLabels, Gauge>::default();
        registry.register(
            "server_connections",
            "Connections a server (webhook, health) holds open (at most its connection cap), by server",
            connections.clone(),
        );
        let connections_cut = Family::<CutLabels, Counter>::default();
        registry.register(
            "server_connections_cut",
            "Connections a server closed or refused to bound what one client can hold, by server and reason",
            connections_cut.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            named: Mutex::new(HashMap::new()),
            reconciles,
            failures,
            durations,
            status_writes,
            ironic_requests,
            apiserver_requests,
            leader,
            lease_renewal_failures,
            shard_lease_failures,
            connections,
            connections_cut,
        }
    }

    /// Starts timing a reconcile of `controller`; the timer records when dropped.
    pub fn reconcile(&self, controller: &str) -> ReconcileTimer<'_> {
        let labels = ControllerLabels { controller: controller.to_string() };
        self.reconciles.get_or_create(&labels).inc();
        ReconcileTimer { metrics: self, labels, start: Instant::now() }
    }

    /// Counts a failed reconcile, labelled by a short error name.
    pub fn reconcile_failed(&self, controller: &str, error: &str) {
        self.failures.get_or_create(&ErrorLabels { controller: controller.into(), error: error.into() }).inc();
    }

    /// Counts a status write.
    pub fn status_written(&self, controller: &str) {
        self.status_writes.get_or_create(&ControllerLabels { controller: controller.into() }).inc();
    }

    /// Counts `n` requests to Ironic of `operation`.
    pub fn ironic_requests(&self, operation: &str, n: u64) {
        self.ironic_requests.get_or_create(&OperationLabels { operation: operation.into() }).inc_by(n);
    }

    /// Counts a request to the apiserver of `verb` on `resource`.
    pub(crate) fn apiserver_request(&self, verb: &'static str, resource: &str) {
        self.apiserver_requests.get_or_create(&RequestLabels { verb, resource: resource.into() }).inc();
    }

    /// Requests to the apiserver so far of `verb` on `resource`.
    pub fn apiserver_request_count(&self, verb: &'static str, resource: &str) -> u64 {
        self.apiserver_requests.get_or_create(&RequestLabels { verb, resource: resource.into() }).get()
    }

    /// Whether this replica leads (holds the lease and runs the controllers).
    pub fn set_leading(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Whether this replica leads now.
    pub fn leading(&self) -> bool {
        self.leader.get() == 1
    }

    /// Counts a failed renewal of the held leader lease.
    pub fn lease_renewal_failed(&self) {
        self.lease_renewal_failures.inc();
    }

    /// Failed renewals of the leader lease so far.
    pub fn lease_renewal_failure_count(&self) -> u64 {
        self.lease_renewal_failures.get()
    }

    /// Counts a read or write of a shard Lease that failed or lost a race; `attempt` says what
    /// it was (`read`, `take`, `renewal`, `request`, `release`).
    pub(crate) fn shard_lease_failed(&self, attempt: &'static str) {
        self.shard_lease_failures.get_or_create(&ShardLeaseLabels { attempt }).inc();
    }

    /// Shard Lease attempts of the kind `attempt` that failed or lost a race so far.
    pub fn shard_lease_failure_count(&self, attempt: &'static str) -> u64 {
        self.shard_lease_failures.get_or_create(&ShardLeaseLabels { attempt }).get()
    }

    /// Counts a connection of `server` opening (`true`) or closing (`false`).
    pub fn connection(&self, server: &str, open: bool) {
        let gauge = self.connections.get_or_create(&ServerLabels { server: server.into() });
        if open {
            gauge.inc();
        } else {
            gauge.dec();
        }
    }

    /// Connections `server` holds open now.
    pub fn open_connections(&self, server: &str) -> i64 {
        self.connections.get_or_create(&ServerLabels { server: server.into() }).get()
    }

    /// Counts a connection of `server` closed or refused for `reason` (`handshake_timeout`,
    /// `no_request`, `idle`, `max_age`, `per_source`).
    pub fn connection_cut(&self, server: &str, reason: &str) {
        self.connections_cut.get_or_create(&CutLabels { server: server.into(), reason: reason.into() }).inc();
    }

    /// Connections of `server` closed or refused so far for `reason`.
    pub fn cut_count(&self, server: &str, reason: &str) -> u64 {
        self.connections_cut.get_or_create(&CutLabels { server: server.into(), reason: reason.into() }).get()
    }

    /// Reconciles run so far by `controller`.
    pub fn reconcile_count(&self, controller: &str) -> u64 {
        self.reconciles.get_or_create(&ControllerLabels { controller: controller.into() }).get()
    }

    /// Status writes so far by `controller`.
    pub fn status_write_count(&self, controller: &str) -> u64 {
        self.status_writes.get_or_create(&ControllerLabels { controller: controller.into() }).get()
    }

    /// Ironic requests so far of `operation`.
    pub fn ironic_request_count(&self, operation: &str) -> u64 {
        self.ironic_requests.get_or_create(&OperationLabels { operation: operation.into() }).get()
    }

    /// The metric registered as `name`, registered with `help` the first time (`make` builds
    /// it); the same one on every later call, so that counters live as long as the process.
    /// When `name` was registered as another type (a programming error, logged) the metric
    /// `make` builds is counted but not exported.
    pub fn registered<M>(&self, name: &'static str, help: &str, make: impl FnOnce() -> M) -> M
    where
        M: Metric + Clone + Send,
    {
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = named.get(name) {
            return known.downcast_ref::<M>().cloned().unwrap_or_else(|| {
                tracing::error!(metric = name, "a metric is registered again as another type; not exported");
                make()
            });
        }
        let metric = make();
        self.registry.lock().unwrap_or_else(|e| e.into_inner()).register(name, help, metric.clone());
        named.insert(name, Box::new(metric.clone()));
        metric
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::warn!(error = %err, "cannot encode metrics");
        }
        out
    }
}

/// Records a reconcile's duration when dropped.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    labels: ControllerLabels,
    start: Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics.durations.get_or_create(&self.labels).observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_readable_and_exported() {
        let metrics = Metrics::new();
        drop(metrics.reconcile("host"));
        metrics.status_written("host");
        metrics.ironic_requests("list_nodes", 2);
        metrics.apiserver_request("patch", "events");
        assert_eq!(metrics.reconcile_count("host"), 1);
        assert_eq!(metrics.apiserver_request_count("patch", "events"), 1);
        assert_eq!(metrics.status_write_count("host"), 1);
        assert_eq!(metrics.ironic_request_count("list_nodes"), 2);
        let text = metrics.encode();
        assert!(text.contains("ferrometal_ironic_requests_total{operation=\"list_nodes\"} 2"), "{text}");
        assert!(text.contains("ferrometal_reconcile_duration_seconds_count{controller=\"host\"} 1"), "{text}");
        assert!(text.contains("ferrometal_apiserver_requests_total{verb=\"patch\",resource=\"events\"} 1"), "{text}");
    }

    #[test]
    fn a_metric_registered_again_is_the_same_one_exposed_once() {
        let metrics = Metrics::new();
        for _ in 0..2 {
            metrics.registered("polls", "Polls", Counter::<u64>::default).inc();
        }
        let again = metrics.registered("polls", "Polls", Counter::<u64>::default);
        assert_eq!(again.get(), 2, "both starts counted on one counter");
        let text = metrics.encode();
        assert_eq!(text.matches("# TYPE ferrometal_polls counter").count(), 1, "{text}");
        assert!(text.contains("ferrometal_polls_total 2"), "{text}");
        metrics.registered("polls", "Polls", Gauge::<i64>::default).set(7);
        assert_eq!(metrics.encode(), text, "another type under one name is not exported");
    }
}
