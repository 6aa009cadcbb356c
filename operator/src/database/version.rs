//! Server versions: what `SELECT VERSION()` says, the oldest servers Ironic is run against,
//! and the judgement after a MariaDB version change.

use std::fmt;

/// The oldest MariaDB the operator accepts: the oldest release series MariaDB still
/// maintains (10.6 LTS). Ironic's migrations need nothing newer.
pub(crate) const MINIMUM_MARIADB: (u32, u32) = (10, 6);
/// The oldest MySQL the operator accepts for an external database.
pub(crate) const MINIMUM_MYSQL: (u32, u32) = (8, 0);

/// Which server answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    MariaDb,
    MySql,
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MariaDb => "MariaDB",
            Self::MySql => "MySQL",
        })
    }
}

/// A parsed `VERSION()`, e.g. `11.4.5-MariaDB-ubu2404` or `8.0.36`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    /// What the server said.
    pub raw: String,
    pub flavor: Flavor,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ServerVersion {
    /// Reads a version string; `None` when it starts with no `MAJOR.MINOR`.
    pub fn parse(raw: &str) -> Option<Self> {
        let trimmed = raw.trim();
        // MariaDB once prefixed its version with "5.5.5-" for old replication clients.
        let text = trimmed.strip_prefix("5.5.5-").unwrap_or(trimmed);
        let numeric = text.split(['-', '+', ' ']).next()?;
        let mut parts = numeric.split('.').map(|p| p.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        let flavor = if text.to_ascii_lowercase().contains("mariadb") { Flavor::MariaDb } else { Flavor::MySql };
        Some(Self { raw: trimmed.to_string(), flavor, major, minor, patch })
    }

    pub fn triple(&self) -> (u32, u32, u32) {
        (self.major, self.minor, self.patch)
    }

    /// The oldest version of this flavor Ironic may use.
    pub fn minimum(&self) -> (u32, u32) {
        match self.flavor {
            Flavor::MariaDb => MINIMUM_MARIADB,
            Flavor::MySql => MINIMUM_MYSQL,
        }
    }

    /// True when the server is at least the minimum of its flavor.
    pub fn is_supported(&self) -> bool {
        (self.major, self.minor) >= self.minimum()
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}.{}.{}", self.flavor, self.major, self.minor, self.patch)
    }
}

/// `MAJOR.MINOR` of a spec version such as `11.4`.
pub(crate) fn parse_major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Judges the server after a version change: it must be MariaDB, no older than before, and in
/// the `MAJOR.MINOR` series asked for when that is known. Returns the reason when it is not.
pub(crate) fn verify_after_change(
    from: Option<&str>,
    now: &str,
    target: Option<(u32, u32)>,
) -> Result<ServerVersion, String> {
    let Some(new) = ServerVersion::parse(now) else {
        return Err(format!("the server reports version {now:?}, which is not a MariaDB version"));
    };
    if new.flavor != Flavor::MariaDb {
        return Err(format!("the server reports {new} ({now}), not MariaDB"));
    }
    if let Some(old) = from.and_then(ServerVersion::parse)
        && new.triple() < old.triple()
    {
        return Err(format!(
            "the server went back from {} to {}: MariaDB does not support downgrades",
            old.raw, new.raw
        ));
    }
    if let Some((major, minor)) = target
        && (new.major, new.minor) != (major, minor)
    {
        return Err(format!("the server runs {}, not the requested {major}.{minor}: check the image", new.raw));
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mariadb_and_mysql_versions() {
        let v = ServerVersion::parse("11.4.5-MariaDB-ubu2404").expect("parses");
        assert_eq!((v.flavor, v.triple()), (Flavor::MariaDb, (11, 4, 5)));
        let v = ServerVersion::parse("10.11.19-MariaDB-0+deb12u1").expect("parses");
        assert_eq!(v.triple(), (10, 11, 19));
        let v = ServerVersion::parse("5.5.5-10.6.16-MariaDB").expect("parses");
        assert_eq!((v.flavor, v.triple()), (Flavor::MariaDb, (10, 6, 16)));
        let v = ServerVersion::parse("8.0.36").expect("parses");
        assert_eq!((v.flavor, v.triple()), (Flavor::MySql, (8, 0, 36)));
        assert!(ServerVersion::parse("banana").is_none());
        assert!(ServerVersion::parse("11").is_none());
    }

    #[test]
    fn old_servers_are_not_supported() {
        let supported = |raw: &str| ServerVersion::parse(raw).expect("parses").is_supported();
        assert!(supported("10.6.0-MariaDB"));
        assert!(supported("11.4.5-MariaDB"));
        assert!(!supported("10.5.27-MariaDB"));
        assert!(!supported("10.3.39-MariaDB"));
        assert!(supported("8.0.36"));
        assert!(!supported("5.7.44"));
    }

    #[test]
    fn spec_versions_are_major_minor() {
        assert_eq!(parse_major_minor("11.4"), Some((11, 4)));
        assert_eq!(parse_major_minor("10.11.6"), Some((10, 11)));
        assert_eq!(parse_major_minor("latest"), None);
    }

    #[test]
    fn a_version_change_is_judged_by_direction_series_and_flavor() {
        let ok = verify_after_change(Some("10.11.9-MariaDB"), "11.4.5-MariaDB", Some((11, 4))).expect("upgraded");
        assert_eq!(ok.triple(), (11, 4, 5));
        // The same series (a rebuilt image) is fine.
        assert!(verify_after_change(Some("11.4.5-MariaDB"), "11.4.5-MariaDB", None).is_ok());
        let back = verify_after_change(Some("11.4.5-MariaDB"), "10.11.9-MariaDB", None).expect_err("downgrade");
        assert!(back.contains("went back from 11.4.5-MariaDB to 10.11.9-MariaDB"), "{back}");
        let wrong = verify_after_change(Some("10.11.9-MariaDB"), "11.8.1-MariaDB", Some((11, 4))).expect_err("series");
        assert!(wrong.contains("not the requested 11.4"), "{wrong}");
        assert!(verify_after_change(None, "8.0.36", None).expect_err("mysql").contains("not MariaDB"));
        assert!(verify_after_change(None, "?", None).is_err());
    }
}
