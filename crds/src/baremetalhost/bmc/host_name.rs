//! The host part of a BMC address, checked as baremetal-operator checks it.

use std::net::IpAddr;

/// An IP address, or dot-separated labels of 1 to 63 letters, digits and `-`, none starting or
/// ending with `-` (baremetal-operator's `checkDNSValid`). Unlike Kubernetes names, upper case
/// is allowed: DNS names are case-insensitive and BMC addresses are written in either case.
pub(super) fn is_valid_host_name(host: &str) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return true;
    }
    host.split('.').all(|label| {
        let bytes = label.as_bytes();
        (1..=63).contains(&bytes.len())
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::is_valid_host_name;

    #[test]
    fn host_names_follow_the_dns_label_rules() {
        for good in ["bmc", "BMC-1.example.com", "10.0.0.1", "fd00::1", "a1.b2", &"a".repeat(63)] {
            assert!(is_valid_host_name(good), "{good}");
        }
        for bad in ["my-.example.com", "-host", "host+1", "host_1", "example.com.", "a..b", "", &"a".repeat(64)] {
            assert!(!is_valid_host_name(bad), "{bad}");
        }
    }
}
