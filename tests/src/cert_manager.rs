//! cert-manager's controller, built from the Go module proxy by `scripts/build-cert-manager.sh`
//! (`tests/go/cert-manager`), run as a process of this machine against a test's control plane.
//!
//! It runs cert-manager's own Issuer, CertificateRequest and Certificate controllers: real
//! issuance by CA and SelfSigned issuers, real approval, real renewal at `renewBefore`. Its
//! webhook and cainjector are not here: the proxy does not serve their modules
//! (`design/testing.md`).

use crate::control_plane::ControlPlane;
use crate::process::ManagedProcess;
use crate::{Result, env};
use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::path::PathBuf;
use std::process::Command;

/// The cert-manager release `scripts/build-cert-manager.sh` builds.
pub const VERSION: &str = "v1.21.2";

/// Where the build keeps the controller and cert-manager's CRDs.
pub fn cached() -> Result<PathBuf> {
    let dir = env::cache_dir().join("cert-manager").join(VERSION);
    anyhow::ensure!(
        dir.join("controller").is_file(),
        "no cert-manager controller in {}: run scripts/build-cert-manager.sh (make install)",
        dir.display()
    );
    Ok(dir)
}

/// cert-manager's CRDs, as its release ships them.
pub fn crds() -> Result<Vec<CustomResourceDefinition>> {
    let dir = cached()?.join("crds");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path)?;
            crds.push(serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?);
        }
    }
    anyhow::ensure!(!crds.is_empty(), "no CRDs in {}", dir.display());
    Ok(crds)
}

/// The controller process; it stops when dropped.
pub struct CertManager {
    process: ManagedProcess,
}

impl CertManager {
    /// Installs cert-manager's CRDs in `cp` and starts the controller against it, with the
    /// cluster's admin credentials (as a test's infrastructure, not under test itself).
    pub async fn start(cp: &ControlPlane) -> Result<Self> {
        cp.install_crds(&crds()?).await?;
        let mut cmd = Command::new(cached()?.join("controller"));
        cmd.arg(format!("--kubeconfig={}", cp.kubeconfig().display()));
        let process = ManagedProcess::spawn("cert-manager", cmd, &cp.dir().join("cert-manager.log"))?;
        Ok(Self { process })
    }

    /// The controller's log so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// Fails when the controller has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()
    }
}
