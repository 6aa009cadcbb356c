//! One sharded run at one host count: the environment, the fleet, then adoption, rest, lists
//! and a handover, each measured from outside the replicas (their metrics, `/proc`, Leases).

use super::fleet::{self, FLEET_PREFIX, Fleet};
use super::{Adoption, Handover, Lists, Memory, Options, Report, Rest};
use crate::bench::Rollout;
use crate::bench::cpu::{CpuSnapshot, PhaseCpu, Source};
use crate::bench::day2::{self, Day2, NewHost, fake_spec};
use crate::bench::probe::{ProcSample, Scrape, difference};
use crate::ironic::{IronicConfig, IronicDatabase, IronicServer};
use crate::mariadb::{MariaDb, MariaDbConfig};
use crate::operator_process::OperatorProcess;
use crate::{ControlPlane, PodSimulator, wait};
use crds::baremetalhost::BareMetalHost;
use futures::StreamExt;
use ironic_client::{ChangeCursor, DEFAULT_FULL_EVERY, IronicClient};
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const STATUS: &str = "baremetalhost.metal3.io/status";
/// The leader lease the shard Leases are named after (`<lease>-shard-<name>`).
const LEASE: &str = "ferrometal-leader";
/// Looks timed per kind in [`Run::lists`].
const LOOKS: u32 = 5;
/// What a replica's poll costs Ironic; everything else counts as work.
const POLLING: [&str; 2] = ["node_status", "node_changes"];

struct Run {
    cp: ControlPlane,
    ns: String,
    _mariadb: MariaDb,
    ironic: IronicServer,
    /// The Ironic database, for sqlx.
    database: String,
    iso: String,
    replicas: Vec<OperatorProcess>,
    /// The NodeSet controller's process, from the day-2 edit on.
    nodeset: Option<OperatorProcess>,
    _simulator: PodSimulator,
    options: Options,
}

pub(super) async fn run(hosts: usize, options: &Options) -> crate::Result<Report> {
    let mut run = Run::start(options).await?;
    let names: Vec<String> = (0..hosts).map(|i| format!("{FLEET_PREFIX}{i:05}")).collect();
    eprintln!("[shards] N={hosts}: pre-registering the fleet");
    let fleet = fleet::preregister(&run.ironic, &run.database, &run.ns, &names, &options.shard_of).await?;
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
    let handover = run.handover().await?;
    let integrity = fleet::integrity(&run.database, &run.ns).await?;
    run.stop().await;
    Ok(Report {
        hosts,
        conductors: options.conductors,
        shards: options.shards.len(),
        lease_seconds: options.lease_seconds,
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
            _mariadb: mariadb,
            ironic,
            database,
            iso,
            replicas: Vec::new(),
            nodeset: None,
            _simulator: simulator,
            options: options.clone(),
        })
    }

    async fn stop(mut self) {
        for replica in self.replicas.iter_mut().chain(self.nodeset.as_mut()) {
            let _ = replica.stop(Duration::from_secs(20)).await;
        }
        let _ = self.ironic.stop().await;
    }

    /// Every process whose CPU is counted, by name (the replicas under one).
    fn sources(&self) -> Vec<(&'static str, Source)> {
        let mut sources: Vec<(&'static str, Source)> =
            self.cp.processes().into_iter().map(|(name, pid)| (name, Source::Group(pid))).collect();
        let pids = self.ironic.pids();
        sources.extend(pids.first().map(|pid| ("ironic-api", Source::Group(*pid))));
        sources.extend(pids.iter().skip(1).map(|pid| ("ironic-conductors", Source::Group(*pid))));
        sources.extend(self._mariadb.pid().map(|pid| ("mariadb", Source::Group(pid))));
        sources.extend(self.replicas.iter().map(|r| ("operators", Source::Group(r.pid()))));
        sources.extend(self.nodeset.iter().map(|n| ("nodeset", Source::Group(n.pid()))));
        sources.push(("bench", Source::Process(std::process::id())));
        sources
    }

    fn hosts(&self) -> Api<BareMetalHost> {
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
    fn start_replica(&self, index: usize) -> crate::Result<OperatorProcess> {
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
    fn start_nodeset(&self) -> crate::Result<OperatorProcess> {
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
        let binary = match std::env::var_os("FERROMETAL_BENCH_OPERATOR") {
            Some(path) => std::path::PathBuf::from(path),
            None => crate::operator_process::binary()?,
        };
        OperatorProcess::start_binary(&binary, name, self.cp.kubeconfig(), &all, &env)
    }

    /// Both replicas start on the fleet; timed until every host has its status back, each
    /// replica holds its share of the shards, and the replicas are quiet.
    async fn adopt(&mut self, hosts: usize) -> crate::Result<Adoption> {
        let restored = Arc::new(Mutex::new(HashSet::new()));
        let watch = tokio::spawn(watch_restored(self.hosts(), restored.clone()));
        let (started, cpu_before) = (Instant::now(), CpuSnapshot::take(&self.sources()));
        for index in 0..self.options.replicas {
            self.replicas.push(self.start_replica(index)?);
        }
        let timeout = self.options.timeout;
        let outcome = wait::until("every host restored", timeout, Duration::from_millis(200), || async {
            (restored.lock().unwrap_or_else(|e| e.into_inner()).len() >= hosts).then_some(())
        })
        .await;
        watch.abort();
        outcome?;
        let fair = self.options.shards.len().div_ceil(self.options.replicas.max(1));
        wait::until_ok("the shards divided", timeout, Duration::from_millis(200), || async {
            let held = self.shards_held().await?;
            Ok(held.iter().all(|n| *n == fair).then_some(held))
        })
        .await?;
        let (settled, scrapes) = self.quiet(&(0..self.replicas.len()).collect::<Vec<_>>()).await?;
        let cpu = cpu_before.until(&CpuSnapshot::take(&self.sources()));
        let sum = |f: &dyn Fn(&Scrape) -> u64| scrapes.iter().map(f).sum::<u64>();
        Ok(Adoption {
            wall: settled.duration_since(started),
            ironic: sum_ops(&scrapes),
            reconciles: sum(&|s| s.reconciles("host")),
            status_writes: sum(&|s| s.status_writes("host")),
            cpu,
            memory: self.replicas.iter().map(|r| memory(r.pid())).collect(),
            shards_held: self.shards_held().await?,
        })
    }

    /// Who holds each shard's Lease, in the order of the shards.
    async fn holders(&self) -> crate::Result<Vec<(String, Option<String>)>> {
        let leases: Api<Lease> = Api::namespaced(self.cp.client(), &self.ns);
        let mut holders = Vec::new();
        for shard in &self.options.shards {
            let holder = leases.get_opt(&format!("{LEASE}-shard-{shard}")).await?.and_then(|l| l.spec?.holder_identity);
            holders.push((shard.clone(), holder));
        }
        Ok(holders)
    }

    /// Shard Leases held by each replica, by index.
    async fn shards_held(&self) -> crate::Result<Vec<usize>> {
        let mut held = vec![0; self.replicas.len()];
        for (_, holder) in self.holders().await? {
            let index = holder.and_then(|h| h.strip_prefix("replica-")?.parse::<usize>().ok());
            if let Some(n) = index.and_then(|i| held.get_mut(i)) {
                *n += 1;
            }
        }
        Ok(held)
    }

    /// Waits until the `replicas` (indexes) have neither reconciled nor asked Ironic anything
    /// but polls for [`Options::quiet`]; returns when the last change was seen, and their
    /// last scrapes.
    async fn quiet(&self, replicas: &[usize]) -> crate::Result<(Instant, Vec<Scrape>)> {
        let deadline = Instant::now() + self.options.timeout;
        let (mut last, mut changed) = (None, Instant::now());
        loop {
            let mut scrapes = Vec::new();
            for index in replicas {
                scrapes.push(Scrape::fetch(&self.replicas[*index].metrics_url()).await?);
            }
            let work: Vec<(u64, u64)> = scrapes.iter().map(|s| (s.reconciles("host"), non_poll(s))).collect();
            if last.as_ref() != Some(&work) {
                (last, changed) = (Some(work), Instant::now());
            } else if changed.elapsed() >= self.options.quiet {
                return Ok((changed, scrapes));
            }
            anyhow::ensure!(Instant::now() < deadline, "the replicas were never quiet");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// A window at rest after one slow poll interval to settle.
    async fn rest(&self) -> crate::Result<Rest> {
        tokio::time::sleep(self.options.slow_poll).await;
        let pids: Vec<u32> = self.replicas.iter().map(OperatorProcess::pid).collect();
        let before = (self.scrape_all().await?, samples(&pids)?, CpuSnapshot::take(&self.sources()));
        tokio::time::sleep(self.options.steady_window).await;
        let after = (self.scrape_all().await?, samples(&pids)?, CpuSnapshot::take(&self.sources()));
        let cpu = before.2.until(&after.2);
        let total = |s: &[Scrape], f: &dyn Fn(&Scrape) -> u64| s.iter().map(f).sum::<u64>();
        let delta = |f: &dyn Fn(&Scrape) -> u64| total(&after.0, f).saturating_sub(total(&before.0, f));
        Ok(Rest {
            window: cpu.wall,
            polls: delta(&|s| s.bulk_polls()),
            ironic: difference(&sum_ops(&after.0), &sum_ops(&before.0)),
            status_writes: delta(&|s| s.status_writes("host")),
            reconciles: delta(&|s| s.reconciles("host")),
            replica_cpu: before
                .1
                .iter()
                .zip(&after.1)
                .map(|(b, a)| a.cpu.saturating_sub(b.cpu).as_secs_f64() / cpu.wall.as_secs_f64().max(1e-9))
                .collect(),
            cpu,
        })
    }

    async fn scrape_all(&self) -> crate::Result<Vec<Scrape>> {
        let mut scrapes = Vec::new();
        for replica in &self.replicas {
            scrapes.push(Scrape::fetch(&replica.metrics_url()).await?);
        }
        Ok(scrapes)
    }

    /// The first replica's look at its shards' nodes, a full list against a delta, each the
    /// mean of [`LOOKS`]; Ironic's cost is its API process and MariaDB.
    async fn lists(&self) -> crate::Result<Lists> {
        let shards = self.shards_of(0).await?;
        let client = IronicClient::builder(self.ironic.endpoint()).build().await?;
        let mut cursor = ChangeCursor::new(DEFAULT_FULL_EVERY).with_shards(shards.clone());
        let nodes = client.node_status_changes(&mut cursor, true).await?.nodes().len();
        let sources = self.sources();
        let (full_wall, full_cpu) = looks(&client, &mut cursor, true, &sources).await?;
        let (delta_wall, delta_cpu) = looks(&client, &mut cursor, false, &sources).await?;
        Ok(Lists { shards, nodes, full_wall, full_cpu, delta_wall, delta_cpu })
    }

    /// The shards replica `index` holds.
    async fn shards_of(&self, index: usize) -> crate::Result<Vec<String>> {
        let identity = format!("replica-{index}");
        let holders = self.holders().await?;
        Ok(holders.into_iter().filter(|(_, h)| h.as_deref() == Some(identity.as_str())).map(|(s, _)| s).collect())
    }

    /// P4 among the fleet: a NodeSet process brings up a NodeSet of new hosts, which the
    /// replicas register and provision, then its MTU is edited.
    async fn rollout(&mut self) -> crate::Result<Option<Rollout>> {
        let count = self.options.rollout_hosts;
        if count == 0 {
            return Ok(None);
        }
        let nodeset = self.start_nodeset()?;
        let mut metrics: Vec<String> = self.replicas.iter().map(OperatorProcess::metrics_url).collect();
        metrics.push(nodeset.metrics_url());
        self.nodeset = Some(nodeset);
        let (client, timeout) = (self.cp.client(), self.options.timeout);
        let day2 = Day2 { client, ns: &self.ns, iso: &self.iso, timeout, metrics };
        Ok(Some(day2.rollout(count).await?))
    }

    /// Kills the first replica; the last one is timed taking every shard and settling.
    async fn handover(&mut self) -> crate::Result<Handover> {
        let survivor = self.replicas.len().saturating_sub(1);
        let before = Scrape::fetch(&self.replicas[survivor].metrics_url()).await?;
        let killed = Instant::now();
        self.replicas[0].kill();
        let (every, timeout) = (self.options.shards.len(), self.options.timeout);
        let leases =
            wait::until_ok("the survivor holding every shard", timeout, Duration::from_millis(100), || async {
                let held = self.shards_held().await?;
                Ok((held.get(survivor) == Some(&every)).then(|| killed.elapsed()))
            })
            .await?;
        let (settled, scrapes) = self.quiet(&[survivor]).await?;
        let after = scrapes.first().ok_or_else(|| anyhow::anyhow!("no scrape of the survivor"))?;
        Ok(Handover {
            leases,
            settled: settled.duration_since(killed),
            ironic: difference(&after.ironic(), &before.ironic()),
            reconciles: after.reconciles("host").saturating_sub(before.reconciles("host")),
            status_writes: after.status_writes("host").saturating_sub(before.status_writes("host")),
            memory: memory(self.replicas[survivor].pid()),
        })
    }
}

/// [`LOOKS`] looks (full lists or deltas): the mean wall time of one, and what one cost
/// Ironic (its API process and MariaDB).
async fn looks(
    client: &IronicClient,
    cursor: &mut ChangeCursor,
    full: bool,
    sources: &[(&'static str, Source)],
) -> crate::Result<(Duration, Duration)> {
    let (before, started) = (CpuSnapshot::take(sources), Instant::now());
    for _ in 0..LOOKS {
        client.node_status_changes(cursor, full).await?;
    }
    let cpu = before.until(&CpuSnapshot::take(sources));
    Ok((started.elapsed() / LOOKS, (cpu.of("ironic-api") + cpu.of("mariadb")) / LOOKS))
}

/// Hosts whose status came back from the annotation: provisioned, with their node, the
/// annotation gone.
async fn watch_restored(api: Api<BareMetalHost>, restored: Arc<Mutex<HashSet<String>>>) {
    let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        if let Ok(Event::Apply(host) | Event::InitApply(host)) = event {
            let status = host.status.as_ref();
            let done = !host.annotations().contains_key(STATUS)
                && status
                    .is_some_and(|s| s.provisioning.state.as_str() == "provisioned" && !s.provisioning.id.is_empty());
            if done {
                restored.lock().unwrap_or_else(|e| e.into_inner()).insert(host.name_any());
            }
        }
    }
}

/// Ironic requests by operation, summed over replicas.
fn sum_ops(scrapes: &[Scrape]) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for scrape in scrapes {
        for (op, n) in scrape.ironic() {
            *total.entry(op).or_insert(0) += n;
        }
    }
    total
}

fn non_poll(scrape: &Scrape) -> u64 {
    scrape.ironic().iter().filter(|(op, _)| !POLLING.contains(&op.as_str())).map(|(_, n)| n).sum()
}

fn samples(pids: &[u32]) -> crate::Result<Vec<ProcSample>> {
    pids.iter().map(|pid| ProcSample::read(*pid)).collect()
}

fn memory(pid: u32) -> Memory {
    let sample = ProcSample::read(pid).unwrap_or_default();
    Memory { rss: sample.rss, peak_rss: sample.peak_rss }
}
