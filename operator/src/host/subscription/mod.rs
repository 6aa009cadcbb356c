//! `BMCEventSubscription` (baremetal-operator's): a Redfish event subscription on the BMC of a
//! host in the same namespace, made, kept and deleted through Ironic's redfish vendor passthru.
//!
//! - `controller`: the watch per scope, woken by changes of the spec and by its requeues;
//! - `reconcile`: the steps: dereference the host → headers → the BMC's subscription → status;
//! - `headers`: the HTTP headers from the Secret the spec names, checked;
//! - `bmc`: what the BMC has and the calls that make it match the spec (adopting one already
//!   made for this object before a crash, never making a second);
//! - `status`: the status, `Ready` and Events (pure).

mod bmc;
mod controller;
mod headers;
mod reconcile;
mod status;

pub(super) use controller::run;
