//! The reconcile of one host, as a pipeline: the metadata it needs (paused,
//! finalizer, restored status) → the facts (spec, status, annotations,
//! Secrets, the node as the bulk poll saw it) → the plan
//! ([`machine::plan`]) → executing it → computing and, only when something
//! changed, writing the status, with an Event per state change.

use crate::events::Events;
use crate::host::actions::{self, ActError, ActInput, Done};
use crate::host::capacity::Capacity;
use crate::host::config::Config;
use crate::host::connection::{Provisioner, ProvisionerError};
use crate::host::machine::{self, Act, Facts, NodeView, Plan, PowerGoal, error_type_of, is_busy};
use crate::host::metadata;
use crate::host::metrics::IronicMetricsSync;
use crate::host::poller::Poller;
use crate::host::secrets::{self, Credentials};
use crate::host::status::{self, PROVISIONER_NOT_CONFIGURED, error_reason, state_reason};
use crate::host::wake::HostKey;
use crate::kube::backoff::{exponential as error_backoff, spread};
use crate::metrics::Metrics;
use crds::baremetalhost::annotations::{
    DETACHED, DetachedAnnotation, INSPECT, INSPECT_DISABLED, PAUSED, REBOOT_PREFIX, RebootAnnotation, RebootMode,
    STATUS, is_reboot_annotation,
};
use crds::baremetalhost::{
    BareMetalHost, BareMetalHostStatus, ErrorType, InspectionMode, OperationalStatus, ProvisioningState,
};
use ironic_client::{PowerState, PowerTarget};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tracing::Instrument;

/// Everything the reconciles of all hosts share.
pub struct HostContext {
    pub kube: kube::Client,
    pub metrics: Arc<Metrics>,
    pub config: Config,
    pub provisioner: Provisioner,
    pub poller: Poller,
    pub capacity: Capacity,
    pub events: Events,
    pub memory: Memory,
    pub ironic_metrics: IronicMetricsSync,
    /// Bounds reconciles across the controllers of all namespaces.
    pub permits: Semaphore,
}

/// What the controller remembers between reconciles of a host.
#[derive(Default)]
pub struct Memory {
    /// The host as our last write returned it: newer than the informer's
    /// cache until the watch event arrives.
    written: Mutex<HashMap<HostKey, Arc<BareMetalHost>>>,
    /// The last power change asked for.
    power: Mutex<HashMap<HostKey, PowerTarget>>,
}

fn resource_version(host: &BareMetalHost) -> u64 {
    host.resource_version().and_then(|rv| rv.parse().ok()).unwrap_or(0)
}

impl Memory {
    /// The newer of the cached host and the one we last wrote.
    fn freshest(&self, key: &HostKey, cached: Arc<BareMetalHost>) -> Arc<BareMetalHost> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        match written.get(key) {
            Some(ours) if resource_version(ours) > resource_version(&cached) => ours.clone(),
            Some(_) => {
                written.remove(key);
                cached
            }
            None => cached,
        }
    }

    fn remember(&self, key: &HostKey, host: BareMetalHost) -> Arc<BareMetalHost> {
        let host = Arc::new(host);
        self.written.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), host.clone());
        host
    }

    fn power_attempt(&self, key: &HostKey) -> Option<PowerTarget> {
        self.power.lock().unwrap_or_else(|e| e.into_inner()).get(key).copied()
    }

    fn set_power_attempt(&self, key: &HostKey, target: Option<PowerTarget>) {
        let mut power = self.power.lock().unwrap_or_else(|e| e.into_inner());
        match target {
            Some(t) => power.insert(key.clone(), t),
            None => power.remove(key),
        };
    }

    fn forget(&self, key: &HostKey) {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        self.power.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// Why a reconcile failed (to be retried shortly). Failures of the host
/// itself are not errors here: they are recorded in its status.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("cannot {what} of host {host}")]
    Kube {
        host: HostKey,
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("no Ironic connection for host {host}")]
    Provisioner {
        host: HostKey,
        #[source]
        source: ProvisionerError,
    },
    #[error("Ironic failed transiently during {act:?} of host {host}")]
    Ironic {
        host: HostKey,
        act: Act,
        #[source]
        source: ironic_client::Error,
    },
}

impl ReconcileError {
    /// A short label for the failure metric.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Kube { .. } => "kube",
            Self::Provisioner { .. } => "provisioner",
            Self::Ironic { .. } => "ironic",
        }
    }
}

/// Reconciles one host.
pub async fn reconcile(host: Arc<BareMetalHost>, ctx: Arc<HostContext>) -> Result<Action, ReconcileError> {
    // A closed semaphore only happens at shutdown; run unbounded then.
    let _permit = ctx.permits.acquire().await.ok();
    let _timer = ctx.metrics.reconcile("host");
    let key = HostKey::of(&host);
    let host = ctx.memory.freshest(&key, host);
    let span = tracing::info_span!("reconcile_host", host = %key);
    let result = pipeline(&ctx, host, &key).instrument(span).await;
    ctx.ironic_metrics.sync();
    ctx.ironic_metrics.slots_in_use(ctx.capacity.held());
    result
}

/// Retries a failed reconcile after a short, jittered delay.
pub fn error_policy(host: Arc<BareMetalHost>, err: &ReconcileError, ctx: Arc<HostContext>) -> Action {
    ctx.metrics.reconcile_failed("host", err.label());
    tracing::warn!(host = %HostKey::of(&host), error = %crate::kube::error::chain(err), "reconcile failed");
    Action::requeue(spread(ctx.config.fast_poll_interval.max(Duration::from_secs(1))))
}

/// A status being worked on, with what has to happen around its write.
struct Draft {
    host: Arc<BareMetalHost>,
    key: HostKey,
    api: Api<BareMetalHost>,
    before: BareMetalHostStatus,
    status: BareMetalHostStatus,
    events: Vec<(bool, &'static str, String)>,
    failed_now: bool,
    delayed: bool,
    detached: bool,
    problem: Option<(&'static str, String)>,
    release_slot: bool,
    remove_annotations: Vec<&'static str>,
}

impl Draft {
    fn new(host: Arc<BareMetalHost>, key: HostKey, api: Api<BareMetalHost>) -> Self {
        let before = host.status.clone().unwrap_or_default();
        let detached = before.operational_status == OperationalStatus::Detached;
        Self {
            status: before.clone(),
            before,
            host,
            key,
            api,
            events: Vec::new(),
            failed_now: false,
            delayed: false,
            detached,
            problem: None,
            release_slot: false,
            remove_annotations: Vec::new(),
        }
    }

    fn normal(&mut self, reason: &'static str, note: String) {
        self.events.push((false, reason, note));
    }

    fn warning(&mut self, reason: &'static str, note: String) {
        self.events.push((true, reason, note));
    }

    /// Computes the derived fields and writes the status if it changed.
    async fn finish(mut self, ctx: &HostContext, now: Timestamp) -> Result<(), ReconcileError> {
        self.status.operational_status = status::operational_status(&self.status, self.detached, self.delayed);
        let problem = self.problem.as_ref().map(|(r, m)| (*r, m.clone()));
        status::set_conditions(&mut self.status, self.host.meta().generation, problem, self.failed_now, now);
        if status::differs(&self.before, &self.status) {
            self.status.last_updated = Some(Time(now));
            let written = write_status(&self.api, &self.host, &self.status)
                .await
                .map_err(|source| ReconcileError::Kube { host: self.key.clone(), what: "write the status", source })?;
            ctx.metrics.status_written("host");
            let written = ctx.memory.remember(&self.key, written);
            self.host = written;
        }
        if self.release_slot {
            ctx.capacity.release(&self.key);
        }
        for (warning, reason, note) in self.events.drain(..) {
            if warning {
                ctx.events.warning(&*self.host, reason, "Reconcile", note).await;
            } else {
                ctx.events.normal(&*self.host, reason, "Reconcile", note).await;
            }
        }
        let present: Vec<&'static str> =
            self.remove_annotations.iter().copied().filter(|k| self.host.annotations().contains_key(*k)).collect();
        if !present.is_empty() {
            let patched =
                metadata::patch(&self.api, &self.host, metadata::remove_annotations_patch(&self.host, &present))
                    .await
                    .map_err(|source| ReconcileError::Kube {
                        host: self.key.clone(),
                        what: "remove annotations",
                        source,
                    })?;
            ctx.memory.remember(&self.key, patched);
        }
        Ok(())
    }
}

async fn pipeline(ctx: &HostContext, host: Arc<BareMetalHost>, key: &HostKey) -> Result<Action, ReconcileError> {
    let api: Api<BareMetalHost> = Api::namespaced(ctx.kube.clone(), &key.namespace);
    let kube_err = |what: &'static str| move |source| ReconcileError::Kube { host: key.clone(), what, source };

    if host.annotations().contains_key(PAUSED) {
        tracing::debug!("host is paused, no work to do");
        return Ok(Action::await_change());
    }
    let deleting = host.meta().deletion_timestamp.is_some();
    if deleting && !metadata::has_finalizer(&host) {
        forget(ctx, key);
        return Ok(Action::await_change());
    }
    let host = if !deleting && !metadata::has_finalizer(&host) {
        let patched = metadata::patch(&api, &host, metadata::add_finalizer_patch(&host))
            .await
            .map_err(kube_err("add the finalizer"))?;
        ctx.memory.remember(key, patched)
    } else {
        host
    };
    if let Some(action) = restore_status(ctx, &api, &host, key).await? {
        return Ok(action);
    }
    // The node as seen before our last call tells nothing yet: the poller
    // wakes the host once it has looked again.
    if ctx.poller.is_pending(key) {
        return Ok(Action::requeue(spread(ctx.config.resync_interval)));
    }

    // Hosts already busy must be counted before any other takes a slot.
    ctx.capacity.ready().await;
    let now = Timestamp::now();
    let node = ctx.poller.view(key);
    let credentials = secrets::credentials(&ctx.kube, &host).await.map_err(kube_err("read the BMC credentials"))?;
    let mut draft = Draft::new(host.clone(), key.clone(), api);
    observe(ctx, &mut draft, &node);
    let (facts, retry_in) = gather(ctx, &host, &draft.status, key, node.clone(), &credentials, now);
    if facts.detach.is_none() && draft.detached {
        // The detached annotation was removed: the host is registered again
        // (and adopted) below.
        draft.detached = false;
        draft.normal("Reattached", "the detached annotation was removed; registering the host again".into());
    }
    if !ctx.provisioner.configured() {
        draft.problem = Some((PROVISIONER_NOT_CONFIGURED, ProvisionerError::NotConfigured.to_string()));
    }
    let plan = machine::plan(&facts);
    tracing::debug!(state = draft.status.provisioning.state.as_str(), ?plan, "planned");
    if !matches!(plan, Plan::Transition(to) if is_busy(to)) {
        ctx.capacity.stop_waiting(key);
    }
    let action = execute(ctx, &mut draft, &facts, plan, &credentials, &node, retry_in, now).await?;
    if let Some(action) = action.done {
        return Ok(action);
    }
    draft.finish(ctx, now).await?;
    Ok(action.requeue)
}

/// Writes the whole status with server-side apply (the status subresource,
/// our one field manager): what we leave out is removed, since every status
/// field is ours.
async fn write_status(
    api: &Api<BareMetalHost>,
    host: &BareMetalHost,
    after: &BareMetalHostStatus,
) -> Result<BareMetalHost, kube::Error> {
    crate::apply::apply_status(api, &host.name_any(), after).await
}

fn forget(ctx: &HostContext, key: &HostKey) {
    ctx.poller.forget(key);
    ctx.capacity.release(key);
    ctx.memory.forget(key);
}

/// Takes over what the node tells about the host: its ID, power, and that
/// the credentials work.
fn observe(ctx: &HostContext, draft: &mut Draft, node: &NodeView) {
    let NodeView::Present(node) = node else {
        return;
    };
    draft.status.provisioning.id = node.uuid.clone();
    if let Some(power) = &node.power_state {
        draft.status.powered_on = *power == PowerState::On;
    }
    let verified = !matches!(
        node.provision_state,
        None | Some(ironic_client::ProvisionState::Enroll | ironic_client::ProvisionState::Verifying)
    );
    if verified
        && draft.status.tried_credentials.is_some()
        && draft.status.good_credentials != draft.status.tried_credentials
    {
        draft.status.good_credentials = draft.status.tried_credentials.clone();
    }
    if let Some(target) = ctx.memory.power_attempt(&draft.key)
        && node.target_power_state.is_none()
        && node.power_state.as_ref() == Some(&target.settled_state())
    {
        ctx.memory.set_power_attempt(&draft.key, None);
    }
}

fn reboot_goal(host: &BareMetalHost) -> Option<(bool, bool)> {
    let mut requested = false;
    let mut hard = false;
    let mut oneshot = false;
    for (key, value) in host.annotations() {
        if !is_reboot_annotation(key) {
            continue;
        }
        requested = true;
        oneshot |= key == REBOOT_PREFIX;
        let parsed: RebootAnnotation = if value.trim().is_empty() {
            RebootAnnotation::default()
        } else {
            serde_json::from_str(value).unwrap_or_default()
        };
        hard |= parsed.mode == Some(RebootMode::Hard);
    }
    requested.then_some((hard, oneshot))
}

/// The facts the plan is made from, and when a recorded error may be retried.
fn gather(
    ctx: &HostContext,
    host: &BareMetalHost,
    status: &BareMetalHostStatus,
    key: &HostKey,
    node: NodeView,
    credentials: &Credentials,
    now: Timestamp,
) -> (Facts, Option<Duration>) {
    let spec = &host.spec;
    let annotations = host.annotations();
    let detach = annotations.get(DETACHED).map(|v| {
        if v.trim().is_empty() { DetachedAnnotation::default() } else { serde_json::from_str(v).unwrap_or_default() }
    });
    let inspect = annotations.get(INSPECT).map(|v| v.trim());
    let inspection_disabled =
        spec.inspection_mode == Some(InspectionMode::Disabled) || inspect == Some(INSPECT_DISABLED);
    let image_url = spec.image.as_ref().map(|i| i.url.as_str()).filter(|u| !u.is_empty());
    let custom = spec.custom_deploy.as_ref().map(|c| c.method.as_str()).filter(|m| !m.is_empty());
    let provisioned_url = status.provisioning.image.as_ref().map(|i| i.url.as_str()).filter(|u| !u.is_empty());
    let provisioned_custom =
        status.provisioning.custom_deploy.as_ref().map(|c| c.method.as_str()).filter(|m| !m.is_empty());
    let attempted_url = status.last_attempted_image.as_ref().map(|i| i.url.as_str()).filter(|u| !u.is_empty());
    let tried_version = status.tried_credentials.as_ref().and_then(|t| t.credentials_version.as_deref());
    let credentials_changed = credentials.version().is_some() && credentials.version() != tried_version;
    let inspection_started = status
        .operation_history
        .as_ref()
        .and_then(|h| h.inspect.as_ref())
        .is_some_and(|m| m.start.is_some() && m.end.is_none());

    let mut retry_in = None;
    let in_backoff = match (status.error_type, status::error_recorded_at(status)) {
        (Some(error), Some(at)) => {
            let reset_by_credentials = error == ErrorType::Registration && credentials_changed;
            let reset_by_spec = status::error_generation(status).is_some_and(|g| Some(g) != host.meta().generation);
            let delay = error_backoff(
                status.error_count,
                ctx.config.error_backoff_base,
                ctx.config.error_backoff_max,
                &host.uid().unwrap_or_else(|| key.to_string()),
            );
            let due = at + jiff_span(delay);
            let waiting = now < due && !reset_by_credentials && !reset_by_spec;
            if waiting {
                retry_in = Some(Duration::try_from(due - now).unwrap_or(delay).max(Duration::from_millis(100)));
            }
            waiting
        }
        _ => false,
    };

    let reboot = reboot_goal(host);
    let disable_power_off = spec.disable_power_off == Some(true);
    let power = match (reboot, disable_power_off) {
        (Some((hard, true)), true) => PowerGoal::Reboot { hard },
        (Some((hard, _)), false) => PowerGoal::Off { hard },
        (_, true) => PowerGoal::On,
        (None, false) if spec.online => PowerGoal::On,
        (None, false) => PowerGoal::Off { hard: false },
    };
    let power_attempt_failed = match (&node, ctx.memory.power_attempt(key)) {
        (NodeView::Present(n), Some(target)) => {
            n.target_power_state.is_none()
                && n.power_state.as_ref() != Some(&target.settled_state())
                && n.last_error.is_some()
        }
        _ => false,
    };
    let facts = Facts {
        state: status.provisioning.state,
        deleting: host.meta().deletion_timestamp.is_some(),
        has_bmc: spec.bmc.as_ref().is_some_and(|b| !b.address.trim().is_empty()),
        detach,
        detached_status: status.operational_status == OperationalStatus::Detached,
        externally_provisioned: spec.externally_provisioned == Some(true),
        inspection_disabled,
        inspect_requested: inspect == Some(""),
        provision_requested: (image_url.is_some() || custom.is_some()) && spec.online,
        image_changed: image_url != provisioned_url || custom != provisioned_custom,
        provisioning_target_changed: (image_url.is_none() && custom.is_none())
            || (image_url.is_some() && image_url != attempted_url),
        inspection_started,
        credentials_changed,
        error_type: status.error_type,
        in_backoff,
        error_count: status.error_count,
        power_attempt_failed,
        power,
        reboot_oneshot: reboot.is_some_and(|(_, oneshot)| oneshot),
        disable_power_off,
        node,
    };
    (facts, retry_in)
}

fn jiff_span(d: Duration) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::try_from(d).unwrap_or(k8s_openapi::jiff::SignedDuration::MAX)
}

/// What a reconcile ends with: an action after writing the status, or one
/// that ends it at once (the host was released).
struct Outcome {
    requeue: Action,
    done: Option<Action>,
}

impl Outcome {
    fn then(requeue: Action) -> Self {
        Self { requeue, done: None }
    }

    fn now() -> Self {
        Self::then(Action::requeue(Duration::ZERO))
    }
}

#[allow(clippy::too_many_arguments)]
async fn execute(
    ctx: &HostContext,
    draft: &mut Draft,
    facts: &Facts,
    plan: Plan,
    credentials: &Credentials,
    node: &NodeView,
    retry_in: Option<Duration>,
    now: Timestamp,
) -> Result<Outcome, ReconcileError> {
    let resync = || Action::requeue(spread(ctx.config.resync_interval));
    match plan {
        Plan::Wait if *node == NodeView::Unknown && ctx.provisioner.configured() => {
            // Nothing can be decided before the first poll: be woken by it.
            ctx.poller.expect_change(&draft.key);
            Ok(Outcome::then(resync()))
        }
        Plan::Idle | Plan::Wait => Ok(Outcome::then(resync())),
        Plan::Backoff => Ok(Outcome::then(Action::requeue(retry_in.unwrap_or(ctx.config.error_backoff_base)))),
        Plan::Transition(to) => Ok(transition(ctx, draft, to, now)),
        Plan::Fail { error, message, then } => {
            if let Some(to) = then {
                transition(ctx, draft, to, now);
            }
            Ok(fail(ctx, draft, error, message))
        }
        Plan::Act { act, retry } => run_act(ctx, draft, facts, act, retry, credentials, node, now).await,
        Plan::Detach => detach(ctx, draft, facts).await,
        Plan::ClearReboot => {
            draft.remove_annotations.push(REBOOT_PREFIX);
            draft.normal("Rebooted", "the host is powered off; clearing the reboot request".into());
            Ok(Outcome::now())
        }
        Plan::Release => release(ctx, draft).await,
    }
}

/// How often a host waiting for a provisioning slot looks again by itself.
const DELAYED_RECHECK: Duration = Duration::from_secs(30);

fn transition(ctx: &HostContext, draft: &mut Draft, to: ProvisioningState, now: Timestamp) -> Outcome {
    let from = draft.status.provisioning.state;
    if is_busy(to) && !is_busy(from) && !ctx.capacity.try_acquire(&draft.key) {
        if !draft.before_delayed() {
            draft.normal("Delayed", format!("waiting for a provisioning slot before {}", to.as_str()));
        }
        draft.delayed = true;
        // Woken when a slot frees up; the requeue is a safety net.
        return Outcome::then(Action::requeue(spread(DELAYED_RECHECK.min(ctx.config.resync_interval))));
    }
    status::apply_transition(&mut draft.status, &draft.host, to, now);
    if is_busy(from) && !is_busy(to) {
        draft.release_slot = true;
    }
    if from == ProvisioningState::Available && to == ProvisioningState::Inspecting {
        // A one-shot request: consumed by the inspection it started.
        draft.remove_annotations.push(INSPECT);
    }
    let note = if from == ProvisioningState::None {
        format!("provisioning state is now {}", to.as_str())
    } else {
        format!("provisioning state changed from {} to {}", from.as_str(), to.as_str())
    };
    draft.normal(state_reason(to), note);
    Outcome::now()
}

impl Draft {
    fn before_delayed(&self) -> bool {
        self.before.operational_status == OperationalStatus::Delayed
    }
}

/// Records a failure. The plan never gets here again before the backoff
/// expires (or the spec or credentials change), so every call is one more
/// failed attempt.
fn fail(ctx: &HostContext, draft: &mut Draft, error: ErrorType, message: String) -> Outcome {
    status::record_failure(&mut draft.status, error, &message);
    draft.failed_now = true;
    draft.warning(error_reason(error), message);
    let delay = error_backoff(
        draft.status.error_count,
        ctx.config.error_backoff_base,
        ctx.config.error_backoff_max,
        &draft.host.uid().unwrap_or_else(|| draft.key.to_string()),
    );
    Outcome::then(Action::requeue(delay))
}

#[allow(clippy::too_many_arguments)]
async fn run_act(
    ctx: &HostContext,
    draft: &mut Draft,
    facts: &Facts,
    act: Act,
    retry: bool,
    credentials: &Credentials,
    node: &NodeView,
    now: Timestamp,
) -> Result<Outcome, ReconcileError> {
    let client = match ctx.provisioner.client().await {
        Ok(client) => client,
        Err(ProvisionerError::NotConfigured) => {
            if facts.deleting && draft.status.provisioning.id.is_empty() {
                // Never registered anywhere: nothing to clean up.
                return release(ctx, draft).await;
            }
            return Ok(Outcome::then(Action::requeue(spread(ctx.config.resync_interval))));
        }
        Err(source) => return Err(ReconcileError::Provisioner { host: draft.key.clone(), source }),
    };
    let node_uuid = match node {
        NodeView::Present(n) => Some(n.uuid.as_str()),
        _ => None,
    };
    let input = ActInput {
        kube: &ctx.kube,
        client: &client,
        config: &ctx.config,
        host: &draft.host,
        key: &draft.key,
        credentials,
        node: node_uuid,
        now,
    };
    let host = draft.host.clone();
    let result = actions::run(&input, act, &mut draft.status).await;
    match result {
        Ok(done) => {
            // Ironic took the request: the host is trying again, not failing.
            // The count stays, so the next failure backs off further.
            if retry || draft.status.error_type.is_some() {
                status::clear_error(&mut draft.status);
            }
            if let Act::Power(target) = act {
                ctx.memory.set_power_attempt(&draft.key, Some(target));
                draft.normal("PowerChange", format!("asked Ironic to {}", target.as_str()));
                if matches!(target, PowerTarget::Reboot | PowerTarget::SoftReboot) && facts.reboot_oneshot {
                    // A host that may not be powered off (disablePowerOff) is rebooted in
                    // place: the reboot Ironic accepted consumes the one-shot request. Left
                    // in place, it would reboot the host again each time it settles.
                    draft.remove_annotations.push(REBOOT_PREFIX);
                }
            }
            match done {
                Done::Called => {
                    ctx.poller.expect_change(&draft.key);
                    Ok(Outcome::then(Action::requeue(spread(ctx.config.resync_interval))))
                }
                Done::Nothing => Ok(Outcome::now()),
                Done::Transition(to) => {
                    if to == ProvisioningState::Preparing {
                        draft.normal("InspectionComplete", "hardware inspection completed".into());
                    }
                    Ok(transition(ctx, draft, to, now))
                }
                Done::Release => release(ctx, draft).await,
            }
        }
        Err(ActError::Kube(source)) => {
            Err(ReconcileError::Kube { host: draft.key.clone(), what: "write for the host", source })
        }
        Err(ActError::Ironic(source)) if transient(&source) => {
            Err(ReconcileError::Ironic { host: draft.key.clone(), act, source })
        }
        Err(err) => {
            let error = match act {
                Act::Power(_) => ErrorType::PowerManagement,
                _ => error_type_of(draft.status.provisioning.state),
            };
            tracing::info!(host = %HostKey::of(&host), ?act, error = %err, "step failed");
            Ok(fail(ctx, draft, error, err.to_string()))
        }
    }
}

/// Failures worth retrying soon rather than recording against the host.
fn transient(err: &ironic_client::Error) -> bool {
    err.is_retryable()
        || matches!(
            err,
            ironic_client::Error::Timeout { .. }
                | ironic_client::Error::Transport { .. }
                | ironic_client::Error::Server(_)
                | ironic_client::Error::Conflict(_)
        )
}

async fn detach(ctx: &HostContext, draft: &mut Draft, facts: &Facts) -> Result<Outcome, ReconcileError> {
    let client = match ctx.provisioner.client().await {
        Ok(client) => client,
        Err(ProvisionerError::NotConfigured) if facts.deleting => return release(ctx, draft).await,
        Err(source) => return Err(ReconcileError::Provisioner { host: draft.key.clone(), source }),
    };
    match actions::delete_node(&client, &draft.key).await {
        Ok(_) => {}
        Err(ActError::Ironic(source)) if transient(&source) => {
            return Err(ReconcileError::Ironic { host: draft.key.clone(), act: Act::DeleteNode, source });
        }
        Err(ActError::Kube(source)) => {
            return Err(ReconcileError::Kube { host: draft.key.clone(), what: "detach", source });
        }
        Err(err) => return Ok(fail(ctx, draft, ErrorType::Detach, err.to_string())),
    }
    if !draft.detached {
        draft.normal("Detached", "the host was removed from Ironic without deprovisioning".into());
    }
    draft.detached = true;
    if draft.status.error_type == Some(ErrorType::Detach) {
        status::clear_error(&mut draft.status);
    }
    if facts.deleting {
        return release(ctx, draft).await;
    }
    ctx.poller.expect_change(&draft.key);
    Ok(Outcome::then(Action::requeue(spread(ctx.config.resync_interval))))
}

/// Removes the finalizer: nothing is left in Ironic.
async fn release(ctx: &HostContext, draft: &mut Draft) -> Result<Outcome, ReconcileError> {
    let host = draft.host.clone();
    ctx.events.normal(&*host, "Deleted", "Reconcile", "the host is released".into()).await;
    metadata::patch(&draft.api, &host, metadata::remove_finalizer_patch(&host))
        .await
        .map_err(|source| ReconcileError::Kube { host: draft.key.clone(), what: "remove the finalizer", source })?;
    forget(ctx, &draft.key);
    Ok(Outcome { requeue: Action::await_change(), done: Some(Action::await_change()) })
}

/// The status a re-created host should get back from its status
/// annotation: only when it has none of its own yet.
fn restorable_status(host: &BareMetalHost) -> Option<BareMetalHostStatus> {
    let raw = host.annotations().get(STATUS)?;
    let empty = host
        .status
        .as_ref()
        .is_none_or(|s| s.last_updated.is_none() && s.provisioning.state == ProvisioningState::None);
    if !empty {
        return None;
    }
    match serde_json::from_str(raw) {
        Ok(status) => Some(status),
        Err(err) => {
            tracing::warn!(error = %err, "ignoring an unreadable status annotation");
            None
        }
    }
}

/// Restores the status of a re-created host from the status annotation
/// (baremetal-operator's pivot/move support), then drops the annotation.
async fn restore_status(
    ctx: &HostContext,
    api: &Api<BareMetalHost>,
    host: &Arc<BareMetalHost>,
    key: &HostKey,
) -> Result<Option<Action>, ReconcileError> {
    let Some(mut restored) = restorable_status(host) else {
        return Ok(None);
    };
    restored.last_updated = Some(Time(Timestamp::now()));
    let written = write_status(api, host, &restored).await.map_err(|source| ReconcileError::Kube {
        host: key.clone(),
        what: "restore the status",
        source,
    })?;
    ctx.metrics.status_written("host");
    ctx.events
        .normal(
            &written,
            "StatusRestored",
            "Reconcile",
            format!("status restored from the {STATUS} annotation (state {})", restored.provisioning.state.as_str()),
        )
        .await;
    let patched = metadata::patch(api, &written, metadata::remove_annotations_patch(&written, &[STATUS]))
        .await
        .map_err(|source| ReconcileError::Kube { host: key.clone(), what: "remove the status annotation", source })?;
    ctx.memory.remember(key, patched);
    Ok(Some(Action::requeue(Duration::ZERO)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;
    use std::collections::BTreeMap;

    fn host(annotations: &[(&str, &str)]) -> BareMetalHost {
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        host.metadata.annotations =
            Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>());
        host
    }

    #[test]
    fn reboot_annotations_hold_the_host_off_softly_unless_hard() {
        assert_eq!(reboot_goal(&host(&[])), None);
        assert_eq!(reboot_goal(&host(&[("reboot.metal3.io", "")])), Some((false, true)));
        assert_eq!(reboot_goal(&host(&[("reboot.metal3.io/remediation", "{\"mode\":\"hard\"}")])), Some((true, false)));
        assert_eq!(
            reboot_goal(&host(&[("reboot.metal3.io", "{\"mode\":\"soft\"}"), ("reboot.metal3.io/a", "")])),
            Some((false, true))
        );
        assert_eq!(reboot_goal(&host(&[("reboot.metal3.io.example/x", "")])), None);
    }

    #[test]
    fn status_is_restored_only_onto_an_empty_status() {
        let saved = r#"{"errorCount":0,"errorMessage":"","operationalStatus":"OK","poweredOn":true,
            "provisioning":{"ID":"node-1","state":"provisioned"}}"#;
        let fresh = host(&[(STATUS, saved)]);
        let restored = restorable_status(&fresh).expect("a fresh host gets its status back");
        assert_eq!(restored.provisioning.state, ProvisioningState::Provisioned);
        assert_eq!(restored.provisioning.id, "node-1");
        let mut live = fresh.clone();
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = ProvisioningState::Available;
        live.status = Some(status);
        assert!(restorable_status(&live).is_none(), "a host with a status of its own keeps it");
        assert!(restorable_status(&host(&[(STATUS, "not json")])).is_none());
    }

    #[test]
    fn the_freshest_copy_of_a_host_wins() {
        let memory = Memory::default();
        let key = HostKey::new("ns", "h");
        let versioned = |rv: &str| {
            let mut h = host(&[]);
            h.metadata.resource_version = Some(rv.into());
            Arc::new(h)
        };
        memory.remember(&key, (*versioned("10")).clone());
        assert_eq!(memory.freshest(&key, versioned("9")).resource_version().as_deref(), Some("10"));
        assert_eq!(memory.freshest(&key, versioned("11")).resource_version().as_deref(), Some("11"));
        // Once the cache caught up, the remembered copy is dropped.
        assert_eq!(memory.freshest(&key, versioned("9")).resource_version().as_deref(), Some("9"));
    }
}
