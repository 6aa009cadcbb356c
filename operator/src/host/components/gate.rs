//! What the host controller knows of a host's firmware updates in one reconcile. Updates are
//! flashed only by servicing a provisioned host, so only a provisioned host costs a read: of
//! its `HostFirmwareComponents` (still there, still wanting what the controller last told) and
//! of its `HostUpdatePolicy`, and only while updates wait or its servicing failed.

use crate::host::firmware::{Moment, WantedUpdates, updates_on_reboot};
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents};
use kube::ResourceExt;
use kube::api::Api;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareComponents: Get);

/// A host's firmware updates, as far as servicing goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UpdateFacts {
    /// The spec's updates, while some were not handed to Ironic (empty: nothing waits).
    pub updates: Vec<FirmwareUpdate>,
    /// Its servicing failed and what its object wants is not known yet (the controller's
    /// first read after a restart has not happened): neither retried nor abandoned on a guess.
    pub pending: bool,
    /// Its `HostUpdatePolicy` lets it be serviced for them.
    pub on_reboot: bool,
}

/// The update facts of `host` at `moment`.
pub(crate) async fn update_facts(
    client: &kube::Client,
    host: &BareMetalHost,
    key: &HostKey,
    wanted: &WantedUpdates,
    moment: Moment,
) -> Result<UpdateFacts, KubeError> {
    let updates = wanted.of(key);
    let deciding = match moment {
        Moment::ServicingFailed => true,
        Moment::Provisioned => !updates.is_empty(),
        Moment::BeforeProvisioning | Moment::Other => false,
    };
    if !deciding {
        return Ok(UpdateFacts::default());
    }
    let object = components_of(client, host).await?;
    if object.is_none() && wanted.known(key) {
        // Deleted since it was read: what it wanted goes with it.
        wanted.forget(key);
        return Ok(UpdateFacts::default());
    }
    let wants = object.is_some_and(|o| !o.spec.updates.is_empty());
    let pending = moment == Moment::ServicingFailed && !wanted.known(key) && wants;
    let on_reboot = !updates.is_empty() && updates_on_reboot(client, host).await?;
    Ok(UpdateFacts { updates, pending, on_reboot })
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
