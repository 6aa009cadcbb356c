//! `spec.networking.dhcp`: pools inside their networks, no overlaps, extra ranges with a real
//! prefix and a gateway inside their network, and the version gate of extraRanges.

use crate::ironic::IronicSpec;
use crate::ironic::networking::{Dhcp, DhcpRange, Networking};
use crate::ironic::versions::{self, IronicVersion};
use crate::validation::net::to_u128;
use crate::validation::{Errors, IpNet, is_set, parse_ip, parse_ip_net};
use std::net::IpAddr;

/// A checked pool: its network and bounds.
struct Pool {
    path: String,
    begin: IpAddr,
    end: IpAddr,
}

pub(super) fn validate_dhcp(errors: &mut Errors, spec: &IronicSpec) {
    let Some(net) = &spec.networking else {
        return;
    };
    let Some(dhcp) = &net.dhcp else {
        return;
    };
    let path = "spec.networking.dhcp";
    if !is_set(&net.ip_address) && !is_set(&net.interface) && net.mac_addresses.as_ref().is_none_or(Vec::is_empty) {
        errors.push(path, "requires networking.ipAddress, networking.interface or networking.macAddresses");
    }
    let extra_ranges = dhcp.extra_ranges.as_deref().unwrap_or_default();
    let mut pools: Vec<_> = main_pool(errors, net, dhcp, path).into_iter().collect();
    check_addresses(errors, dhcp, path);
    for (i, range) in extra_ranges.iter().enumerate() {
        pools.extend(extra_range(errors, range, &format!("{path}.extraRanges[{i}]")));
    }
    check_overlaps(errors, &pools);
    if !extra_ranges.is_empty()
        && let Ok(version) = versions::resolve(spec.version.as_deref())
        && !version.version.at_least(37, 0)
    {
        errors.push(
            format!("{path}.extraRanges"),
            format!(
                "requires Ironic {} or newer; this Ironic is {}",
                IronicVersion::DHCP_EXTRA_RANGES,
                version.version
            ),
        );
    }
}

/// The main range (networkCIDR, rangeBegin, rangeEnd: all or none, and none only beside
/// extraRanges), with Ironic's own address inside its network.
fn main_pool(errors: &mut Errors, net: &Networking, dhcp: &Dhcp, path: &str) -> Option<Pool> {
    let extra_ranges = dhcp.extra_ranges.as_deref().unwrap_or_default();
    let main = [&dhcp.network_cidr, &dhcp.range_begin, &dhcp.range_end];
    match main.iter().filter(|v| is_set(v)).count() {
        0 if extra_ranges.is_empty() => errors.push(
            format!("{path}.networkCIDR"),
            "networkCIDR, rangeBegin and rangeEnd are required unless extraRanges is set",
        ),
        0 => {}
        3 => {
            let cidr = dhcp.network_cidr.as_deref();
            let (net_cidr, pool) =
                check_pool(errors, path, cidr, dhcp.range_begin.as_deref(), dhcp.range_end.as_deref())?;
            if let Some(ip) = net.ip_address.as_deref().and_then(parse_ip)
                && !net_cidr.contains(ip)
            {
                let message = format!("must be inside dhcp.networkCIDR {}", cidr.unwrap_or_default());
                errors.push("spec.networking.ipAddress", message);
            }
            return Some(pool);
        }
        _ => errors.push(format!("{path}.networkCIDR"), "networkCIDR, rangeBegin and rangeEnd must be set together"),
    }
    None
}

/// The DNS and gateway addresses handed out with the main range.
fn check_addresses(errors: &mut Errors, dhcp: &Dhcp, path: &str) {
    for (field, value) in [("dnsAddress", &dhcp.dns_address), ("gatewayAddress", &dhcp.gateway_address)] {
        if let Some(v) = value.as_deref()
            && parse_ip(v).is_none()
        {
            errors.push(format!("{path}.{field}"), format!("{v:?} is not a valid IP address"));
        }
    }
    if is_set(&dhcp.dns_address) && dhcp.serve_dns.unwrap_or(false) {
        errors.push(format!("{path}.serveDNS"), "cannot be used together with dnsAddress");
    }
}

/// One of extraRanges: its pool, a non-zero prefix, and an IPv4 gateway inside it.
fn extra_range(errors: &mut Errors, range: &DhcpRange, rpath: &str) -> Option<Pool> {
    let (start, end) = (range.range_begin.as_deref(), range.range_end.as_deref());
    let pool = check_pool(errors, rpath, range.network_cidr.as_deref(), start, end).map(|(_, pool)| pool);
    let cidr = range.network_cidr.as_deref().unwrap_or_default();
    let net = parse_ip_net(cidr);
    if net.is_some_and(|n| n.prefix == 0) {
        // A /0 range would hand out every address of the family: never a provisioning
        // network.
        errors.push(format!("{rpath}.networkCIDR"), format!("{cidr} must have a non-zero prefix length"));
    }
    let Some(gateway) = range.gateway_address.as_deref() else { return pool };
    let field = format!("{rpath}.gatewayAddress");
    match parse_ip(gateway) {
        None => errors.push(field, format!("{gateway:?} is not a valid IP address")),
        Some(IpAddr::V6(_)) => errors.push(field, "per-range gateways are not supported for IPv6"),
        Some(ip @ IpAddr::V4(_)) if net.is_some_and(|n| !n.contains(ip)) => {
            errors.push(field, format!("{gateway} is not inside {cidr}: hosts in this range could not reach it"))
        }
        Some(IpAddr::V4(_)) => {}
    }
    pool
}

/// Checks one pool; returns it when its addresses are usable for further checks.
fn check_pool(
    errors: &mut Errors,
    path: &str,
    cidr: Option<&str>,
    begin: Option<&str>,
    end: Option<&str>,
) -> Option<(IpNet, Pool)> {
    let net = match cidr.map(|c| (c, parse_ip_net(c))) {
        Some((_, Some(net))) => Some(net),
        Some((c, None)) => {
            errors.push(format!("{path}.networkCIDR"), format!("{c:?} is not a valid CIDR"));
            None
        }
        None => {
            errors.push(format!("{path}.networkCIDR"), "is required");
            None
        }
    };
    let mut bound = |field: &str, value: Option<&str>| -> Option<IpAddr> {
        let fpath = format!("{path}.{field}");
        let Some(value) = value else {
            errors.push(fpath, "is required");
            return None;
        };
        let Some(ip) = parse_ip(value) else {
            errors.push(fpath, format!("{value:?} is not a valid IP address"));
            return None;
        };
        if let (Some(net), Some(c)) = (net, cidr)
            && !net.contains(ip)
        {
            errors.push(fpath, format!("{value} is not inside {c}"));
            return None;
        }
        Some(ip)
    };
    let begin_ip = bound("rangeBegin", begin);
    let end_ip = bound("rangeEnd", end);
    let (net, begin_ip, end_ip) = (net?, begin_ip?, end_ip?);
    if to_u128(begin_ip) > to_u128(end_ip) {
        errors.push(format!("{path}.rangeEnd"), "must not be before rangeBegin");
        return None;
    }
    Some((net, Pool { path: path.to_string(), begin: begin_ip, end: end_ip }))
}

fn check_overlaps(errors: &mut Errors, pools: &[Pool]) {
    for (i, later) in pools.iter().enumerate() {
        for earlier in &pools[..i] {
            let same_family = later.begin.is_ipv4() == earlier.begin.is_ipv4();
            if same_family
                && to_u128(later.begin) <= to_u128(earlier.end)
                && to_u128(earlier.begin) <= to_u128(later.end)
            {
                errors.push(
                    format!("{}.rangeBegin", later.path),
                    format!("range {}-{} overlaps with the range of {}", later.begin, later.end, earlier.path),
                );
            }
        }
    }
}
