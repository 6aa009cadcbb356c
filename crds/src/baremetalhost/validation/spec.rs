//! Rules on `BareMetalHost.spec` alone.

use super::image::{validate_image, validate_root_device_hints};
use crate::baremetalhost::bmc::{BmcAddress, BmcScheme, parse_bmc_address};
use crate::baremetalhost::spec::{
    BareMetalHostSpec, BootMode, InspectionMode, NetworkInterface, POWER_OFF_DISABLED_MESSAGE, RaidConfig, RaidLevel,
};
use crate::validation::{Errors, is_mac_address, is_set};

pub(super) fn validate_spec(errors: &mut Errors, spec: &BareMetalHostSpec, namespace: Option<&str>) {
    let scheme = validate_bmc(errors, spec);
    if let Some(mac) = spec.boot_mac_address.as_deref()
        && !mac.is_empty()
        && !is_mac_address(mac)
    {
        errors.push("spec.bootMACAddress", format!("{mac:?} is not a valid MAC address"));
    }
    if spec.disable_power_off.unwrap_or(false) && !spec.online {
        errors.push("spec.online", POWER_OFF_DISABLED_MESSAGE);
    }
    if spec.firmware.is_some() {
        errors.push("spec.firmware", "firmware settings are no longer supported; use a HostFirmwareSettings resource");
    }
    if let Some(image) = &spec.image {
        validate_image(errors, "spec.image", image);
    }
    if let Some(hints) = &spec.root_device_hints {
        validate_root_device_hints(errors, "spec.rootDeviceHints", hints);
    }
    if let Some(custom) = &spec.custom_deploy
        && custom.method.trim().is_empty()
    {
        errors.push("spec.customDeploy.method", "is required");
    }
    if let Some(raid) = &spec.raid {
        validate_raid(errors, raid, scheme);
    }
    if let Some(scheme) = scheme {
        if spec.boot_mode == Some(BootMode::UefiSecureBoot) && !scheme.supports_secure_boot() {
            errors.push("spec.bootMode", format!("UEFISecureBoot is not supported by BMC type {scheme}"));
        }
        if spec.inspection_mode == Some(InspectionMode::Fast) && !scheme.supports_fast_inspection() {
            errors.push(
                "spec.inspectionMode",
                format!("fast (out-of-band) inspection is not supported by BMC type {scheme}"),
            );
        }
    }
    validate_secret_namespaces(errors, spec, namespace);
    validate_network_interfaces(errors, spec);
}

fn validate_bmc(errors: &mut Errors, spec: &BareMetalHostSpec) -> Option<BmcScheme> {
    let bmc = spec.bmc.as_ref()?;
    if bmc.address.is_empty() {
        if !bmc.credentials_name.is_empty() {
            errors.push("spec.bmc.address", "is required when credentialsName is set");
        }
        return None;
    }
    if bmc.credentials_name.trim().is_empty() {
        errors.push("spec.bmc.credentialsName", "is required when the BMC address is set");
    }
    match parse_bmc_address(&bmc.address) {
        Ok(parsed) => {
            if let Some(level) = parsed.privilege_level.as_deref()
                && !BmcAddress::IPMI_PRIVILEGE_LEVELS.contains(&level)
            {
                // baremetal-operator passes any value on and Ironic refuses it at registration;
                // refusing it here says so before anything is registered.
                errors.push(
                    "spec.bmc.address",
                    format!(
                        "privilegelevel {level:?} is not one Ironic accepts ({})",
                        BmcAddress::IPMI_PRIVILEGE_LEVELS.join(", ")
                    ),
                );
            }
            Some(parsed.scheme)
        }
        Err(e) => {
            errors.push("spec.bmc.address", e.to_string());
            None
        }
    }
}

fn validate_raid(errors: &mut Errors, raid: &RaidConfig, scheme: Option<BmcScheme>) {
    let hardware = raid.hardware_raid_volumes.as_deref().unwrap_or_default();
    let software = raid.software_raid_volumes.as_deref().unwrap_or_default();
    if !hardware.is_empty() && !software.is_empty() {
        errors.push("spec.raid", "hardwareRAIDVolumes and softwareRAIDVolumes cannot both be set");
    }
    if let Some(scheme) = scheme
        && !hardware.is_empty()
        && !scheme.supports_hardware_raid()
    {
        errors.push("spec.raid.hardwareRAIDVolumes", format!("hardware RAID is not supported by BMC type {scheme}"));
    }
    for (i, volume) in hardware.iter().enumerate() {
        let path = format!("spec.raid.hardwareRAIDVolumes[{i}]");
        if volume.size_gibibytes.is_some_and(|s| s < 0) {
            errors.push(format!("{path}.sizeGibibytes"), "must not be negative");
        }
        if volume.number_of_physical_disks.is_some_and(|n| n < 1) {
            errors.push(format!("{path}.numberOfPhysicalDisks"), "must be at least 1");
        }
        if volume.name.as_ref().is_some_and(|n| n.len() > 64) {
            errors.push(format!("{path}.name"), "must be at most 64 characters");
        }
        let disks = volume.physical_disks.as_deref().unwrap_or_default();
        if !disks.is_empty() && !is_set(&volume.controller) {
            errors.push(
                format!("{path}.controller"),
                "is required when physicalDisks is set: disk names are per controller",
            );
        }
        if let Some(count) = volume.number_of_physical_disks
            && !disks.is_empty()
            && usize::try_from(count).ok() != Some(disks.len())
        {
            errors.push(
                format!("{path}.numberOfPhysicalDisks"),
                format!("is {count} but physicalDisks names {} disks", disks.len()),
            );
        }
    }
    if software.len() > 2 {
        errors.push("spec.raid.softwareRAIDVolumes", "at most two software RAID volumes are supported");
    }
    if software.iter().filter(|v| v.root_volume == Some(true)).count() > 1 {
        errors.push("spec.raid.softwareRAIDVolumes", "at most one volume can be the rootVolume");
    }
    for (i, volume) in software.iter().enumerate() {
        let path = format!("spec.raid.softwareRAIDVolumes[{i}]");
        let allowed: &[RaidLevel] =
            if i == 0 { &[RaidLevel::Raid1] } else { &[RaidLevel::Raid0, RaidLevel::Raid1, RaidLevel::Raid10] };
        if !allowed.contains(&volume.level) {
            let message = if i == 0 {
                "the first software RAID volume must be RAID-1"
            } else {
                "software RAID supports only levels 0, 1 and 1+0"
            };
            errors.push(format!("{path}.level"), message);
        }
        if volume.size_gibibytes.is_some_and(|s| s < 0) {
            errors.push(format!("{path}.sizeGibibytes"), "must not be negative");
        }
        if let Some(disks) = &volume.physical_disks {
            if disks.len() < 2 {
                errors.push(format!("{path}.physicalDisks"), "at least two disks are required");
            }
            for (j, hints) in disks.iter().enumerate() {
                validate_root_device_hints(errors, &format!("{path}.physicalDisks[{j}]"), hints);
            }
        }
    }
}

fn validate_secret_namespaces(errors: &mut Errors, spec: &BareMetalHostSpec, namespace: Option<&str>) {
    let Some(namespace) = namespace else {
        return;
    };
    for (field, reference) in
        [("userData", &spec.user_data), ("networkData", &spec.network_data), ("metaData", &spec.meta_data)]
    {
        if let Some(ns) = reference.as_ref().and_then(|r| r.namespace.as_deref())
            && !ns.is_empty()
            && ns != namespace
        {
            errors.push(
                format!("spec.{field}.namespace"),
                format!("must be the host's namespace {namespace:?}: cross-namespace Secret references are forbidden"),
            );
        }
    }
}

fn validate_network_interfaces(errors: &mut Errors, spec: &BareMetalHostSpec) {
    let nics = spec.network_interfaces.as_deref().unwrap_or_default();
    for (i, nic) in nics.iter().enumerate() {
        let path = format!("spec.networkInterfaces[{i}]");
        // One entry per NIC: two entries would configure the same switch port twice.
        let earlier = |same: &dyn Fn(&NetworkInterface) -> bool| nics[..i].iter().position(same);
        if let Some(name) = nic.name.as_deref().filter(|n| !n.trim().is_empty())
            && let Some(j) = earlier(&|other| other.name.as_deref() == Some(name))
        {
            errors.push(format!("{path}.name"), format!("{name:?} is already used by networkInterfaces[{j}]"));
        }
        if let Some(mac) = nic.mac_address.as_deref().filter(|m| !m.trim().is_empty())
            && let Some(j) = earlier(&|other| other.mac_address.as_deref().is_some_and(|m| m.eq_ignore_ascii_case(mac)))
        {
            errors.push(format!("{path}.macAddress"), format!("{mac:?} is already used by networkInterfaces[{j}]"));
        }
        if is_set(&nic.name) == is_set(&nic.mac_address) {
            errors.push(path.clone(), "exactly one of name and macAddress is required");
        }
        if let Some(mac) = nic.mac_address.as_deref()
            && !is_mac_address(mac)
        {
            errors.push(format!("{path}.macAddress"), format!("{mac:?} is not a valid MAC address"));
        }
        if let Some(port) = &nic.switch_port
            && (port.switch_id.trim().is_empty() || port.port_id.trim().is_empty())
        {
            errors.push(format!("{path}.switchPort"), "switchID and portID are both required");
        }
    }
}
