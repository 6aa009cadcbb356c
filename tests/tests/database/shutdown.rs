//! The upgrade-safe shutdown against the harness's real MariaDB 10.11: the server runs with
//! `innodb_fast_shutdown = 0` from its start (as the pod starts it) and the operator's code
//! reads it, the server shuts down (SIGTERM, as the kubelet does after the preStop hook), and
//! a server started again on the same data directory finds the data intact and no redo log to
//! apply. A crash, for contrast, leaves exactly that redo log behind.
//!
//! MariaDB 10.11 reports a clean stop in its error log as
//!   `InnoDB: Starting shutdown...` ... `InnoDB: Shutdown completed; log sequence number N; ...`
//!   ... `mariadbd: Shutdown complete`
//! and a start after it as `InnoDB: End of log at LSN=N` (the same N, nothing to apply), where
//! a start after a crash says `InnoDB: Starting crash recovery from checkpoint LSN=...`.

use crate::mariadb_common::{admin, write_data};
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig, ServerOptions};
use operator::testing::database::check;
use sqlx::{Connection, MySqlConnection};

async fn count_nodes(server: &MariaDb) -> anyhow::Result<(i64, String)> {
    let mut conn = MySqlConnection::connect(&server.admin_url(None)).await?;
    let row: (i64, String) =
        sqlx::query_as("SELECT COUNT(*), MAX(name) FROM ironic.nodes WHERE id % 2 = 0").fetch_one(&mut conn).await?;
    conn.close().await?;
    Ok(row)
}

/// The number after `marker` on the last line that has it.
fn last_number_after(log: &str, marker: &str) -> Option<u64> {
    let line = log.lines().rev().find(|l| l.contains(marker))?;
    let rest = &line[line.find(marker)? + marker.len()..];
    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

#[tokio::test]
async fn the_slow_shutdown_the_pod_starts_with_leaves_nothing_to_recover() -> anyhow::Result<()> {
    // As the pod starts its server: --innodb-fast-shutdown=0.
    let options = ServerOptions { slow_shutdown: true, ..Default::default() };
    let mut server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    write_data(&server).await?;
    let before = count_nodes(&server).await?;
    assert_eq!(before.0, 1000);

    // The operator's first step of a version change: the flag read, the version noted.
    let target = admin(&server);
    let version = check::prepare_for_version_change(&target).await?;
    assert!(version.raw.contains("MariaDB"), "{}", version.raw);
    let mut conn = check::connect(&target).await?;
    assert_eq!(check::fast_shutdown(&mut conn, &target).await?, "0");
    conn.close().await?;

    server.shutdown().await?;
    let stop = server.error_log();
    let stop = &stop[stop.rfind("Normal shutdown").expect("a normal shutdown was logged")..];
    assert!(stop.contains("InnoDB: Starting shutdown..."), "{stop}");
    assert!(stop.contains("mariadbd: Shutdown complete"), "{stop}");
    let lsn = last_number_after(stop, "Shutdown completed; log sequence number ").expect("the final LSN");

    server.restart().await?;
    let log = server.error_log();
    let start = &log[log.rfind("mariadbd: Shutdown complete").expect("the stop")..];
    assert!(!start.contains("crash recovery"), "a clean stop needs no recovery: {start}");
    assert_eq!(last_number_after(start, "InnoDB: End of log at LSN="), Some(lsn), "{start}");
    assert_eq!(count_nodes(&server).await?, before, "the data is intact");
    // Every start sets it again: the next stop is the slow one too.
    let mut conn = check::connect(&target).await?;
    assert_eq!(check::fast_shutdown(&mut conn, &target).await?, "0");
    conn.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_crash_leaves_redo_log_to_recover_which_the_slow_shutdown_avoids() -> anyhow::Result<()> {
    let mut server = MariaDb::start(MariaDbConfig::default()).await?;
    write_data(&server).await?;
    let before = count_nodes(&server).await?;
    server.crash();
    server.restart().await?;
    let log = server.error_log();
    let start = &log[log.rfind("Starting MariaDB").expect("the second start")..];
    assert!(start.contains("InnoDB: Starting crash recovery from checkpoint LSN="), "{start}");
    // InnoDB recovers committed work, which is why this is merely slow on the same version,
    // and why a new major version must never be the one to do it.
    assert_eq!(count_nodes(&server).await?, before);
    Ok(())
}

/// Runs one of the StatefulSet's shell scripts against the harness server, as the container
/// would. In the official image the clients' default socket is the server's; here the
/// system's option files name another one, so `mariadb` and `mariadb-admin` are wrapped to
/// use the harness's socket. The harness's root has an empty password.
fn run_script(server: &MariaDb, bin: &std::path::Path, script: &str) -> anyhow::Result<std::process::Output> {
    let socket = server.dir().join("run").join("mysqld.sock");
    for client in ["mariadb", "mariadb-admin"] {
        let real = ferrometal_tests::env::system_bin(client)?;
        let wrapper = bin.join(client);
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec {} --socket={} \"$@\"\n", real.display(), socket.display()))?;
        std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    Ok(std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("MARIADB_ROOT_PASSWORD", "")
        .env("PATH", path)
        .output()?)
}

#[tokio::test]
async fn the_pre_stop_hook_itself_shuts_mariadb_down_cleanly() -> anyhow::Result<()> {
    use operator::testing::database::build::stateful_set::{PRE_STOP, READINESS};
    let mut server = MariaDb::start(MariaDbConfig::default()).await?;
    write_data(&server).await?;
    let before = count_nodes(&server).await?;
    let bin = tempfile::tempdir()?;
    assert!(run_script(&server, bin.path(), READINESS)?.status.success(), "ready while it runs");

    let hook = run_script(&server, bin.path(), PRE_STOP)?;
    let stderr = String::from_utf8_lossy(&hook.stderr);
    assert!(hook.status.success(), "the hook failed: {stderr}");
    assert!(!stderr.contains("could not set innodb_fast_shutdown"), "{stderr}");
    // The hook only asks (it must not outlive the server, see PRE_STOP); then the kubelet's
    // SIGTERM, which meets a server already stopping and starts no second shutdown.
    server.shutdown().await?;
    let log = server.error_log();
    let run = &log[log.rfind("ready for connections").expect("the server's start")..];
    assert_eq!(run.matches("Normal shutdown").count(), 1, "one shutdown: {run}");
    let stop = &run[run.rfind("Normal shutdown").expect("a shutdown the hook asked for")..];
    assert!(run.contains("(initiated by: root"), "the hook's shutdown, as root on the socket: {run}");
    assert!(stop.contains("InnoDB: Starting shutdown...") && stop.contains("mariadbd: Shutdown complete"), "{stop}");
    let lsn = last_number_after(stop, "Shutdown completed; log sequence number ").expect("the final LSN");
    assert!(!run_script(&server, bin.path(), READINESS)?.status.success(), "not ready once stopped");

    server.restart().await?;
    let log = server.error_log();
    let start = &log[log.rfind("mariadbd: Shutdown complete").expect("the stop")..];
    assert!(!start.contains("crash recovery"), "{start}");
    assert_eq!(last_number_after(start, "InnoDB: End of log at LSN="), Some(lsn), "{start}");
    assert_eq!(count_nodes(&server).await?, before);
    Ok(())
}
