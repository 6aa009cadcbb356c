//! The objects the lab applies: an `Ironic` in the style of
//! ironic-standalone-operator, and BareMetalHosts on emulated BMCs. Pure.

use serde_json::{Value, json};

/// The namespace the lab's samples live in.
pub const NAMESPACE: &str = "lab";
/// BMC credentials every emulated BMC accepts.
pub const BMC_USERNAME: &str = "admin";
pub const BMC_PASSWORD: &str = "password";

/// An `Ironic` as metal3 users write it (virtual media, no DHCP). The
/// operator renders its workload; the lab's pods come from the simulator.
pub fn ironic() -> Value {
    json!({
        "apiVersion": "ironic.metal3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": {"name": "ironic", "namespace": NAMESPACE},
        "spec": {
            "networking": {"disableHostNetwork": true},
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

/// A BareMetalHost on an emulated BMC, to be provisioned with the live ISO.
///
/// Inspection is out-of-band (`fast`, through Redfish) and cleaning is off:
/// both of the alternatives boot Ironic's agent ramdisk, which the emulated
/// machines cannot run.
pub fn host(name: &str, bmc_address: &str, credentials: &str, boot_mac: &str, image_url: &str) -> Value {
    json!({
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"lab.ferrometal.io/sample": "true"}},
        "spec": {
            "bmc": {"address": bmc_address, "credentialsName": credentials},
            "bootMACAddress": boot_mac,
            "bootMode": "UEFI",
            "online": true,
            "image": {"url": image_url, "format": "live-iso"},
            "inspectionMode": "fast",
            "automatedCleaningMode": "disabled",
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_live_iso_on_their_bmc() {
        let h = host(
            "host-0",
            "redfish-virtualmedia+http://127.0.0.1:1/redfish/v1/Systems/x",
            "c",
            "52:54:00:00:00:01",
            "http://i/live.iso",
        );
        assert_eq!(h["spec"]["image"]["format"], "live-iso");
        assert_eq!(h["spec"]["bmc"]["credentialsName"], "c");
        assert_eq!(h["metadata"]["namespace"], NAMESPACE);
    }
}
