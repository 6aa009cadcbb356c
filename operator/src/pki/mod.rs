//! Credential material the controllers make themselves: certificates ([`certificate`]),
//! passwords ([`password`]), keys and signing requests for certificates others sign
//! ([`request`]), and the renewal of a CA with an overlap ([`rotation`]). Shared by the Ironic
//! controller (Auto TLS, API credentials), the database module (MariaDB's TLS and credentials)
//! and the webhook (its CA's rotation); it knows nothing of any of them.

pub(crate) mod certificate;
pub(crate) mod password;
pub(crate) mod request;
pub(crate) mod rotation;

pub(crate) use certificate::{CertInfo, CertifiedPem, Decision, decide, inspect, issue_serving, new_ca};
pub(crate) use password::generate_password;

use std::net::IpAddr;

/// Keys of an operator-managed CA Secret.
pub(crate) use crds::ironic::names::CA_CERT_KEY;
pub(crate) const CA_KEY_KEY: &str = "ca.key";

/// The names a serving certificate must cover, sorted and without duplicates, so that the
/// same inputs always give the same certificate request (cert-manager reissues on any change).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubjectAltNames {
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
}

impl SubjectAltNames {
    /// Everything, as text: DNS names first, then addresses.
    pub fn all(&self) -> Vec<String> {
        self.dns.iter().cloned().chain(self.ips.iter().map(IpAddr::to_string)).collect()
    }

    /// Adds a host: an address (bracketed IPv6 too) or a DNS name, lowercased.
    pub fn push_host(&mut self, host: &str) {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(ip) => self.ips.push(ip),
            Err(_) if !host.is_empty() => self.dns.push(host.to_ascii_lowercase()),
            Err(_) => {}
        }
    }

    /// Sorted and deduplicated.
    pub fn normalize(mut self) -> Self {
        self.dns.sort();
        self.dns.dedup();
        self.ips.sort();
        self.ips.dedup();
        self
    }
}
