//! A scratch directory per server, whose logs outlive the test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A directory for one server's configuration, data and logs.
///
/// When dropped, it prints the tail of every `*.log` file in it to stderr, and
/// where the logs are. Test runners show a test's output only when it fails,
/// so a failed run shows what its servers said, and a passing run stays
/// quiet. Everything but the logs is then removed (data directories are
/// large), so the whole logs of a failed test stay until `make test` clears
/// the tree at its next start. A test may fail by returning an error, after
/// its servers are gone, so the logs cannot wait to learn whether it failed.
/// When the test is panicking or `FERROMETAL_KEEP_LOGS=1` is set, the whole
/// directory is kept. `FERROMETAL_LOG_TAILS=0` silences the tails (the lab
/// keeps its logs and prints nothing on exit).
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    name: String,
}

impl WorkDir {
    /// Creates a fresh directory named after `name`.
    pub fn new(name: &str) -> crate::Result<Self> {
        let root = std::env::var_os("FERROMETAL_TEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("ferrometal-tests"));
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("{name}-{}-{n}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir_all(&path)?;
        Ok(Self { path, name: name.to_string() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A subdirectory, created on demand.
    pub fn subdir(&self, name: &str) -> crate::Result<PathBuf> {
        let dir = self.path.join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Writes a file into the directory and returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> crate::Result<PathBuf> {
        let file = self.path.join(name);
        std::fs::write(&file, contents)?;
        Ok(file)
    }

    fn keep(&self) -> bool {
        std::thread::panicking() || std::env::var_os("FERROMETAL_KEEP_LOGS").is_some_and(|v| v != "0")
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        self.print_log_tails();
        let keep = self.keep();
        if !keep {
            self.remove_all_but_logs();
        }
        if !quiet() {
            let what = if keep { "files" } else { "logs" };
            eprintln!("---- {}: {what} kept in {}", self.name, self.path.display());
        }
    }
}

impl WorkDir {
    /// Removes everything but the top-level `*.log` files.
    fn remove_all_but_logs(&self) {
        let Ok(entries) = std::fs::read_dir(&self.path) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_log = path.extension().is_some_and(|e| e == "log");
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    let _ = std::fs::remove_dir_all(&path);
                }
                Ok(_) if !is_log => {
                    let _ = std::fs::remove_file(&path);
                }
                _ => {}
            }
        }
    }
}

impl WorkDir {
    fn print_log_tails(&self) {
        if quiet() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.path) else { return };
        let mut logs: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "log")).collect();
        logs.sort();
        for log in logs {
            let lines = tail(&log, 25);
            if lines.is_empty() {
                continue;
            }
            eprintln!("---- {}: last lines of {}", self.name, log.display());
            for line in lines {
                eprintln!("  {line}");
            }
        }
    }
}

fn quiet() -> bool {
    std::env::var_os("FERROMETAL_LOG_TAILS").is_some_and(|v| v == "0")
}

/// The last `n` lines of a file (empty when it cannot be read).
pub fn tail(path: &Path, n: usize) -> Vec<String> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_directory_keeps_its_logs_and_loses_the_rest() {
        let dir = WorkDir::new("workdir-test").expect("created");
        let path = dir.path().to_path_buf();
        dir.write("server.log", "started\n").expect("log");
        dir.write("server.conf", "x = 1\n").expect("config");
        let data = dir.subdir("data").expect("data");
        std::fs::write(data.join("ibdata1"), b"big").expect("data file");
        drop(dir);
        assert_eq!(std::fs::read_to_string(path.join("server.log")).expect("the log is kept"), "started\n");
        assert!(!path.join("server.conf").exists());
        assert!(!path.join("data").exists());
        let _ = std::fs::remove_dir_all(&path);
    }
}
