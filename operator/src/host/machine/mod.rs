//! The provisioning state machine, as baremetal-operator has it, as a pure
//! function: from what is known about a host and its Ironic node ([`Facts`])
//! to the one next thing to do ([`Plan`]).
//!
//! The reconciler gathers the facts (spec, status, annotations, the node as
//! the last bulk poll saw it), asks [`plan`], and executes the answer. Every
//! answer is a single step: one state change, one Ironic call, or waiting.
//! Ironic calls are followed by waiting for the next bulk poll, so a decision
//! is never taken twice on the same stale observation.
//!
//! - `states`: what each provisioning state is (busy, transitional, detachable) and the
//!   transitions the machine allows;
//! - `node`: the plan of a host whose node Ironic has, state by state, and its power;
//! - `delete`: the plan of a host being deleted.

mod delete;
mod node;
mod states;
#[cfg(test)]
mod tests;

pub(crate) use states::{detach_allowed, error_type_of, is_busy, is_transitional};

use crds::baremetalhost::annotations::DetachedAnnotation;
use crds::baremetalhost::{ErrorType, ProvisioningState};
use ironic_client::{NodeStatusSummary, PowerTarget};

use ProvisioningState as S;

/// The node as the bulk poll last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NodeView {
    /// No poll has completed yet (or the last one is older than the host's
    /// last action): nothing can be decided about the node.
    Unknown,
    /// Ironic has no node of this name.
    Missing,
    /// The node's state.
    Present(Box<NodeStatusSummary>),
}

/// What power the host should have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PowerGoal {
    On,
    /// Off: `spec.online: false`, or held off by reboot annotations. `hard`
    /// skips the ACPI shutdown.
    Off {
        hard: bool,
    },
    /// A reboot in place, for hosts that must never be powered off.
    Reboot {
        hard: bool,
    },
}

/// Everything [`plan`] decides from.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    pub state: ProvisioningState,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The BMC address is set.
    pub has_bmc: bool,
    /// The poll lists some shards only (`--shards`): a node missing from it may exist under
    /// another shard or none (registered before the hosts were divided), so a step that would
    /// take its absence as final registers it again instead, which finds it by name.
    pub missing_unsure: bool,
    /// The detached annotation, parsed.
    pub detach: Option<DetachedAnnotation>,
    /// `status.operationalStatus` is `detached`.
    pub detached_status: bool,
    pub externally_provisioned: bool,
    pub inspection_disabled: bool,
    /// Why the spec asks for something this controller refuses (RAID, network interfaces,
    /// OCI credentials): the host stops in `preparing` with this as its error.
    pub unsupported: Option<String>,
    /// The `inspect.metal3.io` annotation asks for a new inspection.
    pub inspect_requested: bool,
    /// An image or custom deploy is set and the host should be online.
    pub provision_requested: bool,
    /// `spec.automatedCleaningMode` is `disabled`: a `provide` cleans nothing.
    pub cleaning_disabled: bool,
    /// Provisioned: the image (or custom deploy) differs from what was provisioned.
    pub image_changed: bool,
    /// Provisioning: the image differs from the one being provisioned.
    pub provisioning_target_changed: bool,
    /// Inspection was started by us and has not finished.
    pub inspection_started: bool,
    /// The credentials Secret changed since Ironic was last given it.
    pub credentials_changed: bool,
    /// The error recorded in status, if any.
    pub error_type: Option<ErrorType>,
    /// The error's retry time has not come yet.
    pub in_backoff: bool,
    pub error_count: i32,
    /// Our last power change did not reach its target.
    pub power_attempt_failed: bool,
    pub power: PowerGoal,
    /// The one-shot reboot annotation is present.
    pub reboot_oneshot: bool,
    pub disable_power_off: bool,
    /// The host's `HostFirmwareSettings` wants BIOS settings Ironic did not show it has.
    pub bios_change: bool,
    /// The host's `HostFirmwareSettings` wants settings the firmware controller has not read
    /// (or told) yet, at a moment that decides on them (before provisioning, a failed
    /// servicing).
    pub bios_pending: bool,
    /// The host's `HostUpdatePolicy` lets a provisioned host be serviced for its settings.
    pub bios_on_reboot: bool,
    /// The host's `HostFirmwareComponents` wants updates, some of which may not be flashed
    /// yet (the servicing step reads the node's record of which).
    pub updates_change: bool,
    /// The host's `HostUpdatePolicy` lets a provisioned host be serviced for its updates.
    pub updates_on_reboot: bool,
    /// The host is at its power on and its `DataImage` is not settled for it yet: attached,
    /// ejected or left as the node's record and virtual CD say (`host::dataimage`).
    pub data_image_due: bool,
    pub node: NodeView,
}

impl Facts {
    /// Something waits that the host's policy lets servicing apply: settings, updates, or both.
    pub(crate) fn servicing_wanted(&self) -> bool {
        (self.bios_change && self.bios_on_reboot) || (self.updates_change && self.updates_on_reboot)
    }

    /// What a failed servicing would be retried for is not known yet.
    pub(crate) fn servicing_unknown(&self) -> bool {
        self.bios_pending
    }
}

impl Default for Facts {
    fn default() -> Self {
        Self {
            state: S::None,
            deleting: false,
            has_bmc: true,
            missing_unsure: false,
            detach: None,
            detached_status: false,
            externally_provisioned: false,
            inspection_disabled: false,
            unsupported: None,
            inspect_requested: false,
            provision_requested: false,
            cleaning_disabled: false,
            image_changed: false,
            provisioning_target_changed: false,
            inspection_started: false,
            credentials_changed: false,
            error_type: None,
            in_backoff: false,
            error_count: 0,
            power_attempt_failed: false,
            power: PowerGoal::On,
            reboot_oneshot: false,
            disable_power_off: false,
            bios_change: false,
            bios_pending: false,
            bios_on_reboot: false,
            updates_change: false,
            updates_on_reboot: false,
            data_image_due: false,
            node: NodeView::Unknown,
        }
    }
}

/// An Ironic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// Find the node by name or create it (with its port), refresh its
    /// credentials when they changed, and `manage` it when in `enroll`.
    Register,
    /// Send new credentials to an enrolled node (no state change).
    UpdateCredentials,
    /// `manage`: back to manageable (from available, clean failed…).
    Manage,
    Inspect,
    /// Read the inventory, write HardwareData, move on to preparing.
    FinishInspection,
    /// Apply the BIOS settings the host waits for, by a manual clean (out of band).
    ApplyBios,
    /// Apply them, and flash the firmware updates waiting, on a provisioned host by servicing
    /// (out of band): the node goes from `active` through `servicing` back to `active`, never
    /// deployed or cleaned again.
    Service,
    /// Attach the host's `DataImage` to its virtual CD, or eject ours, before it is powered on,
    /// as baremetal-operator does at power on.
    DataImage,
    /// End a failed servicing whose settings and updates are no longer wanted (or allowed):
    /// back to `active`.
    AbortServicing,
    /// `provide` (with automated cleaning as the host asks).
    Provide,
    /// Set the instance info and deploy.
    Deploy,
    /// Set the instance info and adopt (a host already running its image).
    Adopt,
    /// `deleted` (with automated cleaning as the host asks).
    Undeploy,
    Power(PowerTarget),
    /// Remove the node from Ironic, then release the host.
    DeleteNode,
}

/// The next step for a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing to do until something changes (steady state).
    Idle,
    /// A retry is due later: the error backoff has not expired.
    Backoff,
    /// Ironic is working on the node: wait for the poller to see a change.
    Wait,
    /// Move to another provisioning state.
    Transition(ProvisioningState),
    /// Record a failure, optionally moving on to another state.
    Fail { error: ErrorType, message: String, then: Option<ProvisioningState> },
    /// Call Ironic. `retry` marks a retry after a recorded failure.
    Act { act: Act, retry: bool },
    /// Remove the node from Ironic without deprovisioning.
    Detach,
    /// Clear the one-shot reboot annotation (the host went down).
    ClearReboot,
    /// Remove the finalizer: nothing is left in Ironic.
    Release,
}

impl Plan {
    /// True when carrying the plan out calls Ironic (creates, changes or deletes a node);
    /// everything else only writes the host.
    pub(crate) fn reaches_ironic(&self) -> bool {
        matches!(self, Plan::Act { .. } | Plan::Detach)
    }
}

pub(super) fn act(act: Act) -> Plan {
    Plan::Act { act, retry: false }
}

pub(super) fn retry(act: Act) -> Plan {
    Plan::Act { act, retry: true }
}

/// The next step for a host.
pub(crate) fn plan(f: &Facts) -> Plan {
    if f.deleting {
        return delete::plan_delete(f);
    }
    if let Some(detach) = &f.detach
        && (f.detached_status || detach_allowed(f.state) || detach.force)
    {
        return match f.node {
            NodeView::Missing if f.detached_status => Plan::Idle,
            _ => Plan::Detach,
        };
    }
    if f.error_type.is_some() && f.in_backoff {
        return Plan::Backoff;
    }
    match f.state {
        S::None => Plan::Transition(if f.has_bmc { S::Registering } else { S::Unmanaged }),
        S::Unmanaged if f.has_bmc => Plan::Transition(S::Registering),
        S::Unmanaged => Plan::Idle,
        S::Registering => node::plan_registering(f),
        state => match &f.node {
            NodeView::Unknown => Plan::Wait,
            NodeView::Missing if state == S::Deprovisioning && f.missing_unsure && f.has_bmc => act(Act::Register),
            // Nothing to deprovision: the node is gone.
            NodeView::Missing if state == S::Deprovisioning => Plan::Transition(S::Available),
            // Ironic lost the node (a restart with an empty database, a
            // detach undone): register it again; provisioned hosts are then
            // adopted, never deployed again.
            NodeView::Missing => act(Act::Register),
            NodeView::Present(node) => node::plan_with_node(f, state, node),
        },
    }
}
