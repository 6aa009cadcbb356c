//! The `HostFirmwareComponents` controller, beside the host controller and through its Ironic
//! connection: it reads each host's firmware components (`bios`, `bmc`, NICs) from Ironic into
//! the status of the `HostFirmwareComponents` of the host's name, with the updates Ironic was
//! handed, and says whether the wanted updates are valid and still to be flashed
//! (baremetal-operator's `Valid` and `ChangeDetected`). It never flashes anything itself: it
//! tells the host controller which updates each host waits for, and the host controller hands
//! them to Ironic by servicing the provisioned host at its reboot (`design/hosts.md`).
//!
//! - `controller`: the watch per scope, woken by changes of the spec only;
//! - `reconcile`: the steps: dereference the host → read Ironic → status;
//! - `gate`: what a provisioned host knows of its updates when it decides;
//! - `handover`: the record in the node of which updates were flashed or are (pure);
//! - `status`: the status, conditions and Events from what was read (pure).

mod controller;
mod gate;
pub(super) mod handover;
mod reconcile;
mod status;

pub(super) use controller::run;
pub(super) use gate::{UpdateFacts, update_facts};

use crate::host::firmware::create_for_host;
use crate::kit::KubeError;
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareComponents, HostFirmwareComponentsSpec};
use kube::ResourceExt;

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareComponents: Create);

/// The `HostFirmwareComponents` of a host, made when the host controller registers its node,
/// as baremetal-operator makes it: named for the host, owned by it, with no updates, and only
/// when the host's driver has a firmware interface; its spec belongs to the user from then on
/// (one written first is left as it is).
pub(super) async fn ensure_components(client: &kube::Client, host: &BareMetalHost) -> Result<(), KubeError> {
    let address = host.spec.bmc.as_ref().map(|b| b.address.as_str()).unwrap_or_default();
    let scheme = crds::baremetalhost::bmc::parse_bmc_address(address).ok().map(|a| a.scheme);
    let firmware = scheme.and_then(|scheme| crate::host::driver::driver_spec(scheme).interfaces.firmware_interface);
    if firmware.is_none() {
        return Ok(());
    }
    let object = HostFirmwareComponents::new(&host.name_any(), HostFirmwareComponentsSpec::default());
    create_for_host(client, host, object).await
}
