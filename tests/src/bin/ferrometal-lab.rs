//! `ferrometal-lab`: the lab in the foreground, until Ctrl-C or SIGTERM.
//! `scripts/lab.sh` runs it for `make lab`, `make lab-up` and `make lab-down`.
//!
//! Flags: `--state-dir DIR` (default `.lab`), `--bmcs N` (default 4, or
//! `LAB_BMCS`), `--timeout-secs S` (default 900). With `LAB_STOP_WITH_PID`, the lab
//! also stops when that process exits.

use ferrometal_tests::lab::{self, LabOptions};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    // The project's one rustls crypto provider, before anything can make a TLS connection.
    ferrometal_tests::init();
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("ferrometal-lab: {message}");
            return ExitCode::from(2);
        }
    };
    if let Err(err) = prepare(&options.state_dir) {
        eprintln!("ferrometal-lab: cannot prepare {}: {err}", options.state_dir.display());
        return ExitCode::FAILURE;
    }
    // SAFETY: no other thread exists yet. The harness reads these to keep
    // the lab's server directories (and logs) under the state directory,
    // quietly.
    unsafe {
        std::env::set_var("FERROMETAL_TEST_DIR", options.state_dir.join("run"));
        std::env::set_var("FERROMETAL_KEEP_LOGS", "1");
        std::env::set_var("FERROMETAL_LOG_TAILS", "0");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("ferrometal-lab: {err}");
            return ExitCode::FAILURE;
        }
    };
    let lab = async {
        // The handlers are installed before anything starts, so that Ctrl-C or SIGTERM at
        // any moment, start-up included, stops the lab cleanly instead of killing it.
        let stop = stop_signal()?;
        lab::run(options, stop).await
    };
    match runtime.block_on(lab) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ferrometal-lab: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<LabOptions, String> {
    let mut options = LabOptions {
        bmcs: std::env::var("LAB_BMCS").ok().and_then(|v| v.parse().ok()).unwrap_or(4),
        state_dir: PathBuf::from(".lab"),
        operator: std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .map(|dir| dir.join("ferrometal"))
            .ok_or("cannot locate the ferrometal binary")?,
        terminal: std::io::stdout().is_terminal(),
        timeout: Duration::from_secs(900),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--state-dir" => options.state_dir = PathBuf::from(value()?),
            "--bmcs" => options.bmcs = value()?.parse().map_err(|_| "--bmcs takes a number")?,
            "--timeout-secs" => {
                options.timeout = Duration::from_secs(value()?.parse().map_err(|_| "--timeout-secs takes a number")?)
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if options.bmcs < 2 {
        return Err("--bmcs must be at least 2 (one BMC is left spare)".into());
    }
    options.state_dir = std::path::absolute(&options.state_dir).map_err(|e| e.to_string())?;
    Ok(options)
}

/// A fresh state directory: the previous run's files are removed.
fn prepare(state: &std::path::Path) -> std::io::Result<()> {
    let run = state.join("run");
    if run.exists() {
        std::fs::remove_dir_all(&run)?;
    }
    for file in ["ready", "env", "state.json", "summary.txt", "operator.log", "operator-hosts.log", "ironic-ca.crt"] {
        let _ = std::fs::remove_file(state.join(file));
    }
    std::fs::create_dir_all(&run)
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM (`make lab-down`). The handlers are in place as
/// soon as this returns, not only once the future is first polled.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let watched = std::env::var("LAB_STOP_WITH_PID").ok().and_then(|p| p.parse::<u32>().ok());
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            () = gone(watched) => eprintln!("ferrometal-lab: process {} is gone; stopping", watched.unwrap_or_default()),
        }
    })
}

/// Resolves once process `pid` has exited; never without one. `LAB_STOP_WITH_PID` ties a
/// background lab to whoever started it (the lab's test), so that a test runner that kills
/// its test does not leave a lab running.
async fn gone(pid: Option<u32>) {
    let Some(pid) = pid else { return std::future::pending().await };
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
