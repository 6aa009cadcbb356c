//! Subject alternative names of the serving certificate: the Service's DNS names, and every
//! address clients and hosts use to reach Ironic.

use crate::pki::SubjectAltNames;
use crds::ironic::IronicSpec;
use std::net::IpAddr;

/// The names for the Ironic `service` in `namespace`.
///
/// Addresses: `networking.ipAddress` (where Ironic listens on the provisioning network), the
/// external IP, Keepalived's additional VIPs, the hosts of the external URLs and the Ingress,
/// and `node_ips`: with host networking and no fixed provisioning IP, Ironic listens on the
/// address of whichever node it runs on (every node of a DaemonSet), so the caller passes the
/// addresses of the nodes the pods may run on.
pub(crate) fn compute(
    service: &str,
    namespace: &str,
    cluster_domain: &str,
    spec: &IronicSpec,
    node_ips: &[IpAddr],
) -> SubjectAltNames {
    let mut sans = SubjectAltNames::default();
    sans.dns.push(service.to_string());
    sans.dns.push(format!("{service}.{namespace}"));
    sans.dns.push(format!("{service}.{namespace}.svc"));
    if !cluster_domain.is_empty() {
        sans.dns.push(format!("{service}.{namespace}.svc.{}", cluster_domain.trim_end_matches('.')));
    }
    if let Some(networking) = &spec.networking {
        for ip in [&networking.ip_address, &networking.external_ip].into_iter().flatten() {
            sans.push_host(ip);
        }
        for vip in networking.keepalived.iter().flat_map(|k| k.additional_vips.iter().flatten()) {
            if let Some(ip) = &vip.ip_address {
                sans.push_host(ip);
            }
        }
        for url in [&networking.external_callback_url, &networking.image_server_external_url].into_iter().flatten() {
            if let Some(host) = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)) {
                sans.push_host(&host);
            }
        }
        if let Some(host) = networking.ingress.as_ref().and_then(|i| i.host.as_deref()) {
            sans.push_host(host);
        }
    }
    if uses_node_addresses(spec) {
        sans.ips.extend_from_slice(node_ips);
    }
    sans.normalize()
}

/// True when Ironic's provisioning address is the node's: host networking without a fixed
/// `networking.ipAddress`.
pub(crate) fn uses_node_addresses(spec: &IronicSpec) -> bool {
    let networking = spec.networking.clone().unwrap_or_default();
    networking.host_network() && networking.ip_address.as_deref().is_none_or(str::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{Ingress, Keepalived, KeepalivedVip, Networking};

    #[test]
    fn service_names_come_first_and_everything_is_sorted_and_unique() {
        let spec = IronicSpec {
            networking: Some(Networking {
                ip_address: Some("192.0.2.2".into()),
                external_ip: Some("203.0.113.10".into()),
                external_callback_url: Some("https://Ironic.Example.com:6385".into()),
                image_server_external_url: Some("http://203.0.113.10:6180/images".into()),
                ingress: Some(Ingress { host: Some("ironic.example.com".into()), ..Default::default() }),
                keepalived: Some(Keepalived {
                    enabled: Some(true),
                    additional_vips: Some(vec![KeepalivedVip {
                        ip_address: Some("2001:db8::2".into()),
                        interface: Some("eno2".into()),
                        prefix: Some(64),
                    }]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let node: IpAddr = "10.0.0.5".parse().expect("ip");
        let sans = compute("ironic", "metal3", "cluster.local", &spec, &[node]);
        assert_eq!(
            sans.dns,
            ["ironic", "ironic.example.com", "ironic.metal3", "ironic.metal3.svc", "ironic.metal3.svc.cluster.local"]
        );
        // A fixed provisioning IP: node addresses are not needed.
        assert_eq!(sans.all()[5..], ["192.0.2.2", "203.0.113.10", "2001:db8::2"]);
    }

    #[test]
    fn without_a_fixed_address_the_node_addresses_are_covered() {
        let nodes: Vec<IpAddr> = ["10.0.0.6", "10.0.0.5", "10.0.0.6"].iter().map(|i| i.parse().expect("ip")).collect();
        let sans = compute("ironic", "metal3", "cluster.local", &IronicSpec::default(), &nodes);
        assert_eq!(sans.ips, ["10.0.0.5".parse::<IpAddr>().expect("ip"), "10.0.0.6".parse().expect("ip")]);
        let no_host_network = IronicSpec {
            networking: Some(Networking { disable_host_network: Some(true), ..Default::default() }),
            ..Default::default()
        };
        assert!(compute("ironic", "metal3", "cluster.local", &no_host_network, &nodes).ips.is_empty());
    }
}
