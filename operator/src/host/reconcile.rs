//! The reconcile of one host, as its list of steps: admit (paused, finalizer) → restore a
//! re-created host's status → gather (the host, its Secrets and the node, decoded once into
//! facts and a request) → plan ([`machine::plan`], pure) → prepare the request for the plan
//! → execute (at most one Ironic step) → write (HardwareData, status only when it changed,
//! Events, consumed annotations; or the finalizer when the host is released).

use crate::host::actions;
use crate::host::context::HostContext;
use crate::host::decode;
use crate::host::draft::Draft;
use crate::host::error;
use crate::host::execute;
use crate::host::handoff::Written;
use crate::host::machine::{self, Plan};
use crate::host::metadata;
use crate::host::restore;
use crate::host::wake::{Cause, HostKey};
use crate::host::write;
use crate::kit::runner::{Reconcile, Runner};
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::PAUSED;
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

// Here rather than beside `HostContext`: the context is a shared piece the steps' views come
// from, and running the steps belongs to the one module above them all.
impl Reconcile for HostContext {
    type Object = BareMetalHost;
    type Error = error::Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, host: Arc<BareMetalHost>) -> BoxFuture<'static, Result<Action, error::Error>> {
        Box::pin(async move {
            // A closed semaphore only happens at shutdown; run unbounded then.
            let _permit = self.permits.acquire().await.ok();
            let key = HostKey::of(&host);
            let running = Running::start(&self, &key);
            let host = self.memory.freshest(host);
            let result = reconcile(&self, host, &key).await;
            drop(running);
            self.ironic_metrics.sync();
            self.ironic_metrics.slots_in_use(self.capacity.held());
            result
        })
    }
}

/// A host's reconcile under way: the watch events of its writes that come before their
/// responses wake no second reconcile, and another writer's change that came meanwhile wakes
/// one when it ends (also when the reconcile is dropped half-way).
struct Running<'a> {
    ctx: &'a HostContext,
    key: &'a HostKey,
}

impl<'a> Running<'a> {
    fn start(ctx: &'a HostContext, key: &'a HostKey) -> Self {
        ctx.memory.own.start(key);
        Self { ctx, key }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.ctx.memory.own.finish(self.key) {
            self.ctx.wakeups.wake(self.key, Cause::Change);
        }
    }
}

/// The steps one reconcile takes at most while each asks to decide again at once (a
/// transition, then the step it leads to); the rest come from a requeue, so that no host holds
/// a reconcile permit for long.
const STEPS: usize = 8;

/// Reconciles one host: a step, and the next at once while one asks for it. A transition is
/// written before the next step is decided, as a reconcile of its own would; only the round
/// trip through the controller's queue is saved.
async fn reconcile(ctx: &HostContext, host: Arc<BareMetalHost>, key: &HostKey) -> Result<Action, error::Error> {
    let mut host = host;
    for _ in 0..STEPS {
        match step(ctx, host, key).await? {
            Written::Done(action) => return Ok(action),
            Written::Again(written) => host = written,
        }
    }
    Ok(Action::requeue(Duration::ZERO))
}

/// One step of a host.
async fn step(ctx: &HostContext, host: Arc<BareMetalHost>, key: &HostKey) -> Result<Written, error::Error> {
    let Some(Admitted { host, finalizer }) = admit(ctx, host, key).await? else {
        return Ok(Written::Done(Action::await_change()));
    };
    if restore::run(ctx.writer(), &host, key).await? {
        return Ok(Written::Done(Action::requeue(Duration::ZERO)));
    }
    // The node as seen before our last call tells nothing yet: the poller
    // wakes the host once it has looked again.
    if ctx.poller.put_off(key) {
        tracing::debug!("waiting for a poll after the last call");
        return Ok(Written::Done(ctx.resync()));
    }
    // A host that looks before the controller's first poll has ended decides nothing and is
    // reconciled again when it ends; just started, that poll is a moment away.
    ctx.poller.first_look().await;
    // Hosts already busy must be counted before any other takes a slot.
    ctx.capacity.ready().await;
    let now = Timestamp::now();
    let mut draft = Draft::new(host.clone(), key.clone());
    let mut decoded = decode::run(ctx.reads(), &mut draft, now).await?;
    let plan = machine::plan(&decoded.facts);
    decode::prepare(ctx.reads(), &mut decoded, &plan, &host).await?;
    // Without our finalizer nothing may reach Ironic: a node made now could outlive a deleted
    // host. What needs no Ironic call, such as reporting an invalid BMC address, still goes on.
    if let Err(refused) = finalizer
        && plan.reaches_ironic()
        && !matches!(plan, Plan::Act { act, .. } if actions::stops_before_ironic(&decoded.request, act).is_some())
    {
        return Err(refused);
    }
    let next = execute::run(ctx.ironic(), &mut draft, &decoded, plan).await?;
    write::run(ctx.writer(), draft, next, now).await
}

/// A host admitted to a reconcile, and whether it carries our finalizer.
struct Admitted {
    host: Arc<BareMetalHost>,
    /// Why the finalizer could not be added (for example, a validating webhook that cannot be
    /// reached refuses every write of the object, while status writes still pass).
    finalizer: Result<(), error::Error>,
}

/// The host to work on, with our finalizer when it could be added; `None` when there is
/// nothing to do: it is paused (no finalizer, no status, no Ironic call), or it is going away
/// without our finalizer.
async fn admit(ctx: &HostContext, host: Arc<BareMetalHost>, key: &HostKey) -> Result<Option<Admitted>, error::Error> {
    if host.annotations().contains_key(PAUSED) {
        tracing::debug!("host is paused, no work to do");
        // Woken for a provisioning slot, it hands the wake-up on.
        ctx.capacity.stop_waiting(key);
        return Ok(None);
    }
    let deleting = host.meta().deletion_timestamp.is_some();
    if metadata::has_finalizer(&host) {
        return Ok(Some(Admitted { host, finalizer: Ok(()) }));
    }
    if deleting {
        ctx.forget(key);
        return Ok(None);
    }
    let api: Api<BareMetalHost> = Api::namespaced(ctx.kube.clone(), &key.namespace);
    match metadata::patch(&api, &host, metadata::add_finalizer_patch(&host)).await {
        Ok(patched) => Ok(Some(Admitted { host: ctx.memory.remember(patched), finalizer: Ok(()) })),
        Err(err) => {
            tracing::warn!(error = %crate::kit::error::chain(&err), "cannot add the finalizer; only steps without an Ironic call run");
            Ok(Some(Admitted { host, finalizer: Err(err.into()) }))
        }
    }
}
