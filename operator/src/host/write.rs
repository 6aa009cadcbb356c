//! The write step: every Kubernetes write a reconcile makes after deciding, in the order that
//! keeps what others read true. The HardwareData inspection found comes before the status
//! that says inspection is done; Events come after the status write, so none announces what
//! the status does not show; consumed annotations go last, so that a failed write leaves
//! them for the retry.

use crate::host::capacity::Capacity;
use crate::host::context::{CONTROLLER, Writer};
use crate::host::draft::Draft;
use crate::host::error;
use crate::host::firmware::target::managed_state;
use crate::host::handoff::{Next, Written};
use crate::host::machine::is_busy;
use crate::host::metadata;
use crate::kit::status::Commit;
use crate::kit::{Ledger, Notice};
use crds::baremetalhost::BareMetalHost;
use crds::hardwaredata::{HardwareData, HardwareDataSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Writes what the draft holds, or releases the host.
pub(super) async fn run(ctx: Writer<'_>, draft: Draft, next: Next, now: Timestamp) -> Result<Written, error::Error> {
    match next {
        Next::Release => release(ctx, &draft).await.map(Written::Done),
        Next::Requeue(action) => {
            commit(ctx, draft, now).await?;
            Ok(Written::Done(action))
        }
        Next::Again => Ok(Written::Again(commit(ctx, draft, now).await?)),
    }
}

fn api(ctx: &Writer<'_>, draft: &Draft) -> Api<BareMetalHost> {
    Api::namespaced(ctx.kube.clone(), &draft.key.namespace)
}

/// Writes the draft; returns the host as it now is.
async fn commit(ctx: Writer<'_>, mut draft: Draft, now: Timestamp) -> Result<Arc<BareMetalHost>, error::Error> {
    if let Some(details) = draft.hardware_data.take() {
        // The full inventory, owned by the host (the garbage collector removes it with the host).
        let applied: Result<(), error::Error> = async {
            let ledger = Ledger::new(ctx.kube.clone(), &*draft.host, BTreeMap::new())?;
            ledger.apply(HardwareData::new(&draft.key.name, HardwareDataSpec { hardware: Some(details) })).await?;
            Ok(())
        }
        .await;
        if let Err(err) = applied {
            return_unrecorded_slot(ctx.hosts.capacity, &draft);
            return Err(err);
        }
    }
    let changed = draft.settle(now);
    // A node registered (first, or again under a new id): the host's HostFirmwareSettings and
    // HostFirmwareComponents, as baremetal-operator makes them at registration, before the
    // status that shows the node. Only with that status write: while registering, the ID
    // alone is not written (`Draft::settle`), and each reconcile until it is would create them
    // again (refused as existing, a request each).
    let registered = &draft.status.provisioning.id;
    let before = draft.host.status.as_ref().map(|s| s.provisioning.id.as_str()).unwrap_or_default();
    if changed && !registered.is_empty() && registered != before {
        crate::host::firmware::ensure_settings(ctx.kube, &draft.host).await?;
        crate::host::components::ensure_components(ctx.kube, &draft.host).await?;
    }
    let api = api(&ctx, &draft);
    if changed {
        draft.status.last_updated = Some(Time(now));
    }
    let commit = Commit { controller: CONTROLLER, metrics: ctx.metrics, publisher: ctx.publisher };
    let notices = std::mem::take(&mut draft.notices);
    match commit.write(&api, &*draft.host, changed.then_some(&draft.status), notices).await {
        Ok(Some(written)) => draft.host = ctx.hosts.memory.remember(written),
        Ok(None) => {}
        Err(err) => {
            return_unrecorded_slot(ctx.hosts.capacity, &draft);
            return Err(err.into());
        }
    }
    if draft.release_slot {
        ctx.hosts.capacity.release(&draft.key);
    }
    // Written managed: Ironic has read the node's BIOS and firmware components by now, and the
    // firmware objects read them (they ask Ironic nothing before, and find the host managed now
    // that the status says so).
    if changed && !managed_state(draft.before.provisioning.state) && managed_state(draft.status.provisioning.state) {
        ctx.hosts.firmware.read_now(&draft.key);
        ctx.hosts.components.read_now(&draft.key);
    }
    let present: Vec<&'static str> =
        draft.remove_annotations.iter().copied().filter(|k| draft.host.annotations().contains_key(*k)).collect();
    if !present.is_empty() {
        let patch = metadata::remove_annotations_patch(&draft.host, &present);
        let patched = metadata::patch(&api, &draft.host, patch).await?;
        return Ok(ctx.hosts.memory.remember(patched));
    }
    Ok(draft.host)
}

/// Gives back a provisioning slot this reconcile took for a move into a busy state that no
/// status write recorded: the host is not busy for anyone, and if its plan changes before the
/// retry (its image removed, the host deleted), nothing else would ever return the slot.
fn return_unrecorded_slot(capacity: &Capacity, draft: &Draft) {
    if is_busy(draft.status.provisioning.state) && !is_busy(draft.before.provisioning.state) {
        capacity.release(&draft.key);
    }
}

/// Removes the finalizer: nothing is left in Ironic. The Event goes out first, while the
/// host still exists to be its subject; what else the reconcile noted goes with the host.
async fn release(ctx: Writer<'_>, draft: &Draft) -> Result<Action, error::Error> {
    let host = &draft.host;
    ctx.publisher.one(&**host, &Notice::normal("Deleted", "the host is released")).await;
    metadata::patch(&api(&ctx, draft), host, metadata::remove_finalizer_patch(host)).await?;
    ctx.hosts.forget(&draft.key);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::wake::{HostKey, Wakeups};
    use crds::baremetalhost::{BareMetalHostSpec, ProvisioningState};
    use std::sync::Arc;

    #[test]
    fn a_slot_taken_for_a_status_never_written_goes_back() {
        let capacity = Capacity::new(1, Arc::new(Wakeups::default()));
        let (a, b) = (HostKey::new("ns", "a"), HostKey::new("ns", "b"));
        let mut draft = Draft::new(Arc::new(BareMetalHost::new("a", BareMetalHostSpec::default())), a.clone());
        draft.status.provisioning.state = ProvisioningState::Inspecting;
        assert!(capacity.try_acquire(&a));
        assert!(!capacity.try_acquire(&b), "the only slot is taken");
        return_unrecorded_slot(&capacity, &draft);
        assert!(capacity.try_acquire(&b), "the failed write gave the slot back");

        // A host whose status already says busy keeps its slot: the world sees it busy.
        let mut busy = Draft::new(Arc::new(BareMetalHost::new("b", BareMetalHostSpec::default())), b.clone());
        busy.before.provisioning.state = ProvisioningState::Inspecting;
        busy.status.provisioning.state = ProvisioningState::Inspecting;
        return_unrecorded_slot(&capacity, &busy);
        assert!(!capacity.try_acquire(&a), "b still holds the slot");
    }
}
