//! Cheap per-operation request counters.
//!
//! The operator exports these so that it can show (and its tests can check)
//! that the number of Ironic calls per poll does not grow with the number of
//! hosts. Counting is one relaxed atomic add per HTTP request.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! operations {
    ($($variant:ident => $name:literal,)*) => {
        /// One kind of Ironic API call, the label requests are counted under.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Operation {
            $(#[doc = concat!("`", $name, "`")] $variant,)*
        }

        impl Operation {
            /// Every operation, in a stable order.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant,)*];

            /// A stable snake_case name, suitable as a metrics label.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Operation::$variant => $name,)*
                }
            }
        }
    };
}

operations! {
    Discover => "discover",
    CreateNode => "create_node",
    GetNode => "get_node",
    ListNodes => "list_nodes",
    NodeStatus => "node_status",
    NodeChanges => "node_changes",
    UpdateNode => "update_node",
    DeleteNode => "delete_node",
    SetMaintenance => "set_maintenance",
    ClearMaintenance => "clear_maintenance",
    ValidateNode => "validate_node",
    GetBootDevice => "get_boot_device",
    SetBootDevice => "set_boot_device",
    GetSupportedBootDevices => "get_supported_boot_devices",
    GetInventory => "get_inventory",
    SetProvisionState => "set_provision_state",
    SetPowerState => "set_power_state",
    CreatePort => "create_port",
    ListPorts => "list_ports",
    DeletePort => "delete_port",
    ListBiosSettings => "list_bios_settings",
    ListFirmwareComponents => "list_firmware_components",
    AttachVirtualMedia => "attach_virtual_media",
    DetachVirtualMedia => "detach_virtual_media",
    ListVirtualMedia => "list_virtual_media",
    CreateEventSubscription => "create_event_subscription",
    DeleteEventSubscription => "delete_event_subscription",
    GetEventSubscription => "get_event_subscription",
    ListEventSubscriptions => "list_event_subscriptions",
}

impl Operation {
    /// The discriminants follow declaration order, which is also the order
    /// of [`Operation::ALL`], so they index the counter table directly.
    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Default)]
struct Counter {
    requests: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
}

/// Request counters per [`Operation`]. Share one between clients with
/// [`crate::IronicClientBuilder::metrics`].
pub struct Metrics {
    counters: Vec<Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { counters: Operation::ALL.iter().map(|_| Counter::default()).collect() }
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.snapshot()).finish()
    }
}

/// The counters of one operation at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationStats {
    /// Which operation.
    pub operation: Operation,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries of an earlier attempt.
    pub retries: u64,
    /// Calls that finally failed (after any retries).
    pub failures: u64,
}

impl Metrics {
    /// Fresh counters, all zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn counter(&self, op: Operation) -> &Counter {
        &self.counters[op.index()]
    }

    pub(crate) fn record_request(&self, op: Operation) {
        self.counter(op).requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_retry(&self, op: Operation) {
        self.counter(op).retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_failure(&self, op: Operation) {
        self.counter(op).failures.fetch_add(1, Ordering::Relaxed);
    }

    /// HTTP requests sent for `op`, retries included.
    pub fn requests(&self, op: Operation) -> u64 {
        self.counter(op).requests.load(Ordering::Relaxed)
    }

    /// HTTP requests sent for every operation.
    pub fn total_requests(&self) -> u64 {
        Operation::ALL.iter().map(|op| self.requests(*op)).sum()
    }

    /// The counters of every operation.
    pub fn snapshot(&self) -> Vec<OperationStats> {
        Operation::ALL
            .iter()
            .map(|op| {
                let c = self.counter(*op);
                OperationStats {
                    operation: *op,
                    requests: c.requests.load(Ordering::Relaxed),
                    retries: c.retries.load(Ordering::Relaxed),
                    failures: c.failures.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_operation() {
        let m = Metrics::new();
        m.record_request(Operation::GetNode);
        m.record_request(Operation::GetNode);
        m.record_retry(Operation::GetNode);
        m.record_request(Operation::NodeStatus);
        m.record_failure(Operation::DeletePort);
        assert_eq!(m.requests(Operation::GetNode), 2);
        assert_eq!(m.requests(Operation::NodeStatus), 1);
        assert_eq!(m.total_requests(), 3);
        let last = m.snapshot().into_iter().find(|s| s.operation == Operation::DeletePort);
        assert_eq!(last.map(|s| s.failures), Some(1));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Operation::ALL.iter().map(|op| op.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Operation::ALL.len());
    }
}
