//! A container registry on loopback (go-containerregistry's `crane registry serve`, the `crane`
//! of OLM's build), which the node's containerd pulls from as any registry: containerd speaks
//! plain HTTP to loopback registries without configuration, as go-containerregistry's clients
//! do. OLM's images ([`crate::olm`]) and cert-manager's ([`crate::cert_manager`]) come from it.

use crate::process::ManagedProcess;
use crate::{Result, ports, wait};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// What an image's configuration says besides its layer.
#[derive(Debug, Default, Clone)]
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub labels: Vec<(String, String)>,
}

/// The registry's process; it stops when dropped. It keeps blobs on disk and manifests in
/// memory: every push of a test lives as long as the test.
pub struct Registry {
    process: ManagedProcess,
    host: String,
    dir: PathBuf,
}

impl Registry {
    /// Starts a registry on a free loopback port, keeping its blobs in `dir`, and waits until
    /// it answers the registry API.
    pub async fn start(dir: &Path) -> Result<Self> {
        let port = ports::free_port()?;
        let host = format!("127.0.0.1:{port}");
        std::fs::create_dir_all(dir.join("blobs"))?;
        let mut command = Command::new(crate::olm::bin("crane")?);
        command.args(["registry", "serve", "--address", &host, "--disk"]).arg(dir.join("blobs"));
        let process = ManagedProcess::spawn("registry", command, &dir.join("registry.log"))?;
        let registry = Self { process, host, dir: dir.to_path_buf() };
        let url = format!("http://{}/v2/", registry.host);
        wait::until("the registry's API", Duration::from_secs(30), Duration::from_millis(100), || {
            let url = url.clone();
            async move { reqwest::get(&url).await.ok()?.error_for_status().ok().map(drop) }
        })
        .await?;
        Ok(registry)
    }

    /// `127.0.0.1:<port>`: the host part of every image reference it serves.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Pushes the files under `rootfs` as a one-layer linux/amd64 image `name` (`repo:tag`)
    /// with `config`; returns the full reference (`<host>/<name>`).
    pub fn push(&self, rootfs: &Path, name: &str, config: &ImageConfig) -> Result<String> {
        let reference = format!("{}/{name}", self.host);
        let layer = self.dir.join(format!("{}.layer.tar", name.replace(['/', ':'], "_")));
        let status = Command::new("tar")
            .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C"])
            .arg(rootfs)
            .arg("-cf")
            .arg(&layer)
            .arg(".")
            .status()?;
        anyhow::ensure!(status.success(), "packing {}", rootfs.display());
        crane(&["append", "-f", &layer.display().to_string(), "-t", &reference])?;
        let mut mutate = vec!["mutate".to_string(), reference.clone(), "--set-platform".into(), "linux/amd64".into()];
        if !config.entrypoint.is_empty() {
            mutate.push(format!("--entrypoint={}", config.entrypoint.join(",")));
        }
        if !config.cmd.is_empty() {
            mutate.push(format!("--cmd={}", config.cmd.join(",")));
        }
        for (key, value) in &config.labels {
            mutate.extend(["-l".to_string(), format!("{key}={value}")]);
        }
        mutate.extend(["-t".to_string(), reference.clone()]);
        crane(&mutate.iter().map(String::as_str).collect::<Vec<_>>())?;
        std::fs::remove_file(&layer)?;
        Ok(reference)
    }

    /// Fails when the registry has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()
    }
}

/// Runs crane; its standard output.
fn crane(args: &[&str]) -> Result<String> {
    let output = Command::new(crate::olm::bin("crane")?).args(args).output().context("running crane")?;
    anyhow::ensure!(
        output.status.success(),
        "crane {} failed: {}",
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
