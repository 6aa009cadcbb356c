//! Fact gathering: the host, its Secrets and its node (as the last bulk poll saw it) decoded
//! once into the [`Facts`] the state machine reads and the [`Request`] the Ironic calls are
//! made of. Only the reads happen here; [`decode`] itself is a pure function.

use crate::host::components::{UpdateFacts, update_facts};
use crate::host::config::Config;
use crate::host::configdrive::{self, HostIdentity};
use crate::host::connection;
use crate::host::context::Reads;
use crate::host::dataimage;
use crate::host::draft::Draft;
use crate::host::error;
use crate::host::firmware;
use crate::host::handoff::Decoded;
use crate::host::machine::{Act, Facts, NodeView, Plan, PowerGoal};
use crate::host::preprov;
use crate::host::request::{ConfigDrive, Request, is_fake, parse_bmc};
use crate::host::secrets::{self, Credentials};
use crate::host::status::{self, PROVISIONER_NOT_CONFIGURED};
use crate::host::unsupported::unsupported;
use crate::host::wake::HostKey;
use crate::kit::backoff::exponential as error_backoff;
use crds::baremetalhost::annotations::{
    DETACHED, DetachedAnnotation, INSPECT, REBOOT_PREFIX, RebootAnnotation, RebootMode, is_reboot_annotation,
};
use crds::baremetalhost::bmc::BmcAddress;
use crds::baremetalhost::inspection_disabled;
use crds::baremetalhost::{
    AutomatedCleaningMode, BareMetalHost, BareMetalHostStatus, ErrorType, OperationalStatus, ProvisioningState,
};
use ironic_client::{PowerTarget, ProvisionState as IronicState};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Resource, ResourceExt};
use std::time::Duration;

/// What [`decode`] reads.
pub(super) struct Observed<'a> {
    pub host: &'a BareMetalHost,
    pub key: &'a HostKey,
    /// The status drafted so far: the host's, with what the node tells.
    pub status: &'a BareMetalHostStatus,
    pub credentials: &'a Credentials,
    /// The BMC address, parsed ([`parse_bmc`]).
    pub bmc: Option<Result<BmcAddress, String>>,
    pub node: NodeView,
    /// The power change last asked for, while the node has not reached it.
    pub power_attempt: Option<PowerTarget>,
    /// The BIOS settings the host waits for, whether they are not known yet, and whether its
    /// policy lets servicing apply them.
    pub bios: firmware::BiosFacts,
    /// The same of its firmware updates.
    pub updates: UpdateFacts,
    pub now: Timestamp,
}

/// Reads the credentials Secret and the node as the poll saw it, drafts what the node tells
/// into the status, and decodes the host.
pub(super) async fn run(ctx: Reads<'_>, draft: &mut Draft, now: Timestamp) -> Result<Decoded, error::Error> {
    let host = draft.host.clone();
    let bmc = parse_bmc(&host.spec);
    let credentials = secrets::credentials(ctx.kube, &host, is_fake(&bmc)).await?;
    let node = ctx.poller.view(&draft.key);
    draft.observe(&node);
    // A power change the node has reached is done with: only one still under way can fail.
    let power_attempt = match ctx.memory.power_attempt(&draft.key) {
        Some(target) if reached(&node, target) => {
            ctx.memory.set_power_attempt(&draft.key, None);
            None
        }
        other => other,
    };
    let moment = bios_moment(&host, draft.status.provisioning.state, &node);
    let bios = firmware::bios_facts(ctx.kube, &host, &draft.key, ctx.firmware, moment).await?;
    let updates = update_facts(ctx.kube, &host, &draft.key, ctx.components, moment).await?;
    let observed = Observed {
        host: &host,
        key: &draft.key,
        status: &draft.status,
        credentials: &credentials,
        bmc,
        node,
        power_attempt,
        bios,
        updates,
        now,
    };
    let mut decoded = decode(ctx.config, observed);
    let facts = &decoded.facts;
    let at_power_on = dataimage::at_power_on(facts.state, &facts.node, facts.power == PowerGoal::On);
    let memory = &ctx.memory.data_images;
    let data_image = dataimage::due(ctx.kube, &host, &draft.key, memory, at_power_on, &facts.node).await?;
    decoded.facts.data_image_due = data_image.is_some();
    decoded.request.data_image = data_image;
    if decoded.facts.detach.is_none() && draft.detached {
        // The detached annotation was removed: the host is registered again
        // (and adopted) by the plan.
        draft.detached = false;
        draft.notices.normal("Reattached", "the detached annotation was removed; registering the host again");
    }
    if !ctx.provisioner.configured() {
        draft.problem = Some((PROVISIONER_NOT_CONFIGURED, connection::Error::NotConfigured.to_string()));
    }
    Ok(decoded)
}

/// Where the host is, for its BIOS settings: an available host is about to be provisioned once
/// it has an image (or custom deploy) and should be online.
fn bios_moment(host: &BareMetalHost, state: ProvisioningState, node: &NodeView) -> firmware::Moment {
    use ProvisioningState as S;
    let spec = &host.spec;
    let deploys = spec.image.as_ref().is_some_and(|i| !i.url.is_empty()) || spec.custom_deploy.is_some();
    let failed = matches!(node, NodeView::Present(n) if n.provision_state == Some(IronicState::ServiceFailed));
    match state {
        S::Preparing => firmware::Moment::BeforeProvisioning,
        S::Available | S::Ready if deploys && spec.online => firmware::Moment::BeforeProvisioning,
        S::Provisioned | S::ExternallyProvisioned if failed => firmware::Moment::ServicingFailed,
        S::Provisioned | S::ExternallyProvisioned => firmware::Moment::Provisioned,
        _ => firmware::Moment::Other,
    }
}

/// Completes the request for the plan: the deploy image of the host's `PreprovisioningImage`
/// is read only when the plan boots it with image building on, and a deployment's config drive
/// from the userData, networkData and metaData Secrets only when the plan deploys (and never
/// for a live ISO).
pub(super) async fn prepare(
    ctx: Reads<'_>,
    decoded: &mut Decoded,
    plan: &Plan,
    host: &BareMetalHost,
) -> Result<(), error::Error> {
    let request = &decoded.request;
    // A host being deleted deprovisions with the image its node booted last: in a namespace
    // being deleted its image may be gone, and could not be made again.
    if let (Plan::Act { act, .. }, Ok(bmc)) = (plan, &request.bmc)
        && ctx.config.build_preprov_image
        && host.meta().deletion_timestamp.is_none()
        && preprov::boots_deploy_image(*act, request)
    {
        let key = HostKey::of(host);
        let reads = &ctx.memory.preprov_reads;
        let image = preprov::deploy_image(ctx.kube, host, &key, &bmc.driver, ctx.config, reads).await?;
        decoded.request.deploy_image = Some(image);
    }
    if !needs_config_drive(plan, &decoded.request) {
        return Ok(());
    }
    let data = match secrets::host_config_data(ctx.kube, host).await {
        Ok(data) => data,
        Err(secrets::Error::Read(err)) => return Err(err.into()),
        Err(problem) => {
            decoded.request.config_drive = ConfigDrive::Invalid(problem.to_string());
            return Ok(());
        }
    };
    let identity = HostIdentity {
        uid: decoded.request.host_uid.clone(),
        namespace: host.namespace().unwrap_or_default(),
        name: host.name_any(),
    };
    decoded.request.config_drive = match configdrive::build(&identity, &data) {
        Ok(drive) => ConfigDrive::Ready(drive),
        Err(problem) => ConfigDrive::Invalid(problem.to_string()),
    };
    Ok(())
}

/// Whether the plan sends a config drive: a deployment of anything but a live ISO.
fn needs_config_drive(plan: &Plan, request: &Request) -> bool {
    matches!(plan, Plan::Act { act: Act::Deploy, .. }) && !request.boots_live_iso()
}

/// Whether the node settled in the power state `target` leads to.
fn reached(node: &NodeView, target: PowerTarget) -> bool {
    matches!(node, NodeView::Present(n)
        if n.target_power_state.is_none() && n.power_state.as_ref() == Some(&target.settled_state()))
}

/// The facts the plan is made from and the request its Ironic calls need.
pub(super) fn decode(config: &Config, observed: Observed<'_>) -> Decoded {
    let Observed { host, key, status, credentials, bmc, node, power_attempt, bios, updates, now } = observed;
    let spec = &host.spec;
    let annotations = host.annotations();
    let detach = annotations.get(DETACHED).map(|v| {
        if v.trim().is_empty() { DetachedAnnotation::default() } else { serde_json::from_str(v).unwrap_or_default() }
    });
    let inspect = annotations.get(INSPECT).map(|v| v.trim());
    let inspection_disabled = inspection_disabled(host);
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
    let uid = host.uid().unwrap_or_else(|| key.to_string());
    // Only a Secret the operator can use is news for a failed registration: one it refused (a
    // key missing) was never sent, so it never becomes "tried", and every status write would
    // otherwise retry at once.
    let usable_change = credentials_changed && credentials.problem.is_none();
    let retry_in = backoff_remaining(config, host, status, usable_change, &uid, now);

    let reboot = reboot_goal(host);
    let disable_power_off = spec.disable_power_off == Some(true);
    let power = match (reboot, disable_power_off) {
        (Some((hard, true)), true) => PowerGoal::Reboot { hard },
        (Some((hard, _)), false) => PowerGoal::Off { hard },
        (_, true) => PowerGoal::On,
        (None, false) if spec.online => PowerGoal::On,
        (None, false) => PowerGoal::Off { hard: false },
    };
    let power_attempt_failed = match (&node, power_attempt) {
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
        has_bmc: bmc.is_some(),
        missing_unsure: config.shards.is_some(),
        detach,
        detached_status: status.operational_status == OperationalStatus::Detached,
        externally_provisioned: spec.externally_provisioned == Some(true),
        inspection_disabled,
        unsupported: unsupported(spec),
        inspect_requested: inspect == Some(""),
        provision_requested: (image_url.is_some() || custom.is_some()) && spec.online,
        cleaning_disabled: spec.automated_cleaning_mode == Some(AutomatedCleaningMode::Disabled),
        image_changed: image_url != provisioned_url || custom != provisioned_custom,
        provisioning_target_changed: (image_url.is_none() && custom.is_none())
            || (image_url.is_some() && image_url != attempted_url),
        inspection_started,
        credentials_changed,
        error_type: status.error_type,
        in_backoff: retry_in.is_some(),
        error_count: status.error_count,
        power_attempt_failed,
        power,
        reboot_oneshot: reboot.is_some_and(|(_, oneshot)| oneshot),
        disable_power_off,
        bios_change: !bios.settings.is_empty(),
        bios_pending: bios.pending,
        bios_on_reboot: bios.on_reboot,
        updates_change: !updates.updates.is_empty(),
        updates_on_reboot: updates.on_reboot,
        // Decided once the facts are known (`run`): it reads the DataImage only at power on.
        data_image_due: false,
        node,
    };
    let seen = match &facts.node {
        NodeView::Present(n) => Some(&**n),
        _ => None,
    };
    let mut request = Request::new(host, status, key, credentials, bmc, seen, config);
    // A provisioned host is serviced only for what its policy allows.
    let provisioned =
        matches!(status.provisioning.state, ProvisioningState::Provisioned | ProvisioningState::ExternallyProvisioned);
    if !provisioned || bios.on_reboot {
        request.bios = bios.settings;
    }
    if updates.on_reboot {
        request.updates = updates.updates;
    }
    request.updates_recorded = updates.recorded;
    Decoded { facts, request, retry_in, now }
}

/// How long the recorded error's backoff still runs: `None` when there is no error, when it
/// expired, or when a change the user made (the spec, the credentials of a failed
/// registration) retries at once.
fn backoff_remaining(
    config: &Config,
    host: &BareMetalHost,
    status: &BareMetalHostStatus,
    credentials_changed: bool,
    uid: &str,
    now: Timestamp,
) -> Option<Duration> {
    let (Some(error), Some(at)) = (status.error_type, status::error_recorded_at(status)) else {
        return None;
    };
    let reset_by_credentials = error == ErrorType::Registration && credentials_changed;
    let reset_by_spec = status::error_generation(status).is_some_and(|g| Some(g) != host.meta().generation);
    let delay = error_backoff(status.error_count, config.error_backoff_base, config.error_backoff_max, uid);
    // The anchor comes from status, which anyone allowed to patch it (or to restore it from
    // the status annotation) sets: a time near the end of the calendar must not overflow.
    let due = at.saturating_add(SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX)).unwrap_or(at);
    let waiting = now < due && !reset_by_credentials && !reset_by_spec;
    // An anchor in the future never waits longer than the delay itself.
    let remaining = Duration::try_from(now.duration_until(due)).unwrap_or(delay).min(delay);
    waiting.then(|| remaining.max(Duration::from_millis(100)))
}

/// The reboot annotations: whether any asks for a hard power off, and whether the one-shot
/// `reboot.metal3.io` is among them; `None` without any.
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

#[cfg(test)]
mod tests;
