//! What the host controller knows of a host's `DataImage` when it decides: read by name only at
//! the moment that acts on it (a provisioned host off that should be on, as baremetal-operator
//! attaches at power on), and remembered as settled until the host is next seen on, so each
//! reboot handles it once. A host without one is handled too (its step reads the node once, and
//! stops there unless a record of ours is in it).

use crate::host::firmware::ReadAgain;
use crate::host::machine::NodeView;
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crds::baremetalhost::{BareMetalHost, ProvisioningState};
use crds::dataimage::DataImage;
use ironic_client::PowerState;
use kube::api::Api;
use kube::{Resource, ResourceExt};
use std::collections::HashMap;
use std::sync::Mutex;

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, DataImage: Get);

/// The image a host's `DataImage` wants in its virtual CD now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Want {
    /// The object's UID: a new object with the same URL is handled anew.
    pub uid: String,
    /// `None` once the object is being deleted.
    pub url: Option<String>,
}

/// The wants each host settled since it was last seen on.
#[derive(Default)]
pub(crate) struct Settled {
    hosts: Mutex<HashMap<HostKey, Want>>,
    /// Wakes the `DataImage` controller, so that its status says at once what the step did.
    pub(crate) reads: ReadAgain<DataImage>,
}

impl Settled {
    pub(crate) fn settle(&self, key: &HostKey, want: Want) {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), want);
        self.reads.read(key);
    }

    fn is_settled(&self, key: &HostKey, want: &Want) -> bool {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner()).get(key) == Some(want)
    }

    pub(crate) fn forget(&self, key: &HostKey) {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// Whether the host is at its power on: provisioned, its node off with no power change under
/// way, and wanted on. (`wanted_on` is the host's power goal.)
pub(crate) fn at_power_on(state: ProvisioningState, node: &NodeView, wanted_on: bool) -> bool {
    let provisioned = matches!(state, ProvisioningState::Provisioned | ProvisioningState::ExternallyProvisioned);
    let off = match node {
        NodeView::Present(n) => n.power_state == Some(PowerState::Off) && n.target_power_state.is_none(),
        _ => false,
    };
    provisioned && off && wanted_on
}

/// The data image the host's step must handle now, if any. A host seen on has its settled
/// marks forgotten, so its next power on looks again.
pub(crate) async fn due(
    client: &kube::Client,
    host: &BareMetalHost,
    key: &HostKey,
    settled: &Settled,
    at_power_on: bool,
    node: &NodeView,
) -> Result<Option<Want>, KubeError> {
    if matches!(node, NodeView::Present(n) if n.power_state == Some(PowerState::On)) {
        settled.forget(key);
    }
    if !at_power_on {
        return Ok(None);
    }
    let api: Api<DataImage> = Api::namespaced(client.clone(), &host.namespace().unwrap_or_default());
    let name = host.name_any();
    let image = api.get_opt(&name).await.map_err(KubeError::of::<DataImage>(Verb::Get, &name))?;
    // Without one (never made, or gone with its finalizer removed by hand or mid-attach), the
    // step still looks for a record of ours in the node, to eject what no one wants any more.
    let want = match image {
        Some(image) => {
            let deleting = image.meta().deletion_timestamp.is_some();
            Want { uid: image.uid().unwrap_or_default(), url: (!deleting).then(|| image.spec.url.clone()) }
        }
        None => Want { uid: String::new(), url: None },
    };
    Ok((!settled.is_settled(key, &want)).then_some(want))
}
