//! The objects the lab applies: an `Ironic` in the style of
//! ironic-standalone-operator, and BareMetalHosts on emulated BMCs. Pure.

use serde_json::{Value, json};

/// The namespace the lab's samples live in.
pub const NAMESPACE: &str = "lab";
/// BMC credentials every emulated BMC accepts.
pub const BMC_USERNAME: &str = "admin";
pub const BMC_PASSWORD: &str = "password";

/// The sample Ironic's name (its Service, Secrets and CA take it too).
pub const IRONIC: &str = "ironic";
/// The image of the sample NodeSetServices (`scripts/node/service-image.sh`).
pub const SERVICE_IMAGE: &str = "ferrometal.local/nodeset-service:1";

/// An `Ironic` as metal3 users write it (virtual media, no DHCP), which the operator deploys on
/// the lab's node. It opts out of two things this machine cannot give it: the host network
/// (the pod would listen on this machine's own interfaces) and the ramdisk downloader (its
/// image cannot be pulled here; no sample boots the agent ramdisk).
pub fn ironic() -> Value {
    json!({
        "apiVersion": "ironic.metal3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": {"name": IRONIC, "namespace": NAMESPACE},
        "spec": {
            "networking": {"disableHostNetwork": true},
            "deployRamdisk": {"disableDownloader": true},
            "tls": {"mode": "Auto"},
        }
    })
}

/// A Secret with BMC credentials, as baremetal-operator expects them.
pub fn bmc_secret(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": {"username": BMC_USERNAME, "password": BMC_PASSWORD},
    })
}

/// Label of the sample hosts, which the sample NodeSet selects.
pub const SAMPLE_LABEL: &str = "lab.ferrometal.io/sample";
/// The sample NodeSet.
pub const NODESET: &str = "computes";

/// A BareMetalHost on an emulated BMC, without an image: the sample NodeSet claims and
/// provisions it.
///
/// Inspection is out-of-band (`fast`, through Redfish) and cleaning is off:
/// both of the alternatives boot Ironic's agent ramdisk, which the emulated
/// machines cannot run.
pub fn host(name: &str, bmc_address: &str, credentials: &str, boot_mac: &str) -> Value {
    json!({
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {SAMPLE_LABEL: "true"}},
        "spec": {
            "bmc": {"address": bmc_address, "credentialsName": credentials},
            "bootMACAddress": boot_mac,
            "bootMode": "UEFI",
            "online": true,
            "inspectionMode": "fast",
            "automatedCleaningMode": "disabled",
        }
    })
}

/// The HostUpdatePolicy of a sample host: it may be serviced at a reboot for new BIOS settings
/// (an admin's decision; a NodeSet's BIOS edit waits for it).
pub fn update_policy(name: &str) -> Value {
    json!({
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "HostUpdatePolicy",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"firmwareSettings": "onReboot", "firmwareUpdates": "onReboot"},
    })
}

/// A NodeSetService whose Job runs [`SERVICE_IMAGE`] on the lab's node: it reads the
/// inventory the operator mounts and logs, per host, what it would configure there.
pub fn service(name: &str, run_once: bool) -> Value {
    json!({
        "apiVersion": "ferrometal.io/v1alpha1",
        "kind": "NodeSetService",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "runOnce": run_once,
            "job": {"image": SERVICE_IMAGE},
        }
    })
}

/// The ctlplane network of every sample host, with this MTU.
pub fn ctlplane(mtu: u16) -> Value {
    json!({"name": "ctlplane", "interface": "eno1", "mtu": mtu})
}

/// The sample NodeSet: `hosts` compute hosts on the sample BareMetalHosts, provisioned with the
/// live ISO, and two services, `bootstrap` (once per host) and `configure-network`.
pub fn nodeset(hosts: usize, image_url: &str) -> Value {
    let nodes: serde_json::Map<String, Value> = (0..hosts)
        .map(|i| {
            (
                format!("compute-{i}"),
                json!({"networks": [{"name": "ctlplane", "addresses": [format!("192.0.2.{}/24", 10 + i)]}]}),
            )
        })
        .collect();
    json!({
        "apiVersion": "ferrometal.io/v1alpha1",
        "kind": "NodeSet",
        "metadata": {"name": NODESET, "namespace": NAMESPACE},
        "spec": {
            "baremetalSetTemplate": {
                "bmhLabelSelector": {"matchLabels": {SAMPLE_LABEL: "true"}},
                "image": {"url": image_url, "format": "live-iso"},
                "bootMode": "UEFI",
                "automatedCleaningMode": "disabled",
            },
            "nodeTemplate": {
                "networks": [ctlplane(1500)],
                "dns": {"nameservers": ["192.0.2.53"]},
                "managementNetwork": "ctlplane",
                "variables": {"timezone": "UTC"},
            },
            "nodes": nodes,
            "services": ["bootstrap", "configure-network"],
        }
    })
}

/// The one command that sets a BIOS setting on every host of the sample NodeSet (each serviced
/// in place at a reboot, one at a time).
pub fn bios_edit_command(turbo: &str) -> String {
    let patch = json!({"spec": {"baremetalSetTemplate": {"firmwareSettings": {"ProcTurboMode": turbo}}}});
    format!("kubectl patch nodeset {NODESET} -n {NAMESPACE} --type merge -p '{patch}'")
}

/// The one command that edits the sample NodeSet's MTU (applied in place).
pub fn mtu_edit_command(mtu: u16) -> String {
    let patch = json!({"spec": {"nodeTemplate": {"networks": [ctlplane(mtu)]}}});
    format!("kubectl patch nodeset {NODESET} -n {NAMESPACE} --type merge -p '{patch}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_have_no_image_and_the_nodeset_selects_and_provisions_them() {
        let h =
            host("host-0", "redfish-virtualmedia+http://127.0.0.1:1/redfish/v1/Systems/x", "c", "52:54:00:00:00:01");
        assert!(h["spec"].get("image").is_none(), "the NodeSet provisions it");
        assert_eq!(h["spec"]["bmc"]["credentialsName"], "c");
        assert_eq!(h["metadata"]["namespace"], NAMESPACE);
        let n = nodeset(3, "http://i/live.iso");
        assert_eq!(n["spec"]["baremetalSetTemplate"]["bmhLabelSelector"]["matchLabels"][SAMPLE_LABEL], "true");
        assert_eq!(h["metadata"]["labels"][SAMPLE_LABEL], "true");
        assert_eq!(n["spec"]["baremetalSetTemplate"]["image"]["format"], "live-iso");
        assert_eq!(n["spec"]["nodes"].as_object().map(|m| m.len()), Some(3));
        let parsed: crds::nodeset::NodeSet = serde_json::from_value(n).expect("a NodeSet");
        assert!(crds::nodeset::validate_nodeset(&parsed, None).is_empty(), "the sample is valid");
        let s: crds::nodesetservice::NodeSetService =
            serde_json::from_value(service("bootstrap", true)).expect("service");
        assert!(crds::nodesetservice::validate_nodeset_service(&s.spec).is_empty());
    }

    #[test]
    fn the_mtu_edit_is_a_merge_patch_of_the_template_networks() {
        let command = mtu_edit_command(9000);
        assert!(command.starts_with("kubectl patch nodeset computes -n lab --type merge -p '"), "{command}");
        let patch: Value = serde_json::from_str(command.split('\'').nth(1).expect("quoted")).expect("JSON");
        assert_eq!(patch["spec"]["nodeTemplate"]["networks"][0]["mtu"], 9000);
        assert_eq!(patch["spec"]["nodeTemplate"]["networks"][0]["interface"], "eno1");
    }
}
