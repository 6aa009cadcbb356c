//! A private MariaDB server per test: its own data directory, a free
//! loopback port, started by hand (never as a system service).

use crate::pki::{Authority, loopback};
use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use crate::{env, ports, wait};
use anyhow::Context;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor, MySqlConnection};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The administrator the harness creates (all privileges, over TCP).
pub const ADMIN_USER: &str = "ferrometal";
/// Its password. Test-only.
pub const ADMIN_PASSWORD: &str = "ferrometal-admin";

/// A server's configuration.
#[derive(Clone, Debug, Default)]
pub struct MariaDbConfig {
    /// Offer TLS with a certificate from a fresh test CA.
    pub tls: bool,
    /// What a managed database's pod would give the server, from its first start.
    pub options: ServerOptions,
}

/// What a managed database's pod gives its server on top of the harness's own configuration
/// (the StatefulSet's arguments and the Secrets it mounts), in force from the next start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerOptions {
    /// The init file (`--init-file`), applied by the server at every start.
    pub init_sql: Option<String>,
    /// `--innodb-fast-shutdown=0`: every stop is the slow one.
    pub slow_shutdown: bool,
    /// TLS served with this certificate.
    pub tls: Option<ServedCertificate>,
    /// `--require-secure-transport=ON`: TCP clients must use TLS (the harness's own clients
    /// then ask for it).
    pub require_secure_transport: bool,
}

/// A serving certificate, its key and the CA clients verify it with (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedCertificate {
    pub cert_pem: String,
    pub key_pem: String,
    pub ca_pem: String,
}

/// A running (or stopped) MariaDB server. Dropping it stops the server and
/// removes its data.
pub struct MariaDb {
    port: u16,
    ca_pem: Option<String>,
    defaults_file: PathBuf,
    /// The option file as the harness writes it, before any [`ServerOptions`].
    base_cnf: String,
    options: ServerOptions,
    process: Option<ManagedProcess>,
    dir: WorkDir,
}

impl MariaDb {
    /// Initialises a data directory, starts the server and creates the
    /// administrator.
    pub async fn start(config: MariaDbConfig) -> crate::Result<Self> {
        crate::init();
        let dir = WorkDir::new("mariadb")?;
        let port = ports::free_port()?;
        let data = dir.subdir("data")?;
        let run = dir.subdir("run")?;
        // A private tmpdir: MariaDB removes the `#sql*` temporary files it finds in its tmpdir,
        // so servers sharing /tmp delete each other's temporary tables (seen as
        // mariadb-install-db failing with "Unknown table 'mysql.tmp_user_nopasswd'" while
        // another test's server started).
        let tmp = dir.subdir("tmp")?;
        let mut cnf = format!(
            "[mysqld]
datadir = {data}
tmpdir = {tmp}
socket = {socket}
pid-file = {run}/mysqld.pid
bind-address = 127.0.0.1
port = {port}
skip-name-resolve
user = root
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
max_connections = 300
log-error = {log}
character-set-server = utf8mb3
collation-server = utf8mb3_general_ci
",
            data = data.display(),
            tmp = tmp.display(),
            socket = run.join("mysqld.sock").display(),
            run = run.display(),
            log = dir.path().join("mariadb-error.log").display(),
        );
        let ca_pem = if config.tls {
            let ca = Authority::new("mariadb-test-ca")?;
            let cert = ca.server(&["localhost"], &[loopback()])?;
            let ca_file = dir.write("ca.crt", ca.cert_pem())?;
            let cert_file = dir.write("server.crt", &cert.cert_pem)?;
            let key_file = dir.write("server.key", &cert.key_pem)?;
            cnf.push_str(&format!(
                "ssl-ca = {}\nssl-cert = {}\nssl-key = {}\n",
                ca_file.display(),
                cert_file.display(),
                key_file.display()
            ));
            Some(ca.cert_pem().to_string())
        } else {
            None
        };
        let defaults_file = dir.write("my.cnf", &cnf)?;

        let output = Command::new(env::system_bin("mariadb-install-db")?)
            .arg(format!("--defaults-file={}", defaults_file.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .output()
            .context("running mariadb-install-db")?;
        std::fs::write(dir.path().join("install-db.log"), [&output.stdout[..], &output.stderr[..]].concat())?;
        anyhow::ensure!(
            output.status.success(),
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );

        let options = ServerOptions::default();
        let mut server = Self { port, ca_pem, defaults_file, base_cnf: cnf, options, process: None, dir };
        server.configure(&config.options)?;
        server.launch().await?;
        // Root may log in through the socket only; tests and Ironic use TCP.
        let socket = server.dir.path().join("run").join("mysqld.sock");
        // The socket needs no TLS; sqlx would otherwise negotiate it when the
        // server offers it, and the socket session breaks on close.
        let mut root = sqlx::mysql::MySqlConnectOptions::new()
            .socket(&socket)
            .username("root")
            .ssl_mode(sqlx::mysql::MySqlSslMode::Disabled)
            .connect()
            .await?;
        for statement in [
            format!("CREATE USER '{ADMIN_USER}'@'127.0.0.1' IDENTIFIED BY '{ADMIN_PASSWORD}'"),
            format!("GRANT ALL PRIVILEGES ON *.* TO '{ADMIN_USER}'@'127.0.0.1' WITH GRANT OPTION"),
        ] {
            root.execute(AssertSqlSafe(statement)).await?;
        }
        root.close().await?;
        Ok(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ManagedProcess::pid)
    }

    /// The CA that signed the server's certificate, when TLS is on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A `mysql://` URL for the administrator (for sqlx), optionally naming a database; over
    /// TLS when the server requires it.
    pub fn admin_url(&self, database: Option<&str>) -> String {
        let tls = if self.options.require_secure_transport { "?ssl-mode=required" } else { "" };
        format!("mysql://{ADMIN_USER}:{ADMIN_PASSWORD}@127.0.0.1:{}/{}{tls}", self.port, database.unwrap_or(""))
    }

    /// The options a managed database's pod gives the server, as last configured.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Gives the server `options` (replacing earlier ones), from its next start: the init
    /// file, the certificate and the CA are written beside the option file.
    pub fn configure(&mut self, options: &ServerOptions) -> crate::Result<()> {
        let mut cnf = self.base_cnf.clone();
        if let Some(sql) = &options.init_sql {
            let file = self.dir.write("pod-init.sql", sql)?;
            cnf.push_str(&format!("init-file = {}\n", file.display()));
        }
        if options.slow_shutdown {
            cnf.push_str("innodb_fast_shutdown = 0\n");
        }
        if let Some(tls) = &options.tls {
            let cert = self.dir.write("pod-tls.crt", &tls.cert_pem)?;
            let key = self.dir.write("pod-tls.key", &tls.key_pem)?;
            let ca = self.dir.write("pod-tls-ca.crt", &tls.ca_pem)?;
            cnf.push_str(&format!(
                "ssl-cert = {}\nssl-key = {}\nssl-ca = {}\n",
                cert.display(),
                key.display(),
                ca.display()
            ));
        }
        if options.require_secure_transport {
            cnf.push_str("require_secure_transport = ON\n");
        }
        std::fs::write(&self.defaults_file, cnf)?;
        self.ca_pem = options.tls.as_ref().map(|t| t.ca_pem.clone()).or_else(|| self.ca_pem.clone());
        self.options = options.clone();
        Ok(())
    }

    /// The file of the CA the server's certificate verifies with, when it serves TLS from
    /// [`ServerOptions`].
    pub fn served_ca_file(&self) -> Option<PathBuf> {
        self.options.tls.as_ref().map(|_| self.dir.path().join("pod-tls-ca.crt"))
    }

    /// Ironic's SQLAlchemy URL for `database`, as ironic-image builds it: with the CA when the
    /// server serves TLS (`&ssl=on&ssl_ca=`; PyMySQL then verifies the server and its name).
    pub fn ironic_url(&self, database: &str, user: &str, password: &str) -> String {
        let tls = self.served_ca_file().map(|ca| format!("&ssl=on&ssl_ca={}", ca.display())).unwrap_or_default();
        format!("mysql+pymysql://{user}:{password}@127.0.0.1:{}/{database}?charset=utf8{tls}", self.port)
    }

    /// Creates `database` with a user `user`/`password` that owns it.
    pub async fn create_database(&self, database: &str, user: &str, password: &str) -> crate::Result<()> {
        let mut conn = MySqlConnection::connect(&self.admin_url(None)).await?;
        for statement in [
            format!("CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb3"),
            format!("CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'"),
            format!("GRANT ALL PRIVILEGES ON `{database}`.* TO '{user}'@'127.0.0.1'"),
        ] {
            conn.execute(AssertSqlSafe(statement)).await?;
        }
        conn.close().await?;
        Ok(())
    }

    /// Creates a database and user for Ironic and returns the SQLAlchemy URL
    /// Ironic's `[database] connection` takes.
    pub async fn ironic_database(&self, database: &str) -> crate::Result<String> {
        self.create_database(database, database, "ironic-db-password").await?;
        Ok(format!("mysql+pymysql://{database}:ironic-db-password@127.0.0.1:{}/{database}?charset=utf8", self.port))
    }

    /// Runs `ironic-dbsync <command>` (Ironic's own schema tool, from the virtualenv; what
    /// ironic-image's schema Job runs) against `database` as `user`, and returns the last line
    /// it printed (log lines come first). `create_schema` builds the tables `upgrade` would,
    /// in seconds instead of a minute of migrations.
    pub fn ironic_dbsync(&self, database: &str, user: &str, password: &str, command: &str) -> crate::Result<String> {
        self.ironic_dbsync_at(&self.ironic_url(database, user, password), database, command)
    }

    /// `ironic-dbsync <command>` with the SQLAlchemy URL `url` (for `database`'s log names).
    pub fn ironic_dbsync_at(&self, url: &str, database: &str, command: &str) -> crate::Result<String> {
        let conf =
            self.dir.write(&format!("ironic-dbsync-{database}.conf"), format!("[database]\nconnection = {url}\n"))?;
        let output = Command::new(env::venv_bin("ironic-dbsync")?)
            .arg("--config-file")
            .arg(&conf)
            .arg(command)
            .output()
            .context("running ironic-dbsync")?;
        std::fs::write(
            self.dir.path().join(format!("ironic-dbsync-{database}-{command}.log")),
            [&output.stdout[..], &output.stderr[..]].concat(),
        )?;
        // oslo.log writes Ironic's own errors to stdout.
        anyhow::ensure!(
            output.status.success(),
            "ironic-dbsync {command} failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        Ok(stdout.lines().last().unwrap_or_default().trim().to_string())
    }

    /// The server's error log, where InnoDB reports start-up and shutdown.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mariadb-error.log")).unwrap_or_default()
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    /// Shuts the server down with SIGTERM, which MariaDB treats as a normal
    /// shutdown (honouring `innodb_fast_shutdown`), and waits for it.
    pub async fn shutdown(&mut self) -> crate::Result<()> {
        if let Some(mut process) = self.process.take() {
            let clean = process.stop(Duration::from_secs(120)).await?;
            anyhow::ensure!(clean, "MariaDB did not stop within 120 s and was killed");
        }
        Ok(())
    }

    /// Kills the server without a shutdown, leaving redo logs to recover.
    pub fn crash(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// Starts the server again on the same data directory and port.
    pub async fn restart(&mut self) -> crate::Result<()> {
        anyhow::ensure!(self.process.is_none(), "MariaDB is still running");
        self.launch().await
    }

    async fn launch(&mut self) -> crate::Result<()> {
        let mut cmd = Command::new(env::system_bin("mariadbd")?);
        cmd.arg(format!("--defaults-file={}", self.defaults_file.display()));
        // Ready means "ready for connections" in the log, not only listening sockets: the
        // sockets open before the server has finished starting, and a SIGTERM sent in between
        // was seen to go unanswered (a test's shutdown right after a restart then timed out).
        let error_log = self.dir.path().join("mariadb-error.log");
        let started_before = ready_lines(&error_log);
        let mut process = ManagedProcess::spawn("mariadbd", cmd, &self.dir.path().join("mariadbd-stdout.log"))?;
        let socket = self.dir.path().join("run").join("mysqld.sock");
        let port = self.port;
        wait::until_ok("MariaDB", Duration::from_secs(60), Duration::from_millis(100), || {
            let alive = process.ensure_running();
            let socket = socket.clone();
            let started = ready_lines(&error_log) > started_before;
            async move {
                alive?;
                let ready = started
                    && tokio::net::UnixStream::connect(&socket).await.is_ok()
                    && tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok();
                Ok(ready.then_some(()))
            }
        })
        .await?;
        self.process = Some(process);
        Ok(())
    }
}

/// How often the server said it is ready for connections in `log` so far.
fn ready_lines(log: &Path) -> usize {
    std::fs::read_to_string(log).map(|text| text.matches("ready for connections").count()).unwrap_or(0)
}

/// Drops and recreates the database an SQLAlchemy or sqlx URL names.
pub async fn recreate_database(url: &str) -> crate::Result<()> {
    let parsed = url::Url::parse(&url.replacen("mysql+pymysql://", "mysql://", 1))?;
    let database = parsed.path().trim_start_matches('/').to_string();
    anyhow::ensure!(!database.is_empty(), "the URL names no database");
    let mut server = parsed.clone();
    server.set_path("/");
    server.set_query(None);
    let mut conn = MySqlConnection::connect(server.as_str()).await?;
    conn.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS `{database}`"))).await?;
    conn.execute(AssertSqlSafe(format!("CREATE DATABASE `{database}` CHARACTER SET utf8mb3"))).await?;
    conn.close().await?;
    Ok(())
}
