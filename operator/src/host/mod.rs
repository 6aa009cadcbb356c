//! The `BareMetalHost` controller: the whole host lifecycle through Ironic,
//! compatible with metal3's baremetal-operator (see `design/hosts.md`).
//!
//! Each reconcile is a pipeline: metadata (paused, finalizer, restored
//! status) → facts (spec, status, annotations, Secrets, the node as the last
//! bulk poll saw it) → [`machine::plan`], a pure state machine → one Ironic
//! call or one state change → status, written only when it changed.
//!
//! - [`config`]: flags and configuration (how to find Ironic, limits, intervals);
//! - `connection`: the Ironic client, from an `Ironic` resource or an endpoint;
//! - `driver`: BMC scheme → Ironic driver, interfaces and `driver_info`;
//! - [`machine`]: the provisioning state machine;
//! - `poller`: one paginated bulk list of Ironic nodes per interval for all hosts;
//! - `capacity`: the provisioning limit across hosts;
//! - `actions`, `instance`, `configdrive`, `hardware`: what each Ironic step sends and reads;
//! - `reconcile`, `status`, `metadata`, `secrets`: the pipeline around them;
//! - `controller`: the kube-runtime controllers and the poller task.

mod actions;
mod capacity;
pub mod config;
mod configdrive;
mod connection;
mod controller;
mod driver;
mod hardware;
mod instance;
pub mod machine;
mod metadata;
mod metrics;
mod poller;
mod reconcile;
mod secrets;
mod status;
mod wake;

pub use config::{
    CaSource, Config, CredentialsSource, DEFAULT_PROVISIONING_LIMIT, EndpointConfig, HostArgs, IronicSource,
};
pub use controller::run;

/// Why the host controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The controller could not start.
    #[error("the host controller cannot start: {0}")]
    Start(String),
}
