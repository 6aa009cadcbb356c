//! A scratch directory per server, kept with its logs when a test fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A directory for one server's configuration, data and logs.
///
/// When dropped, it prints the tail of every `*.log` file in it to stderr.
/// Test runners show a test's output only when it fails, so a failed run
/// shows what its servers said, and a passing run stays quiet. The directory
/// is then removed, unless the test is panicking or `FERROMETAL_KEEP_LOGS=1`
/// is set, in which case it is kept and its path printed. `FERROMETAL_LOG_TAILS=0`
/// silences the tails (the lab keeps its logs and prints nothing on exit).
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
        if self.keep() {
            if !quiet() {
                eprintln!("---- {}: files kept in {}", self.name, self.path.display());
            }
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
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
