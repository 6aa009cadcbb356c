//! Execution: the one step the plan chose, carried out. State changes and failures go into
//! the draft; Ironic calls go through `actions`, and what they learned goes into the draft
//! too. Nothing here writes to Kubernetes: [`Next`] tells the write step what is left.

use crate::host::actions::{self, Answer, Learned};
use crate::host::connection;
use crate::host::context::{CONTROLLER, IronicSide};
use crate::host::draft::Draft;
use crate::host::error;
use crate::host::handoff::{Decoded, Next};
use crate::host::hardware;
use crate::host::machine::{Act, Plan, error_type_of, is_busy};
use crate::host::poller::Look;
use crate::host::preprov::DeployImage;
use crate::host::request::Request;
use crate::host::status::{self, error_reason, state_reason};
use crate::host::trouble::IRONIC_CALL_FAILING;
use crate::kit::backoff::{exponential as error_backoff, spread};
use crds::baremetalhost::annotations::{INSPECT, REBOOT_PREFIX};
use crds::baremetalhost::{ErrorType, OperationMetric, ProvisioningState};
use ironic_client::PowerTarget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use std::time::Duration;
use tokio::time::Instant;

/// How often a host waiting for a provisioning slot looks again by itself: a safety net, since
/// a freed slot wakes the hosts it is for. Thousands of waiting hosts looking every few seconds
/// would cost reconciles that grow with their number.
const DELAYED_RECHECK: Duration = Duration::from_secs(300);
/// How often a host waiting for its deploy image looks again by itself (a change of its
/// `PreprovisioningImage` wakes it sooner).
const IMAGE_RECHECK: Duration = Duration::from_secs(60);

/// Carries out `plan`.
pub(super) async fn run(
    ctx: IronicSide<'_>,
    draft: &mut Draft,
    decoded: &Decoded,
    plan: Plan,
) -> Result<Next, error::Error> {
    tracing::debug!(state = draft.status.provisioning.state.as_str(), ?plan, "planned");
    let resuming = resumes(ctx, draft, decoded, &plan);
    if !resuming && !matches!(plan, Plan::Transition(to) if is_busy(to)) {
        ctx.hosts.capacity.stop_waiting(&draft.key);
    }
    let resync = Next::Requeue(ctx.resync());
    // An Ironic call that kept failing is only held back while the plan still asks for it:
    // once the node or the host changed the plan, the next failure starts afresh.
    let retrying = ctx.hosts.troubles.failing(&draft.key);
    let same = matches!((&plan, retrying), (Plan::Act { act, .. }, Some(failing)) if *act == failing)
        || matches!((&plan, retrying), (Plan::Detach, Some(Act::DeleteNode)));
    if retrying.is_some() && !same {
        ctx.hosts.troubles.clear(&draft.key);
    }
    if draft.problem.is_none()
        && let Some(message) = ctx.hosts.troubles.problem(&draft.key)
    {
        draft.problem = Some((IRONIC_CALL_FAILING, message));
    }
    match plan {
        // Waiting for the first poll too: it wakes every host that looked before it.
        Plan::Idle | Plan::Wait => Ok(resync),
        Plan::Backoff => Ok(Next::Requeue(Action::requeue(decoded.retry_in.unwrap_or(ctx.config.error_backoff_base)))),
        Plan::Transition(to) => Ok(transition(ctx, draft, to, decoded.now)),
        Plan::Fail { error, message, then } => {
            if let Some(to) = then {
                transition(ctx, draft, to, decoded.now);
            }
            Ok(fail(ctx, draft, error, message))
        }
        Plan::Act { act, retry } => run_act(ctx, draft, decoded, act, retry, resuming).await,
        Plan::Detach => detach(ctx, draft, decoded).await,
        Plan::ClearReboot => {
            draft.remove_annotations.push(REBOOT_PREFIX);
            draft.notices.normal("Rebooted", "the host is powered off; clearing the reboot request");
            Ok(Next::now())
        }
        Plan::Release => Ok(Next::Release),
    }
}

/// Whether `plan` has a host in a busy state whose node rests (its slot given up,
/// `Capacity::rest`) ask Ironic for work: it takes a slot again first.
fn resumes(ctx: IronicSide<'_>, draft: &Draft, decoded: &Decoded, plan: &Plan) -> bool {
    let Plan::Act { act, .. } = plan else { return false };
    is_busy(draft.status.provisioning.state)
        && actions::stops_before_ironic(&decoded.request, *act).is_none()
        && ctx.hosts.capacity.is_resting(&draft.key)
}

/// Waits for a provisioning slot, `before` what (said once, in the Event that it waits).
fn delay(ctx: IronicSide<'_>, draft: &mut Draft, before: &str) -> Next {
    if !draft.was_delayed() {
        draft.notices.normal("Delayed", format!("waiting for a provisioning slot {before}"));
    }
    draft.delayed = true;
    // Woken when a slot frees up; the requeue is a safety net.
    Next::Requeue(Action::requeue(spread(DELAYED_RECHECK.min(ctx.config.resync_interval))))
}

/// Moves the draft to `to`, once a busy state has a provisioning slot.
fn transition(ctx: IronicSide<'_>, draft: &mut Draft, to: ProvisioningState, now: Timestamp) -> Next {
    let from = draft.status.provisioning.state;
    if is_busy(to) && !is_busy(from) && !ctx.hosts.capacity.try_acquire(&draft.key) {
        return delay(ctx, draft, &format!("before {}", to.as_str()));
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
    draft.notices.normal(state_reason(to), note);
    Next::now()
}

/// Records a failure. The plan never gets here again before the backoff
/// expires (or the spec or credentials change), so every call is one more
/// failed attempt.
fn fail(ctx: IronicSide<'_>, draft: &mut Draft, error: ErrorType, message: String) -> Next {
    // Ironic's last_error and a BMC's answer may quote what they were sent: scrubbed and
    // bounded before status and the Event see them.
    let message = crate::kit::scrub::scrubbed(&message, &[]);
    status::record_failure(&mut draft.status, error, &message);
    draft.failed_now = true;
    draft.notices.warning(error_reason(error), message);
    let delay = error_backoff(
        draft.status.error_count,
        ctx.config.error_backoff_base,
        ctx.config.error_backoff_max,
        &draft.host.uid().unwrap_or_else(|| draft.key.to_string()),
    );
    Next::Requeue(Action::requeue(delay))
}

/// The step waits for the host's deploy image: Progressing says why, with an Event when it
/// starts waiting.
fn wait_for_image(draft: &mut Draft, why: &str) -> Next {
    let conditions = draft.before.conditions.as_deref().unwrap_or_default();
    let progressing = crds::condition::find(conditions, crds::condition::PROGRESSING);
    if progressing.is_none_or(|c| c.reason != status::WAITING_FOR_IMAGE) {
        draft.notices.normal(status::WAITING_FOR_IMAGE, why.to_string());
    }
    draft.waiting = Some(why.to_string());
    Next::Requeue(Action::requeue(spread(IMAGE_RECHECK)))
}

/// Takes what a step learned into the draft.
fn learn(draft: &mut Draft, request: &Request, learned: Learned, now: Timestamp) {
    let status = &mut draft.status;
    if let Some(id) = learned.node_id {
        status.provisioning.id = id;
    }
    if learned.credentials_sent
        && let Some(tried) = &request.credentials
    {
        status.tried_credentials = Some(tried.clone());
    }
    if learned.inspection_started {
        let history = status.operation_history.get_or_insert_with(Default::default);
        history.inspect = Some(OperationMetric { start: Some(Time(now)), end: None });
    }
    if let Some(inspected) = learned.inspected {
        status.hardware = inspected.has_inventory.then(|| hardware::summary(&inspected.details));
        let history = status.operation_history.get_or_insert_with(Default::default);
        history.inspect.get_or_insert_with(Default::default).end = Some(Time(now));
        draft.hardware_data = Some(inspected.details);
    }
}

/// Carries out `act`; `resuming`: the host rests in a busy state and takes a slot again first.
async fn run_act(
    ctx: IronicSide<'_>,
    draft: &mut Draft,
    decoded: &Decoded,
    act: Act,
    retry: bool,
    resuming: bool,
) -> Result<Next, error::Error> {
    let client = match ctx.provisioner.client().await {
        Ok(client) => client,
        Err(connection::Error::NotConfigured) => {
            if decoded.facts.deleting && draft.status.provisioning.id.is_empty() {
                // Never registered anywhere: nothing to clean up.
                return Ok(Next::Release);
            }
            return Ok(Next::Requeue(ctx.resync()));
        }
        Err(source) => return Err(source.into()),
    };
    if let Some(wait) = ctx.hosts.troubles.wait(&draft.key, act, Instant::now()) {
        return Ok(Next::Requeue(Action::requeue(wait)));
    }
    match &decoded.request.deploy_image {
        Some(DeployImage::Waiting(why)) => return Ok(wait_for_image(draft, why)),
        Some(DeployImage::Refused(why)) => {
            let error = error_type_of(draft.status.provisioning.state);
            return Ok(fail(ctx, draft, error, why.clone()));
        }
        _ => {}
    }
    if resuming && !ctx.hosts.capacity.resume(&draft.key) {
        return Ok(delay(ctx, draft, "before asking Ironic again"));
    }
    let report = match actions::run(&client, &decoded.request, act).await {
        Ok(report) => report,
        Err(source) => return Ok(transient(ctx, draft, act, &source)),
    };
    ctx.hosts.troubles.clear(&draft.key);
    draft.problem = draft.problem.take().filter(|(reason, _)| *reason != IRONIC_CALL_FAILING);
    if report.learned.bios_settled {
        // Ironic shows the settings: preparing moves on (the firmware controller's next read
        // says so in the HostFirmwareSettings).
        ctx.hosts.firmware.settled(&draft.key);
    }
    if report.learned.updates_settled {
        // Ironic was handed the updates: nothing waits (the components controller's next read
        // says so in the HostFirmwareComponents).
        ctx.hosts.components.settled(&draft.key);
    }
    if report.learned.data_image_settled
        && let Some(want) = &decoded.request.data_image
    {
        // The host is powered on next; its next power on looks again.
        ctx.hosts.memory.data_images.settle(&draft.key, want.clone());
    }
    if report.answer == Answer::Called && report.learned.servicing_ended {
        draft.notices.normal("ServicingAborted", "ended the failed servicing: nothing was left to try again");
    } else if report.answer == Answer::Called {
        match act {
            Act::ApplyBios => draft
                .notices
                .normal("FirmwareSettings", "asked Ironic to apply the host's BIOS settings by a manual clean"),
            Act::Service => draft
                .notices
                .normal("Servicing", "asked Ironic to service the host for its BIOS settings and firmware updates"),
            Act::AbortServicing => draft.notices.normal("ServicingAborted", "ended the failed servicing"),
            _ => {}
        }
    }
    let look = look_after(act, report.learned.node_written);
    learn(draft, &decoded.request, report.learned, decoded.now);
    match report.answer {
        Answer::Failed(message) => {
            let error = match act {
                Act::Power(_) => ErrorType::PowerManagement,
                Act::Service | Act::AbortServicing => ErrorType::Servicing,
                _ => error_type_of(draft.status.provisioning.state),
            };
            tracing::info!(?act, error = %crate::kit::scrub::scrubbed(&message, &[]), "step failed");
            Ok(fail(ctx, draft, error, message))
        }
        Answer::Called => {
            accepted(ctx, draft, decoded, act, retry);
            ctx.hosts.poller.expect(&draft.key, look);
            Ok(Next::Requeue(ctx.resync()))
        }
        Answer::Nothing => {
            accepted(ctx, draft, decoded, act, retry);
            Ok(Next::now())
        }
        Answer::Transition(to) => {
            accepted(ctx, draft, decoded, act, retry);
            if to == ProvisioningState::Preparing {
                draft.notices.normal("InspectionComplete", "hardware inspection completed");
            }
            Ok(transition(ctx, draft, to, decoded.now))
        }
        Answer::Release => {
            accepted(ctx, draft, decoded, act, retry);
            Ok(Next::Release)
        }
    }
}

/// An Ironic call failed in a way that passes by itself. Its outcome may have happened (a
/// timeout or a reset after the request went out), so the next decision waits for a poll
/// that started after the call: a state change is never sent again on the snapshot taken
/// before it. The call is retried with the host's own backoff, and after a few failures in a
/// row the host's Degraded condition says what fails. Nothing counts as the host's error.
fn transient(ctx: IronicSide<'_>, draft: &mut Draft, act: Act, source: &ironic_client::Error) -> Next {
    // A node not found shows as gone only in a full list.
    let look = if source.is_not_found() { Look::Full } else { look_after(act, false) };
    ctx.hosts.poller.expect(&draft.key, look);
    let delay = ctx.hosts.troubles.failed(&draft.key, act, source.to_string(), Instant::now());
    ctx.metrics.reconcile_failed(CONTROLLER, "ironic");
    tracing::warn!(?act, error = %crate::kit::error::chain(source), retry_in = ?delay, "Ironic call failed; retrying");
    if draft.problem.is_none()
        && let Some(message) = ctx.hosts.troubles.problem(&draft.key)
    {
        draft.problem = Some((IRONIC_CALL_FAILING, message));
    }
    Next::Requeue(Action::requeue(delay))
}

/// Ironic took the request.
fn accepted(ctx: IronicSide<'_>, draft: &mut Draft, decoded: &Decoded, act: Act, retry: bool) {
    // The host is trying again, not failing. The count stays, so the next failure backs
    // off further.
    if retry || draft.status.error_type.is_some() {
        status::clear_error(&mut draft.status);
    }
    if let Act::Power(target) = act {
        ctx.hosts.memory.set_power_attempt(&draft.key, Some(target));
        draft.notices.normal("PowerChange", format!("asked Ironic to {}", target.as_str()));
        if matches!(target, PowerTarget::Reboot | PowerTarget::SoftReboot) && decoded.facts.reboot_oneshot {
            // A host that may not be powered off (disablePowerOff) is rebooted in
            // place: the reboot Ironic accepted consumes the one-shot request. Left
            // in place, it would reboot the host again each time it settles.
            draft.remove_annotations.push(REBOOT_PREFIX);
        }
    }
}

/// Removes the node from Ironic without deprovisioning.
async fn detach(ctx: IronicSide<'_>, draft: &mut Draft, decoded: &Decoded) -> Result<Next, error::Error> {
    let deleting = decoded.facts.deleting;
    let client = match ctx.provisioner.client().await {
        Ok(client) => client,
        Err(connection::Error::NotConfigured) if deleting => return Ok(Next::Release),
        Err(source) => return Err(source.into()),
    };
    if let Some(wait) = ctx.hosts.troubles.wait(&draft.key, Act::DeleteNode, Instant::now()) {
        return Ok(Next::Requeue(Action::requeue(wait)));
    }
    let answer = match actions::detach(&client, &decoded.request).await {
        Ok(answer) => answer,
        Err(source) => return Ok(transient(ctx, draft, Act::DeleteNode, &source)),
    };
    ctx.hosts.troubles.clear(&draft.key);
    if let Answer::Failed(message) = answer {
        return Ok(fail(ctx, draft, ErrorType::Detach, message));
    }
    if !draft.detached {
        draft.notices.normal("Detached", "the host was removed from Ironic without deprovisioning");
    }
    draft.detached = true;
    if draft.status.error_type == Some(ErrorType::Detach) {
        status::clear_error(&mut draft.status);
    }
    if deleting {
        return Ok(Next::Release);
    }
    ctx.hosts.poller.expect(&draft.key, Look::Full);
    Ok(Next::Requeue(ctx.resync()))
}

/// What the poll a host waits for after `act` must be: a node created or removed shows only
/// in a full list (a delta shows nodes written since the last look, and a new node may never
/// have been written), unless registration `written` it after (managed it, as it does every
/// node it creates): a node written since the last look shows in the next delta.
fn look_after(act: Act, written: bool) -> Look {
    match act {
        Act::Register if written => Look::Changes,
        Act::Register | Act::DeleteNode => Look::Full,
        _ => Look::Changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_that_wrote_its_node_waits_for_any_look_and_one_that_did_not_for_a_full_list() {
        assert_eq!(look_after(Act::Register, true), Look::Changes, "managed: the next delta shows it");
        assert_eq!(look_after(Act::Register, false), Look::Full, "created and never written: only a full list");
        assert_eq!(look_after(Act::DeleteNode, true), Look::Full, "a node gone shows only in a full list");
        assert_eq!(look_after(Act::Provide, false), Look::Changes);
    }
}
