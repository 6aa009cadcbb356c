//! What a reconcile knows besides the NodeSet: read from watch caches by the dereference step,
//! consumed by the pure steps.

use super::rollout::ObservedJob;
use crds::baremetalhost::{BareMetalHost, HardwareDetails};
use crds::firmware::{HostFirmwareComponents, HostFirmwareSettings};
use crds::nodesetservice::NodeSetService;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The objects a NodeSet depends on, as the caches (and this controller's own recent writes)
/// show them.
#[derive(Clone, Debug, Default)]
pub(super) struct Facts {
    /// Where the NodeSet's BareMetalHosts are.
    pub bmh_namespace: String,
    /// Every BareMetalHost of that namespace (none for a preProvisioned NodeSet).
    pub hosts: Vec<Arc<BareMetalHost>>,
    /// Inspected hardware by BareMetalHost name: its HardwareData, else its status' summary.
    pub hardware: BTreeMap<String, HardwareDetails>,
    /// The NodeSetServices the NodeSet lists that exist, by name.
    pub services: BTreeMap<String, Arc<NodeSetService>>,
    /// The HostFirmwareSettings of the BareMetalHosts' namespace, by name (a host's has its
    /// name).
    pub firmware: BTreeMap<String, Arc<HostFirmwareSettings>>,
    /// The HostFirmwareComponents of that namespace, by name, likewise.
    pub components: BTreeMap<String, Arc<HostFirmwareComponents>>,
    /// The NodeSet's service Jobs.
    pub jobs: Vec<ObservedJob>,
    /// BareMetalHosts a claim of this NodeSet recently lost a race for.
    pub lost: BTreeSet<String>,
    /// The NodeSet's record of what ran on its hosts, by ConfigMap name (`record`).
    pub records: BTreeMap<String, super::record::Completions>,
    /// The Secrets and ConfigMaps its variablesFrom and its services' Jobs name that exist,
    /// with their content (`sources`; `Debug` shows key names only).
    pub sources: crds::nodeset::Sources,
}
