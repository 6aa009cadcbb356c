//! What a host may make Ironic reach: the admin's allow-list of BMC addresses and of local
//! directories `file://` images are read from.
//!
//! Ironic's conductor runs on the host network with Ironic's own rights. A BMC address is a
//! place it connects to with the credentials given, and a `file://` image or checksum is a file
//! it reads on its own host and writes to a machine the host's owner controls: without a limit,
//! whoever may create a BareMetalHost reaches any address of the provisioning network and
//! copies any file of the conductor's host (its keys, its database password) onto a disk of
//! theirs. So an operator admin lists the BMC networks (`--bmc-networks`; any address when
//! none is listed) and the directories of `file://` images (`--file-image-dirs`; none by
//! default, so `file://` is refused unless an admin allows it). The webhook and the host
//! controller apply the same lists; `fake://` BMCs reach nothing and are always allowed.

use super::bmc::{BmcAddress, BmcScheme};
use super::spec::Image;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// One entry of `--bmc-networks`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Network {
    /// An address block, `10.0.0.0/8` (a bare address is a block of one).
    Block { base: IpAddr, prefix: u8 },
    /// A host name, exactly (case-insensitive).
    Name(String),
    /// Every name under a domain, `*.bmc.example.com`.
    Domain(String),
}

impl Network {
    fn parse(item: &str) -> Result<Self, String> {
        if let Some(domain) = item.strip_prefix("*.") {
            return Ok(Self::Domain(format!(".{}", domain.to_ascii_lowercase())));
        }
        let (address, prefix) = match item.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (item, None),
        };
        let Ok(base) = address.parse::<IpAddr>() else {
            if prefix.is_some() || item.is_empty() || item.contains(['*', ' ', ':']) {
                return Err(format!("{item:?} is neither an address block, a host name nor *.domain"));
            }
            return Ok(Self::Name(item.to_ascii_lowercase()));
        };
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(|| format!("{item:?}: bad prefix"))?,
        };
        Ok(Self::Block { base, prefix })
    }

    fn admits(&self, host: &str) -> bool {
        match (self, host.parse::<IpAddr>()) {
            (Self::Block { base, prefix }, Ok(ip)) => same_block(*base, ip, *prefix),
            (Self::Name(name), Err(_)) => host.eq_ignore_ascii_case(name),
            (Self::Domain(domain), Err(_)) => host.to_ascii_lowercase().ends_with(domain.as_str()),
            _ => false,
        }
    }
}

/// Whether `a` and `b` share their first `prefix` bits (of the same family).
fn same_block(a: IpAddr, b: IpAddr, prefix: u8) -> bool {
    let (a, b, width) = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32u32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128u32),
        _ => return false,
    };
    // The bits below the prefix are ignored; a prefix of 0 admits the whole family.
    let ignored = width.saturating_sub(u32::from(prefix));
    a.checked_shr(ignored).unwrap_or(0) == b.checked_shr(ignored).unwrap_or(0)
}

/// `--bmc-networks`: where BMC addresses may point; any address when empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BmcNetworks(Vec<Network>);

impl FromStr for BmcNetworks {
    type Err = String;

    /// Address blocks, addresses, host names and `*.domain`s separated by commas.
    fn from_str(text: &str) -> Result<Self, String> {
        text.split(',').map(str::trim).filter(|i| !i.is_empty()).map(Network::parse).collect::<Result<_, _>>().map(Self)
    }
}

impl BmcNetworks {
    /// Why Ironic may not be sent to `address`; `None` when it may.
    pub fn refusal(&self, address: &BmcAddress) -> Option<String> {
        let allowed =
            self.0.is_empty() || address.scheme == BmcScheme::Fake || self.0.iter().any(|n| n.admits(&address.host));
        (!allowed).then(|| {
            format!(
                "the BMC address {} is outside the BMC networks an operator admin allows (--bmc-networks)",
                address.host
            )
        })
    }
}

/// `--file-image-dirs`: the directories of the conductor's host that `file://` images and
/// checksums may be read from; none by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileImageDirs(Vec<String>);

impl FromStr for FileImageDirs {
    type Err = String;

    /// Absolute directories separated by commas.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut dirs = Vec::new();
        for dir in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            if !dir.starts_with('/') || dir.split('/').any(|part| part == "..") {
                return Err(format!("{dir:?} is not an absolute directory"));
            }
            dirs.push(format!("{}/", dir.trim_end_matches('/')));
        }
        Ok(Self(dirs))
    }
}

impl fmt::Display for FileImageDirs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

impl FileImageDirs {
    /// Why a `file://` URL may not be read (`None` for other schemes and allowed files).
    fn refusal_of(&self, url: &str) -> Option<String> {
        let parsed = url::Url::parse(url.trim()).ok()?;
        if parsed.scheme() != "file" {
            return None;
        }
        let path = parsed.path();
        // `Url` resolved any `..` already; a percent-encoded one would still be read as a name.
        let allowed =
            !path.contains("%2e") && !path.contains("%2E") && self.0.iter().any(|d| path.starts_with(d.as_str()));
        (!allowed).then(|| match self.0.is_empty() {
            true => format!(
                "{url} is a file of Ironic's own host: file:// images are refused unless an operator admin allows \
                 their directory (--file-image-dirs)"
            ),
            false => {
                format!("{url} is outside the directories file:// images may be read from (--file-image-dirs {self})")
            }
        })
    }

    /// Why `image` (its URL and a checksum URL) may not be read; `None` when it may.
    pub fn refusal(&self, image: &Image) -> Option<String> {
        self.refusal_of(&image.url).or_else(|| image.checksum.as_deref().and_then(|c| self.refusal_of(c)))
    }
}

/// Both lists, as the webhook and the host controller apply them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostAccess {
    pub bmc_networks: BmcNetworks,
    pub file_image_dirs: FileImageDirs,
}

impl HostAccess {
    /// The spec's violations, with their field paths (an address that does not parse is the
    /// spec rules' to report).
    pub fn check(&self, spec: &super::BareMetalHostSpec) -> Vec<crate::FieldError> {
        let mut errors = Vec::new();
        let address = spec.bmc.as_ref().and_then(|b| super::bmc::parse_bmc_address(&b.address).ok());
        if let Some(refusal) = address.and_then(|a| self.bmc_networks.refusal(&a)) {
            errors.push(crate::FieldError::new("spec.bmc.address", refusal));
        }
        if let Some(refusal) = spec.image.as_ref().and_then(|i| self.file_image_dirs.refusal(i)) {
            errors.push(crate::FieldError::new("spec.image", refusal));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baremetalhost::bmc::parse_bmc_address;

    fn refused(networks: &str, address: &str) -> bool {
        let networks: BmcNetworks = networks.parse().expect("networks");
        networks.refusal(&parse_bmc_address(address).expect("address")).is_some()
    }

    #[test]
    fn without_a_list_every_bmc_address_is_allowed() {
        assert!(!refused("", "redfish://10.9.9.9/redfish/v1/Systems/1"));
    }

    #[test]
    fn a_listed_block_name_or_domain_admits_and_nothing_else_does() {
        let list = "10.1.0.0/16, bmc-7.lab, *.bmc.example.com, fd00::/64";
        assert!(!refused(list, "ipmi://10.1.200.3"));
        assert!(refused(list, "ipmi://10.2.0.3"));
        assert!(refused(list, "redfish://169.254.169.254/redfish/v1/Systems/1"), "metadata services stay out");
        assert!(!refused(list, "redfish://BMC-7.lab/redfish/v1/Systems/1"));
        assert!(!refused(list, "idrac-virtualmedia://r1.bmc.example.com/redfish/v1/Systems/1"));
        assert!(refused(list, "redfish://evil-bmc.example.com/redfish/v1/Systems/1"));
        assert!(!refused(list, "redfish://[fd00::5]/redfish/v1/Systems/1"));
        assert!(refused(list, "redfish://[fd01::5]/redfish/v1/Systems/1"));
        assert!(!refused(list, "fake://anything"), "fake BMCs reach nothing");
    }

    #[test]
    fn bad_entries_are_refused_at_startup() {
        for bad in ["10.0.0.0/33", "a b", "10.0.0.0/x", "*", "host:623"] {
            assert!(bad.parse::<BmcNetworks>().is_err(), "{bad}");
        }
    }

    fn image(url: &str, checksum: Option<&str>) -> Image {
        Image { url: url.into(), checksum: checksum.map(Into::into), ..Default::default() }
    }

    #[test]
    fn file_images_are_refused_by_default_and_read_only_under_the_listed_directories() {
        let none = FileImageDirs::default();
        assert!(none.refusal(&image("file:///etc/shadow", None)).is_some_and(|m| m.contains("--file-image-dirs")));
        assert!(none.refusal(&image("http://images/os.qcow2", Some("http://images/os.sha256"))).is_none());
        let dirs: FileImageDirs = "/shared/html/images/".parse().expect("dirs");
        assert!(dirs.refusal(&image("file:///shared/html/images/os.qcow2", None)).is_none());
        assert!(dirs.refusal(&image("file:///shared/html/images/../../../etc/shadow", None)).is_some());
        assert!(dirs.refusal(&image("file:///shared/html/images/%2e%2e/x", None)).is_some());
        assert!(dirs.refusal(&image("file:///shared/html/imagesx/os.qcow2", None)).is_some(), "a prefix of a name");
        let checksum = image("http://images/os.qcow2", Some("file:///etc/shadow"));
        assert!(dirs.refusal(&checksum).is_some(), "a checksum file is read too");
        assert!("relative/dir".parse::<FileImageDirs>().is_err());
    }
}
