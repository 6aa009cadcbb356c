//! `DataImage` (baremetal-operator's): an ISO attached to a provisioned host's virtual CD at
//! its power on, as baremetal-operator attaches it.
//!
//! - `gate`: when the host controller handles a host's data image (its power on) and what the
//!   object wants then;
//! - `record`: the record in the node of what ferrometal attached, and the step's decision
//!   (pure);
//! - `step`: the host's step: the record first, then Ironic's virtual media call;
//! - `controller`, `reconcile`, `status`: the `DataImage` controller: the finalizer, the owner,
//!   and the status read from the node's record.

mod controller;
mod gate;
mod reconcile;
mod record;
#[cfg(test)]
mod record_tests;
mod status;
pub(super) mod step;

pub(super) use controller::run;
pub(crate) use gate::{Settled, Want, at_power_on, due};
