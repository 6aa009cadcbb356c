//! The model's starting objects, in the style of `plan_tests.rs`: a NodeSet of a few hosts,
//! its three NodeSetServices (`bootstrap` runs once), and free BareMetalHosts.

use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, ProvisionStatus, ProvisioningState};
use crds::nodeset::{NodeSet, SourceData, SourceRef, Sources};
use crds::nodesetservice::NodeSetService;
use serde_json::{Value, json};

pub(super) const NAMESPACE: &str = "metal3";
pub(super) const NODESET: &str = "computes";
/// Hostnames the model uses, by index.
pub(super) const HOSTNAMES: [&str; 4] = ["compute-0", "compute-1", "compute-2", "compute-3"];
/// BareMetalHosts in the namespace.
pub(super) const MACHINES: usize = 5;
/// The NodeSetServices that exist.
pub(super) const SERVICES: [&str; 3] = ["bootstrap", "configure-network", "configure-os"];
/// The service lists the user chooses from.
pub(super) const SERVICE_LISTS: [&[&str]; 4] = [
    &["bootstrap", "configure-network"],
    &["bootstrap", "configure-network", "configure-os"],
    &["bootstrap", "configure-os", "configure-network"],
    &["configure-network"],
];

/// A host's entry in `spec.nodes`.
pub(super) fn node(index: usize) -> Value {
    json!({"networks": [{"name": "ctlplane", "addresses": [format!("192.0.2.{}/24", 10 + index)]}]})
}

/// The spec of a NodeSet of the first `hosts` hostnames.
pub(super) fn spec(pre_provisioned: bool, hosts: usize) -> Value {
    let nodes: serde_json::Map<String, Value> =
        HOSTNAMES.iter().take(hosts).enumerate().map(|(i, h)| (h.to_string(), node(i))).collect();
    let mut spec = json!({
        "nodeTemplate": {
            "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 1500, "gateway": "192.0.2.1"}],
            "managementNetwork": "ctlplane",
            "variables": {"timezone": "UTC"},
            "variablesFrom": [{"secretRef": {"name": SECRET}}]
        },
        "nodes": nodes,
        "services": SERVICE_LISTS[0],
        "rollout": {"strategy": "Automatic", "maxUnavailable": 1},
        "deletionPolicy": "Retain"
    });
    if pre_provisioned {
        spec["preProvisioned"] = json!(true);
    } else {
        spec["baremetalSetTemplate"] = json!({"image": {"url": "http://images/os-1.qcow2", "checksum": "http://images/os.qcow2.sha256sum", "checksumType": "sha256", "format": "qcow2"}, "automatedCleaningMode": "metadata"});
    }
    spec
}

/// The NodeSet of `spec`, in its `incarnation` (a recreated NodeSet has a new uid).
pub(super) fn nodeset(spec: &Value, incarnation: u32) -> NodeSet {
    serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": NODESET, "namespace": NAMESPACE, "uid": format!("ns-uid-{incarnation}"), "generation": 1},
        "spec": spec
    }))
    .expect("nodeset")
}

/// A NodeSetService at `version` of its spec. `bootstrap` (run once) and `configure-os` read
/// [`SECRET`] in their Job's environment.
pub(super) fn service(name: &str, version: u32) -> NodeSetService {
    let mut job = json!({"image": format!("{name}:{version}")});
    match name {
        "bootstrap" => job["envFrom"] = json!([{"secretRef": {"name": SECRET}}]),
        "configure-os" => {
            job["env"] =
                json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": SECRET, "key": "password"}}}])
        }
        _ => {}
    }
    serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{name}")},
        "spec": {"job": job, "runOnce": name == "bootstrap"}
    }))
    .expect("service")
}

/// The Secret the template's variablesFrom and two services read.
pub(super) const SECRET: &str = "db";

/// The sources as read, with [`SECRET`] at `version` of its content.
pub(super) fn sources(version: u8) -> Sources {
    let data = SourceData { data: [("password".to_string(), format!("v{version}"))].into(), binary: Vec::new() };
    Sources([(SourceRef::secret(SECRET), data)].into())
}

/// A free BareMetalHost, as JSON.
pub(super) fn machine(index: usize) -> Value {
    let name = format!("server-{index}");
    let mut host: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("{index}000-uid")},
        "spec": {"online": true, "bmc": {"address": format!("fake://{name}"), "credentialsName": "c"}}
    }))
    .expect("host");
    host.status = Some(BareMetalHostStatus {
        provisioning: ProvisionStatus { state: ProvisioningState::Available, ..Default::default() },
        ..Default::default()
    });
    serde_json::to_value(host).expect("json")
}
