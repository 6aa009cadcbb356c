//! Free loopback ports that no other test process holds.
//!
//! Tests run in parallel processes (nextest) and threads (cargo test), so
//! "bind to port 0 and close" is not enough: two tests can be handed the same
//! port between the probe and the server's own bind. A port is therefore
//! reserved with an exclusive `flock` on a file named after it, held until
//! this process exits. Ports come from 20000-32767, below Linux's ephemeral
//! range, so outgoing connections never occupy a port a server will bind.

use anyhow::bail;
use rand::Rng;
use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Mutex;

static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("ferrometal-ports")
}

/// Reserves a free TCP port on 127.0.0.1 for the rest of this process.
pub fn free_port() -> crate::Result<u16> {
    std::fs::create_dir_all(lock_dir())?;
    let mut rng = rand::rng();
    for _ in 0..1000 {
        let port: u16 = rng.random_range(20000..32768);
        if TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        if let Some(file) = try_lock(&lock_dir().join(format!("{port}.lock")))? {
            HELD.lock().unwrap_or_else(|e| e.into_inner()).push(file);
            return Ok(port);
        }
    }
    bail!("no free loopback port found in 1000 attempts")
}

/// An exclusive lock on `path` (created if absent), shared with other processes of this
/// machine; `None` when another holds it. Held until the file is dropped.
pub fn try_lock(path: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    Ok(locked.then_some(file))
}
