//! A real Ironic from the virtualenv, on loopback: the all-in-one `ironic` service (API and
//! conductor in one process, no RPC), or an API process beside conductors that it reaches
//! over JSON-RPC, sharing a MariaDB database, as a scaled-out Ironic runs.
//!
//! It offers noauth or HTTP basic auth, SQLite or MariaDB, plain HTTP or
//! TLS, and the fake-hardware, redfish and ipmi hardware types. Next to it
//! runs an image server: Ironic publishes virtual-media ISOs there, and
//! tests serve the images hosts deploy from it.

use crate::http_server::HttpServer;
use crate::pki::{Authority, loopback};
use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use crate::{env, ports, wait};
use anyhow::Context;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How clients authenticate to Ironic.
#[derive(Clone, Debug, Default)]
pub enum IronicAuth {
    #[default]
    NoAuth,
    /// HTTP basic auth against a bcrypt htpasswd file.
    Basic { username: String, password: String },
}

/// Where Ironic keeps its state.
#[derive(Clone, Debug, Default)]
pub enum IronicDatabase {
    /// A SQLite file in the server's directory.
    #[default]
    Sqlite,
    /// A MySQL/MariaDB database, as an SQLAlchemy URL
    /// (`mysql+pymysql://user:password@127.0.0.1:PORT/name?charset=utf8`);
    /// see [`crate::mariadb::MariaDb::ironic_database`].
    MySql { url: String },
}

/// An Ironic server's configuration.
#[derive(Clone, Debug)]
pub struct IronicConfig {
    pub auth: IronicAuth,
    pub database: IronicDatabase,
    /// Serve the API over HTTPS with a certificate from a fresh test CA.
    pub tls: bool,
    /// Make redfish BMC connections cheap (see `tests/python/ironic_server.py`).
    pub fast_redfish: bool,
    /// Ironic's `[conductor] automated_clean`.
    pub automated_clean: bool,
    /// Further `ironic.conf` options as `(section, key, value)`.
    pub extra: Vec<(String, String, String)>,
    /// DNS names the TLS certificate covers besides `localhost`, such as the Service name
    /// of an `Ironic` the operator derives its endpoint from.
    pub server_names: Vec<String>,
    /// Conductors beside a separate API process, reached over JSON-RPC; 0 runs the all-in-one
    /// service. Conductors share state through the database: give them MySql.
    pub conductors: usize,
}

impl Default for IronicConfig {
    fn default() -> Self {
        Self {
            auth: IronicAuth::NoAuth,
            database: IronicDatabase::Sqlite,
            tls: false,
            fast_redfish: true,
            automated_clean: false,
            extra: Vec::new(),
            server_names: Vec::new(),
            conductors: 0,
        }
    }
}

/// A running Ironic. Dropping it stops Ironic and its image server.
pub struct IronicServer {
    config: IronicConfig,
    endpoint: String,
    ca_pem: Option<String>,
    conf: PathBuf,
    /// The all-in-one service, or the API then the conductors.
    processes: Vec<ManagedProcess>,
    /// Each conductor's JSON-RPC port, fixed for the server's life. A conductor whose port is
    /// not the default registers as `host:port` (`host` being 127.0.0.1), which is how the
    /// API reaches it.
    conductor_ports: Vec<u16>,
    images: HttpServer,
    dir: WorkDir,
}

impl IronicServer {
    /// Creates the database schema, starts Ironic, and waits until its API
    /// answers and its conductor has registered the drivers.
    pub async fn start(config: IronicConfig) -> crate::Result<Self> {
        crate::init();
        let dir = WorkDir::new("ironic")?;
        let images = HttpServer::start(&dir.subdir("httpboot")?, &dir).await?;
        // Ironic's image publisher checks for this directory, then makes it: two redfish deploys
        // at once on a fresh Ironic can both find it missing, and one fails with
        // `FileExistsError`. Made here, it is never missing.
        dir.subdir("httpboot/redfish")?;
        let port = ports::free_port()?;
        let scheme = if config.tls { "https" } else { "http" };
        let endpoint = format!("{scheme}://127.0.0.1:{port}");

        let mut conf = render_conf(&config, &dir, port, &endpoint, images.url())?;
        let ca_pem = if config.tls {
            let ca = Authority::new("ironic-test-ca")?;
            let mut names = vec!["localhost"];
            names.extend(config.server_names.iter().map(String::as_str));
            let cert = ca.server(&names, &[loopback()])?;
            let cert_file = dir.write("ironic.crt", &cert.cert_pem)?;
            let key_file = dir.write("ironic.key", &cert.key_pem)?;
            writeln!(
                conf,
                "\n[api]\nenable_ssl_api = true\ncert_file = {}\nkey_file = {}",
                cert_file.display(),
                key_file.display()
            )?;
            Some(ca.cert_pem().to_string())
        } else {
            None
        };
        let conf_path = dir.write("ironic.conf", conf)?;
        let conductor_ports = (0..config.conductors).map(|_| ports::free_port()).collect::<Result<Vec<_>, _>>()?;

        let mut server =
            Self { config, endpoint, ca_pem, conf: conf_path, processes: Vec::new(), conductor_ports, images, dir };
        server.create_schema()?;
        server.launch().await?;
        Ok(server)
    }

    /// The API's address, `127.0.0.1:PORT`.
    pub fn socket_addr(&self) -> crate::Result<std::net::SocketAddr> {
        let url = url::Url::parse(&self.endpoint)?;
        let port = url.port().ok_or_else(|| anyhow::anyhow!("the Ironic endpoint has no port"))?;
        Ok(std::net::SocketAddr::from((loopback(), port)))
    }

    /// The API endpoint, `http(s)://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The CA that signed Ironic's certificate, when TLS is on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The basic-auth credentials, when basic auth is on.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        match &self.config.auth {
            IronicAuth::Basic { username, password } => Some((username, password)),
            IronicAuth::NoAuth => None,
        }
    }

    /// The image server next to Ironic.
    pub fn image_server(&self) -> &HttpServer {
        &self.images
    }

    /// The generated `ironic.conf`.
    pub fn config_path(&self) -> &Path {
        &self.conf
    }

    /// The server's directory (configuration, state, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Process id of Ironic's main process (the all-in-one service or the API), when running.
    pub fn pid(&self) -> Option<u32> {
        self.processes.first().map(ManagedProcess::pid)
    }

    /// Process ids of every Ironic process: the API first, then the conductors.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(ManagedProcess::pid).collect()
    }

    /// A reqwest client that trusts Ironic's CA and sends the microversion
    /// header, for tests that inspect Ironic directly.
    pub fn http_client(&self) -> crate::Result<reqwest::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        // The newest version this release speaks: Ironic refuses a newer one with a 406.
        let (major, minor) = crate::env::IronicRelease::chosen()?.max_api_version();
        headers.insert(
            "X-OpenStack-Ironic-API-Version",
            reqwest::header::HeaderValue::from_str(&format!("{major}.{minor}"))?,
        );
        let mut builder = reqwest::Client::builder().default_headers(headers);
        if let Some(ca) = &self.ca_pem {
            builder = builder.tls_certs_only([reqwest::Certificate::from_pem(ca.as_bytes())?]);
        }
        Ok(builder.build()?)
    }

    /// `GET {endpoint}{path}` with the configured credentials, as JSON.
    pub async fn get_json(&self, path: &str) -> crate::Result<serde_json::Value> {
        let mut request = self.http_client()?.get(format!("{}{path}", self.endpoint));
        if let Some((user, password)) = self.credentials() {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await?;
        let status = response.status();
        let body = response.text().await?;
        anyhow::ensure!(status.is_success(), "GET {path}: {status}: {body}");
        Ok(serde_json::from_str(&body)?)
    }

    /// Stops Ironic gracefully (SIGTERM; it needs about 3.5 s).
    pub async fn stop(&mut self) -> crate::Result<()> {
        // The API first: nothing new reaches the conductors while they stop. Should a stop
        // fail, the processes not yet stopped are killed as they are dropped.
        for mut process in std::mem::take(&mut self.processes) {
            process.stop(Duration::from_secs(15)).await?;
        }
        Ok(())
    }

    /// Restarts Ironic on the same port. With `wipe_database`, its database
    /// is emptied and recreated first, as when an Ironic with an ephemeral
    /// database is rescheduled: every node is gone.
    pub async fn restart(&mut self, wipe_database: bool) -> crate::Result<()> {
        self.stop().await?;
        if wipe_database {
            self.wipe_database().await?;
            self.create_schema()?;
        }
        self.launch().await
    }

    fn create_schema(&self) -> crate::Result<()> {
        let output = Command::new(env::venv_bin("ironic-dbsync")?)
            .arg("--config-file")
            .arg(&self.conf)
            .arg("create_schema")
            .output()
            .context("running ironic-dbsync")?;
        std::fs::write(self.dir.path().join("ironic-dbsync.log"), [&output.stdout[..], &output.stderr[..]].concat())?;
        anyhow::ensure!(
            output.status.success(),
            "ironic-dbsync create_schema failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(())
    }

    async fn wipe_database(&self) -> crate::Result<()> {
        match &self.config.database {
            IronicDatabase::Sqlite => {
                let file = self.dir.path().join("state").join("ironic.sqlite");
                if file.exists() {
                    std::fs::remove_file(file)?;
                }
                Ok(())
            }
            IronicDatabase::MySql { url } => crate::mariadb::recreate_database(url).await,
        }
    }

    async fn launch(&mut self) -> crate::Result<()> {
        let roles: Vec<Role> = if self.conductor_ports.is_empty() {
            vec![Role::AllInOne]
        } else {
            std::iter::once(Role::Api).chain(self.conductor_ports.iter().map(|p| Role::Conductor(*p))).collect()
        };
        let mut processes = Vec::new();
        for role in roles {
            processes.push(self.spawn(role)?);
        }
        let client = self.http_client()?;
        let credentials = self.credentials().map(|(u, p)| (u.to_string(), p.to_string()));
        let (endpoint, conductors) = (self.endpoint.clone(), self.conductor_ports.len());
        wait::until_ok("Ironic's API and conductors", Duration::from_secs(90), Duration::from_millis(200), || {
            let alive: crate::Result<()> = processes.iter_mut().try_for_each(ManagedProcess::ensure_running);
            let get = |path: &str| {
                let request = client.get(format!("{endpoint}{path}"));
                match &credentials {
                    Some((user, password)) => request.basic_auth(user, Some(password)),
                    None => request,
                }
            };
            let (drivers, registered) = (get("/v1/drivers"), get("/v1/conductors"));
            async move {
                alive?;
                // The drivers list fills once a conductor has registered; a split Ironic
                // waits for every conductor.
                let ready = listed(drivers, "drivers").await >= 1
                    && (conductors == 0 || listed(registered, "conductors").await >= conductors);
                Ok(ready.then_some(()))
            }
        })
        .await?;
        self.processes = processes;
        Ok(())
    }

    /// Starts one Ironic process, with its role's configuration file after the shared one.
    fn spawn(&self, role: Role) -> crate::Result<ManagedProcess> {
        let mut cmd = Command::new(env::python()?);
        cmd.arg(env::python_script("ironic_server.py")).arg("--config-file").arg(&self.conf);
        let (name, role_conf) = match role {
            Role::AllInOne => ("ironic".to_string(), None),
            Role::Api => (
                "ironic-api".to_string(),
                Some("[DEFAULT]\nlog_file = ironic-api.log\n[api]\napi_workers = 1\n".to_string()),
            ),
            Role::Conductor(port) => (
                format!("ironic-conductor-{port}"),
                Some(format!(
                    "[DEFAULT]\nhost = 127.0.0.1\nlog_file = ironic-conductor-{port}.log\n[json_rpc]\nport = {port}\n"
                )),
            ),
        };
        if let Some(text) = role_conf {
            cmd.arg("--config-file").arg(self.dir.write(&format!("{name}.conf"), text)?);
        }
        cmd.env("FERROMETAL_IRONIC_ROLE", role.script_role());
        if self.config.fast_redfish {
            cmd.env("FERROMETAL_FAST_REDFISH", "1");
        }
        cmd.env("PYTHONWARNINGS", "ignore");
        let log = self.dir.path().join(format!("{name}.log"));
        Ok(ManagedProcess::spawn(&name, cmd, &self.dir.path().join(format!("{name}-stdout.log")))?.with_log(&log))
    }
}

/// What one Ironic process runs.
#[derive(Clone, Copy, Debug)]
enum Role {
    AllInOne,
    Api,
    /// A conductor serving JSON-RPC on this port.
    Conductor(u16),
}

impl Role {
    /// `FERROMETAL_IRONIC_ROLE` for `tests/python/ironic_server.py`.
    fn script_role(self) -> &'static str {
        match self {
            Role::AllInOne => "all",
            Role::Api => "api",
            Role::Conductor(_) => "conductor",
        }
    }
}

/// How many entries of `key` the JSON answer to `request` lists (0 on any failure), without
/// those that say they are not alive (a conductor stopped before a restart stays listed).
async fn listed(request: reqwest::RequestBuilder, key: &str) -> usize {
    let Ok(response) = request.send().await else { return 0 };
    if !response.status().is_success() {
        return 0;
    }
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    body[key].as_array().map_or(0, |entries| entries.iter().filter(|e| e["alive"] != false).count())
}

fn render_conf(
    config: &IronicConfig,
    dir: &WorkDir,
    port: u16,
    endpoint: &str,
    image_url: &str,
) -> crate::Result<String> {
    let state = dir.subdir("state")?;
    let tmp = dir.subdir("state/tmp")?;
    let locks = dir.subdir("locks")?;
    let httpboot = dir.path().join("httpboot");
    let (auth_strategy, auth_file) = match &config.auth {
        IronicAuth::NoAuth => ("noauth", String::new()),
        IronicAuth::Basic { username, password } => {
            // Ironic checks the bcrypt hash on every request; the minimum cost
            // keeps that cheap in tests. Production hashes use a real cost.
            let hash = bcrypt::hash(password, 4)?;
            let file = dir.write("htpasswd", format!("{username}:{hash}\n"))?;
            ("http_basic", format!("http_basic_auth_user_file = {}\n", file.display()))
        }
    };
    let connection = match &config.database {
        IronicDatabase::Sqlite => format!("sqlite:///{}", state.join("ironic.sqlite").display()),
        IronicDatabase::MySql { url } => url.clone(),
    };
    let mut conf = format!(
        "[DEFAULT]
auth_strategy = {auth_strategy}
{auth_file}rpc_transport = {rpc_transport}
host = ironic-test
my_ip = 127.0.0.1
state_path = {state}
tempdir = {tmp}
log_dir = {logs}
log_file = ironic.log
debug = false
use_stderr = false
enabled_hardware_types = fake-hardware,redfish,ipmi
enabled_bios_interfaces = fake,no-bios,redfish
enabled_boot_interfaces = fake,redfish-virtual-media,redfish-https,ipxe,pxe
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake,ramdisk,direct,custom-agent
enabled_firmware_interfaces = fake,no-firmware,redfish
enabled_inspect_interfaces = fake,no-inspect,redfish,agent
enabled_management_interfaces = fake,redfish,ipmitool
enabled_network_interfaces = noop
enabled_power_interfaces = fake,redfish,ipmitool
enabled_raid_interfaces = fake,no-raid,redfish,agent
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor,redfish,ipmitool
default_network_interface = noop

[api]
host_ip = 127.0.0.1
port = {port}

[conductor]
automated_clean = {automated_clean}

[database]
connection = {connection}

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = {locks}

[deploy]
http_root = {httpboot}
http_url = {image_url}

[service_catalog]
endpoint_override = {endpoint}

[redfish]
firmware_update_status_interval = 2
firmware_update_fail_interval = 2
firmware_update_required_successes = 0
",
        state = state.display(),
        tmp = tmp.display(),
        logs = dir.path().display(),
        locks = locks.display(),
        httpboot = httpboot.display(),
        automated_clean = config.automated_clean,
        rpc_transport = if config.conductors == 0 { "none" } else { "json-rpc" },
    );
    if config.conductors > 0 {
        // Loopback only: the API and the conductors are on this machine.
        conf.push_str("\n[json_rpc]\nauth_strategy = noauth\nhost_ip = 127.0.0.1\n");
    }
    for (section, key, value) in &config.extra {
        writeln!(conf, "\n[{section}]\n{key} = {value}")?;
    }
    Ok(conf)
}
