//! From a parsed BMC address to what Ironic needs: the hardware type, the
//! interfaces baremetal-operator picks for the scheme, and `driver_info`.
//!
//! [`ironic_driver`] is the whole mapping as one pure, public function (an address and its
//! options in, the driver, interfaces and `driver_info` out), so that tables of cases and
//! tools can ask what a host would be registered with, without Kubernetes or Ironic. The
//! controller uses the same function, through its parts [`driver_spec`] and [`driver_info`].
//!
//! `fake://` (our addition) selects Ironic's `fake-hardware` type with fake
//! boot, deploy, inspect, management and power interfaces: every transition
//! succeeds at once and nothing is contacted, which is what tests and
//! benchmarks of the controller need.

use crds::baremetalhost::bmc::{BmcAddress, BmcScheme, Transport};
use ironic_client::{DriverInfo, NodeInterfaces, Secret};

/// BMC credentials from the host's Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BmcCredentials {
    pub username: String,
    pub password: Secret<String>,
}

/// The Ironic side of a BMC scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DriverSpec {
    /// The hardware type.
    pub driver: &'static str,
    /// Interfaces set explicitly at registration; the rest are Ironic's defaults.
    pub interfaces: NodeInterfaces,
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
pub(crate) const AGENT_INSPECT_INTERFACE: &str = "agent";

fn interfaces(f: impl FnOnce(&mut NodeInterfaces)) -> NodeInterfaces {
    let mut i = NodeInterfaces::default();
    f(&mut i);
    i
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// The interfaces of the generic redfish type: a boot interface, with redfish RAID and redfish
/// firmware updates, as baremetal-operator sets them for every redfish and ilo5 scheme
/// (virtual media included).
fn redfish_interfaces(boot: &str) -> NodeInterfaces {
    interfaces(|i| {
        i.boot_interface = some(boot);
        i.firmware_interface = some("redfish");
        i.raid_interface = some("redfish");
    })
}

/// The driver and interfaces of a BMC scheme, as baremetal-operator maps them. Whether the
/// host needs a boot MAC is not the driver's alone (inspection decides too): that is
/// `crds::baremetalhost::rules::boot_mac_requirement`.
pub(crate) fn driver_spec(scheme: BmcScheme) -> DriverSpec {
    let redfish_like = |driver: &'static str, ifaces: NodeInterfaces| DriverSpec {
        driver,
        interfaces: ifaces,
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
            // IPMI cannot inspect out of band; validation refuses `fast` for it.
            fast_inspect_interface: AGENT_INSPECT_INTERFACE,
            disk_deploy_interface: "direct",
            live_iso_deploy_interface: "ramdisk",
            custom_deploy_interface: "custom-agent",
            uses_deploy_ramdisk: true,
        },
        BmcScheme::Redfish | BmcScheme::Ilo5Redfish => redfish_like("redfish", redfish_interfaces("ipxe")),
        BmcScheme::RedfishVirtualMedia | BmcScheme::Ilo5VirtualMedia => {
            redfish_like("redfish", redfish_interfaces("redfish-virtual-media"))
        }
        BmcScheme::RedfishUefiHttp => redfish_like("redfish", redfish_interfaces("redfish-https")),
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
            fast_inspect_interface: "fake",
            disk_deploy_interface: "fake",
            live_iso_deploy_interface: "fake",
            custom_deploy_interface: "fake",
            uses_deploy_ramdisk: false,
        },
    }
}

/// Whether the host boots an ISO deploy image: its boot interface is virtual media (or UEFI
/// HTTP), as baremetal-operator's `SupportsISOPreprovisioningImage` decides.
pub(crate) fn boots_iso(spec: &DriverSpec) -> bool {
    matches!(
        spec.interfaces.boot_interface.as_deref(),
        Some("redfish-virtual-media" | "idrac-redfish-virtual-media" | "redfish-https")
    )
}

/// The inspect interface a host registers with.
pub(crate) fn inspect_interface(spec: &DriverSpec, fast: bool) -> &'static str {
    if spec.driver == "fake-hardware" || fast { spec.fast_inspect_interface } else { AGENT_INSPECT_INTERFACE }
}

/// Deploy ramdisk locations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeployRamdisk {
    pub kernel: Option<String>,
    pub ramdisk: Option<String>,
    pub iso: Option<String>,
}

/// `driver_info` for a BMC: how Ironic reaches it, with the credentials and
/// the deploy ramdisk.
pub(crate) fn driver_info(
    address: &BmcAddress,
    credentials: Option<&BmcCredentials>,
    disable_certificate_verification: bool,
    ramdisk: &DeployRamdisk,
) -> DriverInfo {
    let mut info = DriverInfo::new();
    match address.scheme {
        BmcScheme::Fake => return info,
        BmcScheme::Ipmi | BmcScheme::Libvirt => {
            info.insert("ipmi_address", address.host.clone());
            info.insert("ipmi_port", address.port.unwrap_or(623).to_string());
            // `?privilegelevel=` of the address, as baremetal-operator honours it.
            info.insert("ipmi_priv_level", address.ipmi_privilege_level().to_string());
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
            // An address naming no system (no path, or only the service root) leaves Ironic
            // to find the single system itself: sending the root as a system breaks the host.
            if let Some(system) = address.redfish_system_id() {
                info.insert("redfish_system_id", system.to_string());
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

/// A BMC's options beside its address: the credentials from its Secret, whether to verify
/// its certificate, and where the deploy ramdisk is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BmcOptions<'a> {
    /// The credentials; `None` registers the node without them (Ironic cannot reach the BMC).
    pub credentials: Option<&'a BmcCredentials>,
    /// `spec.bmc.disableCertificateVerification`.
    pub disable_certificate_verification: bool,
    /// The deploy ramdisk (kernel, initramfs, ISO) the operator is configured with; ignored
    /// by drivers that boot none.
    pub ramdisk: &'a DeployRamdisk,
}

/// Everything a host with this BMC is registered in Ironic with.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IronicDriver {
    /// The hardware type, the interfaces set at registration and the deploy interfaces.
    pub spec: DriverSpec,
    /// `driver_info`: the BMC's address, credentials, certificate verification and the deploy
    /// ramdisk.
    pub driver_info: DriverInfo,
}

/// The Ironic driver, interfaces and `driver_info` of a BMC address with its options, as
/// baremetal-operator registers a host (see `design/hosts.md` for the table):
///
/// - the scheme chooses the hardware type and interfaces ([`driver_spec`]); every redfish and
///   ilo5 scheme gets `firmware_interface: redfish` and `raid_interface: redfish`;
/// - IPMI sends `ipmi_priv_level` from the address's `privilegelevel` query parameter
///   (ADMINISTRATOR when it has none), and port 623 by default;
/// - Redfish sends `redfish_system_id` only when the path names a system (not for an empty
///   path or the bare service root `/redfish/v1/`);
/// - `fake://` gets no `driver_info` at all.
///
/// Pure: no I/O, no clock; the result's `Debug` never shows the password. `driver/tests.rs`
/// holds its table of addresses and what each registers.
pub(crate) fn ironic_driver(address: &BmcAddress, options: &BmcOptions<'_>) -> IronicDriver {
    let spec = driver_spec(address.scheme);
    let ramdisk = if spec.uses_deploy_ramdisk { options.ramdisk.clone() } else { DeployRamdisk::default() };
    let driver_info = driver_info(address, options.credentials, options.disable_certificate_verification, &ramdisk);
    IronicDriver { spec, driver_info }
}

#[cfg(test)]
mod tests;
