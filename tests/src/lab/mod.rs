//! The lab: a control plane with the pod simulator, a real Ironic,
//! sushy-tools BMCs and the `ferrometal` operator, with sample hosts
//! provisioned on emulated hardware. `scripts/lab.sh` drives it
//! (`make lab`, `make lab-up`, `make lab-down`); `design/lab.md` explains it.

pub mod progress;
pub mod samples;

use crate::ironic::{IronicAuth, IronicConfig, IronicServer};
use crate::process::ManagedProcess;
use crate::sushy::{Sushy, SushyConfig};
use crate::{ControlPlane, PodSimulator, ports, wait};
use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use progress::{Progress, Row};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Field manager of the lab's own applies (the operator uses `ferrometal`).
const FIELD_MANAGER: &str = "ferrometal-lab";
/// Name of the Secret with the spare BMC's credentials.
pub const SPARE_CREDENTIALS: &str = "spare-bmc-credentials";

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
/// kills its whole process group.
struct Running {
    operator: ManagedProcess,
    _bmcs: Sushy,
    _ironic: IronicServer,
    _simulator: PodSimulator,
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
        died = watch_process(&mut running.operator) => return died,
    }
    say(&options, "stopping the lab");
    running.operator.stop(Duration::from_secs(20)).await?;
    Ok(())
}

/// Starts everything, applies the samples, waits until every sample host is provisioned, and
/// writes `env`, `state.json`, `summary.txt` and `ready`.
async fn start(options: &LabOptions) -> crate::Result<Running> {
    let state = &options.state_dir;
    say(options, "starting Kubernetes (etcd, kube-apiserver, kube-controller-manager) and the pod simulator");
    let mut cp = ControlPlane::start().await?;
    let simulator = PodSimulator::start(cp.client()).await?;
    cp.install_crds(&crds::all_crds()).await?;
    cp.create_namespace(samples::NAMESPACE).await?;
    cp.create_namespace("ferrometal-system").await?;
    let kubeconfig = state.join("kubeconfig");
    std::fs::copy(cp.kubeconfig(), &kubeconfig)?;

    say(options, &format!("starting Ironic and sushy-tools with {} emulated BMCs", options.bmcs));
    let ironic_password = format!("lab-{:016x}", rand::random::<u64>());
    let (ironic, bmcs) = tokio::try_join!(
        IronicServer::start(IronicConfig {
            auth: IronicAuth::Basic { username: "lab".into(), password: ironic_password.clone() },
            ..Default::default()
        }),
        Sushy::start(SushyConfig {
            systems: options.bmcs,
            auth: Some((samples::BMC_USERNAME.into(), samples::BMC_PASSWORD.into())),
            ..Default::default()
        }),
    )?;
    let image_url = ironic.image_server().write_live_iso("images/live.iso")?;
    let auth_dir = state.join("ironic-auth");
    std::fs::create_dir_all(&auth_dir)?;
    std::fs::write(auth_dir.join("username"), "lab")?;
    std::fs::write(auth_dir.join("password"), &ironic_password)?;

    say(options, "starting the ferrometal operator");
    let (health_port, webhook_port) = (ports::free_port()?, ports::free_port()?);
    let mut operator = start_operator(options, &kubeconfig, &ironic, &auth_dir, health_port, webhook_port)?;
    wait_operator_ready(&mut operator, health_port).await?;

    say(
        options,
        "applying the samples: an Ironic, BareMetalHosts without an image, and a NodeSet that provisions them",
    );
    let client = cp.client();
    let (sample_bmcs, spare) = bmcs.systems().split_at(options.bmcs.saturating_sub(1));
    apply(&client, samples::ironic()).await?;
    let mut names = Vec::new();
    for (i, system) in sample_bmcs.iter().enumerate() {
        let name = format!("host-{i}");
        let secret = format!("{name}-bmc");
        apply(&client, samples::bmc_secret(&secret)).await?;
        let address = bmcs.bmc_address("redfish-virtualmedia", system);
        apply(&client, samples::host(&name, &address, &secret, &system.mac)).await?;
        names.push(name);
    }
    apply(&client, samples::bmc_secret(SPARE_CREDENTIALS)).await?;
    for (service, run_once) in [("bootstrap", true), ("configure-network", false)] {
        apply(&client, samples::service(service, run_once)).await?;
    }
    apply(&client, samples::nodeset(names.len(), &image_url)).await?;

    let mut progress = Progress::new(options.terminal);
    wait_provisioned(&client, &names, &mut progress, &mut operator, options.timeout).await?;

    let spare = spare.first().context("the lab needs at least two BMCs (one is left spare)")?;
    let spare_address = bmcs.bmc_address("redfish-virtualmedia", spare);
    let mut env = String::new();
    writeln!(env, "KUBECONFIG={}", kubeconfig.display())?;
    writeln!(env, "IRONIC_ENDPOINT={}", ironic.endpoint())?;
    writeln!(env, "IRONIC_USERNAME=lab")?;
    writeln!(env, "IRONIC_PASSWORD={ironic_password}")?;
    writeln!(env, "SPARE_BMC_ADDRESS={spare_address}")?;
    writeln!(env, "SPARE_BMC_CREDENTIALS={}/{SPARE_CREDENTIALS}", samples::NAMESPACE)?;
    writeln!(env, "SPARE_BMC_MAC={}", spare.mac)?;
    writeln!(env, "LAB_IMAGE_URL={image_url}")?;
    writeln!(env, "NODESET={}/{}", samples::NAMESPACE, samples::NODESET)?;
    std::fs::write(state.join("env"), env)?;
    // Every process and port of the lab, the lab itself included, for `make lab-down` (and
    // its test) to check that nothing is left.
    let lab_state = LabState {
        pids: [
            std::process::id(),
            operator.pid(),
            ironic.pid().unwrap_or_default(),
            ironic.image_server().pid(),
            bmcs.pid(),
        ]
        .into_iter()
        .chain(cp.pids())
        .filter(|p| *p != 0)
        .collect(),
        ports: [ironic.endpoint(), bmcs.endpoint(), ironic.image_server().url()]
            .into_iter()
            .filter_map(port_of)
            .chain(cp.ports().iter().copied())
            .chain([health_port, webhook_port])
            .collect(),
    };
    std::fs::write(state.join("state.json"), serde_json::to_vec_pretty(&lab_state)?)?;
    let summary = summary(&Summary {
        names: &names,
        state,
        ironic_endpoint: ironic.endpoint(),
        ironic_password: &ironic_password,
        spare_address: &spare_address,
        spare_mac: &spare.mac,
        image_url: &image_url,
    });
    std::fs::write(state.join("summary.txt"), &summary)?;
    std::fs::write(state.join("ready"), "")?;
    println!("\n{summary}");
    Ok(Running { operator, _bmcs: bmcs, _ironic: ironic, _simulator: simulator, _cp: cp })
}

fn say(options: &LabOptions, message: &str) {
    if options.terminal {
        println!("\x1b[1m==>\x1b[0m {message}");
    } else {
        println!("==> {message}");
    }
}

fn port_of(url: &str) -> Option<u16> {
    url::Url::parse(url).ok()?.port()
}

fn start_operator(
    options: &LabOptions,
    kubeconfig: &Path,
    ironic: &IronicServer,
    auth_dir: &Path,
    health_port: u16,
    webhook_port: u16,
) -> crate::Result<ManagedProcess> {
    let mut cmd = Command::new(&options.operator);
    cmd.arg("run")
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .arg(format!("--health-addr=127.0.0.1:{health_port}"))
        .arg(format!("--webhook-addr=127.0.0.1:{webhook_port}"))
        .arg(format!("--webhook-url=https://127.0.0.1:{webhook_port}"))
        .arg("--webhook-secret-namespace=ferrometal-system")
        // The sample Ironic's namespace, as an admin lists it (the default would be the
        // operator's own namespace, which a process outside a pod does not have).
        .arg(format!("--ironic-namespaces={}", samples::NAMESPACE))
        .args(operator_ironic_flags(ironic, auth_dir));
    ManagedProcess::spawn("ferrometal", cmd, &options.state_dir.join("operator.log"))
}

/// How the operator's BareMetalHost controller reaches the lab's Ironic.
fn operator_ironic_flags(ironic: &IronicServer, auth_dir: &Path) -> Vec<String> {
    vec![format!("--ironic-endpoint={}", ironic.endpoint()), format!("--ironic-auth-dir={}", auth_dir.display())]
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

async fn watch_process(process: &mut ManagedProcess) -> crate::Result<()> {
    loop {
        process.ensure_running()?;
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
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &kind));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {kind} {namespace}/{name}"))?;
    Ok(())
}

/// Shows progress until every named host is provisioned and the sample NodeSet is Ready.
async fn wait_provisioned(
    client: &kube::Client,
    names: &[String],
    progress: &mut Progress,
    operator: &mut ManagedProcess,
    timeout: Duration,
) -> crate::Result<()> {
    let hosts: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        samples::NAMESPACE,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("metal3.io", "v1alpha1", "BareMetalHost")),
    );
    let ironics: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        samples::NAMESPACE,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("ironic.metal3.io", "v1alpha1", "Ironic")),
    );
    let nodesets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        samples::NAMESPACE,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("ferrometal.io", "v1alpha1", "NodeSet")),
    );
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        operator.ensure_running()?;
        let listed = hosts.list(&Default::default()).await?;
        let rows: Vec<Row> = names
            .iter()
            .map(|name| {
                let host = listed.items.iter().find(|h| h.metadata.name.as_deref() == Some(name));
                let status = host.map(|h| &h.data["status"]);
                let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
                Row {
                    name: name.clone(),
                    state: text(status.map(|s| &s["provisioning"]["state"])),
                    power: match status.and_then(|s| s["poweredOn"].as_bool()) {
                        Some(true) => "on".into(),
                        Some(false) => "off".into(),
                        None => String::new(),
                    },
                    error: text(status.map(|s| &s["errorMessage"])),
                }
            })
            .collect();
        let ironic_ready =
            ironics.get_opt("ironic").await.ok().flatten().map(|i| ready_text(&i.data)).unwrap_or_default();
        let nodeset = nodesets.get_opt(samples::NODESET).await.ok().flatten();
        let nodeset_text = nodeset.as_ref().map(|n| nodeset_text(&n.data)).unwrap_or_default();
        let title = format!(
            "Ironic {ns}/ironic: {ironic_ready}\nNodeSet {ns}/{}: {nodeset_text}",
            samples::NODESET,
            ns = samples::NAMESPACE
        );
        progress.update(&title, &rows);
        let nodeset_ready = nodeset.as_ref().is_some_and(|n| ready_text(&n.data).starts_with("Ready=True"));
        if rows.iter().all(|r| r.state == "provisioned") && nodeset_ready {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("hosts not provisioned after {timeout:?}; see the operator's log");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
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
    ironic_endpoint: &'a str,
    ironic_password: &'a str,
    spare_address: &'a str,
    spare_mac: &'a str,
    image_url: &'a str,
}

fn summary(s: &Summary<'_>) -> String {
    let Summary { names, state, ironic_endpoint, ironic_password, spare_address, spare_mac, image_url } = *s;
    let kubectl = crate::env::kube_bin("kubectl").map(|p| p.display().to_string()).unwrap_or_else(|_| "kubectl".into());
    let ns = samples::NAMESPACE;
    let nodeset = samples::NODESET;
    let mtu = samples::mtu_edit_command(9000);
    format!(
        "The lab is ready: {count} hosts provisioned on emulated BMCs ({list}), claimed and provisioned by
the NodeSet {ns}/{nodeset}, which ran its services on them (bootstrap once, configure-network).

Use kubectl against the lab:
  export KUBECONFIG={kubeconfig}
  alias kubectl={kubectl}
  kubectl get nodesets,baremetalhosts -n {ns}
  kubectl get ironic,deployments,services,pods -n {ns}

Edit the NodeSet's MTU; it is applied in place, no machine is reprovisioned:
  {mtu}
Watch the rollout (Configured n/m, Rollout), and the service Jobs it runs:
  kubectl get nodeset {nodeset} -n {ns} -w
  kubectl get jobs -n {ns} -l ferrometal.io/nodeset={nodeset}

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

See a host's Ironic node (the BareMetalHost controller drives this Ironic; the
pods of the Ironic resource above come from the pod simulator and run nothing):
  curl -s -u lab:{ironic_password} -H 'X-OpenStack-Ironic-API-Version: 1.115' {endpoint}/v1/nodes/{ns}~{first}

The same values are in {env}. Stop the lab with Ctrl-C (make lab) or make lab-down.
",
        count = names.len(),
        list = names.join(", "),
        kubeconfig = state.join("kubeconfig").display(),
        env = state.join("env").display(),
        endpoint = ironic_endpoint,
        first = names.first().map(String::as_str).unwrap_or("host-0"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_points_at_the_state_directory_and_names_every_host() {
        let names = vec!["host-0".to_string(), "host-1".to_string()];
        let text = summary(&Summary {
            names: &names,
            state: Path::new("/work/.lab"),
            ironic_endpoint: "http://127.0.0.1:26385",
            ironic_password: "secret",
            spare_address: "redfish-virtualmedia+http://127.0.0.1:28000/redfish/v1/Systems/x",
            spare_mac: "52:54:00:00:00:03",
            image_url: "http://127.0.0.1:28080/images/live.iso",
        });
        assert!(text.contains("export KUBECONFIG=/work/.lab/kubeconfig\n"), "{text}");
        assert!(text.contains("The same values are in /work/.lab/env."), "{text}");
        assert!(text.contains("2 hosts provisioned on emulated BMCs (host-0, host-1)"), "{text}");
        assert!(text.contains("bootMACAddress: \"52:54:00:00:00:03\""), "{text}");
        assert!(text.contains("http://127.0.0.1:26385/v1/nodes/lab~host-0"), "{text}");
        assert!(
            text.contains(&format!("\n  {}\n", samples::mtu_edit_command(9000))),
            "one command edits the MTU: {text}"
        );
        assert!(text.contains("kubectl get nodeset computes -n lab -w"), "{text}");
    }
}
