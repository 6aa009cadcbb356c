//! The sample objects under `crds/samples/`, embedded so tests and tools need no file paths.
//! Each sample is one YAML document; the `full` ones together use every field of their kind.

/// A sample file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// File name under `crds/samples/`.
    pub file: &'static str,
    /// Kind of the object in it.
    pub kind: &'static str,
    /// The YAML.
    pub yaml: &'static str,
}

macro_rules! sample {
    ($file:literal, $kind:literal) => {
        Sample { file: $file, kind: $kind, yaml: include_str!(concat!("../samples/", $file)) }
    };
}

/// Every sample, valid and ready to be created in an apiserver.
pub const ALL: &[Sample] = &[
    sample!("ironic-minimal.yaml", "Ironic"),
    sample!("ironic-irso.yaml", "Ironic"),
    sample!("ironic-full.yaml", "Ironic"),
    sample!("ironic-full-ha.yaml", "Ironic"),
    sample!("ironic-full-auto-tls.yaml", "Ironic"),
    sample!("ironic-csr-tls.yaml", "Ironic"),
    sample!("baremetalhost-minimal.yaml", "BareMetalHost"),
    sample!("baremetalhost-bmo.yaml", "BareMetalHost"),
    sample!("baremetalhost-fake.yaml", "BareMetalHost"),
    sample!("baremetalhost-full.yaml", "BareMetalHost"),
    sample!("hardwaredata-minimal.yaml", "HardwareData"),
    sample!("hardwaredata-full.yaml", "HardwareData"),
    sample!("nodeset-minimal.yaml", "NodeSet"),
    sample!("nodeset-preprovisioned.yaml", "NodeSet"),
    sample!("nodeset-full.yaml", "NodeSet"),
    sample!("nodesetservice-minimal.yaml", "NodeSetService"),
    sample!("nodesetservice-full.yaml", "NodeSetService"),
    sample!("firmwareschema-full.yaml", "FirmwareSchema"),
    sample!("hostfirmwaresettings-bmo.yaml", "HostFirmwareSettings"),
    sample!("hostfirmwarecomponents-bmo.yaml", "HostFirmwareComponents"),
    sample!("hostupdatepolicy-full.yaml", "HostUpdatePolicy"),
    sample!("dataimage-bmo.yaml", "DataImage"),
    sample!("bmceventsubscription-bmo.yaml", "BMCEventSubscription"),
    sample!("preprovisioningimage-bmo.yaml", "PreprovisioningImage"),
];

/// The samples of one kind.
pub fn of_kind(kind: &str) -> impl Iterator<Item = &'static Sample> + '_ {
    ALL.iter().filter(move |s| s.kind == kind)
}
