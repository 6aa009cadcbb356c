//! The `Ironic` controller: from an `Ironic` (ironic-standalone-operator's API) to a running,
//! authenticated, TLS-secured, upgradable Ironic.
//!
//! Each reconcile is a list of named steps, each in its own file with its own error
//! ([`reconcile`] reads as that list; see `design/ironic.md`):
//! - [`dereference`]: the only step that reads: the Ironic afresh, the linked Secrets and
//!   ConfigMaps, the operator's generated Secrets, the cert-manager Secret, node addresses;
//! - [`validate`], pure: the webhook's rules again, the version, the linked objects' keys;
//! - the database: [`crate::database::reconcile`] runs a managed MariaDB or checks an external
//!   one; its progress decides whether Ironic may roll out;
//! - [`resolve`]: a `Resolved` value with networking, ports and addresses computed once, the
//!   API [`credentials`], [`tls`] and the content [`hash`];
//! - [`build`]: pure render functions, one per object, from `&Resolved`;
//! - [`apply`]: the supporting objects through the kit's ledger, each kind pruned, and the
//!   ServiceMonitor where its API is installed ([`monitor`]);
//! - [`sequence`]: the gates, the upgrade Jobs around the rollout ([`upgrade`] plans them);
//! - [`status`], pure: conditions, versions, endpoints and an Event per transition.
//!
//! [`controller`] wires the watches and the finalizer into the kit's runner; [`error`] says
//! which failures are conditions.

pub(crate) mod apply;
pub(crate) mod build;
pub(crate) mod config;
pub(crate) mod controller;
pub(crate) mod credentials;
pub(crate) mod dereference;
pub(crate) mod error;
pub(crate) mod hash;
pub(crate) mod linked;
pub(crate) mod monitor;
pub(crate) mod names;
pub(crate) mod nodes;
pub(crate) mod reconcile;
pub(crate) mod resolve;
pub(crate) mod sequence;
pub(crate) mod status;
pub(crate) mod tls;
pub(crate) mod unsupported;
pub(crate) mod upgrade;
pub(crate) mod validate;
pub(crate) mod version;

#[cfg(test)]
mod fixtures;

use crate::kit::Context;
use crate::kit::runner::{Stopped, fan_out};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(crate) use config::{Config, IronicArgs};

/// Runs the controller until `shutdown`: one per watched namespace, or one for all.
pub(crate) async fn run(ctx: Arc<Context>, config: Config, shutdown: CancellationToken) -> Result<(), Stopped> {
    let controller = Arc::new(controller::IronicController::new(ctx.clone(), config));
    fan_out("ironic", ctx.scopes(), |scope| controller::run_scope(controller.clone(), scope, shutdown.clone())).await
}
