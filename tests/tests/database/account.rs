//! The accounts of a managed database against the harness's real MariaDB 10.11, made the way
//! the pod makes them: by the init file (`operator::testing::database::account::init_sql`) the server
//! applies at every start. On a fresh data directory and on one a deployment of the previous
//! operator left (`root` allowed from anywhere, no maintenance account), `root` can no longer
//! log in over TCP and the maintenance account exists with exactly its privileges: it runs the
//! backup Job's script and the operator's checks, and is refused what it does not need. The
//! upgrade account exists only while a version change runs `mariadb-upgrade`, runs the Job's
//! script, and removes itself. A new password takes effect at the next start.

use crate::mariadb_common::{target, write_data};
use crds::ironic::{Ironic, ManagedDatabase};
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig, ServedCertificate, ServerOptions};
use ferrometal_tests::pki::{Authority, loopback};
use operator::testing::database::account::{self, MAINTENANCE_USER, UPGRADE_USER, UpgradeAccount};
use operator::testing::database::build::{CLIENT_CA_DIR, ClaimSettings, Inputs, jobs};
use operator::testing::database::check;
use operator::testing::database::credentials::{Credentials, Password};
use operator::testing::database::names::Names;
use operator::testing::database::tls::Material;
use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use sqlx::{ConnectOptions, Connection, Executor, MySqlConnection};

const PASSWORD: &str = "maintenance-account-password";

fn credentials(user: &str, password: &str) -> Credentials {
    Credentials { username: user.into(), password: Password::new(password) }
}

fn init(password: &str, upgrade: UpgradeAccount) -> String {
    account::init_sql(&account::password_hash(&Password::new(password)), upgrade)
}

/// What the MariaDB pod gives its server: the init file, the slow shutdown, TLS required.
fn pod(init_sql: String, tls: Option<ServedCertificate>) -> ServerOptions {
    let require_secure_transport = tls.is_some();
    ServerOptions { init_sql: Some(init_sql), slow_shutdown: true, tls, require_secure_transport }
}

fn certificate() -> anyhow::Result<ServedCertificate> {
    let ca = Authority::new("database-account-ca")?;
    let served = ca.server(&["localhost"], &[loopback()])?;
    Ok(ServedCertificate { cert_pem: served.cert_pem, key_pem: served.key_pem, ca_pem: ca.cert_pem().to_string() })
}

/// `root` on the server's socket, as the pod's probe and preStop hook log in.
async fn root_on_socket(server: &MariaDb) -> anyhow::Result<MySqlConnection> {
    let socket = server.dir().join("run").join("mysqld.sock");
    let options = MySqlConnectOptions::new().socket(&socket).username("root").ssl_mode(MySqlSslMode::Disabled);
    Ok(options.connect().await?)
}

async fn accounts(server: &MariaDb) -> anyhow::Result<Vec<(String, String)>> {
    let mut root = root_on_socket(server).await?;
    let users: Vec<(String, String)> =
        sqlx::query_as("SELECT CAST(User AS CHAR), CAST(Host AS CHAR) FROM mysql.user ORDER BY 1, 2")
            .fetch_all(&mut root)
            .await?;
    root.close().await?;
    Ok(users)
}

async fn grants(server: &MariaDb, user: &str) -> anyhow::Result<Vec<String>> {
    let mut root = root_on_socket(server).await?;
    let rows: Vec<(String,)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("SHOW GRANTS FOR '{user}'@'%'"))).fetch_all(&mut root).await?;
    root.close().await?;
    // Without the password hash SHOW GRANTS adds to the global line.
    let grant = |g: String| g.split(" IDENTIFIED BY PASSWORD").next().unwrap_or_default().to_string();
    Ok(rows.into_iter().map(|(g,)| grant(g)).filter(|g| !g.starts_with("GRANT USAGE")).collect())
}

/// `user` over TCP, as a client elsewhere in the cluster would come.
async fn over_tcp(server: &MariaDb, user: &str, password: &str) -> Result<MySqlConnection, check::Error> {
    check::connect(&target(server, credentials(user, password))).await
}

/// What the server says to `statement` run as `user` over TCP: `Ok` or its error number.
async fn run_as(server: &MariaDb, user: &str, password: &str, statement: &str) -> anyhow::Result<Result<(), u16>> {
    let mut conn = over_tcp(server, user, password).await?;
    let result = conn.execute(sqlx::AssertSqlSafe(statement.to_string())).await;
    conn.close().await?;
    Ok(result.map(|_| ()).map_err(|e| match e {
        sqlx::Error::Database(db) => {
            db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().map(|e| e.number()).unwrap_or(0)
        }
        _ => 0,
    }))
}

/// Lines of the error log that report a failed statement of the init file.
fn init_errors(server: &MariaDb) -> Vec<String> {
    server.error_log().lines().filter(|l| l.starts_with("ERROR:")).map(str::to_string).collect()
}

#[tokio::test]
async fn a_fresh_data_directory_gets_the_maintenance_account_and_root_stays_on_the_socket() -> anyhow::Result<()> {
    let options = pod(init(PASSWORD, UpgradeAccount::Absent), None);
    let server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    let users = accounts(&server).await?;
    let roots: Vec<&str> = users.iter().filter(|(u, _)| u == "root").map(|(_, h)| h.as_str()).collect();
    assert_eq!(roots, ["localhost"], "root only on the socket: {users:?}");
    assert!(users.contains(&(MAINTENANCE_USER.to_string(), "%".to_string())), "{users:?}");
    assert!(!users.iter().any(|(u, _)| u == UPGRADE_USER), "no version change, no upgrade account: {users:?}");
    assert_eq!(
        grants(&server, MAINTENANCE_USER).await?,
        [
            "GRANT SELECT, SHOW VIEW, EVENT, TRIGGER ON `ironic`.* TO `ferrometal-maintenance`@`%`",
            "GRANT SELECT ON `mysql`.`proc` TO `ferrometal-maintenance`@`%`",
        ]
    );
    // mariadb-install-db left root@127.0.0.1 without a password (and root@<hostname>, which
    // --skip-name-resolve ignores); the init file dropped both: over TCP root is refused.
    let refused = over_tcp(&server, "root", "").await.expect_err("root over TCP");
    assert_eq!(refused.reason(), "AuthenticationFailed", "{refused}");
    over_tcp(&server, MAINTENANCE_USER, PASSWORD).await?.close().await?;
    assert!(init_errors(&server).is_empty(), "{:?}", init_errors(&server));
    Ok(())
}

#[tokio::test]
async fn an_existing_directory_with_root_from_anywhere_loses_it_at_the_next_start_and_keeps_its_data()
-> anyhow::Result<()> {
    // A deployment of the previous operator: the image's entrypoint made root@'%' for
    // MARIADB_ROOT_HOST=%, and there is no maintenance account.
    let mut server = MariaDb::start(MariaDbConfig::default()).await?;
    write_data(&server).await?;
    let mut root = root_on_socket(&server).await?;
    root.execute("CREATE USER 'root'@'%' IDENTIFIED BY 'root-from-anywhere'").await?;
    root.execute("GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION").await?;
    // And someone gave the account-to-be more than it needs: the init file takes it back.
    root.execute("CREATE USER 'ferrometal-maintenance'@'%' IDENTIFIED BY 'old'").await?;
    root.execute("GRANT SUPER, INSERT ON *.* TO 'ferrometal-maintenance'@'%'").await?;
    root.close().await?;
    // root@127.0.0.1 (no password) would match first over loopback; the pod's entrypoint drops it.
    let mut root = root_on_socket(&server).await?;
    root.execute("DROP USER 'root'@'127.0.0.1'").await?;
    root.execute("CREATE USER 'root'@'10.%' IDENTIFIED BY 'root-from-the-pod-network'").await?;
    root.close().await?;
    over_tcp(&server, "root", "root-from-anywhere").await?.close().await?;

    // The new pod: the same directory, the init file, a clean (slow) stop before.
    server.shutdown().await?;
    server.configure(&pod(init(PASSWORD, UpgradeAccount::Absent), None))?;
    server.restart().await?;
    let refused = over_tcp(&server, "root", "root-from-anywhere").await.expect_err("root over TCP");
    assert_eq!(refused.reason(), "AuthenticationFailed", "{refused}");
    let roots: Vec<String> =
        accounts(&server).await?.into_iter().filter(|(u, _)| u == "root").map(|(_, h)| h).collect();
    assert_eq!(roots, ["localhost"], "every network entry of root is gone");
    assert_eq!(grants(&server, MAINTENANCE_USER).await?.len(), 2, "exactly its privileges again");
    assert!(over_tcp(&server, MAINTENANCE_USER, "old").await.is_err(), "the password is the Secret's");
    let mut conn = over_tcp(&server, MAINTENANCE_USER, PASSWORD).await?;
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ironic.nodes").fetch_one(&mut conn).await?;
    conn.close().await?;
    assert_eq!(count, 1000, "the data is intact");

    // Every start applies it again, idempotently.
    server.shutdown().await?;
    server.restart().await?;
    assert_eq!(grants(&server, MAINTENANCE_USER).await?.len(), 2);
    assert!(init_errors(&server).is_empty(), "{:?}", init_errors(&server));
    Ok(())
}

/// The builders' inputs for the Jobs of a database on `server`.
struct JobFixture {
    ironic: Ironic,
    names: Names,
    managed: ManagedDatabase,
    material: Option<Material>,
}

impl JobFixture {
    fn new(server: &MariaDb) -> Self {
        let ironic: Ironic = serde_json::from_value(serde_json::json!({"apiVersion": "ironic.metal3.io/v1alpha1",
            "kind": "Ironic", "metadata": {"name": "ironic", "namespace": "metal3"},
            "spec": {"database": {"managed": {}}}}))
        .expect("an Ironic");
        let material = server.options().tls.as_ref().map(|served| Material {
            serving_secret: "ironic-mariadb-tls".into(),
            ca_pem: served.ca_pem.clone(),
            digest: "digest".into(),
            generated: None,
        });
        Self { ironic, names: Names::new("ironic"), managed: ManagedDatabase::default(), material }
    }

    fn inputs(&self) -> Inputs<'_> {
        Inputs {
            ironic: &self.ironic,
            names: &self.names,
            namespace: "metal3",
            managed: &self.managed,
            host: "unused".into(),
            image: "docker.io/library/mariadb:10.11",
            claim: ClaimSettings {
                size: k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()),
                storage_class: None,
            },
            tls: self.material.as_ref(),
            require_tls: self.material.is_some(),
            account_digest: String::new(),
            job_backoff_limit: 0,
            job_deadline_seconds: 60,
        }
    }
}

/// Runs a Job's script as its pod would, with this machine's MariaDB clients: `user` and
/// `password` as the Job's environment gives them, the server's CA where the Job mounts it,
/// `dir` as the backup volume.
fn run_script(
    server: &MariaDb,
    script: &str,
    user: &str,
    password: &str,
    dir: &std::path::Path,
) -> std::process::Output {
    let ca_dir = dir.join("ca");
    std::fs::create_dir_all(&ca_dir).expect("CA directory");
    if let Some(served) = &server.options().tls {
        std::fs::write(ca_dir.join("tls.crt"), &served.ca_pem).expect("CA file");
    }
    let script = script
        .replace(jobs::BACKUP_DIR, &dir.display().to_string())
        .replace(CLIENT_CA_DIR, &ca_dir.display().to_string());
    std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("DB_HOST", "127.0.0.1")
        .env("DB_PORT", server.port().to_string())
        .env("DB_USER", user)
        .env("MYSQL_PWD", password)
        .env("BACKUP_FILE", "ironic-mariadb-20261101T000000Z-10.11.sql.gz")
        .env("BACKUP_PREFIX", "ironic-mariadb")
        .env("BACKUP_KEEP", "3")
        .output()
        .expect("bash runs")
}

#[tokio::test]
async fn the_maintenance_account_runs_the_backup_and_the_checks_and_is_refused_the_rest() -> anyhow::Result<()> {
    let options = pod(init(PASSWORD, UpgradeAccount::Absent), Some(certificate()?));
    let server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    write_data(&server).await?;
    let mut admin = MySqlConnection::connect(&server.admin_url(None)).await?;
    for statement in [
        "CREATE VIEW ironic.even AS SELECT * FROM ironic.nodes WHERE id % 2 = 0",
        "CREATE TRIGGER ironic.named BEFORE INSERT ON ironic.nodes FOR EACH ROW SET NEW.name = LOWER(NEW.name)",
        "CREATE PROCEDURE ironic.count_nodes() SELECT COUNT(*) FROM ironic.nodes",
        "CREATE DATABASE other",
    ] {
        admin.execute(statement).await?;
    }
    admin.close().await?;

    // The backup Job's own script, over verified TLS, as the maintenance account.
    let fixture = JobFixture::new(&server);
    let dir = tempfile::tempdir()?;
    let output = run_script(&server, &jobs::backup_script(&fixture.inputs()), MAINTENANCE_USER, PASSWORD, dir.path());
    assert!(output.status.success(), "the backup failed: {}", String::from_utf8_lossy(&output.stderr));
    let dump = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(dir.path().join("ironic-mariadb-20261101T000000Z-10.11.sql.gz"))
        .output()?;
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("CREATE DATABASE") && dump.contains("`ironic`"), "Ironic's database");
    for part in ["INSERT INTO `nodes`", "VIEW `even`", "TRIGGER", "PROCEDURE `count_nodes`"] {
        assert!(dump.contains(part), "the dump has {part}");
    }
    assert!(!dump.contains("global_priv") && !dump.contains("`other`"), "nothing but Ironic's database");
    assert!(dump.contains("-- Dump completed"), "mariadb-dump finished");

    // The operator's checks of a version change, as the account.
    let maintenance = target(&server, credentials(MAINTENANCE_USER, PASSWORD));
    let version = check::prepare_for_version_change(&maintenance).await?;
    assert_eq!((version.major, version.minor), (10, 11));
    assert_eq!(check::read_version(&maintenance).await?.raw, version.raw);

    // And nothing more: no other database, no system table, no writes, no settings, no accounts.
    const NO_TABLE_ACCESS: u16 = 1142;
    const NO_DATABASE_ACCESS: u16 = 1044;
    const NEEDS_PRIVILEGE: u16 = 1227;
    for (statement, refusal) in [
        ("SELECT * FROM mysql.user", NO_TABLE_ACCESS),
        ("SELECT * FROM mysql.global_priv", NO_TABLE_ACCESS),
        ("CREATE TABLE other.t (id INT)", NO_TABLE_ACCESS),
        ("USE other", NO_DATABASE_ACCESS),
        ("INSERT INTO ironic.nodes VALUES (99999, 'x')", NO_TABLE_ACCESS),
        ("DROP TABLE ironic.nodes", NO_TABLE_ACCESS),
        ("CREATE USER 'intruder'@'%'", NEEDS_PRIVILEGE),
        ("SET GLOBAL innodb_fast_shutdown = 1", NEEDS_PRIVILEGE),
        ("SET GLOBAL require_secure_transport = OFF", NEEDS_PRIVILEGE),
    ] {
        assert_eq!(run_as(&server, MAINTENANCE_USER, PASSWORD, statement).await?, Err(refusal), "{statement}");
    }
    // It cannot run mariadb-upgrade: that is the upgrade account's, during a version change.
    let upgrade = run_script(&server, &jobs::upgrade_script(&fixture.inputs()), MAINTENANCE_USER, PASSWORD, dir.path());
    assert!(!upgrade.status.success(), "mariadb-upgrade as the maintenance account");
    Ok(())
}

#[tokio::test]
async fn the_upgrade_account_exists_for_mariadb_upgrade_only_and_removes_itself() -> anyhow::Result<()> {
    // The new server of a version change starts with the upgrade account.
    let options = pod(init(PASSWORD, UpgradeAccount::Present), Some(certificate()?));
    let mut server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    write_data(&server).await?;
    assert_eq!(grants(&server, UPGRADE_USER).await?, ["GRANT ALL PRIVILEGES ON *.* TO `ferrometal-upgrade`@`%`"]);

    // The mariadb-upgrade Job's script, as it runs in its pod: the data directory is not where
    // it runs, so it does every phase (here, the same version, after its record is removed).
    std::fs::remove_file(server.data_dir().join("mysql_upgrade_info"))?;
    let fixture = JobFixture::new(&server);
    let dir = tempfile::tempdir()?;
    let output = run_script(&server, &jobs::upgrade_script(&fixture.inputs()), UPGRADE_USER, PASSWORD, dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "mariadb-upgrade failed: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("Phase 8/8"), "every phase ran: {stdout}");

    // Done: it removes itself, and a second attempt (after a crash) finds it gone.
    let upgrade = target(&server, credentials(UPGRADE_USER, PASSWORD));
    check::drop_upgrade_account(&upgrade).await?;
    assert!(!accounts(&server).await?.iter().any(|(u, _)| u == UPGRADE_USER));
    assert_eq!(over_tcp(&server, UPGRADE_USER, PASSWORD).await.err().map(|e| e.reason()), Some("AuthenticationFailed"));
    check::drop_upgrade_account(&upgrade).await?;

    // Should the server restart before that, it comes back; a start after the change drops it.
    server.shutdown().await?;
    server.restart().await?;
    assert!(accounts(&server).await?.iter().any(|(u, _)| u == UPGRADE_USER), "the window is still open");
    server.shutdown().await?;
    let mut closed = server.options().clone();
    closed.init_sql = Some(init(PASSWORD, UpgradeAccount::Absent));
    server.configure(&closed)?;
    server.restart().await?;
    assert!(!accounts(&server).await?.iter().any(|(u, _)| u == UPGRADE_USER), "closed at the next start");
    assert!(init_errors(&server).is_empty(), "{:?}", init_errors(&server));
    Ok(())
}

#[tokio::test]
async fn a_new_maintenance_password_takes_effect_at_the_next_start() -> anyhow::Result<()> {
    let mut server = MariaDb::start(MariaDbConfig {
        options: pod(init(PASSWORD, UpgradeAccount::Absent), None),
        ..Default::default()
    })
    .await?;
    over_tcp(&server, MAINTENANCE_USER, PASSWORD).await?.close().await?;
    server.shutdown().await?;
    server.configure(&pod(init("rotated-password-0123456789", UpgradeAccount::Absent), None))?;
    server.restart().await?;
    assert!(over_tcp(&server, MAINTENANCE_USER, PASSWORD).await.is_err(), "the old password is refused");
    over_tcp(&server, MAINTENANCE_USER, "rotated-password-0123456789").await?.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_server_that_would_stop_fast_holds_a_version_change_until_its_pod_is_replaced() -> anyhow::Result<()> {
    // The flag is read, never set: no network account may set it. A server started without
    // --innodb-fast-shutdown=0 (a pod from before it) waits; the pod of the current template passes.
    let init_sql = init(PASSWORD, UpgradeAccount::Absent);
    let options = ServerOptions { slow_shutdown: false, ..pod(init_sql.clone(), None) };
    let mut server = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    let maintenance = target(&server, credentials(MAINTENANCE_USER, PASSWORD));
    let err = check::prepare_for_version_change(&maintenance).await.expect_err("the next stop would be fast");
    assert_eq!(err.reason(), "SlowShutdownNotSet", "{err}");
    assert!(err.is_transient(), "it waits for the pod of the current template: {err}");
    assert!(err.to_string().contains("--innodb-fast-shutdown=0"), "{err}");
    server.shutdown().await?;
    server.configure(&pod(init_sql, None))?;
    server.restart().await?;
    check::prepare_for_version_change(&maintenance).await?;
    Ok(())
}
