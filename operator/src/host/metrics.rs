//! The controller's metrics: Ironic requests by operation (copied from the
//! client's counters into `ferrometal_ironic_requests_total`), bulk polls,
//! and the provisioning slots in use.

use crate::metrics::Metrics;
use ironic_client::Operation;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::{Arc, Mutex};

/// Copies the Ironic client's request counters into the operator's metrics.
pub(super) struct IronicMetricsSync {
    client: Arc<ironic_client::Metrics>,
    exported: Arc<Metrics>,
    last: Mutex<Vec<u64>>,
    polls: Counter,
    slots: Gauge,
}

impl IronicMetricsSync {
    pub(super) fn new(client: Arc<ironic_client::Metrics>, exported: Arc<Metrics>) -> Self {
        let polls = exported.registered(
            "host_bulk_polls",
            "Bulk polls of Ironic's nodes by the host controller",
            Counter::default,
        );
        let slots = exported.registered(
            "host_provisioning_slots_in_use",
            "Provisioning slots held by hosts this replica moved into a busy state",
            Gauge::default,
        );
        // A controller started again (its replica's shards changed) holds no slot yet: the
        // gauge must not show the last controller's until a reconcile of this one sets it.
        slots.set(0);
        Self { client, exported, last: Mutex::new(vec![0; Operation::ALL.len()]), polls, slots }
    }

    /// Adds the requests made since the last call.
    pub(super) fn sync(&self) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        for (i, op) in Operation::ALL.iter().enumerate() {
            let now = self.client.requests(*op);
            let before = last.get(i).copied().unwrap_or_default();
            if now > before {
                self.exported.ironic_requests(op.as_str(), now - before);
                if let Some(slot) = last.get_mut(i) {
                    *slot = now;
                }
            }
        }
    }

    /// Counts one completed bulk poll.
    pub(super) fn polled(&self) {
        self.polls.inc();
    }

    /// Records the slots in use.
    pub(super) fn slots_in_use(&self, n: usize) {
        self.slots.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_requests_are_added() {
        let exported = Arc::new(Metrics::new());
        let client = Arc::new(ironic_client::Metrics::new());
        let sync = IronicMetricsSync::new(client, exported.clone());
        sync.sync();
        assert_eq!(exported.ironic_request_count("node_status"), 0);
        sync.polled();
        assert!(exported.encode().contains("ferrometal_host_bulk_polls_total 1"));
    }

    #[test]
    fn a_controller_started_again_counts_on_the_same_exported_polls_and_slots() {
        let exported = Arc::new(Metrics::new());
        for _ in 0..2 {
            let sync = IronicMetricsSync::new(Arc::new(ironic_client::Metrics::new()), exported.clone());
            sync.polled();
            sync.slots_in_use(3);
        }
        let text = exported.encode();
        assert_eq!(text.matches("# TYPE ferrometal_host_bulk_polls counter").count(), 1, "{text}");
        assert_eq!(text.matches("# TYPE ferrometal_host_provisioning_slots_in_use gauge").count(), 1, "{text}");
        assert!(text.contains("ferrometal_host_bulk_polls_total 2"), "{text}");
    }

    #[test]
    fn a_controller_started_again_shows_no_slot_until_it_holds_one() {
        let exported = Arc::new(Metrics::new());
        IronicMetricsSync::new(Arc::new(ironic_client::Metrics::new()), exported.clone()).slots_in_use(3);
        let again = IronicMetricsSync::new(Arc::new(ironic_client::Metrics::new()), exported.clone());
        let text = exported.encode();
        assert!(text.contains("ferrometal_host_provisioning_slots_in_use 0"), "{text}");
        again.slots_in_use(1);
        let text = exported.encode();
        assert!(text.contains("ferrometal_host_provisioning_slots_in_use 1"), "{text}");
    }
}
