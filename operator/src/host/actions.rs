//! The Ironic calls behind each [`Act`], made from the [`Request`] alone: no resource, no
//! Kubernetes client. Every function makes the calls of one step and returns what happened;
//! the outcome is observed by the next bulk poll.
//!
//! As in baremetal-operator's provisioner, what the user must fix (a bad address, missing
//! credentials, a MAC address another node has, anything Ironic refuses for good) comes back
//! as [`Answer::Failed`], a value the reconcile records in the host's status; only what passes
//! by itself (`ironic_client::Error::is_transient`) is an error, for the reconcile to retry.
//!
//! What a step compares before it acts comes from the poll's snapshot where the poll carries
//! it (the snapshot a step acts on comes from a poll that started after the host's last call),
//! and otherwise from what Ironic answers to the step's own writes: Ironic's state-changing
//! requests are its bottleneck at scale, and every read on a host's path delays it
//! (design/performance.md). Registration creates a node the poll did not see without looking
//! it up first: node names are unique in Ironic, so a node that exists after all (a crash
//! between a create and the next poll, a create racing ours) makes the create fail with a
//! conflict and is then read by name, never duplicated.

use crate::host::components::handover::{MARK, Mark, NodeMoment, Resolved, mark_of, resolve};
use crate::host::driver::{DriverSpec, inspect_interface};
use crate::host::hardware;
use crate::host::instance::{
    DeployInput, additions, automated_clean_patch, boot_mode_capabilities, deploy_settings, patch_for,
};
use crate::host::machine::Act;
use crate::host::preprov::{self, DeployImage};
use crate::host::request::{Bmc, ConfigDrive, Request};
use crds::baremetalhost::{HardwareDetails, Image, ProvisioningState};
use crds::firmware::FirmwareUpdate;
use ironic_client::{
    DeployRequest, DeployStep, DriverInfo, IronicClient, Node, NodeCreate, PatchOperation, PortCreate, PowerTarget,
    ProvisionState, ProvisionTarget, Step,
};
use serde_json::{Value, json};
use std::time::Duration;

/// How long the OS gets to shut down on a soft power off or reboot.
const SOFT_POWER_TIMEOUT: Duration = Duration::from_secs(180);
/// The fault Ironic records when it puts a node whose servicing failed in maintenance.
const SERVICE_FAILURE: &str = "service failure";
/// The priority baremetal-operator gives a custom deploy step.
const CUSTOM_DEPLOY_PRIORITY: u32 = 80;

/// What a step achieved.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Ironic accepted a request; the poller will see what came of it.
    Called,
    /// Nothing had to be asked of Ironic after all.
    Nothing,
    /// The step completed the state (inspection data collected).
    Transition(ProvisioningState),
    /// The node is gone: the host may go.
    Release,
    /// The step cannot succeed until the host (or the node) changes: for the user.
    Failed(String),
}

/// What inspection found.
#[derive(Debug)]
pub(super) struct Inspected {
    /// In full, for the host's HardwareData.
    pub details: HardwareDetails,
    /// Whether the inspector recorded an inventory at all (fake hardware records none).
    pub has_inventory: bool,
}

/// What a step found out on its way, whether or not it got to the end.
#[derive(Debug, Default)]
pub(super) struct Learned {
    /// The node's UUID (registration found or created it).
    pub node_id: Option<String>,
    /// Ironic now has the request's credentials.
    pub credentials_sent: bool,
    pub inspection_started: bool,
    pub inspected: Option<Inspected>,
    /// Ironic shows the host has the BIOS settings it waited for.
    pub bios_settled: bool,
    /// Ironic was handed the firmware updates the host waited for, before this step.
    pub updates_settled: bool,
    /// A failed servicing was ended rather than tried again: nothing was left to try.
    pub servicing_ended: bool,
    /// The host's data image needs nothing more at this power on.
    pub data_image_settled: bool,
    /// Registration wrote the node it created or found (`manage`, a PATCH): a look at what
    /// changed shows it, where a node never written since its creation shows only in a full
    /// list.
    pub node_written: bool,
}

/// What happened.
#[derive(Debug)]
pub(super) struct Report {
    pub answer: Answer,
    pub learned: Learned,
}

/// Why a step stopped short.
enum Stop {
    Failed(String),
    Ironic(ironic_client::Error),
}

impl From<ironic_client::Error> for Stop {
    fn from(err: ironic_client::Error) -> Self {
        Self::Ironic(err)
    }
}

fn failed(message: impl Into<String>) -> Stop {
    Stop::Failed(message.into())
}

/// A user-facing failure as an answer, a transient one as the error to retry.
fn answer(result: Result<Answer, Stop>) -> Result<Answer, ironic_client::Error> {
    match result {
        Ok(answer) => Ok(answer),
        Err(Stop::Failed(message)) => Ok(Answer::Failed(message)),
        Err(Stop::Ironic(err)) if err.is_transient() => Err(err),
        // The node is gone (deleted behind our back, or Ironic lost its database): not the
        // host's failure. The call is retried once a full list shows what Ironic has.
        Err(Stop::Ironic(err)) if err.is_not_found() => Err(err),
        Err(Stop::Ironic(err)) => Ok(Answer::Failed(err.to_string())),
    }
}

/// Runs one step.
pub(super) async fn run(client: &IronicClient, request: &Request, act: Act) -> Result<Report, ironic_client::Error> {
    let mut learned = Learned::default();
    let step = Calls { client, request };
    let result = match act {
        Act::Register => step.register(&mut learned).await,
        Act::UpdateCredentials => step.update_credentials(&mut learned).await,
        Act::Manage => step.manage().await,
        Act::Inspect => step.inspect(&mut learned).await,
        Act::FinishInspection => step.finish_inspection(&mut learned).await,
        Act::ApplyBios => step.apply_bios(&mut learned).await,
        Act::Service => step.service(&mut learned).await,
        Act::DataImage => step.data_image(&mut learned).await,
        Act::AbortServicing => step.abort().await,
        Act::Provide => step.provide().await,
        Act::Deploy => step.deploy().await,
        Act::Adopt => step.adopt().await,
        Act::Undeploy => step.undeploy().await,
        Act::Power(target) => step.power(target).await,
        Act::DeleteNode => step.delete_node().await.map(|_| Answer::Release),
    };
    Ok(Report { answer: answer(result)?, learned })
}

/// Why `act` stops before its first Ironic call, from the request alone: registration and new
/// credentials need a usable BMC address and driver settings, and registration a boot MAC
/// where the driver or the settings ask for one. The reconcile asks first when it could not
/// add its finalizer: such a failure is still reported, since nothing reaches Ironic.
pub(super) fn stops_before_ironic(request: &Request, act: Act) -> Option<String> {
    if !matches!(act, Act::Register | Act::UpdateCredentials) {
        return None;
    }
    let bmc = match &request.bmc {
        Ok(bmc) => bmc,
        Err(problem) => return Some(problem.clone()),
    };
    if act == Act::Register
        && let (Some(why), None) = (request.boot_mac_requirement, &request.boot_mac)
    {
        return Some(format!("bootMACAddress {why}"));
    }
    bmc.driver_info.as_ref().err().cloned()
}

/// Removes the node from Ironic without deprovisioning it (in maintenance when its state
/// forbids a plain delete): [`Answer::Called`], or [`Answer::Nothing`] when there is none.
pub(super) async fn detach(client: &IronicClient, request: &Request) -> Result<Answer, ironic_client::Error> {
    answer(Calls { client, request }.delete_node().await)
}

/// An inspection of the node that began after the host's last status write.
#[derive(Debug, PartialEq, Eq)]
enum InspectionSince {
    Running,
    Finished,
}

/// Whether Ironic shows an inspection that began after `written` (Ironic's clock against
/// ours: `written` keeps whole seconds, so it falls up to a second before the write, slack
/// for the skew of synchronised clocks). Such an inspection is ours, started by a reconcile
/// that died before it could record it. Ironic clears `inspection_started_at` when an
/// inspection ends and sets `inspection_finished_at`: a finished one is known by its end (and
/// by its start, if an Ironic kept it). Limit: for the same reason an earlier inspection that
/// ended in the very second the host went back to inspecting counts as ours, and its data,
/// under a second old, is read rather than gathered again.
fn inspection_since(node: &Node, written: Option<k8s_openapi::jiff::Timestamp>) -> Option<InspectionSince> {
    let written = written?;
    let at = |t: &Option<String>| t.as_deref().and_then(parse_ironic_time).is_some_and(|t| t >= written);
    match node.provision_state {
        Some(ProvisionState::Inspecting | ProvisionState::InspectWait) if at(&node.inspection_started_at) => {
            Some(InspectionSince::Running)
        }
        Some(ProvisionState::Manageable)
            if at(&node.inspection_finished_at)
                && (node.inspection_started_at.is_none() || at(&node.inspection_started_at)) =>
        {
            Some(InspectionSince::Finished)
        }
        _ => None,
    }
}

/// Ironic's times: RFC 3339, with an offset, or without one (then UTC).
fn parse_ironic_time(text: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    text.parse().ok().or_else(|| format!("{text}Z").parse().ok())
}

/// The patch operations setting every `driver_info` key (one operation per
/// key, so that the debug output of a patch hides the secret ones).
fn driver_info_ops(info: &DriverInfo) -> Result<Vec<PatchOperation>, Stop> {
    let Value::Object(map) =
        serde_json::to_value(info).map_err(|e| failed(format!("cannot encode driver_info: {e}")))?
    else {
        return Ok(Vec::new());
    };
    Ok(map.into_iter().map(|(k, v)| PatchOperation::add(format!("/driver_info/{k}"), v)).collect())
}

/// Whether Ironic deletes `node` outside maintenance: resting in a state it allows that in.
/// `adopt failed` keeps its target (`active`), as every failure state does, yet rests.
fn plainly_deletable(node: &Node) -> bool {
    use ProvisionState as P;
    match node.provision_state {
        Some(P::Enroll | P::Manageable | P::Available) => node.target_provision_state.is_none(),
        Some(P::AdoptFailed) => true,
        _ => false,
    }
}

/// The calls of one step.
struct Calls<'a> {
    client: &'a IronicClient,
    request: &'a Request,
}

impl Calls<'_> {
    fn node(&self) -> Result<&str, Stop> {
        self.request.node.as_deref().ok_or_else(|| failed("the Ironic node is not known yet"))
    }

    fn bmc(&self) -> Result<&Bmc, Stop> {
        self.request.bmc.as_ref().map_err(|problem| failed(problem.as_str()))
    }

    fn driver_info(bmc: &Bmc) -> Result<DriverInfo, Stop> {
        bmc.driver_info.clone().map_err(Stop::Failed)
    }

    fn node_create(&self, spec: &DriverSpec, info: DriverInfo) -> NodeCreate {
        let request = self.request;
        let mut create = NodeCreate::new(spec.driver).name(request.node_name.clone()).driver_info(info);
        create.shard = request.shard.clone();
        create.interfaces = spec.interfaces.clone();
        create.interfaces.inspect_interface = Some(inspect_interface(spec, request.fast_inspection).to_string());
        if request.custom_deploy.is_some() {
            create.interfaces.deploy_interface = Some(spec.custom_deploy_interface.to_string());
        } else if request.boots_live_iso() {
            create.interfaces.deploy_interface = Some(spec.live_iso_deploy_interface.to_string());
        }
        create.properties.insert("capabilities".into(), json!(boot_mode_capabilities(None, request.boot.mode)));
        if let Some(arch) = &request.architecture {
            create.properties.insert("cpu_arch".into(), json!(arch));
        }
        if request.disable_power_off {
            create.disable_power_off = Some(true);
        }
        // Registered with the host's cleaning mode, `provide` finds it set and sends no
        // PATCH: Ironic's state-changing requests are its bottleneck at scale
        // (design/performance.md).
        create.automated_clean = Some(request.automated_clean);
        create
    }

    async fn ensure_port(&self, node: &Node, mac: &str, created_now: bool) -> Result<(), Stop> {
        let client = self.client;
        if !created_now {
            let ports = client.list_ports(&node.uuid).await?;
            if ports.iter().any(|p| p.address.eq_ignore_ascii_case(mac)) {
                return Ok(());
            }
        }
        let port =
            PortCreate { pxe_enabled: Some(true), ..PortCreate::new(node.uuid.clone(), mac.to_ascii_lowercase()) };
        match client.create_port(&port).await {
            Ok(_) => Ok(()),
            Err(ironic_client::Error::Conflict(_)) => match client.find_port_by_address(mac).await? {
                Some(p) if p.node_uuid.as_deref() == Some(node.uuid.as_str()) => Ok(()),
                Some(p) => {
                    // The other node may be another namespace's host: its identity goes to the
                    // operator's log, for whoever runs it, never to this host's status or Events.
                    let other = p.node_uuid.unwrap_or_default();
                    tracing::warn!(node = %node.uuid, other_node = %other, "boot MAC address taken by another node");
                    Err(failed(format!("MAC address {mac} is already registered in Ironic for another host's node")))
                }
                None => Err(failed(format!("Ironic refused a port for MAC address {mac}"))),
            },
            Err(e) => Err(e.into()),
        }
    }

    async fn register(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let (client, request) = (self.client, self.request);
        if let Some(problem) = stops_before_ironic(request, Act::Register) {
            return Err(failed(problem));
        }
        let bmc = self.bmc()?;
        let info = Self::driver_info(bmc)?;
        // The poll saw a node (registered again, or its enrollment failed): it is read whole,
        // since its driver_info and state decide what is sent. The poll saw none: it is created
        // without a look-up, the name being what keeps it single.
        let found = match request.node {
            Some(_) => client.find_node(&request.node_name).await?,
            None => None,
        };
        let (node, created) = match found {
            Some(node) => (node, false),
            None => self.create_node(bmc, info.clone()).await?,
        };
        learned.node_id = Some(node.uuid.clone());
        if !created {
            learned.node_written |= self.move_to_shard(&node).await?;
        }
        if let Some(mac) = &request.boot_mac {
            self.ensure_port(&node, mac, created).await?;
        }
        // The BMC address may change while registering (the webhook allows it
        // then): compare what Ironic shows (secrets come back masked).
        let address_changed = info.keys().any(|k| info.get(k).is_some() && info.get(k) != node.driver_info.get(k));
        if !created && (!request.credentials_sent || address_changed) {
            // fake:// has no driver_info to send, and Ironic refuses an empty patch.
            let ops = driver_info_ops(&info)?;
            if !ops.is_empty() {
                client.update_node(&node.uuid, &ops).await?;
                learned.node_written = true;
            }
        }
        learned.credentials_sent = true;
        if node.provision_state == Some(ProvisionState::Enroll) && node.target_provision_state.is_none() {
            client.manage(&node.uuid).await?;
            // Ironic writes the node's state before it answers.
            learned.node_written = true;
        }
        // Past enrollment already, the next poll moves the host on.
        Ok(Answer::Called)
    }

    /// Puts a node found by name into the host's shard: one registered before the hosts were
    /// divided into shards, or under another list of them. This replica's polls list its
    /// shards' nodes only, and would never see it otherwise. Answers whether it moved it.
    async fn move_to_shard(&self, node: &Node) -> Result<bool, Stop> {
        let Some(shard) = &self.request.shard else { return Ok(false) };
        if node.shard.as_ref() == Some(shard) {
            return Ok(false);
        }
        self.client.update_node(&node.uuid, &[PatchOperation::add("/shard", shard.clone())]).await?;
        tracing::info!(node = %node.uuid, shard = %shard, "moved the host's node into its shard");
        Ok(true)
    }

    /// Creates the node, or finds the one of its name that exists already (and whether it was
    /// created now). The poll's snapshot said there was none, but it may be older than a node
    /// made since: by a reconcile that died before the next poll, or by anyone racing ours.
    /// Ironic refuses a second node of the same name with a conflict; that node is then read
    /// by name and registration goes on with it. A conflict that names no such node (a UUID
    /// taken, say) stays a transient error: the next poll shows what exists.
    async fn create_node(&self, bmc: &Bmc, info: DriverInfo) -> Result<(Node, bool), Stop> {
        let client = self.client;
        match client.create_node(&self.node_create(&bmc.driver, info)).await {
            Ok(node) => {
                tracing::info!(node = %node.uuid, driver = bmc.driver.driver, "registered the host in Ironic");
                Ok((node, true))
            }
            Err(conflict @ ironic_client::Error::Conflict(_)) => match client.find_node(&self.request.node_name).await?
            {
                Some(node) => {
                    tracing::info!(node = %node.uuid, "the host's node exists already; registering it as found");
                    Ok((node, false))
                }
                None => Err(conflict.into()),
            },
            Err(err) => Err(err.into()),
        }
    }

    async fn update_credentials(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let info = Self::driver_info(self.bmc()?)?;
        self.client.update_node(self.node()?, &driver_info_ops(&info)?).await?;
        learned.credentials_sent = true;
        tracing::info!("sent the new BMC credentials to Ironic");
        Ok(Answer::Called)
    }

    async fn manage(&self) -> Result<Answer, Stop> {
        self.client.manage(self.node()?).await?;
        Ok(Answer::Called)
    }

    async fn inspect(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let bmc = self.bmc()?;
        let node = self.client.get_node(uuid).await?;
        match inspection_since(&node, self.request.status_written_at) {
            Some(InspectionSince::Running) => {
                tracing::info!("an inspection started before the last status write is still running; waiting for it");
                learned.inspection_started = true;
                return Ok(Answer::Called);
            }
            Some(InspectionSince::Finished) => {
                tracing::info!("an inspection started before the last status write has finished; reading its data");
                learned.inspection_started = true;
                return self.finish_inspection(learned).await;
            }
            None => {}
        }
        let wanted = inspect_interface(&bmc.driver, self.request.fast_inspection);
        if node.interfaces.inspect_interface.as_deref() != Some(wanted) {
            self.client.update_node(uuid, &[PatchOperation::add("/inspect_interface", wanted)]).await?;
        }
        self.boot_deploy_image(uuid, Some(&node.driver_info)).await?;
        self.client.inspect(uuid).await?;
        learned.inspection_started = true;
        Ok(Answer::Called)
    }

    /// Points the node at the deploy image of the host's `PreprovisioningImage`, when the
    /// request carries one (`current`: the node's `driver_info`, when the step read it).
    async fn boot_deploy_image(&self, uuid: &str, current: Option<&DriverInfo>) -> Result<(), Stop> {
        let Some(DeployImage::Ready(boot)) = &self.request.deploy_image else {
            return Ok(());
        };
        let read;
        let current = match current {
            Some(current) => current,
            None => {
                read = self.client.get_node_fields(uuid, &["driver_info"]).await?;
                &read.driver_info
            }
        };
        let ops = preprov::driver_info_ops(boot, current);
        if !ops.is_empty() {
            self.client.update_node(uuid, &ops).await?;
            tracing::info!("the node boots the host's PreprovisioningImage");
        }
        Ok(())
    }

    async fn finish_inspection(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let inventory = match self.client.get_inventory(uuid).await {
            Ok(inventory) => Some(inventory),
            // Inspectors that record no inventory (fake) leave nothing to read.
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let boot_mac = self.request.boot_mac.as_deref();
        let details = inventory.as_ref().map(|i| hardware::details(i, boot_mac)).unwrap_or_default();
        learned.inspected = Some(Inspected { details, has_inventory: inventory.is_some() });
        Ok(Answer::Transition(ProvisioningState::Preparing))
    }

    /// Sets automated cleaning as the host asks, when the node differs. The node's value is the
    /// poll's, from a poll that started after this host's last call: only this controller (at
    /// registration and here) and someone editing the node in Ironic change it. When someone
    /// does after the poll, the worst is a PATCH that changes nothing, or `provide` running with
    /// their value, which a read just before the call could not rule out either.
    async fn set_automated_clean(&self, uuid: &str) -> Result<(), Stop> {
        if let Some(op) = automated_clean_patch(self.request.node_automated_clean, self.request.automated_clean) {
            self.client.update_node(uuid, &[op]).await?;
        }
        Ok(())
    }

    /// The BIOS settings the host waits for that Ironic does not show it has, read now: the
    /// clean or servicing that applied them may have finished since the host's record was
    /// made, and must not run again.
    async fn bios_changes(&self, uuid: &str) -> Result<Vec<Value>, Stop> {
        if self.request.bios.is_empty() {
            return Ok(Vec::new());
        }
        let current = self.client.list_bios_settings(uuid).await?;
        let value = |name: &str| current.iter().find(|s| s.name == name).and_then(|s| s.value.as_deref());
        Ok((self.request.bios.iter())
            .filter(|(name, wanted)| value(name) != Some(wanted.as_str()))
            .map(|(name, wanted)| json!({"name": name, "value": wanted}))
            .collect())
    }

    /// Starts a manual clean of a host being prepared with the BIOS settings it waits for. Out
    /// of band (no ramdisk boots): the BMC applies them at the reboot Ironic makes.
    async fn apply_bios(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let changes = self.bios_changes(uuid).await?;
        if changes.is_empty() {
            learned.bios_settled = true;
            return Ok(Answer::Nothing);
        }
        tracing::info!(settings = changes.len(), "applying BIOS settings by a manual clean");
        let steps = vec![Step::new("bios", "apply_configuration").arg("settings", Value::Array(changes))];
        self.client.set_provision_state(uuid, &ProvisionTarget::Clean { steps, disable_ramdisk: true }).await?;
        Ok(Answer::Called)
    }

    /// Services a provisioned host, out of band, for the BIOS settings and firmware updates it
    /// waits for (those its policy allows; the request holds no others): the settings first,
    /// then the updates, as baremetal-operator orders them. What Ironic already has or was
    /// already handed is left out, and a servicing with nothing left is not asked for.
    async fn service(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let node = self.out_of_service_failure(uuid).await?;
        if !matches!(node.provision_state, Some(ProvisionState::Active | ProvisionState::ServiceFailed)) {
            // A servicing already under way (an earlier request that timed out but was taken):
            // its record stays as it is, and the next poll shows where it went.
            return Ok(Answer::Nothing);
        }
        let mut steps = Vec::new();
        let changes = self.bios_changes(uuid).await?;
        if changes.is_empty() {
            learned.bios_settled = !self.request.bios.is_empty();
        } else {
            steps.push(Step::new("bios", "apply_configuration").arg("settings", Value::Array(changes)));
        }
        let updates = self.updates_to_flash(uuid, &node, learned).await?;
        if !updates.is_empty() {
            let settings = serde_json::to_value(&updates).map_err(|e| failed(e.to_string()))?;
            steps.push(Step::new("firmware", "update").arg("settings", settings));
        }
        if steps.is_empty() && node.provision_state == Some(ProvisionState::ServiceFailed) {
            // Nothing is left to try again for (what failed is no longer wanted, or Ironic has
            // it): the failed servicing is ended instead.
            learned.servicing_ended = true;
            return self.abort().await;
        }
        if steps.is_empty() {
            return Ok(Answer::Nothing);
        }
        tracing::info!(steps = steps.len(), updates = updates.len(), "servicing the host");
        self.client.set_provision_state(uuid, &ProvisionTarget::Service { steps, disable_ramdisk: true }).await?;
        Ok(Answer::Called)
    }

    /// The updates this servicing flashes: those of the request's list the node's mark does
    /// not show flashed or in flight (`host::components::handover`). The mark is rewritten
    /// first, with what it resolved to and the updates now asked for, so that what Ironic takes
    /// is witnessed and nothing stale in it can later pass for done.
    async fn updates_to_flash(
        &self,
        uuid: &str,
        node: &Node,
        learned: &mut Learned,
    ) -> Result<Vec<FirmwareUpdate>, Stop> {
        let (resolved, mark) = self.resolved(node);
        let flash = resolved.to_flash(&self.request.updates);
        let written = resolved.mark(flash.clone(), node.provision_updated_at.as_deref());
        if mark.as_ref() != Some(&written) && (mark.is_some() || !flash.is_empty()) {
            self.write_mark(uuid, &written).await?;
        }
        // The components controller reads the node again now: what is handed over shows, and
        // should the servicing never reach Ironic, the host is told again.
        learned.updates_settled = !self.request.updates.is_empty();
        Ok(flash)
    }

    /// The node's mark, resolved against the node, and the mark as written.
    fn resolved(&self, node: &Node) -> (Resolved, Option<Mark>) {
        let mark = mark_of(&node.extra);
        let at = NodeMoment {
            provision_state: node.provision_state.as_ref(),
            provision_updated_at: node.provision_updated_at.as_deref(),
        };
        (resolve(mark.as_ref(), &self.request.updates_recorded, at), mark)
    }

    async fn write_mark(&self, uuid: &str, mark: &Mark) -> Result<(), Stop> {
        let value = serde_json::to_value(mark).map_err(|e| failed(e.to_string()))?;
        self.client.update_node(uuid, &[PatchOperation::add(format!("/extra/{MARK}"), value)]).await?;
        Ok(())
    }

    /// Attaches the host's data image, or ejects ours, before it is powered on.
    async fn data_image(&self, learned: &mut Learned) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let Some(want) = &self.request.data_image else {
            return Ok(Answer::Nothing);
        };
        match crate::host::dataimage::step::run(self.client, uuid, want).await? {
            crate::host::dataimage::step::Outcome::Called => Ok(Answer::Called),
            crate::host::dataimage::step::Outcome::Settled => {
                learned.data_image_settled = true;
                Ok(Answer::Nothing)
            }
        }
    }

    /// Ends a failed servicing: the node goes back to `active` as it is. The updates it
    /// carried were not flashed: the mark keeps what was, without them, so that they wait
    /// again (and the return to `active` is not taken for their success).
    async fn abort(&self) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let node = self.out_of_service_failure(uuid).await?;
        if node.provision_state != Some(ProvisionState::ServiceFailed) {
            return Ok(Answer::Nothing);
        }
        self.settle_mark(uuid, &node).await?;
        self.client.set_provision_state(uuid, &ProvisionTarget::Abort).await?;
        Ok(Answer::Called)
    }

    /// Rewrites the node's record with what it resolved to and nothing pending, before a
    /// request that moves the node without flashing what is pending (an abort, an undeploy),
    /// so that the node's later return to `active` is not taken for their success.
    async fn settle_mark(&self, uuid: &str, node: &Node) -> Result<(), Stop> {
        if let (resolved, Some(mark)) = self.resolved(node) {
            let written = resolved.mark(Vec::new(), None);
            if written != mark {
                self.write_mark(uuid, &written).await?;
            }
        }
        Ok(())
    }

    /// Ironic puts a node whose servicing failed in maintenance (fault `service failure`), and
    /// allows neither servicing again nor aborting until it leaves it: that maintenance is
    /// lifted, never one a person set (their node then stays as they left it, and the call's
    /// refusal is retried and reported).
    /// Answers the node as it read it.
    async fn out_of_service_failure(&self, uuid: &str) -> Result<Node, Stop> {
        let node = self.client.get_node(uuid).await?;
        let failed = node.provision_state == Some(ProvisionState::ServiceFailed);
        if failed && node.maintenance == Some(true) && node.fault.as_deref() == Some(SERVICE_FAILURE) {
            self.client.clear_maintenance(uuid).await?;
        }
        Ok(node)
    }

    async fn provide(&self) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        self.boot_deploy_image(uuid, None).await?;
        self.set_automated_clean(uuid).await?;
        self.client.provide(uuid).await?;
        Ok(Answer::Called)
    }

    /// Brings the node's image, deploy interface, root device hints and boot mode to what the
    /// host asks for, without reading the node first: what can be set whatever the node holds
    /// (every value to add) goes in one PATCH, and the node Ironic answers with tells what is
    /// left (keys of another image to remove, the boot mode among the capabilities inspection
    /// wrote, hints to drop), sent in a second PATCH only then. A node registered here for the
    /// image it deploys needs the first alone.
    async fn apply_settings(&self, uuid: &str, image: Option<&Image>) -> Result<(), Stop> {
        let request = self.request;
        let bmc = self.bmc()?;
        let settings = deploy_settings(&DeployInput {
            image,
            custom_deploy: request.custom_deploy.as_deref(),
            boot_mode: request.boot.mode,
            root_device_hints: request.boot.root_device_hints.as_ref(),
            host_uid: &request.host_uid,
            driver: &bmc.driver,
        });
        let node = self.client.update_node(uuid, &additions(&settings)).await?;
        let rest = patch_for(&node, &settings, Some(request.boot.mode));
        if !rest.is_empty() {
            self.client.update_node(uuid, &rest).await?;
        }
        Ok(())
    }

    async fn deploy(&self) -> Result<Answer, Stop> {
        let request = self.request;
        let uuid = self.node()?;
        let image = request.image.as_ref();
        if let Some(refusal) = &request.image_refused {
            return Err(failed(refusal.as_str()));
        }
        // A config drive that cannot be built (a Secret of another namespace among them)
        // stops the deployment before anything about it reaches Ironic.
        let configdrive = match &request.config_drive {
            ConfigDrive::None => None,
            ConfigDrive::Ready(data) => Some(ironic_client::ConfigDrive::Json(data.clone())),
            ConfigDrive::Invalid(problem) => return Err(failed(problem.as_str())),
        };
        self.boot_deploy_image(uuid, None).await?;
        self.apply_settings(uuid, image).await?;
        let deploy_steps = request
            .custom_deploy
            .as_ref()
            .map(|method| vec![DeployStep { step: Step::new("deploy", method), priority: CUSTOM_DEPLOY_PRIORITY }])
            .unwrap_or_default();
        self.client.deploy(uuid, DeployRequest { configdrive, deploy_steps }).await?;
        tracing::info!(image = image.map(|i| i.url.as_str()).unwrap_or("custom deploy"), "deployment started");
        Ok(Answer::Called)
    }

    async fn adopt(&self) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        self.apply_settings(uuid, self.request.running_image.as_ref()).await?;
        self.client.adopt(uuid).await?;
        tracing::info!("adopting the running host");
        Ok(Answer::Called)
    }

    async fn undeploy(&self) -> Result<Answer, Stop> {
        let uuid = self.node()?;
        let fields = ["extra", "provision_state", "provision_updated_at", "driver_info"];
        let node = self.client.get_node_fields(uuid, &fields).await?;
        self.settle_mark(uuid, &node).await?;
        crate::host::dataimage::step::forget(self.client, uuid, &node.extra).await?;
        self.boot_deploy_image(uuid, Some(&node.driver_info)).await?;
        self.set_automated_clean(uuid).await?;
        self.client.undeploy(uuid).await?;
        Ok(Answer::Called)
    }

    async fn power(&self, target: PowerTarget) -> Result<Answer, Stop> {
        let timeout = matches!(target, PowerTarget::SoftOff | PowerTarget::SoftReboot).then_some(SOFT_POWER_TIMEOUT);
        self.client.set_power_state(self.node()?, target, timeout).await?;
        Ok(Answer::Called)
    }

    /// Removes the node from Ironic, in maintenance when its state forbids a plain delete.
    /// Nothing is deprovisioned.
    async fn delete_node(&self) -> Result<Answer, Stop> {
        let client = self.client;
        let Some(node) = client.find_node(&self.request.node_name).await? else {
            return Ok(Answer::Nothing);
        };
        if !plainly_deletable(&node) && node.maintenance != Some(true) {
            client.set_maintenance(&node.uuid, Some("removed by ferrometal without deprovisioning")).await?;
        }
        client.delete_node(&node.uuid).await?;
        tracing::info!(node = %node.uuid, "removed the node from Ironic");
        Ok(Answer::Called)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironic_client::{ApiError, Operation};

    #[test]
    fn driver_info_is_patched_key_by_key_without_printing_secrets() {
        let info = DriverInfo::new().with("redfish_address", "http://bmc").with("redfish_password", "hunter2");
        let Ok(ops) = driver_info_ops(&info) else { panic!("ops") };
        assert_eq!(ops.len(), 2);
        assert!(ops.iter().any(|o| o.path() == "/driver_info/redfish_password"));
        assert!(!format!("{ops:?}").contains("hunter2"));
        assert!(serde_json::to_string(&ops).expect("json").contains("hunter2"), "Ironic receives it");
    }

    #[test]
    fn a_node_resting_in_adopt_failed_with_its_kept_target_is_deleted_without_maintenance() {
        let node = |state: ProvisionState, target: Option<ProvisionState>| {
            let mut node: Node = serde_json::from_value(json!({"uuid": "n"})).expect("node");
            node.provision_state = Some(state);
            node.target_provision_state = target;
            node
        };
        assert!(plainly_deletable(&node(ProvisionState::AdoptFailed, Some(ProvisionState::Active))));
        assert!(plainly_deletable(&node(ProvisionState::Manageable, None)));
        assert!(!plainly_deletable(&node(ProvisionState::Manageable, Some(ProvisionState::Available))));
        assert!(!plainly_deletable(&node(ProvisionState::Active, None)));
    }

    fn api(status: u16, message: &str) -> ApiError {
        ApiError { operation: Operation::SetProvisionState, status, message: message.into(), request_id: None }
    }

    #[test]
    fn an_inspection_begun_after_the_last_status_write_is_never_started_again() {
        let written: k8s_openapi::jiff::Timestamp = "2026-12-01T10:00:00Z".parse().expect("time");
        let node = |state: ProvisionState, started: Option<&str>, finished: Option<&str>| {
            let mut node: Node = serde_json::from_value(json!({"uuid": "n"})).expect("node");
            node.provision_state = Some(state);
            node.inspection_started_at = started.map(Into::into);
            node.inspection_finished_at = finished.map(Into::into);
            node
        };
        let after = Some("2026-12-01T10:00:05.123456+00:00");
        let done = Some("2026-12-01T10:03:00");
        let before = Some("2026-11-30T10:00:00+00:00");
        use InspectionSince::{Finished, Running};
        assert_eq!(inspection_since(&node(ProvisionState::InspectWait, after, None), Some(written)), Some(Running));
        assert_eq!(inspection_since(&node(ProvisionState::Manageable, after, done), Some(written)), Some(Finished));
        assert_eq!(
            inspection_since(&node(ProvisionState::Manageable, None, done), Some(written)),
            Some(Finished),
            "Ironic clears the start when an inspection ends"
        );
        assert_eq!(inspection_since(&node(ProvisionState::Inspecting, before, None), Some(written)), None);
        assert_eq!(
            inspection_since(&node(ProvisionState::Manageable, before, done), Some(written)),
            None,
            "an Ironic that kept the start of an earlier inspection"
        );
        assert_eq!(inspection_since(&node(ProvisionState::Manageable, before, before), Some(written)), None, "older");
        assert_eq!(inspection_since(&node(ProvisionState::Manageable, None, None), Some(written)), None);
        assert_eq!(inspection_since(&node(ProvisionState::Manageable, after, done), None), None);
        assert_eq!(
            inspection_since(&node(ProvisionState::InspectFailed, after, done), Some(written)),
            None,
            "a failed one is for the plan"
        );
    }

    #[test]
    fn refusals_are_answers_for_the_user_and_transient_failures_errors_to_retry() {
        assert_eq!(answer(Err(failed("no MAC"))).ok(), Some(Answer::Failed("no MAC".into())));
        let refused = answer(Err(ironic_client::Error::InvalidState(api(409, "in state active")).into()));
        assert!(matches!(refused, Ok(Answer::Failed(m)) if m.contains("in state active")));
        let locked = answer(Err(ironic_client::Error::NodeLocked(api(409, "locked")).into()));
        assert!(matches!(locked, Err(ironic_client::Error::NodeLocked(_))));
        assert_eq!(answer(Ok(Answer::Called)).ok(), Some(Answer::Called));
    }
}
