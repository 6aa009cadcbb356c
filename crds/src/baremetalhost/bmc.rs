//! BMC address parsing for validation: which scheme (driver), whether the address is usable,
//! and what each driver supports.

use std::fmt;
use thiserror::Error;

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
    const ALL: [BmcScheme; 10] = [
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

    /// Drivers that must know the boot NIC up front (baremetal-operator's `NeedsMAC`):
    /// libvirt boots from the network, and virtual media and UEFI HTTP boot need a port to
    /// recognise the host's agent by. The webhook and the controller share this rule, so a
    /// host that would fail registration is refused at admission.
    pub fn needs_boot_mac(self) -> bool {
        matches!(
            self,
            Self::Libvirt
                | Self::RedfishVirtualMedia
                | Self::RedfishUefiHttp
                | Self::IdracVirtualMedia
                | Self::Ilo5VirtualMedia
        )
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

/// Explicit transport of a Redfish address (`redfish+http://`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Plain HTTP.
    Http,
    /// HTTPS (the default).
    Https,
}

/// A parsed BMC address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BmcAddress {
    /// The driver.
    pub scheme: BmcScheme,
    /// `+http`/`+https`, when given.
    pub transport: Option<Transport>,
    /// Host name or IP (IPv6 without brackets); for `fake://`, everything after the scheme.
    pub host: String,
    /// Port, when given.
    pub port: Option<u16>,
    /// Path, e.g. `/redfish/v1/Systems/1`; empty when none.
    pub path: String,
}

/// Why a BMC address is not usable.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BmcAddressError {
    /// Nothing given.
    #[error("the BMC address is empty")]
    Empty,
    /// A scheme baremetal-operator removed.
    #[error("BMC scheme {0:?} is no longer supported")]
    Removed(String),
    /// An unknown scheme.
    #[error("unknown BMC scheme {0:?}; supported: {1}")]
    Unknown(String, String),
    /// `+http`/`+https` on a non-Redfish scheme.
    #[error("BMC scheme {0:?} does not accept a +http or +https suffix")]
    TransportNotAllowed(String),
    /// Not a URL.
    #[error("invalid BMC address {0:?}: {1}")]
    Malformed(String, String),
    /// No host.
    #[error("BMC address {0:?} has no host")]
    MissingHost(String),
}

const REMOVED_SCHEMES: &[&str] = &["ibmc", "idrac", "ilo4", "ilo4-virtualmedia", "ilo5", "irmc"];

/// Parses a BMC address the way baremetal-operator does, plus `fake://`.
pub fn parse_bmc_address(address: &str) -> Result<BmcAddress, BmcAddressError> {
    let address = address.trim();
    if address.is_empty() {
        return Err(BmcAddressError::Empty);
    }
    let Some((scheme_text, rest)) = address.split_once("://") else {
        // A bare host[:port] means IPMI.
        return parse_url(BmcScheme::Ipmi, None, &format!("ipmi://{address}"), address);
    };
    let lower = scheme_text.to_ascii_lowercase();
    let (base, transport) = match lower.split_once('+') {
        Some((base, "http")) => (base, Some(Transport::Http)),
        Some((base, "https")) => (base, Some(Transport::Https)),
        Some(_) => {
            return Err(BmcAddressError::Unknown(scheme_text.into(), supported()));
        }
        None => (lower.as_str(), None),
    };
    if REMOVED_SCHEMES.contains(&base) {
        return Err(BmcAddressError::Removed(base.into()));
    }
    let scheme = BmcScheme::ALL
        .into_iter()
        .find(|s| s.name() == base)
        .ok_or_else(|| BmcAddressError::Unknown(scheme_text.into(), supported()))?;
    if transport.is_some() && !scheme.is_redfish() {
        return Err(BmcAddressError::TransportNotAllowed(scheme_text.into()));
    }
    if scheme == BmcScheme::Fake {
        // The fake driver talks to nothing: any non-empty identifier will do.
        if rest.is_empty() {
            return Err(BmcAddressError::MissingHost(address.into()));
        }
        return Ok(BmcAddress { scheme, transport: None, host: rest.into(), port: None, path: String::new() });
    }
    parse_url(scheme, transport, &format!("{}://{rest}", scheme.name()), address)
}

fn parse_url(
    scheme: BmcScheme,
    transport: Option<Transport>,
    url_text: &str,
    original: &str,
) -> Result<BmcAddress, BmcAddressError> {
    let url = url::Url::parse(url_text).map_err(|e| BmcAddressError::Malformed(original.into(), e.to_string()))?;
    let host = match url.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(host) => host.to_string(),
        None => String::new(),
    };
    if host.is_empty() {
        return Err(BmcAddressError::MissingHost(original.into()));
    }
    Ok(BmcAddress { scheme, transport, host, port: url.port(), path: url.path().to_string() })
}

fn supported() -> String {
    BmcScheme::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}
