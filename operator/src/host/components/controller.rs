//! Wiring: one controller of `HostFirmwareComponents` per watched scope, woken when a spec
//! changes (a new generation), by its own requeues and by the host controller once a host
//! settled or was written managed, never by its status writes.

use super::reconcile::{CONTROLLER, ComponentsReconciler};
use crate::host::context::HostContext;
use crate::host::firmware::{named_after, runner, watch};
use crate::kit::Context;
use crate::kit::runner::{Stopped, drive, fan_out};
use crds::firmware::HostFirmwareComponents;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareComponents: List, Watch);

/// Runs the controllers of every scope until `shutdown`.
pub(crate) async fn run(ctx: &Context, hosts: Arc<HostContext>, shutdown: CancellationToken) -> Result<(), Stopped> {
    let reconciler =
        Arc::new(ComponentsReconciler { runner: runner(ctx, CONTROLLER), publisher: ctx.publisher(CONTROLLER), hosts });
    fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let reads = reconciler.hosts.components.reads(scope.namespace().map(str::to_string));
        let controller = watch(&scope, &reconciler.hosts, named_after::<HostFirmwareComponents>).reconcile_on(reads);
        drive(controller, reconciler.clone(), shutdown.clone())
    })
    .await
}
