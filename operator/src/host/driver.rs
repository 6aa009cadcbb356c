//! From a parsed BMC address to what Ironic needs: the hardware type, the
//! interfaces baremetal-operator picks for the scheme, and `driver_info`.
//!
//! `fake://` (our addition) selects Ironic's `fake-hardware` type with fake
//! boot, deploy, inspect, management and power interfaces: every transition
//! succeeds at once and nothing is contacted, which is what tests and
//! benchmarks of the controller need.

use crds::baremetalhost::bmc::{BmcAddress, BmcScheme, Transport};
use ironic_client::{DriverInfo, NodeInterfaces, Secret};

/// BMC credentials from the host's Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BmcCredentials {
    pub username: String,
    pub password: Secret<String>,
}

/// The Ironic side of a BMC scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverSpec {
    /// The hardware type.
    pub driver: &'static str,
    /// Interfaces set explicitly at registration; the rest are Ironic's defaults.
    pub interfaces: NodeInterfaces,
    /// Whether a port for the boot MAC must exist before inspection.
    pub needs_mac: bool,
    /// The inspect interface for out-of-band (`fast`) inspection.
    pub fast_inspect_interface: &'static str,
    /// The deploy interface for images written to disk.
    pub disk_deploy_interface: &'static str,
    /// The deploy interface for live ISOs.
    pub live_iso_deploy_interface: &'static str,
    /// The deploy interface for a custom deploy step.
    pub custom_deploy_interface: &'static str,
    /// Whether the deploy ramdisk (kernel/ramdisk/ISO) goes into driver_info.
    pub uses_deploy_ramdisk: bool,
}

/// The interface baremetal-operator uses for in-band (agent) inspection.
pub const AGENT_INSPECT_INTERFACE: &str = "agent";

fn interfaces(f: impl FnOnce(&mut NodeInterfaces)) -> NodeInterfaces {
    let mut i = NodeInterfaces::default();
    f(&mut i);
    i
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// The interfaces of the generic redfish type: a boot interface, redfish
/// RAID, and redfish firmware updates where baremetal-operator enables them.
fn redfish_interfaces(boot: &str, firmware: bool) -> NodeInterfaces {
    interfaces(|i| {
        i.boot_interface = some(boot);
        i.firmware_interface = firmware.then(|| "redfish".to_string());
        i.raid_interface = some("redfish");
    })
}

/// The driver and interfaces of a BMC scheme, as baremetal-operator maps them.
pub fn driver_spec(scheme: BmcScheme) -> DriverSpec {
    let needs_mac = scheme.needs_boot_mac();
    let redfish_like = |driver: &'static str, ifaces: NodeInterfaces| DriverSpec {
        driver,
        interfaces: ifaces,
        needs_mac,
        fast_inspect_interface: "redfish",
        disk_deploy_interface: "direct",
        live_iso_deploy_interface: "ramdisk",
        custom_deploy_interface: "custom-agent",
        uses_deploy_ramdisk: true,
    };
    match scheme {
        BmcScheme::Ipmi | BmcScheme::Libvirt => DriverSpec {
            driver: "ipmi",
            interfaces: interfaces(|i| {
                i.boot_interface = some("ipxe");
                i.raid_interface = some("no-raid");
            }),
            needs_mac,
            // IPMI cannot inspect out of band; validation refuses `fast` for it.
            fast_inspect_interface: AGENT_INSPECT_INTERFACE,
            disk_deploy_interface: "direct",
            live_iso_deploy_interface: "ramdisk",
            custom_deploy_interface: "custom-agent",
            uses_deploy_ramdisk: true,
        },
        BmcScheme::Redfish | BmcScheme::Ilo5Redfish => redfish_like("redfish", redfish_interfaces("ipxe", true)),
        BmcScheme::RedfishVirtualMedia | BmcScheme::Ilo5VirtualMedia => {
            redfish_like("redfish", redfish_interfaces("redfish-virtual-media", false))
        }
        BmcScheme::RedfishUefiHttp => redfish_like("redfish", redfish_interfaces("redfish-https", true)),
        BmcScheme::IdracRedfish | BmcScheme::IdracVirtualMedia => redfish_like(
            "idrac",
            interfaces(|i| {
                i.bios_interface = some("idrac-redfish");
                i.boot_interface =
                    some(if scheme == BmcScheme::IdracVirtualMedia { "idrac-redfish-virtual-media" } else { "ipxe" });
                i.firmware_interface = some("redfish");
                i.management_interface = some("idrac-redfish");
                i.power_interface = some("idrac-redfish");
                i.raid_interface = some("idrac-redfish");
                // The idrac type defaults to the WSMAN vendor interface.
                i.vendor_interface = some("idrac-redfish");
            }),
        ),
        BmcScheme::Fake => DriverSpec {
            driver: "fake-hardware",
            interfaces: interfaces(|i| {
                i.boot_interface = some("fake");
                i.deploy_interface = some("fake");
                i.inspect_interface = some("fake");
                i.management_interface = some("fake");
                i.power_interface = some("fake");
            }),
            needs_mac,
            fast_inspect_interface: "fake",
            disk_deploy_interface: "fake",
            live_iso_deploy_interface: "fake",
            custom_deploy_interface: "fake",
            uses_deploy_ramdisk: false,
        },
    }
}

/// The inspect interface a host registers with.
pub fn inspect_interface(spec: &DriverSpec, fast: bool) -> &'static str {
    if spec.driver == "fake-hardware" || fast { spec.fast_inspect_interface } else { AGENT_INSPECT_INTERFACE }
}

/// Deploy ramdisk locations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeployRamdisk {
    pub kernel: Option<String>,
    pub ramdisk: Option<String>,
    pub iso: Option<String>,
}

/// `driver_info` for a BMC: how Ironic reaches it, with the credentials and
/// the deploy ramdisk.
pub fn driver_info(
    address: &BmcAddress,
    credentials: Option<&BmcCredentials>,
    disable_certificate_verification: bool,
    ramdisk: &DeployRamdisk,
) -> DriverInfo {
    let mut info = DriverInfo::new();
    let scheme = address.scheme;
    match scheme {
        BmcScheme::Fake => return info,
        BmcScheme::Ipmi | BmcScheme::Libvirt => {
            info.insert("ipmi_address", address.host.clone());
            info.insert("ipmi_port", address.port.unwrap_or(623).to_string());
            info.insert("ipmi_priv_level", "ADMINISTRATOR");
            if let Some(c) = credentials {
                info.insert("ipmi_username", c.username.clone());
                info.insert("ipmi_password", c.password.expose().clone());
            }
            if disable_certificate_verification {
                info.insert("ipmi_verify_ca", false);
            }
        }
        _ => {
            let transport = match address.transport {
                Some(Transport::Http) => "http",
                Some(Transport::Https) | None => "https",
            };
            let host = if address.host.contains(':') { format!("[{}]", address.host) } else { address.host.clone() };
            let authority = match address.port {
                Some(port) => format!("{host}:{port}"),
                None => host,
            };
            info.insert("redfish_address", format!("{transport}://{authority}"));
            let trimmed = address.path.trim_matches('/');
            // Plain redfish may name the service root only; Ironic then
            // picks the single system itself.
            let needs_system_id = !(scheme == BmcScheme::Redfish || scheme == BmcScheme::Ilo5Redfish)
                || (!trimmed.is_empty() && trimmed != "redfish/v1");
            if needs_system_id {
                info.insert("redfish_system_id", address.path.clone());
            }
            if let Some(c) = credentials {
                info.insert("redfish_username", c.username.clone());
                info.insert("redfish_password", c.password.expose().clone());
            }
            if disable_certificate_verification {
                info.insert("redfish_verify_ca", false);
            }
        }
    }
    if let Some(kernel) = &ramdisk.kernel {
        info.insert("deploy_kernel", kernel.clone());
    }
    if let Some(initrd) = &ramdisk.ramdisk {
        info.insert("deploy_ramdisk", initrd.clone());
    }
    if let Some(iso) = &ramdisk.iso {
        info.insert("deploy_iso", iso.clone());
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::bmc::parse_bmc_address;
    use serde_json::json;

    fn creds() -> BmcCredentials {
        BmcCredentials { username: "admin".into(), password: Secret::new("pw".into()) }
    }

    fn info(address: &str) -> serde_json::Value {
        let parsed = parse_bmc_address(address).expect("address parses");
        serde_json::to_value(driver_info(&parsed, Some(&creds()), false, &DeployRamdisk::default()))
            .expect("serialises")
    }

    #[test]
    fn every_scheme_maps_to_its_driver_and_boot_interface() {
        let cases = [
            ("ipmi://10.0.0.1", "ipmi", Some("ipxe"), false),
            ("10.0.0.1:6230", "ipmi", Some("ipxe"), false),
            ("libvirt://10.0.0.1", "ipmi", Some("ipxe"), true),
            ("redfish://10.0.0.1/redfish/v1/Systems/1", "redfish", Some("ipxe"), false),
            // Virtual media and UEFI HTTP boot learn the MAC by inspection (baremetal-operator 0.14).
            ("redfish-virtualmedia://10.0.0.1/redfish/v1/Systems/1", "redfish", Some("redfish-virtual-media"), false),
            ("redfish-uefihttp+https://10.0.0.1/redfish/v1/Systems/1", "redfish", Some("redfish-https"), false),
            ("idrac-redfish://10.0.0.1/redfish/v1/Systems/1", "idrac", Some("ipxe"), false),
            ("idrac-virtualmedia://10.0.0.1/redfish/v1/Systems/1", "idrac", Some("idrac-redfish-virtual-media"), false),
            ("ilo5-redfish://10.0.0.1/redfish/v1/Systems/1", "redfish", Some("ipxe"), false),
            ("ilo5-virtualmedia://10.0.0.1/redfish/v1/Systems/1", "redfish", Some("redfish-virtual-media"), false),
            ("fake://anything", "fake-hardware", Some("fake"), false),
        ];
        for (address, driver, boot, needs_mac) in cases {
            let scheme = parse_bmc_address(address).expect("parses").scheme;
            let spec = driver_spec(scheme);
            assert_eq!(spec.driver, driver, "{address}");
            assert_eq!(spec.interfaces.boot_interface.as_deref(), boot, "{address}");
            assert_eq!(spec.needs_mac, needs_mac, "{address}");
        }
        let idrac = driver_spec(BmcScheme::IdracRedfish);
        assert_eq!(idrac.interfaces.vendor_interface.as_deref(), Some("idrac-redfish"));
        assert_eq!(idrac.interfaces.power_interface.as_deref(), Some("idrac-redfish"));
        let fake = driver_spec(BmcScheme::Fake);
        assert_eq!(fake.interfaces.deploy_interface.as_deref(), Some("fake"));
        assert!(!fake.uses_deploy_ramdisk);
    }

    #[test]
    fn redfish_driver_info_keeps_transport_port_and_system() {
        assert_eq!(
            info("redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/abc"),
            json!({"redfish_address": "http://127.0.0.1:8000", "redfish_system_id": "/redfish/v1/Systems/abc",
                   "redfish_username": "admin", "redfish_password": "pw"})
        );
        // Plain redfish without a system path lets Ironic find the system.
        let root = info("redfish://bmc.example/redfish/v1/");
        assert_eq!(root["redfish_address"], "https://bmc.example");
        assert!(root.get("redfish_system_id").is_none());
        let v6 = info("redfish-virtualmedia://[fd00::1]:8443/redfish/v1/Systems/1");
        assert_eq!(v6["redfish_address"], "https://[fd00::1]:8443");
    }

    #[test]
    fn ipmi_driver_info_defaults_the_port() {
        assert_eq!(
            info("ipmi://10.0.0.1"),
            json!({"ipmi_address": "10.0.0.1", "ipmi_port": "623", "ipmi_priv_level": "ADMINISTRATOR",
                   "ipmi_username": "admin", "ipmi_password": "pw"})
        );
        assert_eq!(info("10.0.0.1:6230")["ipmi_port"], "6230");
    }

    #[test]
    fn certificate_verification_and_ramdisk_are_passed_on() {
        let parsed = parse_bmc_address("redfish://10.0.0.1/redfish/v1/Systems/1").expect("parses");
        let ramdisk = DeployRamdisk { kernel: Some("k".into()), ramdisk: Some("r".into()), iso: Some("i".into()) };
        let value = serde_json::to_value(driver_info(&parsed, None, true, &ramdisk)).expect("serialises");
        assert_eq!(value["redfish_verify_ca"], false);
        assert_eq!(value["deploy_kernel"], "k");
        assert_eq!(value["deploy_ramdisk"], "r");
        assert_eq!(value["deploy_iso"], "i");
        let fake = parse_bmc_address("fake://x").expect("parses");
        assert!(driver_info(&fake, Some(&creds()), false, &ramdisk).is_empty());
    }

    #[test]
    fn inspection_is_agent_unless_fast_or_fake() {
        let redfish = driver_spec(BmcScheme::RedfishVirtualMedia);
        assert_eq!(inspect_interface(&redfish, false), "agent");
        assert_eq!(inspect_interface(&redfish, true), "redfish");
        assert_eq!(inspect_interface(&driver_spec(BmcScheme::Fake), false), "fake");
    }

    #[test]
    fn driver_info_never_prints_the_password() {
        let parsed = parse_bmc_address("ipmi://10.0.0.1").expect("parses");
        let info = driver_info(&parsed, Some(&creds()), false, &DeployRamdisk::default());
        assert!(!format!("{info:?}").contains("\"pw\""));
    }
}
