//! Where the test environment's programs live.
//!
//! `scripts/install.sh` puts the heavy artifacts under the cache directory:
//! Kubernetes binaries built from Debian's source package and the Python
//! virtualenv with Ironic and sushy-tools. Debian packages (etcd, MariaDB)
//! are on the system path.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

const INSTALL_HINT: &str = "run `make install` (scripts/install.sh) to install the test environment";

/// `$FERROMETAL_CACHE`, or `~/.cache/ferrometal`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERROMETAL_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache").join("ferrometal")
}

/// A Kubernetes binary built by `scripts/build-kubernetes.sh`.
pub fn kube_bin(name: &str) -> crate::Result<PathBuf> {
    existing(cache_dir().join("kubernetes").join("bin").join(name))
}

/// A program from the Python virtualenv made by `scripts/python-venv.sh`.
pub fn venv_bin(name: &str) -> crate::Result<PathBuf> {
    existing(cache_dir().join("venv").join("bin").join(name))
}

/// The virtualenv's Python interpreter.
pub fn python() -> crate::Result<PathBuf> {
    venv_bin("python3")
}

/// One of the harness's Python launchers in `tests/python/`.
pub fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python").join(name)
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
