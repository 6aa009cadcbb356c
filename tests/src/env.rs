//! Where the test environment's programs live.
//!
//! `scripts/install.sh` puts the heavy artifacts under the cache directory:
//! Kubernetes binaries built from the Go module proxy (the newest release, and the oldest
//! ferrometal supports) and the Python virtualenv with Ironic and sushy-tools. Debian packages
//! (etcd, MariaDB) are on the system path.

use anyhow::{Context, bail};
use std::path::PathBuf;

const INSTALL_HINT: &str = "run `make install` (scripts/install.sh) to install the test environment";

/// `$FERROMETAL_CACHE`, or `~/.cache/ferrometal`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERROMETAL_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache").join("ferrometal")
}

/// The variable that chooses the Kubernetes release the tests run against.
pub const KUBERNETES_RELEASE_VAR: &str = "FERROMETAL_KUBERNETES";

/// The Kubernetes release the tests run against: the newest that builds here (the default), or
/// the oldest ferrometal supports (`FERROMETAL_KUBERNETES=oldest`, made by
/// `scripts/build-kubernetes.sh oldest`).
pub fn kubernetes_release() -> crate::Result<&'static str> {
    match std::env::var(KUBERNETES_RELEASE_VAR).as_deref() {
        Err(_) | Ok("" | "newest") => Ok("current"),
        Ok("oldest") => Ok("oldest"),
        Ok(other) => bail!("{KUBERNETES_RELEASE_VAR}={other:?}: expected newest or oldest"),
    }
}

/// A Kubernetes binary built by `scripts/build-kubernetes.sh`, of the release the tests run
/// against. The node's binaries (kubelet, kube-proxy) and kubectl exist for the newest only.
pub fn kube_bin(name: &str) -> crate::Result<PathBuf> {
    let release = match name {
        "kubelet" | "kube-proxy" | "kubectl" => "current",
        _ => kubernetes_release()?,
    };
    existing(cache_dir().join("kubernetes").join(release).join("bin").join(name))
}

/// The variable that chooses the Ironic release the tests run against.
pub const IRONIC_RELEASE_VAR: &str = "FERROMETAL_IRONIC";

/// The Ironic release (and its virtualenv) the tests run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IronicRelease {
    /// The newest we test, `scripts/requirements.txt` (the default).
    Newest,
    /// The oldest release the operator offers, `scripts/requirements-oldest.txt`: chosen by
    /// `FERROMETAL_IRONIC=oldest`, made by `scripts/python-venv.sh oldest`.
    Oldest,
}

impl IronicRelease {
    /// The release `FERROMETAL_IRONIC` names: `oldest`, or `newest` (also when unset). Any
    /// other value is refused, so a typo never silently tests the newest twice.
    pub fn chosen() -> crate::Result<Self> {
        match std::env::var(IRONIC_RELEASE_VAR).as_deref() {
            Err(_) | Ok("") | Ok("newest") => Ok(Self::Newest),
            Ok("oldest") => Ok(Self::Oldest),
            Ok(other) => bail!("{IRONIC_RELEASE_VAR}={other:?}: expected \"newest\" or \"oldest\""),
        }
    }

    /// The newest API microversion this release speaks, `(major, minor)`.
    pub fn max_api_version(self) -> (u16, u16) {
        match self {
            Self::Newest => (1, 115),
            Self::Oldest => (1, 111),
        }
    }

    /// The virtualenv's directory in the cache.
    pub fn venv_dir(self) -> PathBuf {
        cache_dir().join(match self {
            Self::Newest => "venv",
            Self::Oldest => "venv-oldest",
        })
    }
}

/// A program from the Python virtualenv made by `scripts/python-venv.sh`, of the Ironic
/// release [`IronicRelease::chosen`] picks.
pub fn venv_bin(name: &str) -> crate::Result<PathBuf> {
    existing(IronicRelease::chosen()?.venv_dir().join("bin").join(name))
}

/// The virtualenv's Python interpreter.
pub fn python() -> crate::Result<PathBuf> {
    venv_bin("python3")
}

/// One of the harness's Python launchers in `tests/python/`.
pub fn python_script(name: &str) -> PathBuf {
    crate::operator_process::manifest_dir().join("python").join(name)
}

/// A program installed from a Debian package.
pub fn system_bin(name: &str) -> crate::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/sbin", "/usr/bin", "/sbin"].map(PathBuf::from));
    for dir in dirs {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("{name} is not installed; {INSTALL_HINT}")
}

fn existing(path: PathBuf) -> crate::Result<PathBuf> {
    if path.is_file() { Ok(path) } else { Err(anyhow::anyhow!("{} is missing", path.display())).context(INSTALL_HINT) }
}
