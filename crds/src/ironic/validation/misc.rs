//! High availability, version, extraConfig, the exporter, the networking service, overrides.

use super::IronicValidationOptions;
use crate::ironic::IronicSpec;
use crate::ironic::components::SwitchPortMode;
use crate::ironic::overrides::CpuArchitecture;
use crate::ironic::versions;
use crate::validation::{Errors, is_set, parse_ip, valid_url};
use std::collections::BTreeSet;

pub(super) fn validate_high_availability(errors: &mut Errors, spec: &IronicSpec, options: &IronicValidationOptions) {
    if !spec.high_availability() {
        if spec.tls.as_ref().and_then(|t| t.insecure_rpc).is_some() {
            errors.push("spec.tls.insecureRPC", "only has an effect with highAvailability");
        }
        return;
    }
    if !options.allow_high_availability {
        errors.push(
            "spec.highAvailability",
            "highly available deployments are disabled in this operator (feature gate HighAvailability)",
        );
    }
    if spec.database.is_none() {
        errors.push("spec.database", "a database is required when highAvailability is true");
    }
    let networking = spec.networking.clone().unwrap_or_default();
    if is_set(&networking.ip_address) {
        errors.push(
            "spec.networking.ipAddress",
            "cannot be used with highAvailability: every replica has its own address",
        );
    }
    if networking.dhcp.is_some() {
        errors.push("spec.networking.dhcp", "DHCP is not supported with highAvailability");
    }
    if networking.keepalived_enabled() {
        errors.push("spec.networking.keepalived", "keepalived is not supported with highAvailability");
    }
    if let Some(exporter) = &spec.prometheus_exporter
        && exporter.enabled
        && !exporter.disable_service_monitor.unwrap_or(false)
    {
        errors.push(
            "spec.prometheusExporter.disableServiceMonitor",
            "must be true with highAvailability: metrics are per replica",
        );
    }
}

pub(super) fn validate_version(errors: &mut Errors, spec: &IronicSpec) {
    if let Some(version) = spec.version.as_deref()
        && let Err(e) = versions::resolve(Some(version))
    {
        errors.push("spec.version", e.to_string());
    }
}

pub(super) fn validate_extra_config(errors: &mut Errors, spec: &IronicSpec) {
    let identifier = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    for (i, config) in spec.extra_config.iter().flatten().enumerate() {
        let path = format!("spec.extraConfig[{i}]");
        match config.name.as_deref() {
            Some(name) if identifier(name) => {}
            Some(name) => errors
                .push(format!("{path}.name"), format!("{name:?} must contain only letters, digits and underscores")),
            None => errors.push(format!("{path}.name"), "is required"),
        }
        if let Some(group) = config.group.as_deref()
            && !group.is_empty()
            && !identifier(group)
        {
            errors
                .push(format!("{path}.group"), format!("{group:?} must contain only letters, digits and underscores"));
        }
    }
}

pub(super) fn validate_prometheus_exporter(errors: &mut Errors, spec: &IronicSpec) {
    let Some(exporter) = &spec.prometheus_exporter else {
        return;
    };
    let path = "spec.prometheusExporter";
    if let Some(address) = exporter.bind_address.as_deref() {
        match parse_ip(address) {
            None => errors.push(format!("{path}.bindAddress"), format!("{address:?} is not a valid IP address")),
            Some(ip) if ip.is_loopback() && exporter.enabled && !exporter.disable_service_monitor.unwrap_or(false) => {
                errors.push(
                    format!("{path}.bindAddress"),
                    "a loopback address cannot be scraped by a ServiceMonitor; set disableServiceMonitor",
                );
            }
            Some(_) => {}
        }
    }
    if let Some(interval) = exporter.sensor_collection_interval
        && interval < 60
    {
        errors.push(format!("{path}.sensorCollectionInterval"), "must be at least 60 seconds");
    }
}

pub(super) fn validate_networking_service(errors: &mut Errors, spec: &IronicSpec) {
    let Some(service) = &spec.networking_service else {
        return;
    };
    let mut seen = BTreeSet::new();
    for (i, network) in service.provider_networks.iter().flatten().enumerate() {
        let path = format!("spec.networkingService.providerNetworks[{i}]");
        if !seen.insert(network.type_) {
            errors.push(format!("{path}.type"), "each type may appear only once");
        }
        if let Some(vlan) = network.native_vlan
            && !(1..=4094).contains(&vlan)
        {
            errors.push(format!("{path}.nativeVLAN"), format!("{vlan} is not a valid VLAN ID (1-4094)"));
        }
        if let Some(mtu) = network.mtu
            && !(1280..=9216).contains(&mtu)
        {
            errors.push(format!("{path}.mtu"), format!("{mtu} is outside 1280-9216"));
        }
        let vlans = network.allowed_vlans.as_deref().unwrap_or_default();
        match network.mode() {
            SwitchPortMode::Access if !vlans.is_empty() => {
                errors.push(format!("{path}.allowedVLANs"), "must be empty for access ports")
            }
            SwitchPortMode::Trunk | SwitchPortMode::Hybrid if vlans.is_empty() => {
                errors.push(format!("{path}.allowedVLANs"), "is required for trunk and hybrid ports")
            }
            _ => {}
        }
        for (j, vlan) in vlans.iter().enumerate() {
            if !valid_vlan_range(vlan) {
                errors.push(
                    format!("{path}.allowedVLANs[{j}]"),
                    format!("{vlan:?} must be a VLAN ID or a range like 100-200, within 1-4094"),
                );
            }
        }
    }
}

fn valid_vlan_range(s: &str) -> bool {
    let id = |p: &str| p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u32>().is_ok_and(|v| (1..=4094).contains(&v));
    match s.split_once('-') {
        Some((a, b)) => id(a) && id(b) && a.parse::<u32>().ok() <= b.parse::<u32>().ok(),
        None => id(s),
    }
}

pub(super) fn validate_overrides(errors: &mut Errors, spec: &IronicSpec, options: &IronicValidationOptions) {
    let Some(overrides) = &spec.overrides else {
        return;
    };
    if !options.allow_overrides {
        errors.push("spec.overrides", "overrides are disabled in this operator (feature gate Overrides)");
    }
    super::privilege::validate_privilege(errors, overrides, options.allow_privileged_overrides);
    let mut architectures = Vec::new();
    for (i, images) in overrides.agent_images.iter().flatten().enumerate() {
        let path = format!("spec.overrides.agentImages[{i}]");
        let arch = images.architecture.unwrap_or(CpuArchitecture::Default);
        if architectures.contains(&arch) {
            errors.push(format!("{path}.architecture"), "each architecture may appear only once");
        }
        architectures.push(arch);
        for (field, value) in [("kernel", &images.kernel), ("initramfs", &images.initramfs)] {
            if let Err(e) = valid_url(value, &["file", "http", "https", "oci"]) {
                errors.push(format!("{path}.{field}"), e);
            }
        }
    }
    for (i, toleration) in overrides.tolerations.iter().flatten().enumerate() {
        let path = format!("spec.overrides.tolerations[{i}]");
        match toleration.operator.as_deref() {
            None | Some("Equal") => {}
            Some("Exists") if is_set(&toleration.value) => {
                errors.push(format!("{path}.value"), "must be empty when operator is Exists")
            }
            Some("Exists") => {}
            Some(other) => errors.push(format!("{path}.operator"), format!("{other:?} must be Equal or Exists")),
        }
        if let Some(effect) = toleration.effect.as_deref()
            && !["", "NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
        {
            errors.push(
                format!("{path}.effect"),
                format!("{effect:?} must be NoSchedule, PreferNoSchedule or NoExecute"),
            );
        }
        if toleration.key.as_deref().unwrap_or_default().is_empty() && toleration.operator.as_deref() != Some("Exists")
        {
            errors.push(format!("{path}.operator"), "must be Exists when key is empty");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::valid_vlan_range;

    #[test]
    fn vlan_ranges() {
        assert!(valid_vlan_range("100"));
        assert!(valid_vlan_range("100-200"));
        assert!(!valid_vlan_range("200-100"));
        assert!(!valid_vlan_range("0"));
        assert!(!valid_vlan_range("4095"));
        assert!(!valid_vlan_range("a-b"));
    }
}
