//! `spec.networking` apart from DHCP: host networking, addresses, external access, keepalived.

use crate::ironic::IronicSpec;
use crate::ironic::networking::Networking;
use crate::validation::{Errors, check_port, is_dns1123_subdomain, is_mac_address, is_set, parse_ip, valid_url};

pub(super) fn validate_networking(errors: &mut Errors, spec: &IronicSpec) {
    let Some(net) = &spec.networking else {
        return;
    };
    let path = "spec.networking";
    validate_host_network(errors, net);
    for (field, value) in [("ipAddress", &net.ip_address), ("externalIP", &net.external_ip)] {
        if let Some(v) = value.as_deref()
            && parse_ip(v).is_none()
        {
            errors.push(format!("{path}.{field}"), format!("{v:?} is not a valid IP address"));
        }
    }
    for (i, mac) in net.mac_addresses.iter().flatten().enumerate() {
        if !is_mac_address(mac) {
            errors.push(format!("{path}.macAddresses[{i}]"), format!("{mac:?} is not a valid MAC address"));
        }
    }
    for (field, port) in [
        ("apiPort", net.api_port),
        ("imageServerPort", net.image_server_port),
        ("imageServerTLSPort", net.image_server_tls_port),
        ("prometheusExporterPort", net.prometheus_exporter_port),
        ("rpcPort", net.rpc_port),
    ] {
        check_port(errors, &format!("{path}.{field}"), port);
    }
    validate_external_access(errors, net);
    validate_keepalived(errors, net);
}

fn validate_host_network(errors: &mut Errors, net: &Networking) {
    if net.host_network() {
        return;
    }
    let conflicts = [
        ("bindInterface", net.bind_interface.unwrap_or(false)),
        ("dhcp", net.dhcp.is_some()),
        ("interface", is_set(&net.interface)),
        ("ipAddress", is_set(&net.ip_address)),
        ("macAddresses", net.mac_addresses.as_ref().is_some_and(|m| !m.is_empty())),
        ("keepalived", net.keepalived_enabled()),
    ];
    for (field, set) in conflicts {
        if set {
            errors.push(format!("spec.networking.{field}"), "cannot be used with disableHostNetwork");
        }
    }
}

fn validate_external_access(errors: &mut Errors, net: &Networking) {
    let path = "spec.networking";
    let callback = is_set(&net.external_callback_url);
    let image_server = is_set(&net.image_server_external_url);
    if is_set(&net.external_ip) {
        for (field, set) in [
            ("ingress", net.ingress.is_some()),
            ("externalCallbackURL", callback),
            ("imageServerExternalURL", image_server),
        ] {
            if set {
                errors.push(format!("{path}.{field}"), "cannot be used together with externalIP");
            }
        }
    }
    if net.ingress.is_none() && callback != image_server {
        let missing = if callback { "imageServerExternalURL" } else { "externalCallbackURL" };
        errors.push(
            format!("{path}.{missing}"),
            "externalCallbackURL and imageServerExternalURL must be set together unless an ingress is configured",
        );
    }
    for (field, value) in [
        ("externalCallbackURL", &net.external_callback_url),
        ("imageServerExternalURL", &net.image_server_external_url),
    ] {
        if let Some(v) = value.as_deref()
            && let Err(e) = valid_url(v, &["http", "https"])
        {
            errors.push(format!("{path}.{field}"), e);
        }
    }
    if let Some(host) = net.ingress.as_ref().and_then(|i| i.host.as_deref())
        && !is_dns1123_subdomain(host)
    {
        errors.push(format!("{path}.ingress.host"), format!("{host:?} is not a valid host name"));
    }
}

fn validate_keepalived(errors: &mut Errors, net: &Networking) {
    let path = "spec.networking";
    if net.keepalived.is_some() && net.ip_address_manager.is_some() {
        errors.push(
            format!("{path}.ipAddressManager"),
            "cannot be used together with keepalived; ipAddressManager is deprecated",
        );
    }
    if net.keepalived_enabled() {
        for (field, value) in [("ipAddress", &net.ip_address), ("interface", &net.interface)] {
            if !is_set(value) {
                errors.push(format!("{path}.{field}"), "is required when keepalived is enabled");
            }
        }
    }
    let vips = net.keepalived.as_ref().and_then(|k| k.additional_vips.as_ref());
    for (i, vip) in vips.into_iter().flatten().enumerate() {
        let vpath = format!("{path}.keepalived.additionalVIPs[{i}]");
        let ip = vip.ip_address.as_deref().and_then(parse_ip);
        if ip.is_none() {
            errors.push(format!("{vpath}.ipAddress"), "a valid IP address is required");
        }
        if !is_set(&vip.interface) {
            errors.push(format!("{vpath}.interface"), "is required");
        }
        if let (Some(prefix), Some(ip)) = (vip.prefix, ip) {
            let max = if ip.is_ipv4() { 32 } else { 128 };
            if !(0..=max).contains(&prefix) {
                errors.push(format!("{vpath}.prefix"), format!("{prefix} is not a valid prefix length for {ip}"));
            }
        }
    }
}
