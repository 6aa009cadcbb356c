//! Paths as a container would see them, mapped to the scratch directory
//! where the simulator put the volumes.

use std::path::PathBuf;

/// A container's volume mounts: mount path → the directory (or file, with a
/// `subPath`) on this machine.
#[derive(Debug, Default)]
pub(super) struct Mounts(Vec<(String, PathBuf)>);

impl Mounts {
    pub(super) fn new(mounts: impl IntoIterator<Item = (String, PathBuf)>) -> Self {
        let mut mounts: Vec<(String, PathBuf)> = mounts
            .into_iter()
            .map(|(path, host)| (path.trim_end_matches('/').to_string(), host))
            // A mount at `/` would capture every absolute path.
            .filter(|(path, _)| !path.is_empty())
            .collect();
        // The deepest mount wins, as it shadows the ones above it.
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        Self(mounts)
    }

    /// `value` with a leading mount path replaced by its scratch path; any
    /// other value unchanged.
    pub(super) fn rewrite(&self, value: &str) -> String {
        for (path, host) in &self.0 {
            if let Some(rest) = value.strip_prefix(path.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                return format!("{}{rest}", host.to_string_lossy());
            }
        }
        value.to_string()
    }

    /// Whether `value` lies under a mount.
    pub(super) fn maps(&self, value: &str) -> bool {
        self.rewrite(value) != value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Mounts {
        Mounts::new([
            ("/etc/secret/".to_string(), PathBuf::from("/scratch/creds")),
            ("/etc/secret/deep".to_string(), PathBuf::from("/scratch/deep")),
            ("/var/run/inventory.json".to_string(), PathBuf::from("/scratch/inv/inventory.json")),
            ("/".to_string(), PathBuf::from("/scratch/root")),
        ])
    }

    #[test]
    fn a_path_under_a_mount_moves_to_the_scratch_directory() {
        let m = mounts();
        assert_eq!(m.rewrite("/etc/secret/password"), "/scratch/creds/password");
        assert_eq!(m.rewrite("/etc/secret"), "/scratch/creds");
        assert_eq!(m.rewrite("/etc/secret/deep/key"), "/scratch/deep/key");
        assert_eq!(m.rewrite("/var/run/inventory.json"), "/scratch/inv/inventory.json");
    }

    #[test]
    fn other_values_stay_as_they_are() {
        let m = mounts();
        assert_eq!(m.rewrite("/etc/secrets/password"), "/etc/secrets/password");
        assert_eq!(m.rewrite("--file=/etc/secret/password"), "--file=/etc/secret/password");
        assert_eq!(m.rewrite("/usr/bin/env"), "/usr/bin/env");
        assert!(!m.maps("info"));
        assert!(m.maps("/etc/secret/x"));
    }
}
