//! IP addresses, networks, MAC addresses and URLs.

use std::net::IpAddr;

/// Parses an IPv4 or IPv6 address (no brackets, no zone).
pub fn parse_ip(s: &str) -> Option<IpAddr> {
    s.trim().parse().ok()
}

/// An IP network in CIDR notation, as Go's `net.ParseCIDR` reads it: the address may have host
/// bits set (`192.0.2.5/24` is the host 192.0.2.5 in 192.0.2.0/24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    /// The address as written.
    pub addr: IpAddr,
    /// Prefix length in bits.
    pub prefix: u8,
}

impl IpNet {
    fn bits(&self) -> u32 {
        match self.addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    fn mask(&self) -> u128 {
        let width = self.bits();
        let prefix = u32::from(self.prefix);
        if prefix == 0 {
            0
        } else {
            // Ones in the top `prefix` bits of a `width`-bit number.
            let ones = u128::MAX << (128 - prefix);
            ones >> (128 - width)
        }
    }

    /// True when `ip` is of the same family and inside this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                (to_u128(self.addr) & self.mask()) == (to_u128(ip) & self.mask())
            }
            _ => false,
        }
    }

    /// True for an IPv6 network.
    pub fn is_ipv6(&self) -> bool {
        self.addr.is_ipv6()
    }
}

/// Address as an unsigned integer in the low bits (IPv4 uses the low 32).
pub(crate) fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Parses `address/prefix`; host bits may be set.
pub fn parse_ip_net(s: &str) -> Option<IpNet> {
    let (addr, prefix) = s.trim().split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (prefix <= max).then_some(IpNet { addr, prefix })
}

/// Six colon-separated pairs of hexadecimal digits, e.g. `52:54:00:12:34:56`.
pub fn is_mac_address(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6 && parts.iter().all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Parses an absolute URL whose scheme is one of `schemes`; the error says why not.
///
/// Stricter than the WHATWG parser, which repairs text that Ironic, Go and the shell would
/// read differently: control characters (NUL, tab, newline; WHATWG drops some silently) are
/// refused; `http`/`https` need a host written after `//` (`http:///path` has none, although
/// WHATWG takes `path` for one); `file` needs an absolute path (`file:///images/ipa.kernel`,
/// not `file:ipa.kernel` or `file://ipa.kernel`).
pub fn valid_url(s: &str, schemes: &[&str]) -> Result<url::Url, String> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!("{s:?} contains the control character {:?}", c));
    }
    let parsed = url::Url::parse(s).map_err(|e| format!("{s:?} is not a valid URL: {e}"))?;
    if !schemes.contains(&parsed.scheme()) {
        return Err(format!("{s:?} has scheme {:?}; expected one of {}", parsed.scheme(), schemes.join(", ")));
    }
    // What follows `scheme:` as written, before any repair.
    let written = s.trim_start().split_once(':').map_or("", |(_, rest)| rest);
    match parsed.scheme() {
        "file" => {
            let path = match written.strip_prefix("//") {
                Some(authority_and_path) => authority_and_path.find('/').map_or("", |i| &authority_and_path[i..]),
                None => written,
            };
            if !path.starts_with('/') {
                return Err(format!("{s:?} needs an absolute path, such as file:///images/image.qcow2"));
            }
        }
        "http" | "https" => {
            let authority = written.strip_prefix("//").map_or("", |rest| {
                let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
                &rest[..end]
            });
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            if host.is_empty() || host.starts_with(':') {
                return Err(format!("{s:?} has no host"));
            }
        }
        _ if parsed.host_str().is_none_or(str::is_empty) => return Err(format!("{s:?} has no host")),
        _ => {}
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_contain_their_hosts_only() {
        let net = parse_ip_net("192.0.2.0/24").expect("cidr");
        assert!(net.contains("192.0.2.200".parse().expect("ip")));
        assert!(!net.contains("192.0.3.1".parse().expect("ip")));
        assert!(!net.contains("2001:db8::1".parse().expect("ip")));
        let v6 = parse_ip_net("2001:db8::/64").expect("cidr");
        assert!(v6.contains("2001:db8::42".parse().expect("ip")));
        assert!(!v6.contains("2001:db9::1".parse().expect("ip")));
    }

    #[test]
    fn host_bits_are_accepted_like_go() {
        let net = parse_ip_net("192.0.2.5/24").expect("cidr");
        assert!(net.contains("192.0.2.1".parse().expect("ip")));
        assert_eq!(parse_ip_net("192.0.2.0/33"), None);
        assert_eq!(parse_ip_net("192.0.2.0"), None);
        let all = parse_ip_net("0.0.0.0/0").expect("cidr");
        assert!(all.contains("198.51.100.1".parse().expect("ip")));
    }

    #[test]
    fn mac_addresses_need_six_hex_pairs() {
        assert!(is_mac_address("52:54:00:AB:cd:ef"));
        assert!(!is_mac_address("52-54-00-ab-cd-ef"));
        assert!(!is_mac_address("52:54:00:ab:cd"));
        assert!(!is_mac_address("52:54:00:ab:cd:eg"));
    }

    #[test]
    fn urls_are_read_as_written_not_repaired() {
        let all = ["http", "https", "file", "oci"];
        let refused = [
            ("http:///path", "has no host"),
            ("https:example.com/x", "has no host"),
            // WHATWG refuses these itself ("empty host").
            ("http://@/x", "host"),
            ("http://:8080/x", "host"),
            ("file:images/x.qcow2", "needs an absolute path"),
            ("file://images", "needs an absolute path"),
            ("http://example.com/a\u{0}b", "control character"),
            ("http://exa\nmple.com/x", "control character"),
            ("http://example.com/\tx", "control character"),
            ("oci:///x", "has no host"),
        ];
        for (url, fragment) in refused {
            let err = valid_url(url, &all).expect_err(url);
            assert!(err.contains(fragment), "{url}: {err}");
        }
        let accepted = [
            "file:///images/x.qcow2",
            "file:/images/x.qcow2",
            "file://localhost/images/x.qcow2",
            "http://user:pw@example.com:8080/x",
            "https://[fd00::1]/x",
            "HTTPS://Example.com/x",
            "oci://quay.io/org/image:1",
        ];
        for url in accepted {
            assert!(valid_url(url, &all).is_ok(), "{url}: {:?}", valid_url(url, &all));
        }
    }

    #[test]
    fn urls_need_an_allowed_scheme_and_a_host() {
        assert!(valid_url("https://example.com/x", &["http", "https"]).is_ok());
        assert!(valid_url("ftp://example.com/x", &["http", "https"]).is_err());
        assert!(valid_url("not a url", &["http"]).is_err());
        assert!(valid_url("file:///images/x.qcow2", &["file"]).is_ok());
    }
}
