//! The `BareMetalHost` controller: the whole host lifecycle through Ironic,
//! compatible with metal3's baremetal-operator (see `design/hosts.md`).
//!
//! Each reconcile ([`reconcile`]) is a list of steps: admit (paused, finalizer) → restore a
//! re-created host's status → gather (the host, its Secrets and the node as the last bulk
//! poll saw it, decoded once into [`machine::Facts`] and a request) → [`machine::plan`], a
//! pure state machine → execute at most one Ironic step → write (status only when it changed).
//!
//! - [`config`]: flags and configuration (how to find Ironic, limits, intervals);
//! - `controller`: the kube-runtime controller per scope, run by the kit, and the poller task;
//! - `reconcile`: the list of steps, the only module that sees all of them; `context`: what
//!   the reconciles share, and the narrow view of it each step takes (reads, the Ironic side,
//!   the writer); `handoff`: what one step hands to the next; `error`: why a reconcile fails;
//! - `memory`: the host as our last write returned it (the kit's write cache, `Recent`), and
//!   the last power change asked for;
//! - `decode`: fact gathering (facts and request from one look at the host);
//!   `request`: the request value, with the BMC address parsed once;
//! - [`machine`]: the provisioning state machine;
//! - `execute`: carrying out the plan into a draft; `actions`: the Ironic calls of each step,
//!   from the request alone; `draft`: the status being drafted; `write`: every Kubernetes
//!   write after deciding; `restore`: status restore from the status annotation;
//! - `driver`, `instance`, `configdrive`, `hardware`: what Ironic is sent and what it returns;
//! - `status`, `metadata`, `secrets`: the host's status, finalizer and annotations, and the
//!   Secrets it names;
//! - `connection`: the Ironic client, from an `Ironic` resource or an endpoint;
//! - `poller`: one bulk look at Ironic's nodes per interval for all hosts (the nodes changed
//!   since the last, with a full list now and then), kept in a `snapshot`;
//!   `capacity`: the provisioning limit across hosts; `wake`: host keys and wake-ups;
//!   `shard`: which hosts this replica serves when replicas divide them into shards;
//!   `metrics`: the controller's own metrics;
//! - `firmware`: the `HostFirmwareSettings` controller, and `components`: the
//!   `HostFirmwareComponents` controller, run beside the host controller through its Ironic
//!   connection.

mod actions;
mod capacity;
mod components;
pub(crate) mod config;
mod configdrive;
mod connection;
mod context;
mod controller;
#[cfg(test)]
mod cost_bench;
mod dataimage;
mod decode;
mod draft;
pub(crate) mod driver;
mod error;
mod execute;
mod firmware;
mod handoff;
mod hardware;
mod index;
mod instance;
pub(crate) mod machine;
mod memory;
mod metadata;
mod metrics;
mod own_writes;
mod owned;
mod poller;
mod preprov;
mod reconcile;
mod refresh;
mod request;
mod restore;
mod secrets;
pub(crate) mod shard;
mod share;
mod snapshot;
mod status;
mod subscription;
mod trouble;
mod unsupported;
mod wake;
mod write;

pub(crate) use config::{Config, HostArgs};
pub(crate) use controller::run;
