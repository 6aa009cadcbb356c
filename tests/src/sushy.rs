//! sushy-tools: emulated Redfish BMCs, without libvirt.
//!
//! The stock fake driver has no CPUs, memory or disks, so Ironic's redfish
//! inspection fails against it; `tests/python/sushy_emulator.py` gives each
//! emulated system hardware, and the config below gives it the Storage,
//! Drives and Volumes resources inspection reads.

use crate::pki::{Authority, loopback};
use crate::process::ManagedProcess;
use crate::workdir::WorkDir;
use crate::{env, ports, wait};
use rand::Rng;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

/// An emulator's configuration.
#[derive(Clone, Debug)]
pub struct SushyConfig {
    /// How many systems (machines) to emulate.
    pub systems: usize,
    /// Require HTTP basic auth with these credentials.
    pub auth: Option<(String, String)>,
    /// Serve HTTPS (TLS 1.2, the only version sushy-tools speaks) with a
    /// certificate from a fresh test CA.
    pub tls: bool,
    /// Apply power changes at once instead of sushy-tools' random 1-11 s.
    pub instant_power: bool,
    pub cpus: u32,
    pub memory_gib: u32,
    pub disk_gib: u32,
    /// The address it listens on: loopback, unless pods on a real node must reach it (the
    /// node's address on the pod bridge).
    pub listen: std::net::IpAddr,
}

impl Default for SushyConfig {
    fn default() -> Self {
        Self {
            systems: 1,
            auth: None,
            tls: false,
            instant_power: true,
            cpus: 4,
            memory_gib: 8,
            disk_gib: 50,
            listen: loopback(),
        }
    }
}

/// One emulated machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulatedSystem {
    pub uuid: String,
    pub name: String,
    /// Its NIC's MAC address: the boot MAC a BareMetalHost names.
    pub mac: String,
}

/// A running emulator. Dropping it stops the emulator.
pub struct Sushy {
    endpoint: String,
    systems: Vec<EmulatedSystem>,
    config: SushyConfig,
    ca_pem: Option<String>,
    process: ManagedProcess,
    dir: WorkDir,
}

impl Sushy {
    /// Starts the emulator and waits until it lists its systems.
    pub async fn start(config: SushyConfig) -> crate::Result<Self> {
        crate::init();
        let dir = WorkDir::new("sushy")?;
        let port = ports::free_port()?;
        let systems = make_systems(config.systems);
        let descriptors: Vec<_> = systems
            .iter()
            .map(|s| {
                json!({"uuid": s.uuid, "name": s.name, "power_state": "Off", "external_notifier": false,
                    "nics": [{"mac": s.mac, "ip": "127.0.0.1"}],
                    "cpus": config.cpus, "memory_gib": config.memory_gib, "disk_gib": config.disk_gib})
            })
            .collect();
        let systems_file = dir.write("systems.json", serde_json::to_vec_pretty(&descriptors)?)?;
        let state = dir.subdir("state")?;

        let mut conf = format!(
            "import json
SUSHY_EMULATOR_LISTEN_IP = '{listen}'
SUSHY_EMULATOR_LISTEN_PORT = {port}
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_STATE_DIR = {state:?}
FERROMETAL_INSTANT_POWER = {instant}
with open({systems_file:?}) as f:
    SUSHY_EMULATOR_FAKE_SYSTEMS = json.load(f)
_GIB = 1024 ** 3
SUSHY_EMULATOR_STORAGE = {{s['uuid']: [{{'Id': '1', 'Name': 'Local Storage Controller',
    'StorageControllers': [{{'MemberId': '0', 'Name': 'RAID', 'SpeedGbps': 12}}], 'Drives': ['D0']}}]
    for s in SUSHY_EMULATOR_FAKE_SYSTEMS}}
SUSHY_EMULATOR_DRIVES = {{(s['uuid'], '1'): [{{'Id': 'D0', 'Name': 'Drive 0',
    'CapacityBytes': s['disk_gib'] * _GIB, 'Protocol': 'SAS'}}] for s in SUSHY_EMULATOR_FAKE_SYSTEMS}}
# Non-empty volume lists make the emulator answer 501.
SUSHY_EMULATOR_VOLUMES = {{(s['uuid'], '1'): [] for s in SUSHY_EMULATOR_FAKE_SYSTEMS}}
",
            state = state.display().to_string(),
            systems_file = systems_file.display().to_string(),
            instant = if config.instant_power { "True" } else { "False" },
            listen = config.listen,
        );
        if let Some((user, password)) = &config.auth {
            let hash = bcrypt::hash(password, 4)?;
            let file = dir.write("htpasswd", format!("{user}:{hash}\n"))?;
            conf.push_str(&format!("SUSHY_EMULATOR_AUTH_FILE = {:?}\n", file.display().to_string()));
        }
        let ca_pem = if config.tls {
            let ca = Authority::new("sushy-test-ca")?;
            let cert = ca.server(&["localhost"], &[config.listen])?;
            let cert_file = dir.write("sushy.crt", &cert.cert_pem)?;
            let key_file = dir.write("sushy.key", &cert.key_pem)?;
            conf.push_str(&format!(
                "SUSHY_EMULATOR_SSL_CERT = {:?}\nSUSHY_EMULATOR_SSL_KEY = {:?}\n",
                cert_file.display().to_string(),
                key_file.display().to_string()
            ));
            Some(ca.cert_pem().to_string())
        } else {
            None
        };
        let conf_file = dir.write("emulator.conf", conf)?;

        let mut cmd = Command::new(env::python()?);
        cmd.arg(env::python_script("sushy_emulator.py")).arg("--config").arg(&conf_file).arg("--fake");
        cmd.env("PYTHONWARNINGS", "ignore");
        let mut process = ManagedProcess::spawn("sushy-emulator", cmd, &dir.path().join("sushy.log"))?;
        let scheme = if config.tls { "https" } else { "http" };
        let endpoint = format!("{scheme}://{}", std::net::SocketAddr::from((config.listen, port)));

        let mut builder = reqwest::Client::builder();
        if let Some(ca) = &ca_pem {
            builder = builder.tls_certs_only([reqwest::Certificate::from_pem(ca.as_bytes())?]);
        }
        let probe = builder.build()?;
        let url = format!("{endpoint}/redfish/v1/Systems");
        let want = systems.len();
        wait::until_ok("sushy-tools", Duration::from_secs(30), Duration::from_millis(100), || {
            let alive = process.ensure_running();
            let mut request = probe.get(&url);
            if let Some((user, password)) = &config.auth {
                request = request.basic_auth(user, Some(password));
            }
            async move {
                alive?;
                let Ok(response) = request.send().await else { return Ok(None) };
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                let members = body["Members"].as_array().map(Vec::len).unwrap_or(0);
                Ok((members == want).then_some(()))
            }
        })
        .await?;
        Ok(Self { endpoint, systems, config, ca_pem, process, dir })
    }

    /// The emulator's base URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The host and port, as a BMC URL takes them (`127.0.0.1:PORT`, or the listen address).
    pub fn host_port(&self) -> &str {
        self.endpoint.split("://").nth(1).unwrap_or_default()
    }

    pub fn systems(&self) -> &[EmulatedSystem] {
        &self.systems
    }

    /// The Redfish path of a system, as Ironic's `redfish_system_id`.
    pub fn redfish_system_id(&self, system: &EmulatedSystem) -> String {
        format!("/redfish/v1/Systems/{}", system.uuid)
    }

    /// A BareMetalHost BMC address for `system`, e.g.
    /// `redfish-virtualmedia+http://127.0.0.1:PORT/redfish/v1/Systems/UUID`.
    pub fn bmc_address(&self, scheme: &str, system: &EmulatedSystem) -> String {
        let transport = if self.config.tls { "https" } else { "http" };
        format!("{scheme}+{transport}://{}{}", self.host_port(), self.redfish_system_id(system))
    }

    /// The basic-auth credentials, when auth is on.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.config.auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The CA that signed the emulator's certificate, when TLS is on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The emulator's directory (configuration, state, log).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The power state Redfish reports for `system` ("On" or "Off").
    pub async fn power_state(&self, system: &EmulatedSystem) -> crate::Result<String> {
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = &self.ca_pem {
            builder = builder.tls_certs_only([reqwest::Certificate::from_pem(ca.as_bytes())?]);
        }
        let mut request = builder.build()?.get(format!("{}{}", self.endpoint, self.redfish_system_id(system)));
        if let Some((user, password)) = self.credentials() {
            request = request.basic_auth(user, Some(password));
        }
        let body: serde_json::Value = request.send().await?.error_for_status()?.json().await?;
        Ok(body["PowerState"].as_str().unwrap_or_default().to_string())
    }
}

fn make_systems(count: usize) -> Vec<EmulatedSystem> {
    let mut rng = rand::rng();
    (0..count)
        .map(|i| {
            let bytes: [u8; 16] = rng.random();
            let uuid = format!(
                "{}-{}-4{}-8{}-{}",
                hex::encode(&bytes[0..4]),
                hex::encode(&bytes[4..6]),
                &hex::encode(&bytes[6..8])[1..],
                &hex::encode(&bytes[8..10])[1..],
                hex::encode(&bytes[10..16])
            );
            // 52:54:00 is the QEMU/KVM prefix labs already recognise as virtual.
            let mac = format!("52:54:00:{:02x}:{:02x}:{:02x}", rng.random::<u8>(), rng.random::<u8>(), i % 256);
            EmulatedSystem { uuid, name: format!("bmc-{i}"), mac }
        })
        .collect()
}
