//! What the reconciles of all hosts share ([`HostContext`]), and the narrow views of it the
//! steps take: what gathering reads ([`Reads`]), the Ironic side execution acts through
//! ([`IronicSide`]), and the Kubernetes writer ([`Writer`]). A step sees only its view, never
//! the whole context, so that `host/` stays a one-way graph: `reconcile` → steps → shared
//! pieces (this file among them).

use crate::host::capacity::Capacity;
use crate::host::config::Config;
use crate::host::connection::Provisioner;
use crate::host::firmware::{Wanted, WantedUpdates};
use crate::host::memory::Memory;
use crate::host::metrics::IronicMetricsSync;
use crate::host::poller::Poller;
use crate::host::trouble::Troubles;
use crate::host::wake::{HostKey, Wakeups};
use crate::kit::Publisher;
use crate::kit::backoff::spread;
use crate::kit::runner::Runner;
use crate::metrics::Metrics;
use kube::runtime::controller::Action;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "host";

/// Everything the reconciles of all hosts share.
pub(super) struct HostContext {
    pub(super) runner: Runner,
    pub(super) kube: kube::Client,
    pub(super) config: Config,
    pub(super) provisioner: Provisioner,
    pub(super) poller: Poller,
    pub(super) capacity: Capacity,
    pub(super) publisher: Publisher,
    pub(super) memory: Memory,
    /// Ironic calls that keep failing, per host: their backoff and what status says of them.
    pub(super) troubles: Troubles,
    pub(super) ironic_metrics: IronicMetricsSync,
    /// The BIOS settings each host waits for.
    pub(super) firmware: Wanted,
    /// The firmware updates each host waits for.
    pub(super) components: WantedUpdates,
    /// Bounds reconciles across the controllers of all namespaces.
    pub(super) permits: Semaphore,
    /// Wakes hosts' reconciles from outside their watch.
    pub(super) wakeups: Arc<Wakeups>,
}

impl HostContext {
    /// The requeue of a host that waits for nothing in particular: the safety net.
    pub(super) fn resync(&self) -> Action {
        resync(&self.config)
    }

    /// Forgets a host that is gone.
    pub(super) fn forget(&self, key: &HostKey) {
        self.per_host().forget(key);
    }

    /// What the controller keeps per host.
    pub(super) fn per_host(&self) -> PerHost<'_> {
        PerHost {
            poller: &self.poller,
            capacity: &self.capacity,
            memory: &self.memory,
            troubles: &self.troubles,
            firmware: &self.firmware,
            components: &self.components,
        }
    }

    /// What gathering reads.
    pub(super) fn reads(&self) -> Reads<'_> {
        Reads {
            kube: &self.kube,
            config: &self.config,
            provisioner: &self.provisioner,
            poller: &self.poller,
            memory: &self.memory,
            firmware: &self.firmware,
            components: &self.components,
        }
    }

    /// What execution acts through.
    pub(super) fn ironic(&self) -> IronicSide<'_> {
        IronicSide {
            config: &self.config,
            provisioner: &self.provisioner,
            metrics: &self.runner.metrics,
            hosts: self.per_host(),
        }
    }

    /// What the Kubernetes writes go through.
    pub(super) fn writer(&self) -> Writer<'_> {
        Writer { kube: &self.kube, metrics: &self.runner.metrics, publisher: &self.publisher, hosts: self.per_host() }
    }
}

fn resync(config: &Config) -> Action {
    Action::requeue(spread(config.resync_interval))
}

/// What the controller keeps per host between reconciles; all of it is dropped together when
/// the host is gone, so that a host re-created under the same name starts afresh.
#[derive(Clone, Copy)]
pub(super) struct PerHost<'a> {
    pub(super) poller: &'a Poller,
    pub(super) capacity: &'a Capacity,
    pub(super) memory: &'a Memory,
    pub(super) troubles: &'a Troubles,
    pub(super) firmware: &'a Wanted,
    pub(super) components: &'a WantedUpdates,
}

impl PerHost<'_> {
    /// Forgets a host that is gone.
    pub(super) fn forget(&self, key: &HostKey) {
        self.poller.forget(key);
        self.capacity.release(key);
        self.memory.forget(key);
        self.troubles.clear(key);
        self.firmware.forget(key);
        self.components.forget(key);
    }
}

/// What gathering reads: the Secrets (through `kube`), the node as the poller saw it, the
/// power change last asked for, and whether Ironic is configured at all. It writes nothing to
/// Kubernetes; `memory` only drops a power change the node has reached.
#[derive(Clone, Copy)]
pub(super) struct Reads<'a> {
    pub(super) kube: &'a kube::Client,
    pub(super) config: &'a Config,
    pub(super) provisioner: &'a Provisioner,
    pub(super) poller: &'a Poller,
    pub(super) memory: &'a Memory,
    pub(super) firmware: &'a Wanted,
    pub(super) components: &'a WantedUpdates,
}

/// The Ironic side of a reconcile: the client, and the per-host state an Ironic step moves
/// (slots, failing calls, the poll to wait for, the power change asked for).
#[derive(Clone, Copy)]
pub(super) struct IronicSide<'a> {
    pub(super) config: &'a Config,
    pub(super) provisioner: &'a Provisioner,
    pub(super) metrics: &'a Metrics,
    pub(super) hosts: PerHost<'a>,
}

impl IronicSide<'_> {
    /// The requeue of a host that waits for nothing in particular: the safety net.
    pub(super) fn resync(&self) -> Action {
        resync(self.config)
    }
}

/// Every Kubernetes write after deciding: status, Events, metadata, and what the writes change
/// in the per-host state (the write cache, slots given back, a released host forgotten).
#[derive(Clone, Copy)]
pub(super) struct Writer<'a> {
    pub(super) kube: &'a kube::Client,
    pub(super) metrics: &'a Metrics,
    pub(super) publisher: &'a Publisher,
    pub(super) hosts: PerHost<'a>,
}
