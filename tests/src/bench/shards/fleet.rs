//! A large fleet pre-registered in seconds, and checked afterwards.
//!
//! One node is created through Ironic's API as the operator creates a `fake://` host's node
//! (same driver and interfaces); its row is then copied in MariaDB once per host. Each copy has
//! the host's node name (`<namespace>~<name>`), a fresh UUID, the host's shard, `active` and
//! powered on, made (and last written) one second before the previous copy ([`SETTLED_AT`]):
//! a fleet the operator registered and deployed long ago, written over time
//! (`FERROMETAL_BENCH_FLEET_ONE_TIME=1`: all at one second, a fleet registered in one go,
//! which a look at what changed pages through by UUID). The API's checks
//! ran on the template; what a deployment writes besides (`instance_info`) is not copied,
//! since nothing the operator reads of a provisioned host's node needs it. Creating 10,000
//! nodes through the API and deploying them would take this machine's two cores most of an
//! hour.

use super::ShardOf;
use crate::ironic::IronicServer;
use sqlx::{AssertSqlSafe, Connection, Executor, MySqlConnection, Row};
use std::time::{Duration, Instant};

/// When the newest copy was made and last moved; copy `i` was made `i` seconds before.
pub const SETTLED_AT: &str = "2026-01-01 00:00:00";

/// How the fleet's hosts are named: `host-00042`.
pub const FLEET_PREFIX: &str = "host-";

/// Rows inserted per statement.
const BATCH: usize = 1000;

/// The nodes made, by host name.
pub struct Fleet {
    pub nodes: Vec<(String, String)>,
    pub elapsed: Duration,
}

/// What Ironic's database holds after a run: the operator must have made no second node for a
/// host (Ironic refuses a second node of one name, so a second node would be a re-registration
/// replacing the first), and moved none of the fleet's out of `active`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Integrity {
    /// Every node (the fleet's and any the run registered besides).
    pub nodes: u64,
    /// Fleet hosts whose node is gone or is another than the one made for it.
    pub replaced: u64,
    /// The fleet's nodes not `active`.
    pub not_active: u64,
    /// The fleet's nodes whose provision state changed since they were made (a deployment
    /// would).
    pub moved: u64,
}

/// Makes a node for each of `hosts` in `namespace`, in the shard `shard_of` gives it; with
/// `one_time`, every node made and last written at [`SETTLED_AT`] (a fleet registered in one
/// go, which each look at what changed must page through by UUID).
pub async fn preregister(
    ironic: &IronicServer,
    database: &str,
    namespace: &str,
    hosts: &[String],
    shard_of: &ShardOf,
    one_time: bool,
) -> crate::Result<Fleet> {
    let started = Instant::now();
    let template = create_template(ironic).await?;
    let mut conn = MySqlConnection::connect(database).await?;
    conn.execute("CREATE TEMPORARY TABLE fleet (name VARCHAR(255) NOT NULL, shard VARCHAR(255) NOT NULL, seq INT)")
        .await?;
    for (b, batch) in hosts.chunks(BATCH).enumerate() {
        let rows: Vec<String> = batch
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let seq = if one_time { 0 } else { b * BATCH + i };
                format!("('{namespace}~{host}', '{}', {seq})", shard_of(namespace, host))
            })
            .collect();
        conn.execute(AssertSqlSafe(format!("INSERT INTO fleet VALUES {}", rows.join(",")))).await?;
    }
    let columns = copied_columns(&mut conn).await?;
    let (names, values): (Vec<&str>, Vec<String>) = columns.iter().map(|(n, v)| (n.as_str(), v.clone())).unzip();
    conn.execute(AssertSqlSafe(format!(
        "INSERT INTO nodes ({}) SELECT {} FROM nodes t JOIN fleet p WHERE t.uuid = '{template}'",
        names.join(", "),
        values.join(", ")
    )))
    .await?;
    delete_template(ironic, &template).await?;
    let prefix = format!("{namespace}~");
    let nodes = sqlx::query("SELECT name, uuid FROM nodes WHERE name LIKE CONCAT(?, '%')")
        .bind(&prefix)
        .fetch_all(&mut conn)
        .await?
        .iter()
        .map(|row| Ok((row.try_get::<String, _>(0)?.replacen(&prefix, "", 1), row.try_get::<String, _>(1)?)))
        .collect::<crate::Result<Vec<_>>>()?;
    conn.close().await?;
    anyhow::ensure!(nodes.len() == hosts.len(), "{} nodes made for {} hosts", nodes.len(), hosts.len());
    Ok(Fleet { nodes, elapsed: started.elapsed() })
}

/// Counts what the operator could have broken of `fleet`, made in `namespace`.
pub async fn integrity(database: &str, namespace: &str, fleet: &Fleet) -> crate::Result<Integrity> {
    let mut conn = MySqlConnection::connect(database).await?;
    let nodes: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM nodes").fetch_one(&mut conn).await?;
    let prefix = format!("{namespace}~");
    let rows = sqlx::query(
        "SELECT name, uuid, provision_state = 'active', provision_updated_at = created_at FROM nodes WHERE name LIKE ?",
    )
    .bind(format!("{prefix}{FLEET_PREFIX}%"))
    .fetch_all(&mut conn)
    .await?;
    conn.close().await?;
    let mut found = std::collections::HashMap::new();
    let (mut not_active, mut moved) = (0, 0);
    for row in &rows {
        let name: String = row.try_get(0)?;
        found.insert(name.replacen(&prefix, "", 1), row.try_get::<String, _>(1)?);
        not_active += u64::from(row.try_get::<i64, _>(2)? == 0);
        moved += u64::from(row.try_get::<i64, _>(3)? == 0);
    }
    let replaced = fleet.nodes.iter().filter(|(host, uuid)| found.get(host) != Some(uuid)).count();
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    Ok(Integrity { nodes: u64::try_from(nodes).unwrap_or(0), replaced: count(replaced), not_active, moved })
}

/// The node every copy is made from, created as the operator creates a `fake://` host's.
async fn create_template(ironic: &IronicServer) -> crate::Result<String> {
    let body = serde_json::json!({
        "name": "fleet-template", "driver": "fake-hardware",
        "boot_interface": "fake", "deploy_interface": "fake", "inspect_interface": "fake",
        "management_interface": "fake", "power_interface": "fake",
        "properties": {"capabilities": "boot_mode:uefi"}, "automated_clean": false,
    });
    let response = ironic.http_client()?.post(format!("{}/v1/nodes", ironic.endpoint())).json(&body).send().await?;
    let status = response.status();
    let node: serde_json::Value = response.json().await?;
    anyhow::ensure!(status.is_success(), "creating the template node: {status}: {node}");
    node["uuid"].as_str().map(str::to_string).ok_or_else(|| anyhow::anyhow!("the template node has no UUID: {node}"))
}

async fn delete_template(ironic: &IronicServer, uuid: &str) -> crate::Result<()> {
    let response = ironic.http_client()?.delete(format!("{}/v1/nodes/{uuid}", ironic.endpoint())).send().await?;
    anyhow::ensure!(response.status().is_success(), "deleting the template node: {}", response.status());
    Ok(())
}

/// Every column of `nodes` but the key, with what each copy gets: the template's value, or
/// what a deployed host of the fleet has instead.
async fn copied_columns(conn: &mut MySqlConnection) -> crate::Result<Vec<(String, String)>> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'nodes' ORDER BY ORDINAL_POSITION",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(names
        .into_iter()
        .filter(|name| name != "id")
        .map(|name| {
            let value = match name.as_str() {
                "uuid" => "UUID()".to_string(),
                "name" => "p.name".to_string(),
                "shard" => "p.shard".to_string(),
                "provision_state" => "'active'".to_string(),
                "power_state" => "'power on'".to_string(),
                // Written over time, the later a copy the longer ago; each last moved (and
                // written) when it was made, so a later move shows as a time after its creation.
                "created_at" | "updated_at" | "provision_updated_at" => {
                    format!("DATE_SUB('{SETTLED_AT}', INTERVAL p.seq SECOND)")
                }
                "target_provision_state"
                | "target_power_state"
                | "reservation"
                | "conductor_affinity"
                | "last_error"
                | "instance_uuid" => "NULL".to_string(),
                other => format!("t.`{other}`"),
            };
            (format!("`{name}`"), value)
        })
        .collect())
}
