//! What the host controller knows of a host's firmware updates in one reconcile. Updates are
//! flashed only by servicing a provisioned host, so only a provisioned host costs a read: of
//! its `HostFirmwareComponents` (still there, and its spec as it is now) and of its
//! `HostUpdatePolicy`, and only while updates wait or its servicing failed.

use crate::host::firmware::{Moment, WantedUpdates, updates_on_reboot};
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents, validate_host_firmware_components};
use kube::ResourceExt;
use kube::api::Api;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareComponents: Get);

/// A host's firmware updates, as far as servicing goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UpdateFacts {
    /// The spec's updates, read now, when some may be left to flash (empty: nothing waits).
    /// Which are is for the node's record to say, when the host is serviced.
    pub updates: Vec<FirmwareUpdate>,
    /// The updates the object last showed handed over.
    pub recorded: Vec<FirmwareUpdate>,
    /// Its `HostUpdatePolicy` lets it be serviced for them.
    pub on_reboot: bool,
}

/// The update facts of `host` at `moment`: for a provisioned host the components controller
/// said waits for updates, and for a host whose servicing failed (whatever the controller last
/// said: it may have read the host while its servicing ran), the object is read now and its
/// spec is what counts.
pub(crate) async fn update_facts(
    client: &kube::Client,
    host: &BareMetalHost,
    key: &HostKey,
    wanted: &WantedUpdates,
    moment: Moment,
) -> Result<UpdateFacts, KubeError> {
    let deciding = match moment {
        Moment::ServicingFailed => true,
        Moment::Provisioned => !wanted.of(key).is_empty(),
        Moment::BeforeProvisioning | Moment::Other => false,
    };
    if !deciding {
        return Ok(UpdateFacts::default());
    }
    let Some(object) = components_of(client, host).await? else {
        // Deleted since it was read: what it wanted goes with it.
        wanted.forget(key);
        return Ok(UpdateFacts::default());
    };
    let valid = validate_host_firmware_components(&object.spec).is_empty();
    let updates = if valid { object.spec.updates } else { Vec::new() };
    let recorded = object.status.map(|s| s.updates).unwrap_or_default();
    let on_reboot = !updates.is_empty() && updates_on_reboot(client, host).await?;
    Ok(UpdateFacts { updates, recorded, on_reboot })
}

/// The host's `HostFirmwareComponents`, read now.
async fn components_of(
    client: &kube::Client,
    host: &BareMetalHost,
) -> Result<Option<HostFirmwareComponents>, KubeError> {
    let name = host.name_any();
    let api: Api<HostFirmwareComponents> = Api::namespaced(client.clone(), &host.namespace().unwrap_or_default());
    api.get_opt(&name).await.map_err(KubeError::of::<HostFirmwareComponents>(Verb::Get, &name))
}
