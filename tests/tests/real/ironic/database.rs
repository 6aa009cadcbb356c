//! The operator's Ironic on its managed MariaDB, both on the real node: the upgrade Jobs of a
//! first installation and of a version change run as pods of the Ironic image, and Ironic
//! keeps its nodes through that version change and through a change of MariaDB's series
//! (10.11 to 11.8, the old server stopped through its `preStop` hook).
//!
//! Only one Ironic release is built here (`scripts/node/ironic-image.sh`, Ironic 39), so the
//! version change (37.0 to 38.0, the operator's `--ironic-image` for both) runs the real Jobs
//! and the real rollout between them, but the schema it migrates is already 39's: no migration
//! between two releases' schemas runs (`design/testing.md`).

use crate::real_ironic::{API_VERSION, POLL, RealIronic, client, get_json, ready};
use anyhow::Context;
use crds::ironic::Ironic;
use ferrometal_tests::node::{MARIADB_IMAGES, RealNode};
use ferrometal_tests::wait;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use operator::testing::database::Address;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

const NAME: &str = "ironic";
/// The database's first start, the first installation's Jobs, then the Deployment's probes.
const READY_TIMEOUT: Duration = Duration::from_secs(480);
const MARIADB_UID: u32 = 999;

/// The operator's own checks of the managed database connect here: the operator runs outside
/// the cluster, where the database Service's name does not resolve (a headless Service: no
/// ClusterIP either), and this forwards each connection to the database pod's current address
/// (the pod bridge routes this machine there). Ironic's pods and Jobs use the Service's name,
/// through CoreDNS.
pub struct PodForward {
    addr: SocketAddr,
    pod: Arc<Mutex<Option<Target>>>,
    task: tokio::task::JoinHandle<()>,
}

/// Where [`PodForward`] sends connections: a pod (by name) and a port.
type Target = (Api<Pod>, String, u16);

impl PodForward {
    async fn bind() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let pod: Arc<Mutex<Option<Target>>> = Arc::default();
        let target = pod.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Some(pod) = target.lock().ok().and_then(|s| s.clone()) else { continue };
                tokio::spawn(forward(inbound, pod));
            }
        });
        Ok(Self { addr, pod, task })
    }

    /// Forwards to the pod `name`'s `port` from now on.
    fn to(&self, pods: Api<Pod>, name: &str, port: u16) {
        if let Ok(mut pod) = self.pod.lock() {
            *pod = Some((pods, name.to_string(), port));
        }
    }
}

impl Drop for PodForward {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection to the pod's address; dropped (the check fails, and is retried) while the
/// pod has none.
async fn forward(mut inbound: TcpStream, (pods, name, port): Target) {
    let ip = pods.get_opt(&name).await.ok().flatten().and_then(|p| p.status?.pod_ip);
    let Some(ip) = ip.and_then(|ip| ip.parse::<IpAddr>().ok()) else { return };
    if let Ok(mut outbound) = TcpStream::connect((ip, port)).await {
        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
    }
}

/// The Ironic with a managed MariaDB of `series`, on the pod network, without the downloader.
fn ironic(ns: &str, image: &str, series: &str) -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": NAME, "namespace": ns},
        "spec": {"version": "37.0",
                 "networking": {"disableHostNetwork": true},
                 "deployRamdisk": {"disableDownloader": true},
                 "database": {"managed": {"version": series, "image": image}}}})
}

/// Ironic's API as the tests reach it: through the Service, trusting the published CA.
struct IronicApi {
    http: reqwest::Client,
    base: String,
    credentials: (String, String),
}

impl IronicApi {
    async fn of(env: &RealIronic) -> anyhow::Result<Self> {
        let host = format!("{NAME}.{}.svc", env.ns);
        let http = client(&env.published_ca(NAME).await?, &host, env.service_address(NAME).await?)?;
        Ok(Self { http, base: format!("https://{host}/v1"), credentials: env.credentials(NAME).await? })
    }

    fn auth(&self) -> (&str, &str) {
        (&self.credentials.0, &self.credentials.1)
    }

    async fn create_node(&self, name: &str) -> anyhow::Result<()> {
        let created = self
            .http
            .post(format!("{}/nodes", self.base))
            .header(API_VERSION.0, API_VERSION.1)
            .basic_auth(&self.credentials.0, Some(&self.credentials.1))
            .json(&json!({"name": name, "driver": "fake-hardware"}))
            .send()
            .await?;
        anyhow::ensure!(created.status() == StatusCode::CREATED, "creating {name}: {:?}", created.text().await);
        Ok(())
    }

    /// The names of the nodes Ironic has.
    async fn node_names(&self) -> anyhow::Result<Vec<String>> {
        let nodes = get_json(&self.http, &format!("{}/nodes?fields=name", self.base), self.auth()).await?;
        Ok(nodes["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["name"].as_str().map(String::from))
            .collect())
    }
}

/// The upgrade Jobs to `version`: each phase's Job complete, its pod a container of the
/// Ironic image on the node that exited 0.
async fn assert_jobs_ran(env: &RealIronic, version: &str) -> anyhow::Result<()> {
    use operator::testing::ironic::names::{UPGRADE_PHASE_LABEL, VERSION_LABEL};
    let image = ferrometal_tests::node::ironic_image()?;
    for phase in ["pre", "post"] {
        let selector = format!("{UPGRADE_PHASE_LABEL}={phase},{VERSION_LABEL}={version}");
        let jobs = env.api::<Job>().list(&ListParams::default().labels(&selector)).await?;
        let job = jobs.items.first().with_context(|| format!("the {phase} Job to {version}"))?;
        let name = job.metadata.name.clone().unwrap_or_default();
        assert_eq!(job.status.as_ref().and_then(|s| s.succeeded), Some(1), "{name}: {:?}", job.status);
        let pods = env.api::<Pod>().list(&ListParams::default().labels(&format!("job-name={name}"))).await?;
        let pod = pods.items.first().with_context(|| format!("{name}'s pod"))?;
        let status = pod.status.as_ref().and_then(|s| s.container_statuses.clone()).unwrap_or_default();
        let container = status.first().with_context(|| format!("{name}'s container"))?;
        assert!(container.container_id.as_deref().is_some_and(|id| id.starts_with("containerd://")), "{container:?}");
        assert_eq!(container.image, image, "{name} runs the Ironic image");
        let exit = container.state.as_ref().and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code);
        assert_eq!(exit, Some(0), "{name}: {container:?}");
    }
    Ok(())
}

/// Waits until the Ironic is Ready at its generation and `holds` of it.
async fn until_ready_and(env: &RealIronic, what: &str, holds: impl Fn(&Ironic) -> bool) -> anyhow::Result<Ironic> {
    let ironics = env.api::<Ironic>();
    let holds = &holds;
    let waited = wait::until(what, READY_TIMEOUT, POLL, || {
        let ironics = ironics.clone();
        async move { ironics.get(NAME).await.ok().filter(|i| ready(i) && holds(i)) }
    })
    .await;
    match waited {
        Ok(ironic) => Ok(ironic),
        Err(err) => Err(err.context(env.pod_report().await)),
    }
}

/// Waits until the Ironic is Ready with `version` installed.
async fn until_installed(env: &RealIronic, version: &str) -> anyhow::Result<Ironic> {
    let installed = |i: &Ironic| i.status.as_ref().and_then(|s| s.installed_version.as_deref()) == Some(version);
    until_ready_and(env, &format!("Ironic {version} installed and Ready"), installed).await
}

/// The managed database's server version, from the Ironic's status.
fn server_version(ironic: &Ironic) -> String {
    let database = ironic.status.as_ref().and_then(|s| s.database.as_ref());
    database.and_then(|d| d.server_version.clone()).unwrap_or_default()
}

/// The forward the database scenario's operator connects through, and the operator's database
/// settings for it (one operator serves every scenario of the test; the others use SQLite).
pub async fn forward_and_settings() -> anyhow::Result<(PodForward, impl FnOnce(&mut operator::testing::ironic::Config))>
{
    let forward = PodForward::bind().await?;
    let address = Address { host: "127.0.0.1".into(), port: forward.addr.port() };
    let settings = move |config: &mut operator::testing::ironic::Config| {
        config.database.address_override = Some(address);
        config.database.step_timeout = Duration::from_secs(300);
    };
    Ok((forward, settings))
}

pub async fn on_its_managed_mariadb_the_upgrade_jobs_run_as_pods_and_ironic_keeps_its_nodes_through_version_and_series_changes(
    env: RealIronic,
    forward: PodForward,
) -> anyhow::Result<()> {
    let started = Instant::now();
    forward.to(env.api::<Pod>(), &format!("{NAME}-mariadb-0"), 3306);
    let node = env.node()?;
    for (_, archive) in MARIADB_IMAGES {
        node.import(&RealNode::cached_image(archive)?)?;
    }
    let _data =
        ferrometal_tests::node::host_path_volume(&env.cp.client(), &format!("{}-data", env.ns), MARIADB_UID).await?;

    // A first installation on the database: its Jobs create the schema (the serving pods never
    // do), then the Deployment rolls.
    let ironics = env.api::<Ironic>();
    ironics
        .create(&Default::default(), &serde_json::from_value(ironic(&env.ns, MARIADB_IMAGES[0].0, "10.11"))?)
        .await?;
    let first = until_installed(&env, "37.0").await?;
    eprintln!("Ironic 37.0 Ready on MariaDB {} {:?} after the start", server_version(&first), started.elapsed());
    assert!(server_version(&first).starts_with("10.11"), "{:?}", first.status);
    assert_jobs_ran(&env, "37.0").await?;
    let api = IronicApi::of(&env).await?;
    api.create_node("kept-through-changes").await?;

    // A version change: the pre Job, the rollout, the post Job, all real.
    let patch = json!({"spec": {"version": "38.0"}});
    ironics.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    until_installed(&env, "38.0").await?;
    eprintln!("Ironic 38.0 installed {:?} after the start", started.elapsed());
    assert_jobs_ran(&env, "38.0").await?;
    let api = IronicApi::of(&env).await?;
    assert_eq!(api.node_names().await?, ["kept-through-changes"], "Ironic keeps its node through the upgrade");

    // A change of MariaDB's series under the running Ironic: the old server stops through its
    // hook, the new series starts on the same data directory, and Ironic still has its node.
    let patch = json!({"spec": {"database": {"managed": {"version": "11.8", "image": MARIADB_IMAGES[1].0}}}});
    ironics.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let on_new_series = |i: &Ironic| server_version(i).starts_with("11.8");
    let changed = until_ready_and(&env, "the Ironic Ready on MariaDB 11.8", on_new_series).await?;
    eprintln!("MariaDB {} under Ironic {:?} after the start", server_version(&changed), started.elapsed());
    let api = IronicApi::of(&env).await?;
    assert_eq!(api.node_names().await?, ["kept-through-changes"], "Ironic keeps its node through the series change");
    Ok(())
}
