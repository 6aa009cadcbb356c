//! The clean-stop check of the MariaDB pod (`operator::testing::database::clean_stop::SCRIPT`, its init
//! container) against real data directories of the harness's MariaDB 10.11: a clean stop
//! passes and records the new series, a `kill -9` is refused with the reason and leaves the
//! directory as it was, the same series may always recover its own crash, and the way out the
//! refusal names (the old version starts, recovers, stops cleanly) lets the new one start.
//!
//! The image's series is played by a `mariadbd` on the `PATH` that reports it (the check reads
//! `mariadbd --version`); `None` is the installed 10.11 itself.

use crate::mariadb_common::{admin, write_data};
use ferrometal_tests::clean_stop::{self, CheckRun};
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig, ServerOptions};
use operator::testing::database::check;
use operator::testing::database::clean_stop::{EXIT_UNCLEAN, SCRIPT, SERIES_MARKER};
use sqlx::{Connection, MySqlConnection};
use std::collections::BTreeMap;
use std::path::Path;

async fn count_nodes(server: &MariaDb) -> anyhow::Result<i64> {
    let mut conn = MySqlConnection::connect(&server.admin_url(None)).await?;
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ironic.nodes").fetch_one(&mut conn).await?;
    conn.close().await?;
    Ok(count)
}

/// The series that last opened the directory, as the check will read it.
fn plant_series(data: &Path, series: &str) -> anyhow::Result<()> {
    std::fs::write(data.join(SERIES_MARKER), format!("{series}\n"))?;
    Ok(())
}

/// Every file of the directory with its content, to show that a refusal touched nothing.
fn snapshot(dir: &Path) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.strip_prefix(dir)?.display().to_string(), std::fs::read(&path)?);
            }
        }
    }
    Ok(files)
}

fn check(server: &MariaDb, series: Option<&str>, scratch: &Path) -> anyhow::Result<CheckRun> {
    let run = clean_stop::run(SCRIPT, &server.data_dir(), series, scratch)?;
    println!("check as {series:?}: exit {} {:?}\n{}", run.exit_code, run.message, run.output);
    Ok(run)
}

#[tokio::test]
async fn a_cleanly_stopped_directory_lets_the_new_series_open_it() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let options = ServerOptions { slow_shutdown: true, ..Default::default() };
    let mut server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    write_data(&server).await?;
    // The version change's own stop: the flag (the pod starts the server with it), then the
    // shutdown the preStop hook makes.
    check::prepare_for_version_change(&admin(&server)).await?;
    server.shutdown().await?;
    let data = server.data_dir();
    assert!(!data.join("ibtmp1").exists(), "a clean stop removes the temporary tablespace");
    plant_series(&data, "10.6")?;

    let run = check(&server, Some("11.4"), scratch.path())?;
    assert_eq!(run.exit_code, 0, "{run:?}");
    assert!(run.output.contains("stopped cleanly by MariaDB 10.6"), "{run:?}");
    assert_eq!(
        clean_stop::recorded_series(&data, SERIES_MARKER).as_deref(),
        Some("11.4"),
        "the new series is recorded"
    );

    // A normal (fast) shutdown is clean too: InnoDB writes its final checkpoint either way.
    server.restart().await?;
    server.shutdown().await?;
    plant_series(&data, "10.6")?;
    assert_eq!(check(&server, Some("11.4"), scratch.path())?.exit_code, 0);
    // Without any record of the series (a directory older than the check), the redo log's
    // creator stands in; the series is recorded from then on.
    std::fs::remove_file(data.join(SERIES_MARKER))?;
    assert_eq!(check(&server, None, scratch.path())?.exit_code, 0);
    assert_eq!(
        clean_stop::recorded_series(&data, SERIES_MARKER).as_deref(),
        Some("10.11"),
        "the installed server's series"
    );
    server.restart().await?;
    assert_eq!(count_nodes(&server).await?, 1000);
    Ok(())
}

#[tokio::test]
async fn a_killed_server_is_refused_untouched_and_the_old_series_recovers_it() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let mut server = MariaDb::start(MariaDbConfig::default()).await?;
    write_data(&server).await?;
    let data = server.data_dir();
    plant_series(&data, "10.11")?;
    server.crash();
    let before = snapshot(&data)?;

    let run = check(&server, Some("11.4"), scratch.path())?;
    assert_eq!(run.exit_code, EXIT_UNCLEAN, "{run:?}");
    for part in [
        "last stopped by MariaDB 10.11 without a clean shutdown",
        "ibtmp1 is still there",
        "the redo log goes on past its newest checkpoint",
    ] {
        assert!(run.message.contains(part), "{part} in {:?}", run.message);
    }
    assert_eq!(snapshot(&data)?, before, "a refusal touches nothing, not even the series record");

    // The checkpoint alone tells as well: without ibtmp1 the redo log still refuses.
    let ibtmp1 = std::fs::read(data.join("ibtmp1"))?;
    std::fs::remove_file(data.join("ibtmp1"))?;
    let run = check(&server, Some("11.4"), scratch.path())?;
    assert_eq!(run.exit_code, EXIT_UNCLEAN, "{run:?}");
    assert!(!run.message.contains("ibtmp1") && run.message.contains("past its newest checkpoint"), "{run:?}");
    std::fs::write(data.join("ibtmp1"), ibtmp1)?;

    // The same series may always open its own crash: that is InnoDB's crash recovery.
    let run = check(&server, None, scratch.path())?;
    assert_eq!(run.exit_code, 0, "{run:?}");
    assert!(run.output.contains("InnoDB recovers"), "{run:?}");
    // Without the check's record (a directory older than the check) the redo log's creator,
    // this very series, stands in for it.
    std::fs::remove_file(data.join(SERIES_MARKER))?;
    let run = check(&server, None, scratch.path())?;
    assert_eq!(run.exit_code, 0, "{run:?}");
    assert!(run.output.contains("last opened by MariaDB 10.11"), "{run:?}");
    let run = check(&server, Some("11.4"), scratch.path())?;
    assert_eq!(run.exit_code, EXIT_UNCLEAN, "another series is still refused: {run:?}");
    assert!(run.message.contains("last stopped by MariaDB 10.11"), "{run:?}");

    // The way out: the old version starts, recovers, stops cleanly; then the new one may start.
    server.restart().await?;
    assert!(server.error_log().contains("Starting crash recovery"), "the old version recovered");
    assert_eq!(count_nodes(&server).await?, 1000, "nothing lost");
    server.shutdown().await?;
    let run = check(&server, Some("11.4"), scratch.path())?;
    assert_eq!(run.exit_code, 0, "{run:?}");
    assert_eq!(clean_stop::recorded_series(&data, SERIES_MARKER).as_deref(), Some("11.4"));
    Ok(())
}

#[tokio::test]
async fn an_empty_data_directory_is_left_for_the_new_server_to_initialise() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let data = scratch.path().join("data");
    std::fs::create_dir(&data)?;
    let run = clean_stop::run(SCRIPT, &data, None, scratch.path())?;
    assert_eq!(run.exit_code, 0, "{run:?}");
    assert_eq!(clean_stop::recorded_series(&data, SERIES_MARKER).as_deref(), Some("10.11"));
    // The check's own record is the only file it writes.
    let names: Vec<_> = std::fs::read_dir(&data)?.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>()?;
    assert_eq!(names, vec![std::ffi::OsString::from(SERIES_MARKER)]);
    Ok(())
}
