//! Valid `BareMetalHost`s and valid updates of them.

use super::{maybe, name};
use crate::checks::schema::{self, one_in, pick};
use crate::checks::validation::typed;
use arbitrary::{Result, Unstructured};
use crds::baremetalhost::annotations::{DETACHED, HARDWARE_DETAILS, INSPECT, REBOOT_PREFIX, STATUS};
use crds::baremetalhost::{BareMetalHost, OperationalStatus, ProvisioningState};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Schemes with what they support: (scheme, Redfish family, needs a boot MAC).
const SCHEMES: &[(&str, bool, bool)] = &[
    ("ipmi", false, false),
    ("libvirt", false, true),
    ("redfish", true, false),
    ("redfish-virtualmedia", true, false),
    ("redfish-uefihttp", true, false),
    ("idrac-redfish", true, false),
    ("idrac-virtualmedia", true, false),
    ("ilo5-redfish", true, false),
    ("ilo5-virtualmedia", true, false),
];

/// What the generated address allows.
#[derive(Clone, Copy)]
struct Bmc {
    /// Hardware RAID, secure boot and fast inspection (the Redfish family and fake).
    capable: bool,
    /// bootMACAddress is required whatever the inspection.
    needs_mac: bool,
    /// fake://: never needs a boot MAC.
    fake: bool,
}

/// A valid BMC address in any of the forms baremetal-operator reads.
fn bmc_address(u: &mut Unstructured) -> Result<(String, Bmc)> {
    if one_in(u, 5)? {
        let id = pick(u, &["f", "host-0", "anything at all", "a://b?c"])?;
        return Ok((format!("fake://{id}"), Bmc { capable: true, needs_mac: false, fake: true }));
    }
    let (scheme, redfish, needs_mac) = pick(u, SCHEMES)?;
    let host = pick(u, &["10.0.0.1", "bmc.example.com", "BMC-1.example.com", "[fd00::1]", "a1"])?;
    let port = maybe(u, |u| Ok(format!(":{}", pick(u, &[623, 443, 8000, 65535])?)))?.unwrap_or_default();
    let address = if redfish {
        let transport = pick(u, &["", "+http", "+https"])?;
        let path = pick(u, &["", "/redfish/v1/", "/redfish/v1/Systems/1", "/redfish/v1/Systems/System.Embedded.1"])?;
        format!("{scheme}{transport}://{host}{port}{path}")
    } else if scheme == "ipmi" && !host.starts_with('[') && one_in(u, 4)? {
        // The bare forms: host[:port] and ipmi:host[:port].
        format!("{}{host}{port}", pick(u, &["", "ipmi:"])?)
    } else {
        let level = maybe(u, |u| {
            Ok(format!("?privilegelevel={}", pick(u, &["ADMINISTRATOR", "OPERATOR", "USER", "CALLBACK"])?))
        })?;
        format!("{scheme}://{host}{port}{}", level.unwrap_or_default())
    };
    Ok((address, Bmc { capable: redfish, needs_mac, fake: false }))
}

fn image(u: &mut Unstructured) -> Result<Value> {
    let url = pick(
        u,
        &[
            "https://images.example.com/os.qcow2",
            "http://[fd00::1]/os.raw",
            "file:///images/os.img",
            "oci://quay.io/org/os:1",
        ],
    )?;
    if url.starts_with("oci://") {
        return Ok(json!({"url": url, "format": pick(u, &["raw", "qcow2", "live-iso"])?}));
    }
    if one_in(u, 4)? {
        return Ok(json!({"url": url, "format": "live-iso"}));
    }
    let (checksum_type, checksum) = pick(
        u,
        &[
            (None, "https://images.example.com/os.qcow2.sha256sum"),
            (None, "d41d8cd98f00b204e9800998ecf8427e"),
            (Some("md5"), "D41D8CD98F00B204E9800998ECF8427E"),
            (Some("sha256"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (Some("auto"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (Some("sha512"), "https://images.example.com/SHA512SUMS"),
        ],
    )?;
    let mut image = json!({"url": url, "checksum": checksum});
    if let Some(t) = checksum_type {
        image["checksumType"] = Value::from(t);
    }
    if u.arbitrary()? {
        image["format"] = Value::from(pick(u, &["raw", "qcow2", "vdi", "vmdk"])?);
    }
    Ok(image)
}

fn hints(u: &mut Unstructured) -> Result<Value> {
    let mut hints = Map::new();
    if u.arbitrary()? {
        let device = pick(u, &["/dev/sda", "/dev/nvme0n1", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"])?;
        hints.insert("deviceName".into(), Value::from(device));
    }
    if u.arbitrary()? {
        hints.insert("hctl".into(), Value::from(pick(u, &["0:0:0:0", "1:2:3:4"])?));
    }
    if u.arbitrary()? {
        hints.insert("minSizeGigabytes".into(), Value::from(u.int_in_range(0..=4096)?));
    }
    if u.arbitrary()? {
        hints.insert("rotational".into(), Value::Bool(u.arbitrary()?));
    }
    Ok(Value::Object(hints))
}

fn raid(u: &mut Unstructured, capable: bool) -> Result<Value> {
    if capable && u.arbitrary()? {
        let mut volumes = vec![];
        for _ in 0..u.int_in_range(0..=2)? {
            let mut volume =
                json!({"level": pick(u, &["0", "1", "5", "1+0"])?, "sizeGibibytes": u.int_in_range(0..=1000)?});
            if u.arbitrary()? {
                let disks = u.int_in_range(1..=3)?;
                volume["controller"] = json!("RAID.Integrated.1-1");
                volume["physicalDisks"] = Value::from((0..disks).map(|i| format!("Disk.{i}")).collect::<Vec<_>>());
                volume["numberOfPhysicalDisks"] = Value::from(disks);
            } else if u.arbitrary()? {
                volume["numberOfPhysicalDisks"] = Value::from(u.int_in_range(1..=8)?);
            }
            volumes.push(volume);
        }
        return Ok(json!({"hardwareRAIDVolumes": volumes}));
    }
    let mut volumes = vec![];
    for i in 0..u.int_in_range(0..=2)? {
        let level = if i == 0 { "1" } else { pick(u, &["0", "1", "1+0"])? };
        let mut volume = json!({"level": level});
        if u.arbitrary()? {
            volume["physicalDisks"] = json!([hints(u)?, hints(u)?]);
        }
        if i == 0 && u.arbitrary()? {
            volume["rootVolume"] = json!(true);
        }
        volumes.push(volume);
    }
    Ok(json!({"softwareRAIDVolumes": volumes}))
}

fn network_interfaces(u: &mut Unstructured) -> Result<Value> {
    let mut nics = vec![];
    for i in 0..u.int_in_range(0..=3)? {
        let mut nic = if u.arbitrary()? {
            json!({"name": format!("eno{i}")})
        } else {
            json!({"macAddress": format!("52:54:00:00:00:0{i}")})
        };
        if u.arbitrary()? {
            nic["switchPort"] = json!({"switchID": "leaf-1", "portID": format!("Ethernet{i}")});
        }
        nics.push(nic);
    }
    Ok(Value::Array(nics))
}

/// A valid host's spec and its annotations; `inspection` says whether inspection runs.
fn spec(u: &mut Unstructured, namespace: &str) -> Result<(Value, BTreeMap<String, String>)> {
    let mut spec = Map::new();
    let mut bmc = Bmc { capable: false, needs_mac: false, fake: false };
    if !one_in(u, 6)? {
        let (address, parsed) = bmc_address(u)?;
        bmc = parsed;
        spec.insert("bmc".into(), json!({"address": address, "credentialsName": name(u)?}));
    }
    let modes: &[Option<&str>] = if bmc.capable {
        &[None, Some("agent"), Some("disabled"), Some("fast")]
    } else {
        &[None, Some("agent"), Some("disabled")]
    };
    let mode = pick(u, modes)?;
    if let Some(mode) = mode {
        spec.insert("inspectionMode".into(), Value::from(mode));
    }
    let mut annotations = BTreeMap::new();
    let annotation_disabled = mode.is_none() && one_in(u, 4)?;
    if annotation_disabled {
        annotations.insert(INSPECT.to_string(), "disabled".to_string());
    } else if mode != Some("disabled") && one_in(u, 4)? {
        annotations.insert(INSPECT.to_string(), String::new());
    }
    let inspection_disabled = annotation_disabled || mode == Some("disabled");
    let mac_needed = !bmc.fake && spec.contains_key("bmc") && (bmc.needs_mac || inspection_disabled);
    if mac_needed || u.arbitrary()? {
        spec.insert("bootMACAddress".into(), Value::from(pick(u, &["52:54:00:12:34:56", "52:54:00:AB:cd:EF"])?));
    }
    if inspection_disabled && u.arbitrary()? {
        annotations.insert(
            HARDWARE_DETAILS.to_string(),
            r#"{"ramMebibytes":4096,"nics":[{"mac":"52:54:00:00:00:01"}]}"#.into(),
        );
    }
    if u.arbitrary()? {
        annotations.insert(
            REBOOT_PREFIX.to_string(),
            pick(u, &["", r#"{"mode":"hard"}"#, r#"{"mode":"soft","force":true}"#])?.to_string(),
        );
    }
    if one_in(u, 4)? {
        annotations.insert(
            DETACHED.to_string(),
            pick(u, &["", r#"{"deleteAction":"delay"}"#, r#"{"force":true}"#])?.to_string(),
        );
    }
    if one_in(u, 4)? {
        let status = schema::value(u, schema::schema_of("BareMetalHost", "/properties/status"), 1)?;
        annotations.insert(STATUS.to_string(), status.to_string());
    }
    let disable_power_off = one_in(u, 4)?;
    spec.insert("online".into(), Value::Bool(disable_power_off || u.arbitrary()?));
    if disable_power_off {
        spec.insert("disablePowerOff".into(), json!(true));
    }
    let boot_modes: &[&str] =
        if bmc.capable || bmc.fake { &["UEFI", "legacy", "UEFISecureBoot"] } else { &["UEFI", "legacy"] };
    if u.arbitrary()? {
        spec.insert("bootMode".into(), Value::from(pick(u, boot_modes)?));
    }
    if u.arbitrary()? {
        spec.insert("image".into(), image(u)?);
    } else if one_in(u, 4)? {
        spec.insert("customDeploy".into(), json!({"method": "install_coreos"}));
    }
    if u.arbitrary()? {
        spec.insert("rootDeviceHints".into(), hints(u)?);
    }
    if u.arbitrary()? {
        spec.insert("raid".into(), raid(u, bmc.capable || bmc.fake)?);
    }
    if u.arbitrary()? {
        spec.insert("networkInterfaces".into(), network_interfaces(u)?);
    }
    for field in ["userData", "networkData", "metaData"] {
        if u.arbitrary()? {
            let mut reference = json!({"name": name(u)?});
            if u.arbitrary()? {
                reference["namespace"] = Value::from(namespace);
            }
            spec.insert(field.into(), reference);
        }
    }
    for (field, value) in [
        ("externallyProvisioned", json!(true)),
        ("automatedCleaningMode", json!("metadata")),
        ("consumerRef", json!({"kind": "NodeSet", "name": "computes"})),
    ] {
        if one_in(u, 4)? {
            spec.insert(field.into(), value);
        }
    }
    Ok((Value::Object(spec), annotations))
}

fn host(u: &mut Unstructured) -> Result<BareMetalHost> {
    let namespace = pick(u, &["metal3", "default"])?;
    let (spec, annotations) = spec(u, namespace)?;
    let status = maybe(u, |u| schema::value(u, schema::schema_of("BareMetalHost", "/properties/status"), 1))?;
    Ok(BareMetalHost {
        metadata: ObjectMeta {
            name: Some(pick(u, &["worker-0", "host.example.com", "Server_17", "0f8fad5b-d9cb-469f"])?.to_string()),
            namespace: Some(namespace.to_string()),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec: typed(&spec, "valid BareMetalHost spec"),
        status: status.map(|s| typed(&s, "BareMetalHost status")),
    })
}

/// A valid host and a valid update of it: a new spec that keeps the boot MAC (in any case),
/// changes the BMC address only where that is allowed, and turns on externallyProvisioned
/// only from available.
pub fn update(u: &mut Unstructured) -> Result<(BareMetalHost, BareMetalHost)> {
    let mut old = host(u)?;
    let mut new = old.clone();
    if u.arbitrary()? {
        let namespace = old.metadata.namespace.clone().unwrap_or_default();
        let (spec, annotations) = spec(u, &namespace)?;
        new.spec = typed(&spec, "valid BareMetalHost spec");
        new.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    }
    if let Some(mac) = old.spec.boot_mac_address.clone() {
        new.spec.boot_mac_address = Some(if u.arbitrary()? { mac.to_ascii_uppercase() } else { mac });
    }
    // externallyProvisioned turns on only from available, and the BMC address changes only
    // before registration or while detached: both at once need a detached, available host.
    let on = |h: &BareMetalHost| h.spec.externally_provisioned == Some(true);
    let handed_over = on(&new) && !on(&old);
    if handed_over {
        old.status.get_or_insert_with(Default::default).provisioning.state = ProvisioningState::Available;
    }
    let address = |h: &BareMetalHost| h.spec.bmc.as_ref().map(|b| b.address.clone()).unwrap_or_default();
    if address(&new) != address(&old) {
        let status = old.status.get_or_insert_with(Default::default);
        match u.int_in_range(if handed_over { 2 } else { 0 }..=3)? {
            0 => old.status = None,
            1 => status.provisioning.state = pick(u, &[ProvisioningState::Registering, ProvisioningState::Unmanaged])?,
            2 => status.operational_status = OperationalStatus::Detached,
            _ => {
                old.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(DETACHED.to_string(), String::new());
            }
        }
    }
    // The boot MAC the new BMC or inspection settings need, the same one as before.
    if new.spec.boot_mac_address.is_none() && crds::baremetalhost::boot_mac_requirement(&new).is_some() {
        new.spec.boot_mac_address = Some("52:54:00:12:34:56".into());
    }
    Ok((old, new))
}
