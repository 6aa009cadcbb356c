//! The lab: a control plane with a real node (containerd, kubelet, kube-proxy, CoreDNS), the
//! `ferrometal` operator, the Ironic it deploys on that node from the lab's `Ironic` resource,
//! and sushy-tools BMCs, with sample hosts provisioned on emulated hardware through that Ironic
//! and the sample NodeSet's services run as real containers. `scripts/lab.sh` drives it
//! (`make lab`, `make lab-up`, `make lab-down`); `design/lab.md` explains it.

pub mod progress;
pub mod samples;

use crate::http_server::HttpServer;
use crate::node::{IRONIC_IMAGE_ARCHIVE, RealNode};
use crate::process::ManagedProcess;
use crate::sushy::{Sushy, SushyConfig};
use crate::workdir::WorkDir;
use crate::{ControlPlane, ControlPlaneConfig, ports, wait};
use anyhow::Context;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use progress::{Progress, Row};
use serde_json::Value;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Field manager of the lab's own applies (the operator uses `ferrometal`).
const FIELD_MANAGER: &str = "ferrometal-lab";
/// Name of the Secret with the spare BMC's credentials.
pub const SPARE_CREDENTIALS: &str = "spare-bmc-credentials";
/// The archive of the NodeSetServices' image (`scripts/node/service-image.sh`).
pub const SERVICE_IMAGE_ARCHIVE: &str = "nodeset-service.tar";

/// How to run the lab.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// Emulated BMCs; all but one get a sample BareMetalHost.
    pub bmcs: usize,
    /// Where the lab writes `env`, `ready`, `state.json` and its logs.
    pub state_dir: PathBuf,
    /// The `ferrometal` binary.
    pub operator: PathBuf,
    /// Draw a live table (a terminal) or print plain lines.
    pub terminal: bool,
    /// How long sample hosts may take to be provisioned.
    pub timeout: Duration,
}

/// What is running, for `lab-down` to check that nothing is left.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct LabState {
    pub pids: Vec<u32>,
    pub ports: Vec<u16>,
}

/// What runs while the lab is up. Dropping it stops every process: each server's handle
/// kills its whole process group, and the control plane stops its node.
struct Running {
    operators: Vec<ManagedProcess>,
    _machines: Machines,
    _cp: ControlPlane,
}

/// Runs the lab until `stop` resolves. A stop that comes while the lab is still starting
/// drops whatever was started so far, so Ctrl-C works at any moment.
pub async fn run(options: LabOptions, stop: impl std::future::Future<Output = ()>) -> crate::Result<()> {
    crate::init();
    tokio::pin!(stop);
    let mut running = tokio::select! {
        running = start(&options) => running?,
        () = &mut stop => {
            say(&options, "stopping the lab before it was ready");
            return Ok(());
        }
    };
    tokio::select! {
        () = stop => {}
        died = watch_processes(&mut running.operators) => return died,
    }
    say(&options, "stopping the lab");
    for operator in &mut running.operators {
        operator.stop(Duration::from_secs(20)).await?;
    }
    Ok(())
}

/// The operator's Ironic as the lab reaches it from this machine: its Service's name (which
/// its certificate carries), the ClusterIP kube-proxy takes to the pod, the published CA and
/// the generated credentials.
struct LabIronic {
    endpoint: String,
    address: SocketAddr,
    ca_file: PathBuf,
    username: String,
    password: String,
}

/// Starts everything, applies the samples, waits until every sample host is provisioned, and
/// writes `env`, `state.json`, `summary.txt` and `ready`.
async fn start(options: &LabOptions) -> crate::Result<Running> {
    let state = &options.state_dir;
    let (cp, kubeconfig) = start_cluster(options).await?;
    let machines = start_machines(options, cp.node().context("the lab's node")?.gateway()?.into()).await?;

    say(options, "starting the ferrometal operator (Ironic and NodeSet controllers, webhooks)");
    let ports = [ports::free_port()?, ports::free_port()?, ports::free_port()?];
    let mut operator = start_operator(options, &kubeconfig, ports[0], ports[1])?;
    wait_operator_ready(&mut operator, ports[0]).await?;
    let mut operators = vec![operator];

    say(
        options,
        "applying the samples: an Ironic, BareMetalHosts without an image, and a NodeSet that provisions them",
    );
    let client = cp.client();
    let names = apply_samples(&client, &machines).await?;
    let mut progress = Progress::new(options.terminal);
    let watch = Watch { client: &client, names: &names, timeout: options.timeout };
    watch.until(&mut progress, &mut operators, Goal::IronicReady).await?;
    let ironic = lab_ironic(&client, state).await?;
    say(
        options,
        &format!("the Ironic is Ready; starting the BareMetalHost controller against it ({})", ironic.address),
    );
    let mut hosts = start_host_controller(options, &kubeconfig, &ironic, ports[2])?;
    wait_operator_ready(&mut hosts, ports[2]).await?;
    operators.push(hosts);
    watch.until(&mut progress, &mut operators, Goal::Provisioned).await?;
    say(options, "every sample host is provisioned and the NodeSet is Ready");

    let spare = machines.bmcs.systems().last().context("the lab needs at least two BMCs (one is left spare)")?;
    let spare_address = machines.bmcs.bmc_address("redfish-virtualmedia", spare);
    write_env(state, &kubeconfig, &ironic, spare, &spare_address, &machines.image_url)?;
    let lab_state = LabState {
        pids: [std::process::id(), machines.images.pid(), machines.bmcs.pid()]
            .into_iter()
            .chain(operators.iter().map(ManagedProcess::pid))
            .chain(cp.pids())
            .filter(|p| *p != 0)
            .collect(),
        ports: [machines.bmcs.endpoint(), machines.images.url()]
            .into_iter()
            .filter_map(port_of)
            .chain(cp.ports().iter().copied())
            .chain(ports)
            .collect(),
    };
    // Every process and port of the lab, the lab itself included, for `make lab-down` (and
    // its test) to check that nothing is left.
    std::fs::write(state.join("state.json"), serde_json::to_vec_pretty(&lab_state)?)?;
    let summary = summary(&Summary {
        names: &names,
        state,
        ironic: &ironic,
        spare_address: &spare_address,
        spare_mac: &spare.mac,
        image_url: &machines.image_url,
    });
    std::fs::write(state.join("summary.txt"), &summary)?;
    std::fs::write(state.join("ready"), "")?;
    println!("\n{summary}");
    Ok(Running { operators, _machines: machines, _cp: cp })
}

/// The control plane with its node, the CRDs, the namespaces and the node's images; the
/// kubeconfig copied into the state directory.
async fn start_cluster(options: &LabOptions) -> crate::Result<(ControlPlane, PathBuf)> {
    say(options, "starting Kubernetes (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and a real node");
    let mut cp = ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }).await?;
    cp.install_crds(&crds::all_crds()).await?;
    cp.create_namespace(samples::NAMESPACE).await?;
    cp.create_namespace("ferrometal-system").await?;
    let kubeconfig = options.state_dir.join("kubeconfig");
    std::fs::copy(cp.kubeconfig(), &kubeconfig)?;
    let node = cp.node().context("the lab's node")?;
    say(options, "importing the Ironic image and the NodeSetServices' image into the node");
    node.import(&RealNode::cached_image(IRONIC_IMAGE_ARCHIVE)?)?;
    node.import(&RealNode::cached_image(SERVICE_IMAGE_ARCHIVE)?)?;
    Ok((cp, kubeconfig))
}

/// The emulated machines: their BMCs and the server of the image they boot.
struct Machines {
    bmcs: Sushy,
    images: HttpServer,
    image_url: String,
    _work: WorkDir,
}

/// The BMCs and the image server listen at `gateway`, where the node's pods reach this machine
/// (the node's address on the pod bridge): the Ironic pod talks to the BMCs, and the emulated
/// machines fetch the virtual media from the pod's httpd.
async fn start_machines(options: &LabOptions, gateway: std::net::IpAddr) -> crate::Result<Machines> {
    say(
        options,
        &format!("starting sushy-tools with {} emulated BMCs and the image server on {gateway}", options.bmcs),
    );
    let work = WorkDir::new("lab-images")?;
    let bmcs = Sushy::start(SushyConfig {
        systems: options.bmcs,
        auth: Some((samples::BMC_USERNAME.into(), samples::BMC_PASSWORD.into())),
        listen: gateway,
        ..Default::default()
    })
    .await?;
    let images = HttpServer::start_on(&work.path().join("images"), &work, gateway).await?;
    let image_url = images.write_live_iso("live.iso")?;
    Ok(Machines { bmcs, images, image_url, _work: work })
}

/// Applies the Ironic, a BareMetalHost per BMC but the last (the spare) with its credentials,
/// the spare's credentials, the services and the NodeSet; the sample hosts' names.
async fn apply_samples(client: &kube::Client, machines: &Machines) -> crate::Result<Vec<String>> {
    let systems = machines.bmcs.systems();
    apply(client, samples::ironic()).await?;
    let mut names = Vec::new();
    for (i, system) in systems[..systems.len().saturating_sub(1)].iter().enumerate() {
        let name = format!("host-{i}");
        let secret = format!("{name}-bmc");
        apply(client, samples::bmc_secret(&secret)).await?;
        let address = machines.bmcs.bmc_address("redfish-virtualmedia", system);
        apply(client, samples::host(&name, &address, &secret, &system.mac)).await?;
        apply(client, samples::update_policy(&name)).await?;
        names.push(name);
    }
    apply(client, samples::bmc_secret(SPARE_CREDENTIALS)).await?;
    for (service, run_once) in [("bootstrap", true), ("configure-network", false)] {
        apply(client, samples::service(service, run_once)).await?;
    }
    apply(client, samples::nodeset(names.len(), &machines.image_url)).await?;
    Ok(names)
}

/// `.lab/env`: what a user (and the lab's test) needs to reach the lab.
fn write_env(
    state: &Path,
    kubeconfig: &Path,
    ironic: &LabIronic,
    spare: &crate::sushy::EmulatedSystem,
    spare_address: &str,
    image_url: &str,
) -> crate::Result<()> {
    let mut env = String::new();
    writeln!(env, "KUBECONFIG={}", kubeconfig.display())?;
    writeln!(env, "IRONIC_ENDPOINT={}", ironic.endpoint)?;
    writeln!(env, "IRONIC_ADDRESS={}", ironic.address)?;
    writeln!(env, "IRONIC_CACERT={}", ironic.ca_file.display())?;
    writeln!(env, "IRONIC_USERNAME={}", ironic.username)?;
    writeln!(env, "IRONIC_PASSWORD={}", ironic.password)?;
    writeln!(env, "SPARE_BMC_ADDRESS={spare_address}")?;
    writeln!(env, "SPARE_BMC_CREDENTIALS={}/{SPARE_CREDENTIALS}", samples::NAMESPACE)?;
    writeln!(env, "SPARE_BMC_MAC={}", spare.mac)?;
    writeln!(env, "LAB_IMAGE_URL={image_url}")?;
    writeln!(env, "NODESET={}/{}", samples::NAMESPACE, samples::NODESET)?;
    std::fs::write(state.join("env"), env)?;
    Ok(())
}

/// The Ready Ironic's Service address, CA (written to `ironic-ca.crt` in the state directory)
/// and credentials, as the operator published them.
async fn lab_ironic(client: &kube::Client, state: &Path) -> crate::Result<LabIronic> {
    let ns = samples::NAMESPACE;
    let name = samples::IRONIC;
    let service = Api::<Service>::namespaced(client.clone(), ns).get(name).await?;
    let cluster_ip = service.spec.and_then(|s| s.cluster_ip).context("the Ironic Service's ClusterIP")?;
    let ca = Api::<ConfigMap>::namespaced(client.clone(), ns).get(&format!("{name}-ca-bundle")).await?;
    let ca = ca.data.and_then(|d| d.get("ca.crt").cloned()).context("the Ironic's published CA")?;
    let ca_file = state.join("ironic-ca.crt");
    std::fs::write(&ca_file, ca)?;
    let credentials = Api::<Secret>::namespaced(client.clone(), ns).get(&format!("{name}-api-credentials")).await?;
    let data = credentials.data.context("the Ironic's credentials")?;
    let text = |key: &str| -> crate::Result<String> {
        Ok(String::from_utf8(data.get(key).with_context(|| format!("the credentials' {key}"))?.0.clone())?)
    };
    Ok(LabIronic {
        endpoint: format!("https://{name}.{ns}.svc"),
        address: (cluster_ip.parse::<std::net::IpAddr>()?, 443).into(),
        ca_file,
        username: text("username")?,
        password: text("password")?,
    })
}

/// A step of the lab, with the seconds since it started (where a slow start goes).
fn say(options: &LabOptions, message: &str) {
    static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let seconds = STARTED.get_or_init(std::time::Instant::now).elapsed().as_secs();
    if options.terminal {
        println!("\x1b[1m==>\x1b[0m [{seconds:>3} s] {message}");
    } else {
        println!("==> [{seconds:>3} s] {message}");
    }
}

fn port_of(url: &str) -> Option<u16> {
    url::Url::parse(url).ok()?.port()
}

/// The operator with its Ironic and NodeSet controllers and its webhooks, watching the lab's
/// namespace for `Ironic`s and pointed at the local Ironic image through its own setting.
fn start_operator(
    options: &LabOptions,
    kubeconfig: &Path,
    health_port: u16,
    webhook_port: u16,
) -> crate::Result<ManagedProcess> {
    let mut cmd = operator_run(options, kubeconfig, "ironic,nodeset", health_port);
    cmd.arg(format!("--webhook-addr=127.0.0.1:{webhook_port}"))
        .arg(format!("--webhook-url=https://127.0.0.1:{webhook_port}"))
        .arg("--webhook-secret-namespace=ferrometal-system")
        // The sample Ironic's namespace, as an admin lists it (the default would be the
        // operator's own namespace, which a process outside a pod does not have).
        .arg(format!("--ironic-namespaces={}", samples::NAMESPACE))
        .arg(format!("--ironic-image={}", crate::node::ironic_image()?));
    ManagedProcess::spawn("ferrometal", cmd, &options.state_dir.join("operator.log"))
}

/// The operator's BareMetalHost controller, a second process of the same binary: it finds the
/// Ironic through the resource (its Service, credentials and CA) and, being outside the
/// cluster, connects to the Service's ClusterIP, which exists only once the Ironic does.
fn start_host_controller(
    options: &LabOptions,
    kubeconfig: &Path,
    ironic: &LabIronic,
    health_port: u16,
) -> crate::Result<ManagedProcess> {
    let mut cmd = operator_run(options, kubeconfig, "host", health_port);
    cmd.arg("--disable-webhooks")
        .arg(format!("--ironic-name={}/{}", samples::NAMESPACE, samples::IRONIC))
        .arg(format!("--ironic-connect-address={}", ironic.address));
    ManagedProcess::spawn("ferrometal-hosts", cmd, &options.state_dir.join("operator-hosts.log"))
}

/// `ferrometal run` against the lab's apiserver with `controllers`, its health on `health_port`.
fn operator_run(options: &LabOptions, kubeconfig: &Path, controllers: &str, health_port: u16) -> Command {
    let mut cmd = Command::new(&options.operator);
    cmd.arg("run")
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .arg(format!("--controllers={controllers}"))
        .arg(format!("--health-addr=127.0.0.1:{health_port}"));
    cmd
}

async fn wait_operator_ready(operator: &mut ManagedProcess, port: u16) -> crate::Result<()> {
    let url = format!("http://127.0.0.1:{port}/readyz");
    let probe = reqwest::Client::new();
    wait::until_ok("the operator's /readyz", Duration::from_secs(60), Duration::from_millis(200), || {
        let alive = operator.ensure_running();
        let request = probe.get(&url).send();
        async move {
            alive?;
            Ok(request.await.ok().filter(|r| r.status().is_success()).map(|_| ()))
        }
    })
    .await
}

/// Returns the first error of a process that stopped.
async fn watch_processes(processes: &mut [ManagedProcess]) -> crate::Result<()> {
    loop {
        for process in processes.iter_mut() {
            process.ensure_running()?;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Applies one object with server-side apply.
async fn apply(client: &kube::Client, object: Value) -> crate::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
    if kind == "Secret" {
        let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object)).await?;
        return Ok(());
    }
    let resource = crate::api_resource(group, version, &kind);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {kind} {namespace}/{name}"))?;
    Ok(())
}

/// What the lab waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goal {
    /// The sample Ironic is Ready (its Deployment available on the node).
    IronicReady,
    /// Every sample host is provisioned and the sample NodeSet is Ready.
    Provisioned,
}

/// The lab's view of its samples, redrawn as a progress table while it waits.
struct Watch<'a> {
    client: &'a kube::Client,
    names: &'a [String],
    timeout: Duration,
}

impl Watch<'_> {
    fn api(&self, group: &str, kind: &str) -> Api<DynamicObject> {
        let resource = crate::api_resource(group, "v1alpha1", kind);
        Api::namespaced_with(self.client.clone(), samples::NAMESPACE, &resource)
    }

    /// Shows progress until `goal` is reached, while every operator process keeps running.
    async fn until(&self, progress: &mut Progress, operators: &mut [ManagedProcess], goal: Goal) -> crate::Result<()> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            for operator in operators.iter_mut() {
                operator.ensure_running()?;
            }
            if self.show(progress).await?.reached(goal) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!("{goal:?} not reached after {:?}; see the operator's logs", self.timeout);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Draws the table once, under the Ironic's and the NodeSet's state and the service Jobs'.
    async fn show(&self, progress: &mut Progress) -> crate::Result<Seen> {
        let listed = self.api("metal3.io", "BareMetalHost").list(&Default::default()).await?;
        let rows: Vec<Row> = self
            .names
            .iter()
            .map(|name| host_row(name, listed.items.iter().find(|h| h.metadata.name.as_deref() == Some(name))))
            .collect();
        let ironic = self.api("ironic.metal3.io", "Ironic").get_opt(samples::IRONIC).await.ok().flatten();
        let ironic_text = ironic.map(|i| ready_text(&i.data)).unwrap_or_default();
        let nodeset = self.api("ferrometal.io", "NodeSet").get_opt(samples::NODESET).await.ok().flatten();
        let nodeset_text = nodeset.as_ref().map(|n| nodeset_text(&n.data)).unwrap_or_default();
        let title = format!(
            "Ironic {ns}/{} (pods on the node): {ironic_text}\nNodeSet {ns}/{}: {nodeset_text}\n{}",
            samples::IRONIC,
            samples::NODESET,
            self.jobs_text().await,
            ns = samples::NAMESPACE
        );
        progress.update(&title, &rows);
        Ok(Seen {
            ironic_ready: ironic_text.starts_with("Ready=True"),
            nodeset_ready: nodeset_text.starts_with("Ready=True"),
            hosts_provisioned: rows.iter().all(|r| r.state == "provisioned"),
        })
    }

    /// `Service Jobs (containers on the node): 2 succeeded, 1 running, 0 failed`.
    async fn jobs_text(&self) -> String {
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), samples::NAMESPACE);
        let selector = format!("{}={}", crds::nodeset::NODESET_LABEL, samples::NODESET);
        let Ok(jobs) = jobs.list(&ListParams::default().labels(&selector)).await else {
            return "Service Jobs: not listed".to_string();
        };
        let count = |f: fn(&JobStatus) -> Option<i32>| {
            jobs.items.iter().filter(|j| j.status.as_ref().and_then(f).is_some_and(|n| n > 0)).count()
        };
        format!(
            "Service Jobs (containers on the node): {} succeeded, {} running, {} failed",
            count(|s| s.succeeded),
            count(|s| s.active),
            count(|s| s.failed)
        )
    }
}

/// What one look at the samples saw.
struct Seen {
    ironic_ready: bool,
    nodeset_ready: bool,
    hosts_provisioned: bool,
}

impl Seen {
    fn reached(&self, goal: Goal) -> bool {
        match goal {
            Goal::IronicReady => self.ironic_ready,
            Goal::Provisioned => self.hosts_provisioned && self.nodeset_ready,
        }
    }
}

/// One host's line of the table.
fn host_row(name: &str, host: Option<&DynamicObject>) -> Row {
    let status = host.map(|h| &h.data["status"]);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    Row {
        name: name.to_string(),
        state: text(status.map(|s| &s["provisioning"]["state"])),
        power: match status.and_then(|s| s["poweredOn"].as_bool()) {
            Some(true) => "on".into(),
            Some(false) => "off".into(),
            None => String::new(),
        },
        error: text(status.map(|s| &s["errorMessage"])),
    }
}

/// `Ready=… (…), hosts 2/3, configured 1/3, rollout RollingOut`.
fn nodeset_text(nodeset: &Value) -> String {
    let status = &nodeset["status"];
    let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
    format!(
        "{}, hosts {}, configured {}, rollout {}",
        ready_text(nodeset),
        text(&status["provisionedHosts"]),
        text(&status["configuredHosts"]),
        text(&status["rollout"]["phase"])
    )
}

fn ready_text(ironic: &Value) -> String {
    let conditions = ironic["status"]["conditions"].as_array().cloned().unwrap_or_default();
    match conditions.iter().find(|c| c["type"] == "Ready") {
        Some(c) => format!("Ready={} ({})", c["status"].as_str().unwrap_or("?"), c["reason"].as_str().unwrap_or("")),
        None => "not reconciled yet".into(),
    }
}

/// What the summary tells.
struct Summary<'a> {
    names: &'a [String],
    /// The state directory (`.lab`), where `kubeconfig` and `env` are.
    state: &'a Path,
    ironic: &'a LabIronic,
    spare_address: &'a str,
    spare_mac: &'a str,
    image_url: &'a str,
}

fn summary(s: &Summary<'_>) -> String {
    let Summary { names, state, ironic, spare_address, spare_mac, image_url } = *s;
    let kubectl = crate::env::kube_bin("kubectl").map(|p| p.display().to_string()).unwrap_or_else(|_| "kubectl".into());
    let ns = samples::NAMESPACE;
    let nodeset = samples::NODESET;
    let mtu = samples::mtu_edit_command(9000);
    let bios = samples::bios_edit_command("Disabled");
    let host_name = ironic.endpoint.trim_start_matches("https://");
    format!(
        "The lab is ready: {count} hosts provisioned on emulated BMCs ({list}), claimed and provisioned by
the NodeSet {ns}/{nodeset} through the Ironic the operator deployed on the node from {ns}/{ironic_name},
and the NodeSet's services ran on them as containers on the node (bootstrap once, configure-network).

Use kubectl against the lab:
  export KUBECONFIG={kubeconfig}
  alias kubectl={kubectl}
  kubectl get nodesets,baremetalhosts -n {ns}
  kubectl get ironic,deployments,services,pods -n {ns}

Edit the NodeSet's MTU; it is applied in place, no machine is reprovisioned:
  {mtu}
Watch the rollout (Configured n/m, Rollout), the service Jobs it runs, and what they configured:
  kubectl get nodeset {nodeset} -n {ns} -w
  kubectl get jobs -n {ns} -l {nodeset_label}={nodeset}
  kubectl logs -n {ns} -l {nodeset_label}={nodeset},{service_label}=configure-network --prefix --tail=-1

Change a BIOS setting on every host; each is serviced in place at a reboot the NodeSet asks
for, one host at a time (its Ironic node active -> servicing -> active, never reprovisioned):
  {bios}
Watch the hosts being serviced (STATE stays provisioned) and the settings they report:
  kubectl get baremetalhosts -n {ns} -w -o custom-columns=NAME:.metadata.name,STATE:.status.provisioning.state,OPERATION:.status.operationalStatus,POWER:.status.poweredOn
  kubectl get hostfirmwaresettings -n {ns} -o custom-columns=NAME:.metadata.name,TURBO:.status.settings.ProcTurboMode

Enrol the spare BMC as a new host:
  kubectl apply -f - <<EOF
  apiVersion: metal3.io/v1alpha1
  kind: BareMetalHost
  metadata: {{name: spare, namespace: {ns}}}
  spec:
    bmc: {{address: \"{spare_address}\", credentialsName: {SPARE_CREDENTIALS}}}
    bootMACAddress: \"{spare_mac}\"
    online: true
    image: {{url: \"{image_url}\", format: live-iso}}
    inspectionMode: fast
    automatedCleaningMode: disabled
  EOF

See a host's Ironic node, asking the Ironic pod through its Service (kube-proxy takes this
machine's connections to the ClusterIP {address}), over the TLS and with the credentials
the operator generated (in {env}; the summary does not print them):
  set -a; . {env}; set +a
  curl -s --cacert \"$IRONIC_CACERT\" --resolve {host_name}:443:{ip} -u \"$IRONIC_USERNAME:$IRONIC_PASSWORD\" \\
    -H 'X-OpenStack-Ironic-API-Version: 1.81' {endpoint}/v1/nodes/{ns}~{first}

The same values are in {env}. Stop the lab with Ctrl-C (make lab) or make lab-down.
",
        count = names.len(),
        list = names.join(", "),
        ironic_name = samples::IRONIC,
        kubeconfig = state.join("kubeconfig").display(),
        env = state.join("env").display(),
        nodeset_label = crds::nodeset::NODESET_LABEL,
        service_label = crds::nodeset::SERVICE_LABEL,
        address = ironic.address,
        ip = ironic.address.ip(),
        endpoint = ironic.endpoint,
        first = names.first().map(String::as_str).unwrap_or("host-0"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_points_at_the_state_directory_and_names_every_host() {
        let names = vec!["host-0".to_string(), "host-1".to_string()];
        let ironic = LabIronic {
            endpoint: "https://ironic.lab.svc".into(),
            address: "10.96.0.20:443".parse().expect("an address"),
            ca_file: PathBuf::from("/work/.lab/ironic-ca.crt"),
            username: "ironic-user".into(),
            password: "secret".into(),
        };
        let text = summary(&Summary {
            names: &names,
            state: Path::new("/work/.lab"),
            ironic: &ironic,
            spare_address: "redfish-virtualmedia+http://127.0.0.1:28000/redfish/v1/Systems/x",
            spare_mac: "52:54:00:00:00:03",
            image_url: "http://127.0.0.1:28080/images/live.iso",
        });
        assert!(text.contains("export KUBECONFIG=/work/.lab/kubeconfig\n"), "{text}");
        assert!(text.contains("The same values are in /work/.lab/env."), "{text}");
        assert!(text.contains("2 hosts provisioned on emulated BMCs (host-0, host-1)"), "{text}");
        assert!(text.contains("bootMACAddress: \"52:54:00:00:00:03\""), "{text}");
        assert!(
            text.contains("--resolve ironic.lab.svc:443:10.96.0.20 -u \"$IRONIC_USERNAME:$IRONIC_PASSWORD\""),
            "{text}"
        );
        assert!(!text.contains("secret"), "the summary prints no credentials: {text}");
        assert!(text.contains("https://ironic.lab.svc/v1/nodes/lab~host-0"), "{text}");
        assert!(
            text.contains(&format!("\n  {}\n", samples::mtu_edit_command(9000))),
            "one command edits the MTU: {text}"
        );
        assert!(text.contains("kubectl get nodeset computes -n lab -w"), "{text}");
        assert!(
            text.contains(&format!("\n  {}\n", samples::bios_edit_command("Disabled"))),
            "one command edits a BIOS setting: {text}"
        );
    }
}
