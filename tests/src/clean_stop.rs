//! Runs the operator's clean-stop check (the MariaDB pod's init container,
//! `operator::testing::database::clean_stop::SCRIPT`, passed in: the operator is only a dev-dependency
//! of this crate) on this machine against a real data directory,
//! as the container would: bash, the script, the directory in place of the volume.

use crate::env;
use anyhow::Context;
use std::path::Path;
use std::process::Command;

/// How a run of the check ended.
#[derive(Clone, Debug)]
pub struct CheckRun {
    pub exit_code: i32,
    /// What it wrote to its termination log (the kubelet's `state.terminated.message`).
    pub message: String,
    /// Its standard output and error.
    pub output: String,
}

/// Runs the check on `data_dir`. `series` plays the image: `None` is the installed MariaDB
/// (its `mariadbd --version`), `Some("11.4")` an image of that series (a `mariadbd` on the
/// `PATH` that reports it). `scratch` holds the wrapper and the termination log.
pub fn run(script: &str, data_dir: &Path, series: Option<&str>, scratch: &Path) -> crate::Result<CheckRun> {
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin)?;
    let real = env::system_bin("mariadbd")?;
    let mariadbd = bin.join("mariadbd");
    let body = match series {
        Some(series) => format!("#!/bin/sh\necho 'mariadbd  Ver {series}.99-MariaDB for Linux on x86_64'\n"),
        None => format!("#!/bin/sh\nexec {} \"$@\"\n", real.display()),
    };
    std::fs::write(&mariadbd, body)?;
    std::fs::set_permissions(&mariadbd, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let log = scratch.join("termination-log");
    let _ = std::fs::remove_file(&log);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .env("CHECK_DATA_DIR", data_dir)
        .env("CHECK_TERMINATION_LOG", &log)
        .output()
        .context("running the clean-stop check")?;
    Ok(CheckRun {
        exit_code: output.status.code().unwrap_or(-1),
        message: std::fs::read_to_string(&log).unwrap_or_default().trim().to_string(),
        output: format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    })
}

/// The series the check recorded in the data directory's `marker` file, if any.
pub fn recorded_series(data_dir: &Path, marker: &str) -> Option<String> {
    let marker = data_dir.join(marker);
    std::fs::read_to_string(marker).ok().map(|s| s.trim().to_string())
}
