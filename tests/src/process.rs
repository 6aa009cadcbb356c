//! Child processes that never outlive their test.

use anyhow::Context;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process with its output in a log file.
///
/// It runs in its own process group, so that stopping it also stops any
/// workers it forked (Ironic forks one), and it receives SIGKILL if the test
/// process dies first (`PR_SET_PDEATHSIG`), so a killed test run leaves no
/// servers behind.
#[derive(Debug)]
pub struct ManagedProcess {
    name: String,
    child: Child,
    log: PathBuf,
    /// Further logs the program writes itself (Ironic logs to a file).
    extra_logs: Vec<PathBuf>,
}

impl ManagedProcess {
    /// Starts `command` with stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> crate::Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        command.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out).process_group(0);
        // SAFETY: prctl is async-signal-safe, and the closure touches no
        // memory shared with the parent.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().with_context(|| format!("starting {name}: {command:?}"))?;
        Ok(Self { name: name.to_string(), child, log: log.to_path_buf(), extra_logs: Vec::new() })
    }

    /// Names another log file the program writes, shown when it dies.
    pub fn with_log(mut self, path: &Path) -> Self {
        self.extra_logs.push(path.to_path_buf());
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The whole log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails with the log's tail when the process has exited: a server that
    /// died during start-up should fail the test at once, with its reason.
    pub fn ensure_running(&mut self) -> crate::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => {
                let mut message = format!("{} exited with {status}", self.name);
                for log in std::iter::once(&self.log).chain(&self.extra_logs) {
                    let tail = crate::workdir::tail(log, 40).join("\n");
                    message.push_str(&format!("\nlast lines of {}:\n{tail}", log.display()));
                }
                anyhow::bail!(message)
            }
        }
    }

    /// Sends `signal` to the whole process group.
    pub fn signal(&self, signal: i32) {
        let Ok(pgid) = i32::try_from(self.child.id()) else { return };
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }

    /// Stops the process gracefully: SIGTERM, then SIGKILL after `grace`.
    /// Returns whether it exited within the grace period.
    pub async fn stop(&mut self, grace: Duration) -> crate::Result<bool> {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                self.reap_group();
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill();
        Ok(false)
    }

    /// Stops the process group at once.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// After the leader exits, its workers may linger briefly; make sure
    /// nothing of the group survives.
    fn reap_group(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
