//! What a node must carry before it is deployed or adopted: the image in
//! `instance_info`, the deploy interface, root device hints and boot mode in
//! `properties`, as baremetal-operator sets them.
//!
//! Live ISOs are booted with the `ramdisk` deploy interface from
//! `instance_info.boot_iso`; every other format is written to disk by the
//! agent (`direct`) from `image_source` with its checksum. The patch is
//! computed against the node as Ironic has it, so a repeated call changes
//! nothing and stale keys of the other mode are removed.

use crate::host::driver::DriverSpec;
use crds::baremetalhost::{BootMode, ChecksumType, Image, ImageFormat, RootDeviceHints};
use ironic_client::{JsonObject, Node, PatchOperation};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Desired node settings: `None` removes a key.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct DeploySettings {
    pub instance_info: BTreeMap<&'static str, Option<Value>>,
    pub properties: BTreeMap<&'static str, Option<Value>>,
    pub driver_info: BTreeMap<&'static str, Option<Value>>,
    pub deploy_interface: Option<String>,
    pub instance_uuid: Option<String>,
}

/// What a deployment is made of.
#[derive(Clone, Copy, Debug)]
pub(super) struct DeployInput<'a> {
    pub image: Option<&'a Image>,
    pub custom_deploy: Option<&'a str>,
    pub boot_mode: BootMode,
    pub root_device_hints: Option<&'a RootDeviceHints>,
    /// The host's UID, recorded as the node's instance UUID.
    pub host_uid: &'a str,
    pub driver: &'a DriverSpec,
}

const IMAGE_KEYS: [&str; 5] =
    ["image_source", "image_os_hash_algo", "image_os_hash_value", "image_checksum", "image_disk_format"];

/// The algorithm of a checksum: the given one, else guessed from the length
/// of the hex digest (md5 when nothing else fits, as baremetal-operator).
fn checksum_algorithm(checksum: &str, given: Option<ChecksumType>) -> Option<&'static str> {
    match given {
        Some(ChecksumType::Md5) => Some("md5"),
        Some(ChecksumType::Sha256) => Some("sha256"),
        Some(ChecksumType::Sha512) => Some("sha512"),
        Some(ChecksumType::Auto) | None => match checksum.len() {
            64 => Some("sha256"),
            128 => Some("sha512"),
            32 => Some("md5"),
            _ if given.is_none() => Some("md5"),
            _ => None,
        },
    }
}

fn disk_format(format: Option<ImageFormat>) -> Option<&'static str> {
    match format? {
        ImageFormat::Raw => Some("raw"),
        ImageFormat::Qcow2 => Some("qcow2"),
        ImageFormat::Vdi => Some("vdi"),
        ImageFormat::Vmdk => Some("vmdk"),
        ImageFormat::LiveIso => Some("live-iso"),
    }
}

fn image_fields(image: &Image, info: &mut BTreeMap<&'static str, Option<Value>>) {
    info.insert("image_source", Some(json!(image.url)));
    info.insert("image_disk_format", disk_format(image.format).map(|f| json!(f)));
    let checksum = image.checksum.as_deref().map(str::trim).filter(|c| !c.is_empty());
    match checksum {
        // A checksum file: Ironic downloads it and finds the image's line.
        Some(url) if url.contains("://") => {
            info.insert("image_checksum", Some(json!(url)));
        }
        Some(digest) => {
            let algorithm = checksum_algorithm(digest, image.checksum_type);
            info.insert("image_os_hash_algo", algorithm.map(|a| json!(a)));
            info.insert("image_os_hash_value", Some(json!(digest)));
            // Old Ironic releases read only image_checksum, and only for md5.
            if algorithm == Some("md5") {
                info.insert("image_checksum", Some(json!(digest)));
            }
        }
        // oci:// images carry their own digest.
        None => {}
    }
}

/// The node settings a deployment (or an adoption) needs.
pub(super) fn deploy_settings(input: &DeployInput<'_>) -> DeploySettings {
    let mut settings = DeploySettings::default();
    let info = &mut settings.instance_info;
    info.insert("boot_iso", None);
    for key in IMAGE_KEYS {
        info.insert(key, None);
    }
    let capabilities =
        if input.boot_mode == BootMode::UefiSecureBoot { json!({"secure_boot": "true"}) } else { json!({}) };
    info.insert("capabilities", Some(capabilities));
    if input.custom_deploy.is_some() {
        if let Some(image) = input.image {
            image_fields(image, info);
        }
        settings.deploy_interface = Some(input.driver.custom_deploy_interface.to_string());
    } else if let Some(image) = input.image {
        if image.is_live_iso() {
            info.insert("boot_iso", Some(json!(image.url)));
            settings.deploy_interface = Some(input.driver.live_iso_deploy_interface.to_string());
        } else {
            image_fields(image, info);
            settings.deploy_interface = Some(input.driver.disk_deploy_interface.to_string());
        }
    }
    let hints = root_device_hints(input.root_device_hints);
    settings.properties.insert("root_device", (!hints.is_empty()).then_some(Value::Object(hints)));
    settings.driver_info.insert("force_persistent_boot_device", Some(json!("Default")));
    settings.instance_uuid = Some(input.host_uid.to_string()).filter(|u| !u.is_empty());
    settings
}

/// Root device hints in Ironic's operator syntax.
pub(super) fn root_device_hints(hints: Option<&RootDeviceHints>) -> JsonObject {
    let mut map = JsonObject::new();
    let Some(h) = hints else {
        return map;
    };
    let mut put = |key: &str, value: String| {
        map.insert(key.to_string(), Value::String(value));
    };
    if let Some(name) = h.device_name.as_deref().filter(|n| !n.is_empty()) {
        let key = if name.starts_with("/dev/disk/by-path/") { "by_path" } else { "name" };
        put(key, format!("s== {name}"));
    }
    for (key, value, op) in [
        ("hctl", &h.hctl, "s=="),
        ("model", &h.model, "<in>"),
        ("vendor", &h.vendor, "<in>"),
        ("serial", &h.serial_number, "s=="),
        ("wwn", &h.wwn, "s=="),
        ("wwn_with_extension", &h.wwn_with_extension, "s=="),
        ("wwn_vendor_extension", &h.wwn_vendor_extension, "s=="),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            put(key, format!("{op} {v}"));
        }
    }
    if let Some(size) = h.min_size_gigabytes.filter(|s| *s > 0) {
        put("size", format!(">= {size}"));
    }
    if let Some(rotational) = h.rotational {
        put("rotational", rotational.to_string());
    }
    map
}

/// The `capabilities` property with the boot mode replaced, keeping what
/// inspection put there.
pub(super) fn boot_mode_capabilities(existing: Option<&str>, mode: BootMode) -> String {
    let wanted = match mode {
        BootMode::Uefi => "boot_mode:uefi",
        BootMode::UefiSecureBoot => "boot_mode:uefi,secure_boot:true",
        BootMode::Legacy => "boot_mode:bios",
    };
    let mut parts: Vec<&str> = existing
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty() && !p.starts_with("boot_mode:") && !p.starts_with("secure_boot:"))
        .collect();
    parts.push(wanted);
    parts.join(",")
}

fn section_ops(
    ops: &mut Vec<PatchOperation>,
    section: &str,
    current: &dyn Fn(&str) -> Option<Value>,
    desired: &BTreeMap<&'static str, Option<Value>>,
) {
    for (key, want) in desired {
        let path = format!("/{section}/{key}");
        let have = current(key);
        match (want, have) {
            (Some(want), Some(have)) if *want == have => {}
            // `add` also replaces.
            (Some(want), _) => ops.push(PatchOperation::add(path, want.clone())),
            (None, Some(_)) => ops.push(PatchOperation::remove(path)),
            (None, None) => {}
        }
    }
}

/// The JSON Patch that brings `node` to `settings` (empty when it has them).
pub(super) fn patch_for(node: &Node, settings: &DeploySettings, boot_mode: Option<BootMode>) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    let instance_info = |key: &str| node.instance_info.get(key).cloned();
    section_ops(&mut ops, "instance_info", &instance_info, &settings.instance_info);
    let mut properties = settings.properties.clone();
    if let Some(mode) = boot_mode {
        let existing = node.properties.get("capabilities").and_then(Value::as_str);
        properties.insert("capabilities", Some(json!(boot_mode_capabilities(existing, mode))));
    }
    let props = |key: &str| node.properties.get(key).cloned();
    section_ops(&mut ops, "properties", &props, &properties);
    let driver_info = |key: &str| node.driver_info.get(key).cloned();
    section_ops(&mut ops, "driver_info", &driver_info, &settings.driver_info);
    if let Some(interface) = &settings.deploy_interface
        && node.interfaces.deploy_interface.as_deref() != Some(interface.as_str())
    {
        ops.push(PatchOperation::add("/deploy_interface", interface.clone()));
    }
    if let Some(uuid) = &settings.instance_uuid
        && node.instance_uuid.as_deref() != Some(uuid.as_str())
    {
        ops.push(PatchOperation::add("/instance_uuid", uuid.clone()));
    }
    ops
}

/// The part of `settings` that can be sent whatever the node holds: every value to set, as an
/// `add` (which creates or replaces). What depends on the node (keys to remove, the boot mode
/// merged into the capabilities it has) is left to [`patch_for`] against the node Ironic
/// answers with, so the two together reach what `patch_for` alone reaches from a read node.
pub(super) fn additions(settings: &DeploySettings) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    for (section, values) in [
        ("instance_info", &settings.instance_info),
        ("properties", &settings.properties),
        ("driver_info", &settings.driver_info),
    ] {
        for (key, value) in values {
            if let Some(value) = value {
                ops.push(PatchOperation::add(format!("/{section}/{key}"), value.clone()));
            }
        }
    }
    if let Some(interface) = &settings.deploy_interface {
        ops.push(PatchOperation::add("/deploy_interface", interface.clone()));
    }
    if let Some(uuid) = &settings.instance_uuid {
        ops.push(PatchOperation::add("/instance_uuid", uuid.clone()));
    }
    ops
}

/// The patch setting automated cleaning, when the node differs.
pub(super) fn automated_clean_patch(node_value: Option<bool>, wanted: bool) -> Option<PatchOperation> {
    (node_value != Some(wanted)).then(|| PatchOperation::add("/automated_clean", wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::driver::driver_spec;
    use crds::baremetalhost::bmc::BmcScheme;

    fn input<'a>(image: &'a Image, driver: &'a DriverSpec) -> DeployInput<'a> {
        DeployInput {
            image: Some(image),
            custom_deploy: None,
            boot_mode: BootMode::Uefi,
            root_device_hints: None,
            host_uid: "uid-1",
            driver,
        }
    }

    /// The settings of a live ISO (`http://i/live.iso`) booted through `scheme`.
    fn live_iso_settings(scheme: BmcScheme) -> DeploySettings {
        let driver = driver_spec(scheme);
        let image = Image { url: "http://i/live.iso".into(), format: Some(ImageFormat::LiveIso), ..Default::default() };
        deploy_settings(&input(&image, &driver))
    }

    fn ops_json(ops: &[PatchOperation]) -> Value {
        serde_json::to_value(ops).expect("serialises")
    }

    #[test]
    fn a_live_iso_boots_with_the_ramdisk_interface() {
        let driver = driver_spec(BmcScheme::RedfishVirtualMedia);
        let image =
            Image { url: "http://images/live.iso".into(), format: Some(ImageFormat::LiveIso), ..Default::default() };
        let settings = deploy_settings(&input(&image, &driver));
        let mut node = Node::default();
        node.instance_info.insert("image_source".into(), json!("http://old"));
        let ops = ops_json(&patch_for(&node, &settings, Some(BootMode::Uefi)));
        let ops = ops.as_array().expect("a list");
        assert!(
            ops.contains(&json!({"op": "add", "path": "/instance_info/boot_iso", "value": "http://images/live.iso"}))
        );
        assert!(ops.contains(&json!({"op": "remove", "path": "/instance_info/image_source"})));
        assert!(ops.contains(&json!({"op": "add", "path": "/deploy_interface", "value": "ramdisk"})));
        assert!(ops.contains(&json!({"op": "add", "path": "/instance_uuid", "value": "uid-1"})));
        assert!(ops.contains(&json!({"op": "add", "path": "/properties/capabilities", "value": "boot_mode:uefi"})));
        assert!(!ops.iter().any(|o| o["path"] == "/instance_info/image_checksum"), "nothing to remove");
    }

    #[test]
    fn other_images_are_written_by_the_agent_with_their_checksum() {
        let driver = driver_spec(BmcScheme::RedfishVirtualMedia);
        let digest = "a".repeat(64);
        let image = Image {
            url: "http://images/os.qcow2".into(),
            checksum: Some(digest.clone()),
            checksum_type: Some(ChecksumType::Sha256),
            format: Some(ImageFormat::Qcow2),
            ..Default::default()
        };
        let settings = deploy_settings(&input(&image, &driver));
        assert_eq!(settings.deploy_interface.as_deref(), Some("direct"));
        assert_eq!(settings.instance_info["image_source"], Some(json!("http://images/os.qcow2")));
        assert_eq!(settings.instance_info["image_os_hash_algo"], Some(json!("sha256")));
        assert_eq!(settings.instance_info["image_os_hash_value"], Some(json!(digest)));
        assert_eq!(settings.instance_info["image_disk_format"], Some(json!("qcow2")));
        assert_eq!(settings.instance_info["image_checksum"], None);
        assert_eq!(settings.instance_info["boot_iso"], None);
    }

    #[test]
    fn md5_checksums_also_fill_the_legacy_field_and_urls_are_checksum_files() {
        let driver = driver_spec(BmcScheme::Redfish);
        let md5 = Image { url: "http://i/os.raw".into(), checksum: Some("b".repeat(32)), ..Default::default() };
        let settings = deploy_settings(&input(&md5, &driver));
        assert_eq!(settings.instance_info["image_os_hash_algo"], Some(json!("md5")));
        assert_eq!(settings.instance_info["image_checksum"], Some(json!("b".repeat(32))));
        let file =
            Image { url: "http://i/os.raw".into(), checksum: Some("http://i/SHA256SUMS".into()), ..Default::default() };
        let settings = deploy_settings(&input(&file, &driver));
        assert_eq!(settings.instance_info["image_checksum"], Some(json!("http://i/SHA256SUMS")));
        assert_eq!(settings.instance_info["image_os_hash_algo"], None);
    }

    #[test]
    fn applied_settings_produce_an_empty_patch() {
        let settings = live_iso_settings(BmcScheme::RedfishVirtualMedia);
        let mut node = Node::default();
        node.instance_info.insert("boot_iso".into(), json!("http://i/live.iso"));
        node.instance_info.insert("capabilities".into(), json!({}));
        node.properties.insert("capabilities".into(), json!("cpu_vt:true,boot_mode:uefi"));
        node.interfaces.deploy_interface = Some("ramdisk".into());
        node.instance_uuid = Some("uid-1".into());
        node.driver_info.insert("force_persistent_boot_device", "Default");
        assert_eq!(patch_for(&node, &settings, Some(BootMode::Uefi)), vec![]);
    }

    /// The node as Ironic answers a PATCH: `node` with the operations applied.
    fn patched(node: &Node, ops: &[PatchOperation]) -> Node {
        let mut value = json!({
            "uuid": "n",
            "instance_info": node.instance_info,
            "properties": node.properties,
            "driver_info": serde_json::to_value(&node.driver_info).expect("driver_info"),
            "deploy_interface": node.interfaces.deploy_interface,
            "instance_uuid": node.instance_uuid,
        });
        for op in ops_json(ops).as_array().expect("a list") {
            let path: Vec<&str> = op["path"].as_str().expect("path").trim_start_matches('/').split('/').collect();
            let target = match path.as_slice() {
                [field] => (&mut value, *field),
                [section, _] => (&mut value[*section], path[1]),
                _ => panic!("unexpected path {path:?}"),
            };
            let (parent, key) = target;
            let map = parent.as_object_mut().expect("an object");
            match op["op"].as_str() {
                Some("add") => {
                    map.insert(key.to_string(), op["value"].clone());
                }
                Some("remove") => {
                    assert!(map.remove(key).is_some(), "Ironic refuses to remove {key}, which is absent");
                }
                other => panic!("unexpected op {other:?}"),
            }
        }
        serde_json::from_value(value).expect("a node")
    }

    #[test]
    fn a_node_registered_for_its_image_needs_the_additions_alone() {
        let settings = live_iso_settings(BmcScheme::Fake);
        let mut registered = Node::default();
        registered.properties.insert("capabilities".into(), json!(boot_mode_capabilities(None, BootMode::Uefi)));
        let answered = patched(&registered, &additions(&settings));
        assert_eq!(patch_for(&answered, &settings, Some(BootMode::Uefi)), vec![], "one PATCH");
        assert_eq!(answered.instance_info["boot_iso"], "http://i/live.iso");
        assert_eq!(answered.instance_uuid.as_deref(), Some("uid-1"));
    }

    #[test]
    fn what_the_additions_cannot_know_is_corrected_from_the_node_ironic_answers_with() {
        let settings = live_iso_settings(BmcScheme::RedfishVirtualMedia);
        // A disk image deployed before, hints and a boot mode of its own, inspection's capabilities.
        let mut node = Node::default();
        node.instance_info.insert("image_source".into(), json!("http://i/os.qcow2"));
        node.instance_info.insert("image_os_hash_value".into(), json!("abc"));
        node.properties.insert("root_device".into(), json!({"name": "s== /dev/sda"}));
        node.properties.insert("capabilities".into(), json!("cpu_vt:true,boot_mode:bios"));
        let answered = patched(&node, &additions(&settings));
        let rest = patch_for(&answered, &settings, Some(BootMode::Uefi));
        let done = patched(&answered, &rest);
        assert_eq!(patch_for(&done, &settings, Some(BootMode::Uefi)), vec![], "the second PATCH finishes it");
        assert!(
            done.instance_info.get("image_source").is_none() && done.instance_info.get("image_os_hash_value").is_none()
        );
        assert!(done.properties.get("root_device").is_none());
        assert_eq!(done.properties["capabilities"], "cpu_vt:true,boot_mode:uefi", "inspection's capabilities kept");
        // The same end as from a node read first.
        assert_eq!(done, patched(&node, &patch_for(&node, &settings, Some(BootMode::Uefi))));
    }

    #[test]
    fn root_device_hints_use_ironic_operators() {
        let hints = RootDeviceHints {
            device_name: Some("/dev/sda".into()),
            model: Some("SSD".into()),
            min_size_gigabytes: Some(100),
            rotational: Some(false),
            serial_number: Some("S1".into()),
            ..Default::default()
        };
        assert_eq!(
            Value::Object(root_device_hints(Some(&hints))),
            json!({"name": "s== /dev/sda", "model": "<in> SSD", "size": ">= 100", "rotational": "false", "serial": "s== S1"})
        );
        let by_path = RootDeviceHints { device_name: Some("/dev/disk/by-path/pci-0".into()), ..Default::default() };
        assert_eq!(root_device_hints(Some(&by_path))["by_path"], "s== /dev/disk/by-path/pci-0");
        assert!(root_device_hints(None).is_empty());
    }

    #[test]
    fn boot_mode_replaces_only_its_own_capabilities() {
        assert_eq!(boot_mode_capabilities(None, BootMode::Uefi), "boot_mode:uefi");
        assert_eq!(
            boot_mode_capabilities(Some("cpu_vt:true,boot_mode:bios,secure_boot:false"), BootMode::UefiSecureBoot),
            "cpu_vt:true,boot_mode:uefi,secure_boot:true"
        );
        assert_eq!(boot_mode_capabilities(Some("boot_mode:uefi"), BootMode::Legacy), "boot_mode:bios");
    }

    #[test]
    fn secure_boot_goes_into_instance_capabilities() {
        let driver = driver_spec(BmcScheme::Redfish);
        let image = Image { url: "http://i/live.iso".into(), format: Some(ImageFormat::LiveIso), ..Default::default() };
        let mut i = input(&image, &driver);
        i.boot_mode = BootMode::UefiSecureBoot;
        assert_eq!(deploy_settings(&i).instance_info["capabilities"], Some(json!({"secure_boot": "true"})));
    }

    #[test]
    fn automated_cleaning_is_patched_only_when_it_differs() {
        assert!(automated_clean_patch(Some(false), false).is_none());
        assert!(automated_clean_patch(None, true).is_some());
    }
}
