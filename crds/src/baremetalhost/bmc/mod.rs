//! BMC addresses: which scheme (driver) an address selects, what each driver supports, and the
//! parser ([`parse_bmc_address`]) that reads addresses the way baremetal-operator does.

mod address;
mod host_name;

pub use address::{BmcAddress, BmcAddressError, Transport, parse_bmc_address};

use std::fmt;

/// A BMC type, selected by the address scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BmcScheme {
    /// `ipmi://` or a bare `host[:port]`.
    Ipmi,
    /// `libvirt://` (virtual BMC; needs bootMACAddress).
    Libvirt,
    /// `redfish://`, network boot (iPXE).
    Redfish,
    /// `redfish-virtualmedia://`.
    RedfishVirtualMedia,
    /// `redfish-uefihttp://`, UEFI HTTP boot.
    RedfishUefiHttp,
    /// `idrac-redfish://`.
    IdracRedfish,
    /// `idrac-virtualmedia://`.
    IdracVirtualMedia,
    /// `ilo5-redfish://`, an alias that should no longer be used.
    Ilo5Redfish,
    /// `ilo5-virtualmedia://`, an alias that should no longer be used.
    Ilo5VirtualMedia,
    /// Our `fake://<anything>`: Ironic's fake-hardware driver, for tests and benchmarks.
    Fake,
}

impl BmcScheme {
    pub(crate) const ALL: [BmcScheme; 10] = [
        Self::Ipmi,
        Self::Libvirt,
        Self::Redfish,
        Self::RedfishVirtualMedia,
        Self::RedfishUefiHttp,
        Self::IdracRedfish,
        Self::IdracVirtualMedia,
        Self::Ilo5Redfish,
        Self::Ilo5VirtualMedia,
        Self::Fake,
    ];

    /// The scheme as written in addresses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ipmi => "ipmi",
            Self::Libvirt => "libvirt",
            Self::Redfish => "redfish",
            Self::RedfishVirtualMedia => "redfish-virtualmedia",
            Self::RedfishUefiHttp => "redfish-uefihttp",
            Self::IdracRedfish => "idrac-redfish",
            Self::IdracVirtualMedia => "idrac-virtualmedia",
            Self::Ilo5Redfish => "ilo5-redfish",
            Self::Ilo5VirtualMedia => "ilo5-virtualmedia",
            Self::Fake => "fake",
        }
    }

    /// Redfish-based drivers, which also accept `+http` / `+https`.
    pub fn is_redfish(self) -> bool {
        matches!(
            self,
            Self::Redfish
                | Self::RedfishVirtualMedia
                | Self::RedfishUefiHttp
                | Self::IdracRedfish
                | Self::IdracVirtualMedia
                | Self::Ilo5Redfish
                | Self::Ilo5VirtualMedia
        )
    }

    /// Drivers that need `bootMACAddress` whatever the inspection settings (baremetal-operator
    /// 0.14's `NeedsMAC`): only `libvirt`, whose virtual BMC addresses are not unique and whose
    /// NICs cannot be read through the BMC, so the MAC can never be discovered. Every other
    /// driver learns the MACs from inspection; with inspection disabled, any driver needs one:
    /// that whole rule is [`crate::baremetalhost::boot_mac_requirement`], which the webhook and
    /// the controller share.
    pub fn needs_boot_mac(self) -> bool {
        self == Self::Libvirt
    }

    /// Drivers that can configure hardware RAID.
    pub fn supports_hardware_raid(self) -> bool {
        self.is_redfish() || self == Self::Fake
    }

    /// Drivers that can turn on UEFI secure boot.
    pub fn supports_secure_boot(self) -> bool {
        self.is_redfish() || self == Self::Fake
    }

    /// Drivers that can inspect out of band (inspectionMode fast).
    pub fn supports_fast_inspection(self) -> bool {
        self.is_redfish() || self == Self::Fake
    }
}

impl fmt::Display for BmcScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
