//! The operator as its own process: the `ferrometal` binary that `scripts/build-release.sh`
//! builds, run with a kubeconfig of its choosing (a ServiceAccount's token, as in a cluster),
//! its log kept like every server's, and its `/readyz` read over HTTP.

use crate::ports;
use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The repository's root: the checkout under test. Read at run time first: every clone on a
/// machine shares one cargo target directory, and cargo reuses a binary built in another clone
/// when the sources match, so a path compiled in may name that other clone (its scripts). The
/// test runner gives a test its package's folder, and every package of the workspace is one
/// level below the root (the harness also serves ironic-client's tests).
pub fn repo_root() -> PathBuf {
    let package =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    package.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The harness's folder, `tests/`, of the checkout under test.
pub fn manifest_dir() -> PathBuf {
    repo_root().join("tests")
}

/// The `ferrometal` binary, built once per test process by `scripts/build-release.sh` with the
/// debug profile (the release build is the same script with a longer build).
pub fn binary() -> crate::Result<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(|| build(&out_dir()).map_err(|e| format!("{e:#}"))).clone().map_err(anyhow::Error::msg)
}

/// A directory on the build's filesystem, for this process (the script links the binary there).
fn out_dir() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("tmp").join(format!("ferrometal-bin-{}", std::process::id()))
}

/// Runs the release script into `out`, as a user's shell would run it.
pub fn build(out: &Path) -> crate::Result<PathBuf> {
    run_script("scripts/build-release.sh", &[out.as_os_str()], &[("FERROMETAL_PROFILE", "dev")])?;
    Ok(out.join("ferrometal"))
}

/// The operator image as an OCI archive (`scripts/operator-image.sh` with the debug binary, on
/// a distroless base made from Debian's packages), packed when missing or stale and cached in
/// `~/.cache/ferrometal/node`: seconds, and the base's 2 minutes on a fresh machine.
pub fn operator_image() -> crate::Result<PathBuf> {
    // The debug binary `make build` made, as the other tests run it: a release build of the
    // whole workspace is 15 minutes more on a fresh 2-core machine (the layout is the same).
    let stdout = run_script("scripts/operator-image.sh", &[], &[("FERROMETAL_PROFILE", "dev")])?;
    let archive = PathBuf::from(stdout.lines().last().unwrap_or_default().trim());
    anyhow::ensure!(archive.is_file(), "scripts/operator-image.sh printed no archive: {stdout}");
    Ok(archive)
}

/// Runs a script of the repository as a user's shell would; its standard output.
fn run_script(script: &str, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> crate::Result<String> {
    let mut command = Command::new(repo_root().join(script));
    // The test runner sets the variables cargo gives a test (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // ...); build scripts that watch them would see a change and rebuild what is running.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && !matches!(key.as_ref(), "CARGO_HOME" | "CARGO_TARGET_DIR") {
            command.env_remove(key.as_ref());
        }
    }
    let output = command
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo_root())
        .output()
        .with_context(|| format!("running {script}"))?;
    anyhow::ensure!(
        output.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A running `ferrometal run`.
pub struct OperatorProcess {
    process: ManagedProcess,
    health_port: u16,
    _dir: WorkDir,
}

impl OperatorProcess {
    /// Starts `ferrometal` with `args` and `env` (nothing else of the test's environment but
    /// `PATH` and `HOME`), authenticated by `kubeconfig`, serving health on a free port it
    /// passes as `--health-addr`. `RUST_LOG` is `info,kube_client=warn` unless `env` sets it.
    pub fn start(name: &str, kubeconfig: &Path, args: &[String], env: &[(String, String)]) -> crate::Result<Self> {
        Self::start_binary(&binary()?, name, kubeconfig, args, env)
    }

    /// Like [`OperatorProcess::start`], with a `ferrometal` binary built elsewhere (the
    /// benchmark measures a release build when given one).
    pub fn start_binary(
        binary: &Path,
        name: &str,
        kubeconfig: &Path,
        args: &[String],
        env: &[(String, String)],
    ) -> crate::Result<Self> {
        let dir = WorkDir::new(name)?;
        let health_port = ports::free_port()?;
        let mut command = Command::new(binary);
        command.env_clear();
        for key in ["PATH", "HOME"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command
            .args(args)
            .arg(format!("--health-addr=127.0.0.1:{health_port}"))
            .env("RUST_LOG", "info,kube_client=warn")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("KUBECONFIG", kubeconfig);
        let process = ManagedProcess::spawn(name, command, &dir.path().join("operator.log"))?;
        Ok(Self { process, health_port, _dir: dir })
    }

    /// The status and body of `/readyz`; `None` while nothing answers.
    pub async fn readyz(&self) -> Option<(u16, String)> {
        let url = format!("http://127.0.0.1:{}/readyz", self.health_port);
        let response = reqwest::Client::new().get(url).timeout(Duration::from_secs(5)).send().await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.unwrap_or_default()))
    }

    /// Waits until `/readyz` passes; fails at once if the process died, with its log.
    pub async fn wait_ready(&mut self, timeout: Duration) -> crate::Result<String> {
        self.wait_ready_and(timeout, |_| true).await
    }

    /// Waits until `/readyz` passes leading: a replica standing by is ready too, but runs no
    /// controllers.
    pub async fn wait_leading(&mut self, timeout: Duration) -> crate::Result<String> {
        self.wait_ready_and(timeout, |report| report.contains("leader election: leading")).await
    }

    async fn wait_ready_and(&mut self, timeout: Duration, accept: impl Fn(&str) -> bool) -> crate::Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = None;
        loop {
            self.process.ensure_running()?;
            let answer = self.readyz().await;
            if let Some((200, body)) = &answer
                && accept(body)
            {
                return Ok(body.clone());
            }
            if answer.is_some() {
                last = answer;
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!("the operator was not ready after {timeout:?}; /readyz said {last:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The process ID, to read its memory and CPU from `/proc`.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Where its Prometheus metrics are served (beside the health endpoints).
    pub fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.health_port)
    }

    /// Fails if the process has exited.
    pub fn ensure_running(&mut self) -> crate::Result<()> {
        self.process.ensure_running()
    }

    /// Everything the operator logged so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// SIGKILLs it at once: no shutdown, nothing released, as when a node dies or the OOM
    /// killer strikes.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Stops it with SIGTERM (SIGKILL after `grace`); true when it exited in time.
    pub async fn stop(&mut self, grace: Duration) -> crate::Result<bool> {
        self.process.stop(grace).await
    }
}
