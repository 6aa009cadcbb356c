//! A static file server on loopback: the image server that Ironic publishes
//! virtual-media ISOs on, and that serves the images hosts deploy.

use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use crate::{env, ports, wait};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Python's threaded `http.server`, serving one directory.
pub struct HttpServer {
    url: String,
    root: PathBuf,
    process: ManagedProcess,
}

impl HttpServer {
    /// Serves `root` on a free port of loopback; its log goes into `logs`.
    pub async fn start(root: &Path, logs: &WorkDir) -> crate::Result<Self> {
        Self::start_on(root, logs, IpAddr::from([127, 0, 0, 1])).await
    }

    /// Serves `root` on a free port of `address` (the node's address on the pod bridge, for
    /// pods on a real node).
    pub async fn start_on(root: &Path, logs: &WorkDir, address: IpAddr) -> crate::Result<Self> {
        std::fs::create_dir_all(root)?;
        let port = ports::free_port()?;
        let mut cmd = Command::new(env::python()?);
        cmd.args(["-m", "http.server", "--bind", &address.to_string(), "--directory"]).arg(root).arg(port.to_string());
        let mut process = ManagedProcess::spawn("http-server", cmd, &logs.path().join("http-server.log"))?;
        let url = format!("http://{}", SocketAddr::from((address, port)));
        let probe = reqwest::Client::new();
        wait::until_ok("the image server", Duration::from_secs(20), Duration::from_millis(50), || {
            let alive = process.ensure_running();
            let request = probe.get(&url).send();
            async move {
                alive?;
                Ok(request.await.ok().filter(|r| r.status().is_success()).map(|_| ()))
            }
        })
        .await?;
        Ok(Self { url, root: root.to_path_buf(), process })
    }

    /// The server's base URL, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The directory it serves.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Writes the tiny ISO 9660 image used as a `live-iso` under `name` and
    /// returns its URL.
    pub fn write_live_iso(&self, name: &str) -> crate::Result<String> {
        let target = self.root.join(name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let status = Command::new(env::python()?).arg(env::python_script("make_iso.py")).arg(&target).status()?;
        anyhow::ensure!(status.success(), "make_iso.py failed with {status}");
        Ok(format!("{}/{name}", self.url))
    }
}
