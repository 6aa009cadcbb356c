//! First-boot network data generated from a host's effective networks (pure), for hosts whose
//! NodeSet names no networkData Secret: OpenStack's `network_data.json`, which cloud-init and
//! Ironic's config drive read. It is written once, when the machine is provisioned; editing the
//! networks later is applied in place by the services, never by reprovisioning.

use crds::baremetalhost::HardwareDetails;
use crds::nodeset::EffectiveHostConfig;
use crds::validation::parse_ip_net;
use serde_json::{Value, json};
use std::net::IpAddr;

/// `network_data.json` for `config`, `None` when the host has no network to configure. NIC
/// MAC addresses come from the machine's inspection data, matched by interface name.
pub(super) fn network_data(config: &EffectiveHostConfig, hardware: Option<&HardwareDetails>) -> Option<Value> {
    let mut links = Vec::new();
    let mut networks = Vec::new();
    let mut services = Vec::new();
    for network in &config.networks {
        let Some(interface) = network.interface.as_deref() else { continue };
        let mac = hardware
            .and_then(|h| h.nics.as_ref())
            .and_then(|nics| nics.iter().find(|n| n.name.as_deref() == Some(interface)))
            .and_then(|n| n.mac.clone());
        if !links.iter().any(|l: &Value| l["id"] == interface) {
            let mut link = json!({"id": interface, "name": interface, "type": "phy"});
            if let Some(mac) = mac {
                link["ethernet_mac_address"] = json!(mac);
            }
            if network.vlan.is_none()
                && let Some(mtu) = network.mtu
            {
                link["mtu"] = json!(mtu);
            }
            links.push(link);
        }
        let link_id = match network.vlan {
            Some(vlan) => {
                let id = format!("{interface}.{vlan}");
                let mut link = json!({"id": id, "name": id, "type": "vlan", "vlan_link": interface, "vlan_id": vlan});
                if let Some(mtu) = network.mtu {
                    link["mtu"] = json!(mtu);
                }
                links.push(link);
                id
            }
            None => interface.to_string(),
        };
        for (i, address) in network.addresses.iter().flatten().enumerate() {
            let Some(net) = parse_ip_net(address) else { continue };
            let (ip, prefix) = (net.addr, net.prefix);
            let ipv6 = ip.is_ipv6();
            let mut entry = json!({
                "id": format!("{}-{i}", network.name),
                "link": link_id,
                "type": if ipv6 { "ipv6" } else { "ipv4" },
                "ip_address": ip.to_string(),
                "netmask": netmask(ipv6, prefix),
            });
            let mut routes = Vec::new();
            if let Some(gateway) = network.gateway.as_deref().filter(|_| i == 0) {
                routes.push(json!({"network": if ipv6 { "::" } else { "0.0.0.0" }, "netmask": netmask(ipv6, 0), "gateway": gateway}));
            }
            for route in network.routes.iter().flatten().filter(|_| i == 0) {
                let (target, prefix) = match route.to.as_str() {
                    "default" => (if ipv6 { "::".to_string() } else { "0.0.0.0".to_string() }, 0),
                    to => match parse_ip_net(to) {
                        Some(net) => (net.addr.to_string(), net.prefix),
                        None => continue,
                    },
                };
                routes.push(json!({"network": target, "netmask": netmask(ipv6, prefix), "gateway": route.via}));
            }
            if !routes.is_empty() {
                entry["routes"] = Value::Array(routes);
            }
            networks.push(entry);
        }
    }
    for server in config.dns.iter().flat_map(|d| d.nameservers.iter().flatten()) {
        services.push(json!({"type": "dns", "address": server}));
    }
    if links.is_empty() {
        return None;
    }
    Some(json!({"links": links, "networks": networks, "services": services}))
}

/// The netmask of a prefix length, in the address family's notation.
fn netmask(ipv6: bool, prefix: u8) -> String {
    if ipv6 {
        let bits = u32::from(prefix.min(128));
        let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
        IpAddr::from(mask.to_be_bytes()).to_string()
    } else {
        let bits = u32::from(prefix.min(32));
        let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
        IpAddr::from(mask.to_be_bytes()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::Nic;
    use crds::nodeset::{NodeSection, NodeTemplate, effective_host_config};

    fn config() -> EffectiveHostConfig {
        let template: NodeTemplate = serde_json::from_value(json!({
            "networks": [
                {"name": "ctlplane", "interface": "eno1", "mtu": 1500, "gateway": "192.0.2.1",
                 "routes": [{"to": "198.51.100.0/24", "via": "192.0.2.254"}]},
                {"name": "storage", "interface": "eno2", "vlan": 30, "mtu": 9000}
            ],
            "dns": {"nameservers": ["192.0.2.53"]}
        }))
        .expect("template");
        let host: NodeSection = serde_json::from_value(json!({"networks": [
            {"name": "ctlplane", "addresses": ["192.0.2.10/24"]},
            {"name": "storage", "addresses": ["203.0.113.10/24"]}
        ]}))
        .expect("host");
        effective_host_config("compute-0", Some(&template), Some(&host))
    }

    #[test]
    fn links_networks_routes_and_dns_come_from_the_effective_networks() {
        let hardware = HardwareDetails {
            nics: Some(vec![Nic {
                name: Some("eno1".into()),
                mac: Some("52:54:00:00:00:01".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let data = network_data(&config(), Some(&hardware)).expect("network data");
        let links = data["links"].as_array().expect("links");
        assert_eq!(
            links[0],
            json!({"id": "eno1", "name": "eno1", "type": "phy", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01"})
        );
        assert_eq!(
            links[2],
            json!({"id": "eno2.30", "name": "eno2.30", "type": "vlan", "vlan_link": "eno2", "vlan_id": 30, "mtu": 9000})
        );
        let ctlplane = &data["networks"][0];
        assert_eq!(
            (ctlplane["ip_address"].as_str(), ctlplane["netmask"].as_str()),
            (Some("192.0.2.10"), Some("255.255.255.0"))
        );
        assert_eq!(ctlplane["routes"][0], json!({"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.0.2.1"}));
        assert_eq!(ctlplane["routes"][1]["network"], "198.51.100.0");
        assert_eq!(data["networks"][1]["link"], "eno2.30");
        assert_eq!(data["services"], json!([{"type": "dns", "address": "192.0.2.53"}]));
    }

    #[test]
    fn no_interface_means_nothing_to_generate() {
        assert_eq!(network_data(&EffectiveHostConfig::default(), None), None);
    }

    #[test]
    fn netmasks_of_both_families() {
        assert_eq!(netmask(false, 24), "255.255.255.0");
        assert_eq!(netmask(false, 0), "0.0.0.0");
        assert_eq!(netmask(true, 64), "ffff:ffff:ffff:ffff::");
        assert_eq!(netmask(true, 200), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    }
}
