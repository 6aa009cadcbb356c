//! What the tests against the harness's real MariaDB share: the operator's check target for
//! its administrator, and Ironic-like data to write before a stop.

use ferrometal_tests::mariadb::{ADMIN_PASSWORD, ADMIN_USER, MariaDb};
use operator::database::check::{Target, Tls};
use operator::database::credentials::{Credentials, Password};
use sqlx::{Connection, Executor, MySqlConnection};
use std::time::Duration;

/// The administrator's connection, as the operator's checks make it.
pub fn admin(server: &MariaDb) -> Target {
    Target {
        host: "127.0.0.1".into(),
        port: server.port(),
        database: None,
        credentials: Credentials { username: ADMIN_USER.into(), password: Password::new(ADMIN_PASSWORD) },
        tls: Tls::Disabled,
        timeout: Duration::from_secs(10),
    }
}

/// Ironic-like data: a table with rows, some of them deleted (undo records for purge, and redo
/// log work past the last checkpoint).
pub async fn write_data(server: &MariaDb) -> anyhow::Result<()> {
    let mut conn = MySqlConnection::connect(&server.admin_url(None)).await?;
    conn.execute("CREATE DATABASE IF NOT EXISTS ironic").await?;
    conn.execute("CREATE TABLE IF NOT EXISTS ironic.nodes (id INT PRIMARY KEY, name VARCHAR(255)) ENGINE=InnoDB")
        .await?;
    for batch in 0..20 {
        let values: Vec<String> = (0..100).map(|i| format!("({}, 'node-{batch}-{i}')", batch * 100 + i)).collect();
        conn.execute(sqlx::AssertSqlSafe(format!("INSERT INTO ironic.nodes VALUES {}", values.join(",")))).await?;
    }
    conn.execute("DELETE FROM ironic.nodes WHERE id % 2 = 1").await?;
    conn.close().await?;
    Ok(())
}
