//! One container's process: started in its own process group, bounded by
//! the pod's deadline, and reported as a container runtime reports it.

use super::Groups;
use super::prepare::ContainerPlan;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use tokio::time::Instant;

/// The termination message a kubelet takes from the logs
/// (`FallbackToLogsOnError`): at most the last 80 lines and 2 KiB.
const TAIL_LINES: usize = 80;
const TAIL_BYTES: usize = 2048;

/// How a container ended.
#[derive(Debug)]
pub(super) struct Exit {
    pub code: i32,
    /// The container status's `reason`: Completed, Error or StartError.
    pub reason: &'static str,
    /// The tail of this run's output, when it failed.
    pub message: Option<String>,
    /// Killed because the pod's deadline passed.
    pub deadline: bool,
}

/// Runs the container's process until it exits or `deadline` passes, with
/// its output appended to its log.
pub(super) async fn run(plan: &ContainerPlan, groups: &Groups, deadline: Instant) -> Exit {
    let start_error =
        |message: String| Exit { code: 128, reason: "StartError", message: Some(message), deadline: false };
    let log = match std::fs::OpenOptions::new().create(true).append(true).open(&plan.log) {
        Ok(log) => log,
        Err(e) => return start_error(format!("opening the log {}: {e}", plan.log.display())),
    };
    let offset = log.metadata().map(|m| m.len()).unwrap_or(0);
    let stderr = match log.try_clone() {
        Ok(stderr) => stderr,
        Err(e) => return start_error(format!("opening the log {}: {e}", plan.log.display())),
    };
    let mut command = tokio::process::Command::new(&plan.program);
    command
        .args(&plan.args)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: prctl is async-signal-safe, and the closure touches no memory
    // shared with the parent. The process dies with the test process.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return start_error(format!("starting {:?}: {e}", plan.program)),
    };
    let group = child.id().and_then(|pid| i32::try_from(pid).ok()).map(|pid| Group::join(groups, pid));
    let (code, deadline) = match tokio::time::timeout_at(deadline, child.wait()).await {
        Ok(Ok(status)) => (status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)), false),
        Ok(Err(e)) => return start_error(format!("waiting for {:?}: {e}", plan.program)),
        Err(_) => {
            if let Some(group) = &group {
                kill_group(group.id);
            }
            let _ = child.wait().await;
            (128 + libc::SIGKILL, true)
        }
    };
    // Whatever the process left running goes with it, as a container's
    // processes go when its main process ends.
    drop(group);
    let message = (code != 0).then(|| tail(&plan.log, offset));
    Exit { code, reason: if code == 0 { "Completed" } else { "Error" }, message, deadline }
}

/// A running process group, killed when dropped.
struct Group {
    id: i32,
    groups: Groups,
}

impl Group {
    fn join(groups: &Groups, id: i32) -> Self {
        groups.add(id);
        Self { id, groups: groups.clone() }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.groups.remove(self.id);
        kill_group(self.id);
    }
}

/// Sends SIGKILL to the process group `group`.
pub(super) fn kill_group(group: i32) {
    if group > 0 {
        // SAFETY: kill(2) on a process group this simulator started.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    }
}

/// The end of what `log` got from `offset` on: the last lines and bytes a
/// kubelet would show.
fn tail(log: &Path, offset: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let _ = file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_to_end(&mut bytes));
    }
    last(&String::from_utf8_lossy(&bytes), TAIL_LINES, TAIL_BYTES).to_string()
}

/// The last `lines` lines of `text`, then at most its last `bytes` bytes
/// (cut at a character boundary).
fn last(text: &str, lines: usize, bytes: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let start = body.rmatch_indices('\n').nth(lines.saturating_sub(1)).map_or(0, |(at, _)| at + 1);
    let mut text = &text[start..];
    if text.len() > bytes {
        let mut cut = text.len() - bytes;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = &text[cut..];
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines() {
        assert_eq!(last("a\nb\nc\n", 2, 100), "b\nc\n");
        assert_eq!(last("a\nb\nc", 2, 100), "b\nc");
        assert_eq!(last("a\nb\n", 5, 100), "a\nb\n");
        assert_eq!(last("", 5, 100), "");
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_at_a_character_boundary() {
        assert_eq!(last("0123456789", 80, 4), "6789");
        assert_eq!(last("aé", 80, 1), "");
        assert_eq!(last("aéb", 80, 3), "éb");
    }
}
