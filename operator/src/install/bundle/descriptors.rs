//! The CSV's `owned` CRD entries: display names, descriptions, the objects each kind makes,
//! and spec and status descriptors for the main fields (the OLM console's forms and views).

use serde_json::{Value, json};

const TEXT: &str = "urn:alm:descriptor:com.tectonic.ui:text";
const BOOLEAN: &str = "urn:alm:descriptor:com.tectonic.ui:booleanSwitch";
const NUMBER: &str = "urn:alm:descriptor:com.tectonic.ui:number";
const SECRET: &str = "urn:alm:descriptor:io.kubernetes:Secret";
const CONDITIONS: &str = "urn:alm:descriptor:io.kubernetes.conditions";
const LINK: &str = "urn:alm:descriptor:org.w3:link";
const FIELD_GROUP: &str = "urn:alm:descriptor:com.tectonic.ui:fieldGroup:";

fn descriptor(path: &str, name: &str, description: &str, x: &[&str]) -> Value {
    json!({"path": path, "displayName": name, "description": description, "x-descriptors": x})
}

fn resources(kinds: &[(&str, &str)]) -> Vec<Value> {
    kinds.iter().map(|(kind, version)| json!({"kind": kind, "name": "", "version": version})).collect()
}

/// One entry per served version of every CRD, in `crds::all_crds` order.
pub(super) fn owned() -> Vec<Value> {
    vec![
        ironic(),
        bare_metal_host(),
        hardware_data(),
        node_set(),
        node_set_service(),
        firmware_schema(),
        host_firmware_settings(),
        host_firmware_components(),
        host_update_policy(),
        data_image(),
        bmc_event_subscription(),
        preprovisioning_image(),
    ]
}

/// An `Ironic`.
fn ironic() -> Value {
    json!({
        "name": "ironics.ironic.metal3.io", "version": "v1alpha1", "kind": "Ironic",
        "displayName": "Ironic",
        "description": "A running OpenStack Ironic: its workload, Services, DHCP, API credentials, TLS, a managed or external MariaDB, and version upgrades (ironic-standalone-operator's API).",
        "resources": resources(&[("Deployment", "v1"), ("DaemonSet", "v1"), ("StatefulSet", "v1"), ("Service", "v1"),
            ("Ingress", "v1"), ("Secret", "v1"), ("ConfigMap", "v1"), ("Job", "v1")]),
        "specDescriptors": [
            descriptor("version", "Version", "The Ironic release to run (default 38.0), or latest.", &[TEXT]),
            descriptor("highAvailability", "High availability", "Run Ironic as a DaemonSet on every control-plane node; needs a database.", &[BOOLEAN]),
            descriptor("apiCredentialsName", "API credentials", "A Secret with username and password for Ironic's API; generated when unset.", &[SECRET]),
            descriptor("database", "Database", "A managed MariaDB, or an external database; SQLite when unset.", &[&format!("{FIELD_GROUP}database")]),
            descriptor("database.credentialsName", "Database credentials", "The Secret with an external database's username and password.", &[SECRET, &format!("{FIELD_GROUP}database")]),
            descriptor("tls.mode", "TLS mode", "Secret (your certificate), Auto (an operator-managed CA) or CertManager.", &[TEXT, &format!("{FIELD_GROUP}tls")]),
            descriptor("tls.certificateName", "TLS certificate", "The Secret with the serving certificate (mode Secret).", &[SECRET, &format!("{FIELD_GROUP}tls")]),
            descriptor("networking.ipAddress", "Provisioning IP", "The address Ironic serves on the provisioning network.", &[TEXT, &format!("{FIELD_GROUP}networking")]),
        ],
        "statusDescriptors": [
            descriptor("conditions", "Conditions", "Ready, Progressing, Degraded and DatabaseReady.", &[CONDITIONS]),
            descriptor("installedVersion", "Installed version", "The Ironic version running now.", &[TEXT]),
            descriptor("apiEndpoint", "API endpoint", "Where Ironic's API is served.", &[LINK]),
            descriptor("apiCredentialsSecretName", "Generated API credentials", "The Secret with the generated API credentials.", &[SECRET]),
        ],
    })
}

/// A `BareMetalHost`.
fn bare_metal_host() -> Value {
    json!({
        "name": "baremetalhosts.metal3.io", "version": "v1alpha1", "kind": "BareMetalHost",
        "displayName": "Bare Metal Host",
        "description": "A machine with a BMC, registered, inspected, provisioned, deprovisioned and power-managed through Ironic (baremetal-operator's API).",
        "resources": resources(&[("HardwareData", "v1alpha1"), ("Secret", "v1")]),
        "specDescriptors": [
            descriptor("online", "Online", "Whether the machine should be powered on.", &[BOOLEAN]),
            descriptor("bmc.address", "BMC address", "The BMC's URL, e.g. redfish-virtualmedia+https://10.0.0.21/redfish/v1/Systems/1.", &[TEXT, &format!("{FIELD_GROUP}bmc")]),
            descriptor("bmc.credentialsName", "BMC credentials", "The Secret with the BMC's username and password.", &[SECRET, &format!("{FIELD_GROUP}bmc")]),
            descriptor("bootMACAddress", "Boot MAC address", "The MAC of the NIC the machine boots from.", &[TEXT]),
            descriptor("image.url", "Image", "The image to provision; removing it deprovisions the machine.", &[TEXT, &format!("{FIELD_GROUP}image")]),
        ],
        "statusDescriptors": [
            descriptor("provisioning.state", "State", "Where the host is in its lifecycle.", &[TEXT]),
            descriptor("operationalStatus", "Operational status", "OK, discovered, error, delayed or detached.", &[TEXT]),
            descriptor("poweredOn", "Powered on", "Whether the machine is powered on.", &[BOOLEAN]),
            descriptor("errorMessage", "Error", "The last error, until it is resolved.", &[TEXT]),
        ],
    })
}

/// A `HardwareData`.
fn hardware_data() -> Value {
    json!({
        "name": "hardwaredata.metal3.io", "version": "v1alpha1", "kind": "HardwareData",
        "displayName": "Hardware Data",
        "description": "What inspection found on a BareMetalHost: CPUs, memory, disks and NICs. Written by the operator.",
        "resources": [],
        "specDescriptors": [
            descriptor("hardware", "Hardware", "The inspected hardware.", &[TEXT]),
        ],
    })
}

/// A `FirmwareSchema`.
fn firmware_schema() -> Value {
    json!({
        "name": "firmwareschemas.metal3.io", "version": "v1alpha1", "kind": "FirmwareSchema",
        "displayName": "Firmware Schema",
        "description": "The BIOS settings of a model of machine and what each accepts, as its BMC reports them. Written by the operator.",
        "resources": [],
        "specDescriptors": [
            descriptor("hardwareVendor", "Vendor", "The hardware vendor.", &[TEXT]),
            descriptor("hardwareModel", "Model", "The hardware model.", &[TEXT]),
        ],
    })
}

/// A `HostFirmwareSettings`.
fn host_firmware_settings() -> Value {
    json!({
        "name": "hostfirmwaresettings.metal3.io", "version": "v1alpha1", "kind": "HostFirmwareSettings",
        "displayName": "Host Firmware Settings",
        "description": "The BIOS settings wanted for the BareMetalHost of the same name, and those it has (baremetal-operator's API).",
        "resources": resources(&[("FirmwareSchema", "v1alpha1")]),
        "specDescriptors": [
            descriptor("settings", "Settings", "The wanted BIOS settings, by name.", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("settings", "Current settings", "The host's BIOS settings as Ironic last read them.", &[TEXT]),
        ],
    })
}

/// A `HostFirmwareComponents`.
fn host_firmware_components() -> Value {
    json!({
        "name": "hostfirmwarecomponents.metal3.io", "version": "v1alpha1", "kind": "HostFirmwareComponents",
        "displayName": "Host Firmware Components",
        "description": "The firmware updates wanted for the BareMetalHost of the same name, and its components' versions (baremetal-operator's API).",
        "resources": [],
        "specDescriptors": [
            descriptor("updates", "Updates", "The firmware images to flash: a component (bios, bmc, nic:...) and a URL each.", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("components", "Components", "The versions of the host's components as Ironic last read them.", &[TEXT]),
            descriptor("updates", "Updates handed over", "The updates last handed to Ironic.", &[TEXT]),
        ],
    })
}

/// A `HostUpdatePolicy`.
fn host_update_policy() -> Value {
    json!({
        "name": "hostupdatepolicies.metal3.io", "version": "v1alpha1", "kind": "HostUpdatePolicy",
        "displayName": "Host Update Policy",
        "description": "Whether the BareMetalHost of the same name may have its firmware settings applied and its firmware updates flashed by servicing at its next reboot (baremetal-operator's API).",
        "resources": [],
        "specDescriptors": [
            descriptor("firmwareSettings", "Firmware settings", "onPreparing (the default) or onReboot.", &[TEXT]),
            descriptor("firmwareUpdates", "Firmware updates", "onPreparing (the default) or onReboot.", &[TEXT]),
        ],
    })
}

/// A `DataImage`.
fn data_image() -> Value {
    json!({
        "name": "dataimages.metal3.io", "version": "v1alpha1", "kind": "DataImage",
        "displayName": "Data Image",
        "description": "An ISO attached as a virtual CD to the provisioned BareMetalHost of the same name at its next power on (baremetal-operator's API).",
        "resources": [],
        "specDescriptors": [
            descriptor("url", "URL", "Where Ironic downloads the ISO from (http or https).", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("attachedImage.url", "Attached", "The image in the host's virtual CD.", &[TEXT]),
            descriptor("error.message", "Error", "The last failure to attach or eject.", &[TEXT]),
        ],
    })
}

/// A `BMCEventSubscription`.
fn bmc_event_subscription() -> Value {
    json!({
        "name": "bmceventsubscriptions.metal3.io", "version": "v1alpha1", "kind": "BMCEventSubscription",
        "displayName": "BMC Event Subscription",
        "description": "A Redfish event subscription on the BMC of a BareMetalHost in the same namespace (baremetal-operator's API).",
        "resources": resources(&[("Secret", "v1")]),
        "specDescriptors": [
            descriptor("hostName", "Host", "The BareMetalHost whose BMC sends the events.", &[TEXT]),
            descriptor("destination", "Destination", "The webhook URL the BMC posts its events to.", &[TEXT]),
            descriptor("httpHeadersRef", "HTTP headers", "A Secret whose keys and values are headers sent with every event.", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("subscriptionID", "Subscription", "The BMC's id of the subscription.", &[TEXT]),
            descriptor("error", "Error", "The most recent error.", &[TEXT]),
        ],
    })
}

/// A `PreprovisioningImage`.
fn preprovisioning_image() -> Value {
    json!({
        "name": "preprovisioningimages.metal3.io", "version": "v1alpha1", "kind": "PreprovisioningImage",
        "displayName": "Preprovisioning Image",
        "description": "The deploy image the BareMetalHost of the same name boots before it is provisioned, made by the operator with --build-preprov-image and built by an image builder (baremetal-operator's API).",
        "resources": resources(&[("Secret", "v1")]),
        "specDescriptors": [
            descriptor("networkDataName", "Network data", "The Secret with the network data to build into the image.", &[TEXT]),
            descriptor("architecture", "Architecture", "The processor architecture to build the image for.", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("imageUrl", "Image", "Where the built image is downloaded from.", &[TEXT]),
            descriptor("conditions", "Conditions", "Ready and Error.", &[CONDITIONS]),
        ],
    })
}

/// A `NodeSet`.
fn node_set() -> Value {
    json!({
        "name": "nodesets.ferrometal.io", "version": "v1alpha1", "kind": "NodeSet",
        "displayName": "Node Set",
        "description": "A group of hosts with shared provisioning settings and day-2 configuration, edited in place; no machine is deprovisioned unless a user asks for that machine.",
        "resources": resources(&[("BareMetalHost", "v1alpha1"), ("Job", "v1"), ("Secret", "v1")]),
        "specDescriptors": [
            descriptor("nodes", "Nodes", "The hosts by hostname, with per-host overrides.", &[TEXT]),
            descriptor("baremetalSetTemplate.image.url", "Image", "The image new hosts are provisioned with.", &[TEXT, &format!("{FIELD_GROUP}baremetalSetTemplate")]),
            descriptor("services", "Services", "The NodeSetServices run on every host, in order.", &[TEXT]),
            descriptor("rollout.strategy", "Rollout strategy", "Automatic, or Manual (a new token starts a rollout).", &[TEXT, &format!("{FIELD_GROUP}rollout")]),
            descriptor("deletionPolicy", "Deletion policy", "Retain (default), Detach or Deprovision, for removed hosts and the NodeSet.", &[TEXT]),
        ],
        "statusDescriptors": [
            descriptor("conditions", "Conditions", "Ready, Progressing, Degraded, Provisioned and Configured.", &[CONDITIONS]),
            descriptor("claimedHosts", "Claimed hosts", "Hosts with a BareMetalHost claimed.", &[NUMBER]),
            descriptor("configHash", "Configuration hash", "The hash of every host's desired configuration and the services.", &[TEXT]),
        ],
    })
}

/// A `NodeSetService`.
fn node_set_service() -> Value {
    json!({
        "name": "nodesetservices.ferrometal.io", "version": "v1alpha1", "kind": "NodeSetService",
        "displayName": "Node Set Service",
        "description": "One configuration step, a Job a NodeSet runs on its hosts with their inventory.",
        "resources": [],
        "specDescriptors": [
            descriptor("job.image", "Image", "The image of the service's Job.", &[TEXT, &format!("{FIELD_GROUP}job")]),
            descriptor("runOnce", "Run once", "Run once per host, never again on configuration changes.", &[BOOLEAN]),
        ],
        "statusDescriptors": [
            descriptor("conditions", "Conditions", "Ready: the service's spec is valid and can be run.", &[CONDITIONS]),
        ],
    })
}
