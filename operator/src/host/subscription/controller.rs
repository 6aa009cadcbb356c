//! Wiring: one controller of `BMCEventSubscription`s per watched scope, woken when a spec
//! changes (a new generation, a deletion) and by its own requeues, never by its status writes.

use super::reconcile::{CONTROLLER, SubscriptionReconciler};
use crate::host::context::HostContext;
use crate::host::firmware::{runner, watch};
use crate::kit::Context;
use crate::kit::runner::{Stopped, drive, fan_out};
use crds::bmceventsubscription::BMCEventSubscription;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, BMCEventSubscription: List, Watch);

/// Runs the controllers of every scope until `shutdown`.
pub(crate) async fn run(ctx: &Context, hosts: Arc<HostContext>, shutdown: CancellationToken) -> Result<(), Stopped> {
    fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let controller = watch(&scope, &hosts, |s: &BMCEventSubscription| s.spec.host_name.as_str());
        let reconciler = Arc::new(SubscriptionReconciler {
            runner: runner(ctx, CONTROLLER),
            publisher: ctx.publisher(CONTROLLER),
            hosts: hosts.clone(),
            subscriptions: controller.store(),
        });
        drive(controller, reconciler, shutdown.clone())
    })
    .await
}
