//! One sharded run at one host count: the environment, the fleet, and the processes; the
//! phases measured on it are in `phases.rs`.

use super::fleet::{self, FLEET_PREFIX, Fleet};
use super::{Options, Report};
use crate::bench::cpu::{CpuSnapshot, PhaseCpu, Source};
use crate::bench::day2::{self, NewHost, fake_spec};
use crate::bench::probe::Scrape;
use crate::ironic::{IronicConfig, IronicDatabase, IronicServer};
use crate::mariadb::{MariaDb, MariaDbConfig};
use crate::operator_process::OperatorProcess;
use crate::{ControlPlane, PodSimulator};
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::STATUS;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::Api;
use serde_json::json;
use std::time::Duration;

/// The leader lease the shard Leases are named after (`<lease>-shard-<name>`).
const LEASE: &str = "ferrometal-leader";

pub(super) struct Run {
    pub(super) cp: ControlPlane,
    pub(super) ns: String,
    mariadb: MariaDb,
    pub(super) ironic: IronicServer,
    /// The Ironic database, for sqlx.
    pub(super) database: String,
    pub(super) iso: String,
    /// Replica `i` runs as identity `replica-i`.
    pub(super) replicas: Vec<OperatorProcess>,
    /// The replica killed in the handover: never signalled again (its process group id may
    /// be another's by then), its CPU no longer read.
    pub(super) killed: Option<usize>,
    /// The NodeSet controller's process, from the day-2 edit on.
    pub(super) nodeset: Option<OperatorProcess>,
    _simulator: PodSimulator,
    pub(super) options: Options,
}

pub(super) async fn run(hosts: usize, options: &Options) -> crate::Result<Report> {
    // The handover kills replica 0 and times replica 1; each must hold an equal share.
    anyhow::ensure!(
        options.replicas == 2 && options.shards.len().is_multiple_of(2),
        "the sharded run needs two replicas and an even number of shards"
    );
    let mut run = Run::start(options).await?;
    let names: Vec<String> = (0..hosts).map(|i| format!("{FLEET_PREFIX}{i:05}")).collect();
    eprintln!("[shards] N={hosts}: pre-registering the fleet");
    let fleet =
        fleet::preregister(&run.ironic, &run.database, &run.ns, &names, &options.shard_of, options.one_time).await?;
    eprintln!("[shards] N={hosts}: {} nodes in {:?}; creating the hosts", fleet.nodes.len(), fleet.elapsed);
    let create = run.create_hosts(&fleet).await?;
    eprintln!("[shards] N={hosts}: adoption by {} replicas", options.replicas);
    let adoption = run.adopt(hosts).await?;
    eprintln!("[shards] N={hosts}: at rest for {:?}", options.steady_window);
    let rest = run.rest().await?;
    let lists = run.lists().await?;
    eprintln!("[shards] N={hosts}: a NodeSet of {} new hosts brought up and edited", options.rollout_hosts);
    let rollout = run.rollout().await?;
    eprintln!("[shards] N={hosts}: handover");
    let handover = run.handover(hosts + options.rollout_hosts).await?;
    let integrity = fleet::integrity(&run.database, &run.ns, &fleet).await?;
    run.stop().await;
    Ok(Report {
        hosts,
        conductors: options.conductors,
        shards: options.shards.len(),
        lease_seconds: options.lease_seconds,
        one_time: options.one_time,
        preregister: fleet.elapsed,
        create,
        adoption,
        rest,
        lists,
        rollout,
        handover,
        integrity,
    })
}

impl Run {
    async fn start(options: &Options) -> crate::Result<Self> {
        let mut cp = ControlPlane::start().await?;
        cp.install_crds(&crds::all_crds()).await?;
        let ns = cp.namespace("shards").await?;
        let simulator = PodSimulator::start(cp.client()).await?;
        let mariadb = MariaDb::start(MariaDbConfig::default()).await?;
        let url = mariadb.ironic_database("ironic").await?;
        let config = IronicConfig {
            database: IronicDatabase::MySql { url },
            conductors: options.conductors,
            ..Default::default()
        };
        let ironic = IronicServer::start(config).await?;
        let iso = ironic.image_server().write_live_iso("live.iso")?;
        let database = mariadb.admin_url(Some("ironic"));
        Ok(Self {
            cp,
            ns,
            mariadb,
            ironic,
            database,
            iso,
            replicas: Vec::new(),
            killed: None,
            nodeset: None,
            _simulator: simulator,
            options: options.clone(),
        })
    }

    /// Stops what runs. On an error the processes stop when `Run` is dropped instead.
    async fn stop(mut self) {
        let killed = self.killed;
        let live = self.replicas.iter_mut().enumerate().filter(|(i, _)| Some(*i) != killed).map(|(_, r)| r);
        for process in live.chain(self.nodeset.as_mut()) {
            let _ = process.stop(Duration::from_secs(20)).await;
        }
        let _ = self.ironic.stop().await;
    }

    /// The indexes of the replicas not killed.
    pub(super) fn live(&self) -> Vec<usize> {
        (0..self.replicas.len()).filter(|i| Some(*i) != self.killed).collect()
    }

    /// Fails, with what it logged last, if a process that should run has exited.
    pub(super) fn alive(&mut self) -> crate::Result<()> {
        for index in self.live() {
            self.replicas[index].ensure_running()?;
        }
        if let Some(nodeset) = self.nodeset.as_mut() {
            nodeset.ensure_running()?;
        }
        Ok(())
    }

    /// The metrics of the replicas `indexes`, in that order.
    pub(super) async fn scrape(&self, indexes: &[usize]) -> crate::Result<Vec<Scrape>> {
        let mut scrapes = Vec::new();
        for index in indexes {
            scrapes.push(Scrape::fetch(&self.replicas[*index].metrics_url()).await?);
        }
        Ok(scrapes)
    }

    /// Every process whose CPU is counted, by name (the replicas under one).
    pub(super) fn sources(&self) -> Vec<(&'static str, Source)> {
        let mut sources: Vec<(&'static str, Source)> =
            self.cp.processes().into_iter().map(|(name, pid)| (name, Source::Group(pid))).collect();
        let pids = self.ironic.pids();
        sources.extend(pids.first().map(|pid| ("ironic-api", Source::Group(*pid))));
        sources.extend(pids.iter().skip(1).map(|pid| ("ironic-conductors", Source::Group(*pid))));
        sources.extend(self.mariadb.pid().map(|pid| ("mariadb", Source::Group(pid))));
        sources.extend(self.live().into_iter().map(|i| ("operators", Source::Group(self.replicas[i].pid()))));
        sources.extend(self.nodeset.iter().map(|n| ("nodeset", Source::Group(n.pid()))));
        sources.push(("bench", Source::Process(std::process::id())));
        sources
    }

    pub(super) fn hosts(&self) -> Api<BareMetalHost> {
        Api::namespaced(self.cp.client(), &self.ns)
    }

    /// The fleet's hosts, each with the status annotation of a provisioned host whose node is
    /// the fleet's; the CPU it cost (no operator runs yet).
    async fn create_hosts(&self, fleet: &Fleet) -> crate::Result<PhaseCpu> {
        let image = json!({"url": self.iso, "format": "live-iso"});
        let hosts = fleet.nodes.iter().map(|(name, uuid)| {
            let status = json!({
                "operationalStatus": "OK", "poweredOn": true,
                "provisioning": {"state": "provisioned", "ID": uuid, "image": image},
            });
            NewHost {
                name: name.clone(),
                spec: fake_spec(name, Some(&self.iso)),
                annotations: json!({STATUS: status.to_string()}),
            }
        });
        let before = CpuSnapshot::take(&self.sources());
        day2::create(&self.hosts(), hosts).await?;
        Ok(before.until(&CpuSnapshot::take(&self.sources())))
    }

    /// A replica of the host controller, taking shard Leases.
    pub(super) fn start_replica(&self, index: usize) -> crate::Result<OperatorProcess> {
        let lease = self.options.lease_seconds.max(3);
        let args = vec![
            "--controllers=host".into(),
            "--leader-elect".into(),
            format!("--leader-election-namespace={}", self.ns),
            format!("--leader-election-lease-duration-seconds={lease}"),
            format!("--leader-election-renew-deadline-seconds={}", lease * 2 / 3),
            format!("--leader-election-retry-period-seconds={}", (lease / 7).max(1)),
            format!("--shards={}", self.options.shards.join(",")),
            "--shard-leases".into(),
            format!("--identity=replica-{index}"),
        ];
        self.spawn(&format!("ferrometal-shard-{index}"), args)
    }

    /// The NodeSet controller on its own, as `config/shards` runs it beside the host replicas.
    pub(super) fn start_nodeset(&self) -> crate::Result<OperatorProcess> {
        self.spawn("ferrometal-nodesets", vec!["--controllers=nodeset".into()])
    }

    /// `ferrometal run` in the benchmark's namespace with `args`, against the fleet's Ironic.
    fn spawn(&self, name: &str, args: Vec<String>) -> crate::Result<OperatorProcess> {
        let mut all: Vec<String> = vec!["run".into(), "--disable-webhooks".into(), format!("--namespaces={}", self.ns)];
        all.extend(args);
        let go = |d: Duration| format!("{}ms", d.as_millis());
        let env: Vec<(String, String)> = [
            ("IRONIC_ENDPOINT", self.ironic.endpoint().to_string()),
            ("BMO_CONCURRENCY", "8".to_string()),
            ("HOST_FAST_POLL_INTERVAL", go(self.options.fast_poll)),
            ("HOST_SLOW_POLL_INTERVAL", go(self.options.slow_poll)),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .into();
        let binary = crate::bench::operator_binary()?;
        OperatorProcess::start_binary(&binary, name, self.cp.kubeconfig(), &all, &env)
    }

    /// Each shard's Lease as it stands (none yet: an empty spec), in the order of the shards.
    pub(super) async fn leases(&self) -> crate::Result<Vec<(String, LeaseSpec)>> {
        let leases: Api<Lease> = Api::namespaced(self.cp.client(), &self.ns);
        let mut specs = Vec::new();
        for shard in &self.options.shards {
            let spec = leases.get_opt(&format!("{LEASE}-shard-{shard}")).await?.and_then(|l| l.spec);
            specs.push((shard.clone(), spec.unwrap_or_default()));
        }
        Ok(specs)
    }

    /// Who holds each shard's Lease, in the order of the shards.
    async fn holders(&self) -> crate::Result<Vec<(String, Option<String>)>> {
        Ok(self.leases().await?.into_iter().map(|(shard, spec)| (shard, spec.holder_identity)).collect())
    }

    /// Shard Leases held by each replica, by index.
    pub(super) async fn shards_held(&self) -> crate::Result<Vec<usize>> {
        let mut held = vec![0; self.replicas.len()];
        for (_, holder) in self.holders().await? {
            let index = holder.and_then(|h| h.strip_prefix("replica-")?.parse::<usize>().ok());
            if let Some(n) = index.and_then(|i| held.get_mut(i)) {
                *n += 1;
            }
        }
        Ok(held)
    }

    /// The shards replica `index` holds.
    pub(super) async fn shards_of(&self, index: usize) -> crate::Result<Vec<String>> {
        let identity = format!("replica-{index}");
        let holders = self.holders().await?;
        Ok(holders.into_iter().filter(|(_, h)| h.as_deref() == Some(identity.as_str())).map(|(s, _)| s).collect())
    }
}
