//! Reading a BMC address the way baremetal-operator does: `scheme://host[:port][/path][?query]`,
//! the same without `//` (`ipmi:host:623`, `redfish:host`, which it reads as opaque URLs and
//! rewrites to `scheme://`), or a bare `host[:port]`, which means IPMI. Host names are checked
//! as it checks them, and what the driver mapping needs (the IPMI privilege level, whether a
//! Redfish address names a system) is kept in the parsed address.

use super::BmcScheme;
use super::host_name::is_valid_host_name;
use std::fmt;
use thiserror::Error;

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
    /// The `privilegelevel` query parameter of an `ipmi` or `libvirt` address
    /// (`ipmi://10.0.0.1?privilegelevel=OPERATOR`), as written; `None` when absent.
    pub privilege_level: Option<String>,
}

impl BmcAddress {
    /// The IPMI privilege level baremetal-operator sends when the address names none.
    pub const DEFAULT_IPMI_PRIVILEGE_LEVEL: &'static str = "ADMINISTRATOR";
    /// The privilege levels Ironic's `ipmi_priv_level` accepts.
    pub const IPMI_PRIVILEGE_LEVELS: [&'static str; 4] = ["ADMINISTRATOR", "CALLBACK", "OPERATOR", "USER"];

    /// The privilege level to send as `ipmi_priv_level`: the address's `privilegelevel`, or
    /// ADMINISTRATOR.
    pub fn ipmi_privilege_level(&self) -> &str {
        self.privilege_level.as_deref().unwrap_or(Self::DEFAULT_IPMI_PRIVILEGE_LEVEL)
    }

    /// The path to send as `redfish_system_id`. `None` for non-Redfish schemes and when the
    /// address names no system: an empty path, `/`, or only the service root `/redfish/v1/`
    /// (Ironic then finds the single system itself; sending the root as a system breaks the
    /// host).
    pub fn redfish_system_id(&self) -> Option<&str> {
        let names_system = !matches!(self.path.trim_end_matches('/'), "" | "/redfish/v1");
        (self.scheme.is_redfish() && names_system).then_some(self.path.as_str())
    }
}

/// The canonical form, `scheme[+transport]://host[:port][path][?privilegelevel=…]`, which
/// [`parse_bmc_address`] reads back to the same address. It carries nothing the parsed address
/// dropped (user info, other query parameters, a fragment), so it never shows a password
/// written into the address.
impl fmt::Display for BmcAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = match self.transport {
            Some(Transport::Http) => "+http",
            Some(Transport::Https) => "+https",
            None => "",
        };
        write!(f, "{}{transport}://", self.scheme)?;
        if self.scheme == BmcScheme::Fake {
            return f.write_str(&self.host);
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        f.write_str(&self.path)?;
        if let Some(level) = &self.privilege_level {
            let encoded: String = url::form_urlencoded::byte_serialize(level.as_bytes()).collect();
            write!(f, "?privilegelevel={encoded}")?;
        }
        Ok(())
    }
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
    /// A host that is neither an IP address nor a valid DNS name.
    #[error(
        "BMC address {0:?} has an invalid host {1:?}: use an IP address or a DNS name of letters, digits, '-' and '.', with no label starting or ending with '-'"
    )]
    InvalidHost(String, String),
}

const REMOVED_SCHEMES: &[&str] = &["ibmc", "idrac", "ilo4", "ilo4-virtualmedia", "ilo5", "irmc"];

/// Parses a BMC address the way baremetal-operator does, plus `fake://`.
pub fn parse_bmc_address(address: &str) -> Result<BmcAddress, BmcAddressError> {
    let address = address.trim();
    if address.is_empty() {
        return Err(BmcAddressError::Empty);
    }
    match split_scheme(address)? {
        Some((scheme_text, rest)) => parse_with_scheme(scheme_text, rest, address),
        // A bare host[:port] means IPMI.
        None => {
            refuse_bracketed_host_without_port(address)?;
            parse_url(BmcScheme::Ipmi, None, &format!("ipmi://{address}"), address)
        }
    }
}

/// baremetal-operator reads a bare address with a colon only as `host:port` (Go's
/// `net.SplitHostPort`), so a bracketed IPv6 address without a scheme needs its port:
/// `[fd00::1]:623`, or `ipmi://[fd00::1]`.
fn refuse_bracketed_host_without_port(address: &str) -> Result<(), BmcAddressError> {
    let has_port = address.split_once("]:").is_some_and(|(_, port)| !port.is_empty());
    if address.starts_with('[') && !has_port {
        let hint = "a bracketed IPv6 address needs a port (`[fd00::1]:623`) or a scheme (`ipmi://[fd00::1]`)";
        return Err(BmcAddressError::Malformed(address.into(), hint.into()));
    }
    Ok(())
}

/// Splits off the scheme: `scheme://rest`, or `scheme:rest` when the scheme is one we know
/// (baremetal-operator reads `ipmi:host` as an opaque URL and rewrites it to `ipmi://host`).
/// `None` for a bare `host`, `host:port` or `[ipv6]:port`. Anything else before a colon that
/// could be a scheme is an unknown scheme, reported by name.
fn split_scheme(address: &str) -> Result<Option<(&str, &str)>, BmcAddressError> {
    if let Some(split) = address.split_once("://") {
        return Ok(Some(split));
    }
    let Some((before, after)) = address.split_once(':') else {
        return Ok(None);
    };
    if is_known_scheme(before) {
        return Ok(Some((before, after)));
    }
    let host_and_port = before.starts_with('[') || (!after.is_empty() && after.bytes().all(|b| b.is_ascii_digit()));
    if !host_and_port && is_scheme_syntax(before) {
        return Err(BmcAddressError::Unknown(before.into(), supported()));
    }
    Ok(None)
}

/// A scheme as URLs spell it: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme_syntax(text: &str) -> bool {
    text.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

fn is_known_scheme(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let base = lower.strip_suffix("+https").or_else(|| lower.strip_suffix("+http")).unwrap_or(&lower);
    REMOVED_SCHEMES.contains(&base) || BmcScheme::ALL.iter().any(|s| s.name() == base)
}

fn parse_with_scheme(scheme_text: &str, rest: &str, original: &str) -> Result<BmcAddress, BmcAddressError> {
    let lower = scheme_text.to_ascii_lowercase();
    let (base, transport) = match lower.split_once('+') {
        Some((base, "http")) => (base, Some(Transport::Http)),
        Some((base, "https")) => (base, Some(Transport::Https)),
        Some(_) => return Err(BmcAddressError::Unknown(scheme_text.into(), supported())),
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
            return Err(BmcAddressError::MissingHost(original.into()));
        }
        return Ok(BmcAddress {
            scheme,
            transport: None,
            host: rest.into(),
            port: None,
            path: String::new(),
            privilege_level: None,
        });
    }
    parse_url(scheme, transport, &format!("{}://{rest}", scheme.name()), original)
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
    if !is_valid_host_name(&host) {
        return Err(BmcAddressError::InvalidHost(original.into(), host));
    }
    let privilege_level = matches!(scheme, BmcScheme::Ipmi | BmcScheme::Libvirt)
        .then(|| url.query_pairs().find(|(key, _)| key == "privilegelevel").map(|(_, value)| value.into_owned()))
        .flatten();
    Ok(BmcAddress { scheme, transport, host, port: url.port(), path: url.path().to_string(), privilege_level })
}

fn supported() -> String {
    BmcScheme::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(address: &str) -> BmcAddress {
        parse_bmc_address(address).unwrap_or_else(|e| panic!("{address}: {e}"))
    }

    #[test]
    fn redfish_system_id_is_omitted_for_the_service_root() {
        let cases = [
            ("redfish://10.0.0.1", None),
            ("redfish://10.0.0.1/", None),
            ("redfish://10.0.0.1/redfish/v1", None),
            ("redfish://10.0.0.1/redfish/v1/", None),
            ("redfish-virtualmedia://10.0.0.1/redfish/v1/", None),
            ("redfish://10.0.0.1/redfish/v1/Systems/1", Some("/redfish/v1/Systems/1")),
            (
                "idrac-virtualmedia://10.0.0.1/redfish/v1/Systems/System.Embedded.1",
                Some("/redfish/v1/Systems/System.Embedded.1"),
            ),
            ("ipmi://10.0.0.1/redfish/v1/Systems/1", None),
        ];
        for (address, expected) in cases {
            assert_eq!(parsed(address).redfish_system_id(), expected, "{address}");
        }
    }

    #[test]
    fn ipmi_privilege_level_comes_from_the_query() {
        let operator = parsed("ipmi://10.0.0.1:623?privilegelevel=OPERATOR");
        assert_eq!(operator.privilege_level.as_deref(), Some("OPERATOR"));
        assert_eq!(operator.ipmi_privilege_level(), "OPERATOR");
        assert_eq!(parsed("libvirt://10.0.0.1/?privilegelevel=USER").ipmi_privilege_level(), "USER");
        let default = parsed("ipmi://10.0.0.1");
        assert_eq!(default.privilege_level, None);
        assert_eq!(default.ipmi_privilege_level(), "ADMINISTRATOR");
        assert_eq!(parsed("redfish://10.0.0.1/?privilegelevel=USER").privilege_level, None, "IPMI only");
    }

    #[test]
    fn the_canonical_form_keeps_what_was_parsed_and_drops_the_rest() {
        let cases = [
            ("10.0.0.1:623", "ipmi://10.0.0.1:623"),
            ("IPMI:bmc.example.com", "ipmi://bmc.example.com"),
            (
                "ipmi://admin:secret@[fd00::1]:623/?privilegelevel=OPERATOR&x=1#f",
                "ipmi://[fd00::1]:623/?privilegelevel=OPERATOR",
            ),
            ("Redfish+HTTP://10.0.0.1/redfish/v1/Systems/1", "redfish+http://10.0.0.1/redfish/v1/Systems/1"),
            ("fake:// any thing", "fake:// any thing"),
            ("libvirt://h?privilegelevel=a+b%26c", "libvirt://h?privilegelevel=a+b%26c"),
        ];
        for (address, canonical) in cases {
            let parsed = parsed(address);
            assert_eq!(parsed.to_string(), canonical, "{address}");
            assert_eq!(parse_bmc_address(canonical), Ok(parsed), "{address}");
        }
    }

    #[test]
    fn a_bracketed_ipv6_address_without_a_scheme_needs_a_port_as_in_baremetal_operator() {
        for refused in ["[fe80::1]", "[fe80::1]:", "[fd00::1]/redfish/v1"] {
            let err = parse_bmc_address(refused).expect_err(refused);
            assert!(matches!(err, BmcAddressError::Malformed(..)), "{refused}: {err:?}");
        }
        assert_eq!(parsed("[fe80::1]:623").host, "fe80::1");
        assert_eq!(parsed("ipmi://[fe80::1]").port, None);
    }

    #[test]
    fn the_path_callers_read_is_unchanged() {
        assert_eq!(parsed("redfish://10.0.0.1/redfish/v1/").path, "/redfish/v1/");
        assert_eq!(parsed("redfish:10.0.0.1").path, "");
    }
}
