//! Ironic API microversions and their negotiation.
//!
//! Ironic treats a request without `X-OpenStack-Ironic-API-Version` as a
//! version 1.1 client: names are refused and new nodes skip `enroll`. So the
//! client negotiates once, at build time, and sends the result on every
//! request. See `design/ironic-client.md` for why the minimum is 1.89.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

/// The header that carries the microversion on requests and responses.
pub const VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Version";
/// Response header: the oldest microversion the server accepts.
pub(crate) const MIN_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Minimum-Version";
/// Response header: the newest microversion the server accepts.
pub(crate) const MAX_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Maximum-Version";

/// An Ironic API microversion, `major.minor`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    major: u16,
    minor: u16,
}

impl ApiVersion {
    /// The oldest microversion this client works with: 1.89, the baseline
    /// metal3's baremetal-operator requires, which also covers everything
    /// this crate sends (JSON config drives 1.56, deploy steps 1.69, node
    /// inventory 1.81, `service` 1.87, virtual media 1.89).
    pub const MINIMUM: ApiVersion = ApiVersion::new(1, 89);
    /// The newest microversion this client was tested against (Ironic 39).
    /// The client never asks for more, so a newer server cannot change the
    /// shape of what we parse underneath us.
    pub const MAXIMUM: ApiVersion = ApiVersion::new(1, 115);
    /// `disable_power_off` on nodes.
    pub const DISABLE_POWER_OFF: ApiVersion = ApiVersion::new(1, 95);
    /// `disable_ramdisk` on the `service` transition.
    pub const SERVICE_DISABLE_RAMDISK: ApiVersion = ApiVersion::new(1, 108);

    /// A version from its parts.
    pub const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    /// The major version (always 1 for Ironic today).
    pub fn major(self) -> u16 {
        self.major
    }

    /// The minor version.
    pub fn minor(self) -> u16 {
        self.minor
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl fmt::Debug for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A string that is not a `major.minor` microversion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Ironic API version {0:?}, expected MAJOR.MINOR")]
pub struct ParseVersionError(String);

impl FromStr for ApiVersion {
    type Err = ParseVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseVersionError(s.to_owned());
        let (major, minor) = s.trim().split_once('.').ok_or_else(err)?;
        Ok(Self::new(major.parse().map_err(|_| err())?, minor.parse().map_err(|_| err())?))
    }
}

/// The range of microversions a server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerVersions {
    /// Oldest accepted microversion.
    pub min: ApiVersion,
    /// Newest accepted microversion.
    pub max: ApiVersion,
}

/// Why no microversion could be agreed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiationError {
    /// The server is older than this client supports.
    #[error(
        "Ironic supports API versions up to {server_max}, but this client needs at least {required}; upgrade Ironic"
    )]
    ServerTooOld {
        /// The newest microversion the server accepts.
        server_max: ApiVersion,
        /// The minimum this client needs.
        required: ApiVersion,
    },
    /// The server no longer accepts any version this client knows.
    #[error("Ironic requires API version {server_min} or later, but this client supports at most {client_max}")]
    ServerTooNew {
        /// The oldest microversion the server accepts.
        server_min: ApiVersion,
        /// The newest microversion this client supports.
        client_max: ApiVersion,
    },
}

impl ServerVersions {
    /// The version to send: the newest both sides support.
    pub fn negotiate(self) -> Result<ApiVersion, NegotiationError> {
        if self.max < ApiVersion::MINIMUM {
            return Err(NegotiationError::ServerTooOld { server_max: self.max, required: ApiVersion::MINIMUM });
        }
        if self.min > ApiVersion::MAXIMUM {
            return Err(NegotiationError::ServerTooNew { server_min: self.min, client_max: ApiVersion::MAXIMUM });
        }
        Ok(self.max.min(ApiVersion::MAXIMUM))
    }

    /// Reads the range from the response headers Ironic sets on every
    /// answer, including the 406 it sends for a version it does not accept.
    pub fn from_headers(headers: &reqwest::header::HeaderMap) -> Option<Self> {
        let get = |name: &str| headers.get(name)?.to_str().ok()?.parse().ok();
        Some(Self { min: get(MIN_VERSION_HEADER)?, max: get(MAX_VERSION_HEADER)? })
    }

    /// Reads the range from the body of `GET /v1` (`version`) or `GET /`
    /// (`default_version`, or the `v1` entry of `versions`).
    pub fn from_discovery_body(body: &[u8]) -> Option<Self> {
        let doc: DiscoveryDocument = serde_json::from_slice(body).ok()?;
        let entry = doc.version.or(doc.default_version).or_else(|| doc.versions.into_iter().find(|v| v.id == "v1"))?;
        Some(Self { min: entry.min_version.parse().ok()?, max: entry.version.parse().ok()? })
    }
}

#[derive(Deserialize)]
struct DiscoveryDocument {
    #[serde(default)]
    version: Option<VersionEntry>,
    #[serde(default)]
    default_version: Option<VersionEntry>,
    #[serde(default)]
    versions: Vec<VersionEntry>,
}

#[derive(Deserialize)]
struct VersionEntry {
    #[serde(default)]
    id: String,
    min_version: String,
    version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_order() {
        let v: ApiVersion = "1.115".parse().unwrap();
        assert_eq!(v, ApiVersion::new(1, 115));
        assert!(ApiVersion::new(1, 9) < ApiVersion::new(1, 89));
        assert!("1".parse::<ApiVersion>().is_err());
        assert!("1.x".parse::<ApiVersion>().is_err());
        assert_eq!(v.to_string(), "1.115");
    }

    #[test]
    fn negotiates_the_newest_common_version() {
        let range = |min, max| ServerVersions { min: ApiVersion::new(1, min), max: ApiVersion::new(1, max) };
        assert_eq!(range(1, 115).negotiate(), Ok(ApiVersion::new(1, 115)));
        assert_eq!(range(1, 120).negotiate(), Ok(ApiVersion::MAXIMUM));
        assert_eq!(range(1, 89).negotiate(), Ok(ApiVersion::new(1, 89)));
        let err = range(1, 87).negotiate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "Ironic supports API versions up to 1.87, but this client needs at least 1.89; upgrade Ironic"
        );
        assert!(matches!(range(116, 120).negotiate(), Err(NegotiationError::ServerTooNew { .. })));
    }
}
