//! The Ironic versions this operator deploys, with their default images. One list, used by
//! validation and by the operator when it resolves images.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Repository of the Ironic image; the tag comes from [`SupportedVersion::image_tag`].
pub const IRONIC_IMAGE_REPOSITORY: &str = "quay.io/metal3-io/ironic";
/// Default image of the ramdisk-downloader init container.
pub const DEFAULT_RAMDISK_DOWNLOADER_IMAGE: &str = "quay.io/metal3-io/ironic-ipa-downloader:latest";
/// Default Keepalived image.
pub const DEFAULT_KEEPALIVED_IMAGE: &str = "quay.io/metal3-io/keepalived:latest";

/// An Ironic version: `latest` or `MAJOR.MINOR`. `latest` sorts after every numbered version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IronicVersion {
    /// The main branch.
    Latest,
    /// A release branch.
    Release {
        /// Major version, e.g. 38.
        major: u32,
        /// Minor version, e.g. 0.
        minor: u32,
    },
}

impl IronicVersion {
    /// A numbered version.
    pub const fn release(major: u32, minor: u32) -> Self {
        Self::Release { major, minor }
    }

    /// True when this version is at least `major.minor`; `latest` always is.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        *self >= Self::release(major, minor)
    }

    /// True when moving from `self` to `to` goes back in time. Moving away from `latest` is not
    /// a downgrade: `latest` is a moving target that users pin by choosing a release.
    pub fn is_downgrade_to(&self, to: &IronicVersion) -> bool {
        !matches!(self, Self::Latest) && to < self
    }

    /// The first Ironic version whose DHCP supports `networking.dhcp.extraRanges`.
    pub const DHCP_EXTRA_RANGES: IronicVersion = IronicVersion::release(37, 0);
}

impl Ord for IronicVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Latest, Self::Latest) => Ordering::Equal,
            (Self::Latest, _) => Ordering::Greater,
            (_, Self::Latest) => Ordering::Less,
            (Self::Release { major, minor }, Self::Release { major: m2, minor: n2 }) => (major, minor).cmp(&(m2, n2)),
        }
    }
}

impl PartialOrd for IronicVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for IronicVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Latest => f.write_str("latest"),
            Self::Release { major, minor } => write!(f, "{major}.{minor}"),
        }
    }
}

/// Why a version string could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("version {0:?} must be \"latest\" or MAJOR.MINOR, e.g. \"38.0\"")]
pub struct VersionParseError(pub String);

impl FromStr for IronicVersion {
    type Err = VersionParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "latest" {
            return Ok(Self::Latest);
        }
        let err = || VersionParseError(s.to_string());
        let (major, minor) = s.split_once('.').ok_or_else(err)?;
        let number = |part: &str| -> Result<u32, VersionParseError> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            part.parse().map_err(|_| err())
        };
        Ok(Self::release(number(major)?, number(minor)?))
    }
}

/// A version this operator deploys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupportedVersion {
    /// The version.
    pub version: IronicVersion,
    /// Tag of the Ironic image for it.
    pub image_tag: &'static str,
}

impl SupportedVersion {
    /// The default Ironic image of this version.
    pub fn ironic_image(&self) -> String {
        format!("{IRONIC_IMAGE_REPOSITORY}:{}", self.image_tag)
    }
}

/// Every supported version, newest first; the same set as ironic-standalone-operator v0.11.
pub const SUPPORTED_VERSIONS: &[SupportedVersion] = &[
    SupportedVersion { version: IronicVersion::Latest, image_tag: "latest" },
    SupportedVersion { version: IronicVersion::release(38, 0), image_tag: "release-38.0" },
    SupportedVersion { version: IronicVersion::release(37, 0), image_tag: "release-37.0" },
    SupportedVersion { version: IronicVersion::release(35, 0), image_tag: "release-35.0" },
];

/// The version deployed when `spec.version` is unset.
pub const DEFAULT_VERSION: IronicVersion = IronicVersion::release(38, 0);

/// The supported entry for `version`, if it is supported.
pub fn lookup(version: IronicVersion) -> Option<&'static SupportedVersion> {
    SUPPORTED_VERSIONS.iter().find(|v| v.version == version)
}

/// Resolves `spec.version` (unset means [`DEFAULT_VERSION`]) to a supported entry, or says
/// why it cannot.
pub fn resolve(requested: Option<&str>) -> Result<&'static SupportedVersion, UnsupportedVersion> {
    let version = match requested {
        None | Some("") => DEFAULT_VERSION,
        Some(text) => text.parse().map_err(|e: VersionParseError| UnsupportedVersion(e.to_string()))?,
    };
    lookup(version).ok_or_else(|| {
        UnsupportedVersion(format!("version {version} is not supported; supported versions are {}", supported_list()))
    })
}

/// Why a requested version cannot be deployed.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct UnsupportedVersion(pub String);

/// `latest, 38.0, 37.0, 35.0`, for messages.
pub fn supported_list() -> String {
    SUPPORTED_VERSIONS.iter().map(|v| v.version.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_latest_and_numbered_versions() {
        assert_eq!("latest".parse(), Ok(IronicVersion::Latest));
        assert_eq!("38.0".parse(), Ok(IronicVersion::release(38, 0)));
        assert!("38".parse::<IronicVersion>().is_err());
        assert!("38.x".parse::<IronicVersion>().is_err());
        assert!("v38.0".parse::<IronicVersion>().is_err());
        assert!("38.0.1".parse::<IronicVersion>().is_err());
    }

    #[test]
    fn latest_sorts_after_releases() {
        assert!(IronicVersion::Latest > IronicVersion::release(99, 0));
        assert!(IronicVersion::release(38, 0) > IronicVersion::release(37, 9));
        assert!(IronicVersion::Latest.at_least(37, 0));
        assert!(!IronicVersion::release(35, 0).at_least(37, 0));
    }

    #[test]
    fn downgrade_excludes_moves_away_from_latest() {
        let v38 = IronicVersion::release(38, 0);
        let v37 = IronicVersion::release(37, 0);
        assert!(v38.is_downgrade_to(&v37));
        assert!(!v37.is_downgrade_to(&v38));
        assert!(!IronicVersion::Latest.is_downgrade_to(&v37));
        assert!(!v38.is_downgrade_to(&v38));
    }

    #[test]
    fn the_supported_list_has_latest_three_releases_and_a_supported_default() {
        assert_eq!(supported_list(), "latest, 38.0, 37.0, 35.0");
        assert!(lookup(DEFAULT_VERSION).is_some());
        assert_eq!(
            resolve(None).map(SupportedVersion::ironic_image),
            Ok("quay.io/metal3-io/ironic:release-38.0".to_string())
        );
        assert_eq!(resolve(Some("latest")).map(|v| v.image_tag), Ok("latest"));
    }

    #[test]
    fn resolve_rejects_unsupported_and_malformed_versions() {
        let err = resolve(Some("34.0")).expect_err("34.0 is not supported");
        assert_eq!(err.0, "version 34.0 is not supported; supported versions are latest, 38.0, 37.0, 35.0");
        assert!(resolve(Some("banana")).is_err());
    }
}
