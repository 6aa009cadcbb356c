//! Networking as the builders use it, computed once from `spec.networking` and the TLS
//! material: host networking, ports, the provisioning addresses, the external URLs, DHCP and
//! the addresses keepalived holds.

use crds::ironic::{Dhcp, Ingress, IronicSpec, Networking};

/// What keepalived holds, when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VirtualIps {
    /// `networking.keepalived`: `ip,interface[,prefix]` entries, the provisioning IP first.
    Keepalived(Vec<String>),
    /// The deprecated `ipAddressManager: keepalived`: the provisioning IP on its interface.
    Provisioning { ip: String, interface: String },
}

/// Networking, resolved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Network {
    /// The pods use their node's network: hosts on the provisioning network reach Ironic,
    /// httpd and dnsmasq directly.
    pub host_network: bool,
    /// Ironic and httpd listen on every interface, not only the provisioning one.
    pub listen_all_interfaces: bool,
    pub api_port: i32,
    pub image_server_port: i32,
    pub image_server_tls_port: i32,
    pub rpc_port: i32,
    pub exporter_port: i32,
    /// The provisioning network as the spec names it (the builders drop empty values).
    pub ip_address: Option<String>,
    pub interface: Option<String>,
    pub mac_addresses: Option<Vec<String>>,
    pub external_ip: Option<String>,
    /// Where hosts call Ironic back: the spec's URL, else the Ingress's host over HTTPS.
    pub callback_url: Option<String>,
    /// Where hosts fetch images from outside: the spec's URL, else the Ingress's host.
    pub image_server_url: Option<String>,
    /// dnsmasq's settings; never with highAvailability (validation refuses the combination).
    pub dhcp: Option<Dhcp>,
    pub virtual_ips: VirtualIps,
    pub ingress: Option<Ingress>,
    /// The pods serve the API over HTTPS (httpd terminates it; Ironic listens on a socket).
    pub serves_tls: bool,
    /// They serve virtual media over TLS too.
    pub serves_vmedia_tls: bool,
}

impl Network {
    /// From `spec`; `serves_tls` when a serving certificate is mounted.
    pub(crate) fn of(spec: &IronicSpec, serves_tls: bool) -> Self {
        let net = spec.networking.clone().unwrap_or_default();
        let ingress_url = net.ingress.as_ref().and_then(|i| i.host.as_deref()).map(|h| format!("https://{h}"));
        let disable_vmedia_tls = spec.tls.as_ref().and_then(|t| t.disable_virtual_media_tls).unwrap_or(false);
        Self {
            host_network: net.host_network(),
            listen_all_interfaces: !net.bind_interface.unwrap_or(false),
            api_port: net.api_port(),
            image_server_port: net.image_server_port(),
            image_server_tls_port: net.image_server_tls_port(),
            rpc_port: net.rpc_port(),
            exporter_port: net.prometheus_exporter_port(),
            // Before the fields below move out of `net`.
            virtual_ips: virtual_ips(&net),
            ip_address: net.ip_address,
            interface: net.interface,
            mac_addresses: net.mac_addresses,
            external_ip: net.external_ip,
            callback_url: net.external_callback_url.or_else(|| ingress_url.clone()),
            image_server_url: net.image_server_external_url.or(ingress_url),
            dhcp: net.dhcp.filter(|_| !spec.high_availability()),
            ingress: net.ingress,
            serves_tls,
            serves_vmedia_tls: serves_tls && !disable_vmedia_tls,
        }
    }
}

fn virtual_ips(net: &Networking) -> VirtualIps {
    let ip = net.ip_address.clone().unwrap_or_default();
    let interface = net.interface.clone().unwrap_or_default();
    let Some(keepalived) = net.keepalived.as_ref().filter(|k| k.enabled == Some(true)) else {
        return VirtualIps::Provisioning { ip, interface };
    };
    let entry = |ip: &str, interface: &str, prefix: Option<String>| match prefix {
        Some(prefix) => format!("{ip},{interface},{prefix}"),
        None => format!("{ip},{interface}"),
    };
    let main_prefix = net
        .dhcp
        .as_ref()
        .and_then(|d| d.network_cidr.as_deref())
        .and_then(|c| c.split_once('/'))
        .map(|(_, p)| p.to_string());
    let mut entries = vec![entry(&ip, &interface, main_prefix)];
    for vip in keepalived.additional_vips.iter().flatten() {
        entries.push(entry(
            vip.ip_address.as_deref().unwrap_or_default(),
            vip.interface.as_deref().unwrap_or_default(),
            vip.prefix.map(|p| p.to_string()),
        ));
    }
    VirtualIps::Keepalived(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{Keepalived, KeepalivedVip, Tls};

    fn spec(networking: Networking) -> IronicSpec {
        IronicSpec { networking: Some(networking), ..Default::default() }
    }

    #[test]
    fn an_unset_network_takes_the_defaults_and_the_hosts_network() {
        let network = Network::of(&IronicSpec::default(), false);
        assert!(network.host_network && network.listen_all_interfaces);
        assert_eq!((network.api_port, network.image_server_port, network.rpc_port), (6385, 6180, 6189));
        assert_eq!((network.image_server_tls_port, network.exporter_port), (6183, 9608));
        assert!(!network.serves_tls && !network.serves_vmedia_tls);
    }

    #[test]
    fn external_urls_fall_back_to_the_ingress_host_over_https() {
        let ingress = Some(Ingress { host: Some("ironic.example.com".into()), ..Default::default() });
        let network = Network::of(&spec(Networking { ingress: ingress.clone(), ..Default::default() }), false);
        assert_eq!(network.callback_url.as_deref(), Some("https://ironic.example.com"));
        assert_eq!(network.image_server_url.as_deref(), Some("https://ironic.example.com"));
        let own = Networking {
            ingress,
            external_callback_url: Some("https://callback.example.com:6385".into()),
            ..Default::default()
        };
        let network = Network::of(&spec(own), false);
        assert_eq!(network.callback_url.as_deref(), Some("https://callback.example.com:6385"));
        assert_eq!(network.image_server_url.as_deref(), Some("https://ironic.example.com"));
    }

    #[test]
    fn virtual_media_is_served_over_tls_unless_disabled_and_never_without_a_certificate() {
        assert!(Network::of(&IronicSpec::default(), true).serves_vmedia_tls);
        let disabled = IronicSpec {
            tls: Some(Tls { disable_virtual_media_tls: Some(true), ..Default::default() }),
            ..Default::default()
        };
        let network = Network::of(&disabled, true);
        assert!(network.serves_tls && !network.serves_vmedia_tls);
    }

    #[test]
    fn dhcp_is_left_out_with_high_availability() {
        let mut ha = spec(Networking { dhcp: Some(Dhcp::default()), ..Default::default() });
        assert!(Network::of(&ha, false).dhcp.is_some());
        ha.high_availability = Some(true);
        assert_eq!(Network::of(&ha, false).dhcp, None);
    }

    #[test]
    fn keepalived_holds_the_provisioning_ip_with_the_dhcp_prefix_first_then_the_extra_vips() {
        let networking = Networking {
            ip_address: Some("192.0.2.2".into()),
            interface: Some("eno1".into()),
            dhcp: Some(Dhcp { network_cidr: Some("192.0.2.0/24".into()), ..Default::default() }),
            keepalived: Some(Keepalived {
                enabled: Some(true),
                additional_vips: Some(vec![KeepalivedVip {
                    ip_address: Some("198.51.100.2".into()),
                    interface: Some("eno2".into()),
                    prefix: None,
                }]),
            }),
            ..Default::default()
        };
        let entries = vec!["192.0.2.2,eno1,24".to_string(), "198.51.100.2,eno2".to_string()];
        assert_eq!(Network::of(&spec(networking.clone()), false).virtual_ips, VirtualIps::Keepalived(entries));
        let deprecated = Networking { keepalived: None, ..networking };
        assert_eq!(
            Network::of(&spec(deprecated), false).virtual_ips,
            VirtualIps::Provisioning { ip: "192.0.2.2".into(), interface: "eno1".into() }
        );
    }
}
