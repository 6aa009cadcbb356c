//! cert-manager's controller and cainjector, built from the Go module proxy by
//! `scripts/build-cert-manager.sh` (`tests/go/cert-manager`), run as processes of this machine
//! against a test's control plane.
//!
//! The controller runs cert-manager's own Issuer, CertificateRequest and Certificate
//! controllers: real issuance by CA and SelfSigned issuers, real approval, real renewal at
//! `renewBefore`. The cainjector runs cert-manager's injectors: the CA of an annotated
//! webhook configuration, APIService or CRD filled from a Certificate's or a Secret's `ca.crt`.
//! Its webhook is not here: the proxy does not serve its module (`design/testing.md`).

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
        dir.join("controller").is_file() && dir.join("cainjector").is_file(),
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

/// The controller and cainjector processes; they stop when dropped.
pub struct CertManager {
    process: ManagedProcess,
    cainjector: ManagedProcess,
}

impl CertManager {
    /// Installs cert-manager's CRDs in `cp` and starts the controller and the cainjector
    /// against it, with the cluster's admin credentials (as a test's infrastructure, not under
    /// test itself).
    pub async fn start(cp: &ControlPlane) -> Result<Self> {
        cp.install_crds(&crds()?).await?;
        let spawn = |binary: &str, name: &str| {
            let mut cmd = Command::new(cached()?.join(binary));
            cmd.arg(format!("--kubeconfig={}", cp.kubeconfig().display()));
            ManagedProcess::spawn(name, cmd, &cp.dir().join(format!("{name}.log")))
        };
        let process = spawn("controller", "cert-manager")?;
        let cainjector = spawn("cainjector", "cert-manager-cainjector")?;
        Ok(Self { process, cainjector })
    }

    /// The controller's and the cainjector's logs so far.
    pub fn log(&self) -> String {
        format!("{}\n---- cainjector:\n{}", self.process.log(), self.cainjector.log())
    }

    /// Fails when the controller or the cainjector has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()?;
        self.cainjector.ensure_running()
    }
}
