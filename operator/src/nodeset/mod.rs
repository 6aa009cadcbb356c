//! The `NodeSet` controller: claims BareMetalHosts for a NodeSet's hosts, provisions each
//! once, and rolls day-2 configuration out in place as NodeSetService Jobs. No machine is ever
//! deprovisioned unless a user explicitly asks for that machine (a new `reprovisionToken`, or a
//! removal or deletion under `deletionPolicy: Deprovision`). See `design/nodeset.md`.
//!
//! Each reconcile is a pipeline of named steps, each with its own error:
//! - `dereference`: the NodeSet's BareMetalHosts, HardwareData, NodeSetServices and Jobs,
//!   from watch caches (`facts`);
//! - `validate` (pure): the webhook's rules again, unknown services, refused namespaces;
//! - `plan` (pure): from its `basis` (what every step reads), `placement` with `claims` (which
//!   BareMetalHost backs each host, `select` says which may) and `machine` (provision once,
//!   reprovision on request), `rollout` (which services run on which hosts, in batches of
//!   `maxUnavailable`), and the writes: `machine_writes` and `consumer` (a consumer's fields on
//!   a BareMetalHost), `job` and `inventory` (service Jobs), `network_data`;
//! - `apply`: the writes, BareMetalHosts with the one field manager, Jobs and inventory
//!   Secrets through a ledger owned by the NodeSet;
//! - `status` (pure): status, conditions and Events from what was applied.
//!
//! `reconcile` runs them (and the deletion policy behind the finalizer); `controller` wires the
//! watches; `memory` keeps what the caches do not show yet.

mod apply;
mod basis;
mod claims;
pub(crate) mod config;
mod consumer;
mod controller;
mod dereference;
mod facts;
mod firmware;
mod guard;
mod host_status;
mod inventory;
mod job;
mod lost;
mod machine;
mod machine_writes;
mod memory;
#[cfg(test)]
mod model;
mod network_data;
mod placement;
mod plan;
mod reconcile;
mod record;
mod rollout;
#[cfg(test)]
mod scale_bench;
mod select;
mod service_status;
mod sources;
mod status;
mod upgrade;
mod validate;

pub(crate) use config::{Config, NodeSetArgs};
pub(crate) use controller::run;
pub use job::{HOSTS_ANNOTATION, INVENTORY_KEY, SERVICE_ANNOTATION};
