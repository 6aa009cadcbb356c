//! Wiring: our builder's controller of `PreprovisioningImage`s per watched scope, woken when a
//! spec changes and by a host whose image was built from an older network data Secret; never
//! by its status writes. It runs only when the operator has deploy images to serve: without
//! them, the images are another builder's to write.

use super::builder::Provider;
use super::reconcile::{CONTROLLER, ImageReconciler};
use crate::host::context::HostContext;
use crate::host::firmware::{named_after, runner, watch};
use crate::kit::Context;
use crate::kit::runner::{Stopped, drive, fan_out};
use crds::preprovisioningimage::PreprovisioningImage;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, PreprovisioningImage: List, Watch);

/// Runs the controllers of every scope until `shutdown`.
pub(crate) async fn run(ctx: &Context, hosts: Arc<HostContext>, shutdown: CancellationToken) -> Result<(), Stopped> {
    let provider = Provider::of(&hosts.config);
    if !provider.can_start() {
        tracing::info!("no deploy image to serve: PreprovisioningImages are left to another image builder");
        return Ok(());
    }
    let reconciler = Arc::new(ImageReconciler {
        runner: runner(ctx, CONTROLLER),
        publisher: ctx.publisher(CONTROLLER),
        provider,
        hosts,
    });
    fan_out(CONTROLLER, ctx.scopes(), |scope| {
        let reads = reconciler.hosts.memory.preprov_reads.stream(scope.namespace().map(str::to_string));
        let controller = watch(&scope, &reconciler.hosts, named_after::<PreprovisioningImage>).reconcile_on(reads);
        drive(controller, reconciler.clone(), shutdown.clone())
    })
    .await
}
