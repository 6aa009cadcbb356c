//! One run of the benchmark at one host count: the environment, the floor, then the operator
//! as its own process taking the same number of hosts through the same Ironic (P1), NodeSets
//! and the day-2 edit (P4), and a steady window (P2, P3).

use super::cpu::{CpuSnapshot, PhaseCpu, Source};
use super::day2::{CREATORS, Day2, create_hosts, network, nodesets};
use super::probe::{ProcSample, Scrape, apiserver_writes, difference};
use super::{FloorRun, Footprint, Limits, Options, Pair, PollCosts, Provisioning, Report, Rollout, Steady, floor};
use crate::ironic::{IronicConfig, IronicServer};
use crate::operator_process::OperatorProcess;
use crate::{ControlPlane, PodSimulator, wait};
use crds::baremetalhost::BareMetalHost;
use futures::{StreamExt, TryStreamExt};
use ironic_client::{ChangeCursor, DEFAULT_FULL_EVERY, IronicClient};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Bench {
    cp: ControlPlane,
    _simulator: PodSimulator,
    ns: String,
    ironic: IronicServer,
    operator: OperatorProcess,
    iso: String,
    limits: Limits,
}

pub async fn run(hosts: usize, options: &Options, rollout_hosts: usize) -> crate::Result<Report> {
    let limits = options.limits.clone();
    let provisioning_limit = limits.provisioning;
    let reconciles = limits.operator_reconciles();
    let (cp, simulator, ns) = cluster().await?;
    let ironic = IronicServer::start(IronicConfig::default()).await?;
    let iso = ironic.image_server().write_live_iso("live.iso")?;
    eprintln!("[bench] N={hosts}: floor");
    let (floor, floor_cpu) = floor_half(&cp, &ironic, hosts, &iso, &limits).await?;
    let mut bench = Bench::start(cp, simulator, ns, ironic, iso, limits).await?;

    eprintln!("[bench] N={hosts}: operator");
    let provisioning = bench.provision(hosts).await?;
    eprintln!("[bench] N={hosts}: {} NodeSets", options.nodesets);
    let rollout = bench.create_nodesets(options.nodesets, rollout_hosts).await?;
    eprintln!("[bench] N={hosts}: steady window of {:?}", options.steady_window);
    let (steady, footprint) = bench.steady(options.steady_window).await?;
    let poll_costs = bench.poll_costs().await?;
    bench.operator.ensure_running()?;
    let second = if options.alternate { Some(bench.second_pair(hosts).await?) } else { bench.stop().await };
    Ok(Report {
        hosts,
        nodesets: options.nodesets,
        provisioning_limit,
        reconciles,
        floor,
        floor_cpu,
        provisioning,
        steady,
        footprint,
        poll_costs,
        rollout,
        second,
    })
}

/// A fresh control plane with the CRDs, the pod simulator and the benchmark's namespace.
async fn cluster() -> crate::Result<(ControlPlane, PodSimulator, String)> {
    let mut cp = ControlPlane::start().await?;
    cp.install_crds(&crds::all_crds()).await?;
    let simulator = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("bench").await?;
    Ok((cp, simulator, ns))
}

/// The floor's half of P1 on `ironic`, with where the CPU went.
async fn floor_half(
    cp: &ControlPlane,
    ironic: &IronicServer,
    hosts: usize,
    iso: &str,
    limits: &Limits,
) -> crate::Result<(FloorRun, PhaseCpu)> {
    let sources = base_sources(cp, ironic);
    let before = CpuSnapshot::take(&sources);
    let floor = floor::run(ironic.endpoint(), "floor", hosts, iso, limits).await?;
    Ok((floor, before.until(&CpuSnapshot::take(&sources))))
}

/// The processes whose CPU is counted in both halves of P1 (the operator is added to the
/// second): Ironic, the control plane, and this process (the floor's driver, then the watch).
fn base_sources(cp: &ControlPlane, ironic: &IronicServer) -> Vec<(&'static str, Source)> {
    let mut sources: Vec<(&'static str, Source)> =
        cp.processes().into_iter().map(|(name, pid)| (name, Source::Group(pid))).collect();
    sources.extend(ironic.pid().map(|pid| ("ironic", Source::Group(pid))));
    sources.push(("bench", Source::Process(std::process::id())));
    sources
}

async fn start_operator(
    cp: &ControlPlane,
    ns: &str,
    ironic: &IronicServer,
    limits: &Limits,
) -> crate::Result<OperatorProcess> {
    let args: Vec<String> = ["run", "--controllers=host,nodeset", "--disable-webhooks", &format!("--namespaces={ns}")]
        .map(String::from)
        .into();
    let go = |d: Duration| format!("{}ms", d.as_millis());
    let env: Vec<(String, String)> = [
        ("IRONIC_ENDPOINT", ironic.endpoint().to_string()),
        ("BMO_CONCURRENCY", limits.operator_reconciles().to_string()),
        ("PROVISIONING_LIMIT", limits.provisioning.to_string()),
        ("HOST_FAST_POLL_INTERVAL", go(limits.fast_poll)),
        ("HOST_SLOW_POLL_INTERVAL", go(limits.slow_poll)),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into();
    let binary = crate::bench::operator_binary()?;
    let mut operator = OperatorProcess::start_binary(&binary, "ferrometal-bench", cp.kubeconfig(), &args, &env)?;
    wait_started(&mut operator, Duration::from_secs(180)).await?;
    Ok(operator)
}

/// Waits until the process leads with its watches synced. The Events watch is not waited
/// for: the RBAC table grants the NodeSet controller a watch of Events that nothing starts,
/// so `/readyz` never passes with that controller running (recorded in
/// design/performance.md).
async fn wait_started(operator: &mut OperatorProcess, timeout: Duration) -> crate::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        operator.ensure_running()?;
        if let Some((status, report)) = operator.readyz().await {
            let failing =
                report.lines().filter(|l| l.starts_with("[-]")).all(|l| l.contains("watch events.events.k8s.io"));
            if status == 200 || (failing && report.contains("leader election: leading")) {
                return Ok(());
            }
            anyhow::ensure!(Instant::now() < deadline, "the operator did not start in {timeout:?}: {report}");
        }
        anyhow::ensure!(Instant::now() < deadline, "the operator did not answer /readyz in {timeout:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn state_of(host: &BareMetalHost) -> &'static str {
    host.status.as_ref().map(|s| s.provisioning.state.as_str()).unwrap_or("")
}

fn processed(nodeset: &DynamicObject) -> bool {
    nodeset.data["status"]["observedGeneration"] == json!(nodeset.metadata.generation)
}

impl Bench {
    /// The operator in `cp`, against `ironic` emptied first: it starts from no nodes, as the
    /// floor did.
    async fn start(
        cp: ControlPlane,
        simulator: PodSimulator,
        ns: String,
        mut ironic: IronicServer,
        iso: String,
        limits: Limits,
    ) -> crate::Result<Self> {
        ironic.restart(true).await?;
        let operator = start_operator(&cp, &ns, &ironic, &limits).await?;
        Ok(Self { cp, _simulator: simulator, ns, ironic, operator, iso, limits })
    }

    /// Stops the operator and Ironic; there is no second pair.
    async fn stop(mut self) -> Option<Pair> {
        let _ = self.operator.stop(Duration::from_secs(20)).await;
        let _ = self.ironic.stop().await;
        None
    }

    /// P1 again in the other order, operator then floor: a fresh cluster and operator on the
    /// emptied Ironic, then the floor once more. Each pair's ratio is reported, so that a
    /// machine slowing down or speeding up during the run shows as two different ratios
    /// rather than as the operator's cost.
    async fn second_pair(mut self, hosts: usize) -> crate::Result<Pair> {
        let _ = self.operator.stop(Duration::from_secs(20)).await;
        let Bench { cp, _simulator, ironic, iso, limits, .. } = self;
        // The first cluster, with its hosts and NodeSets, stops before the second starts: it
        // would take CPU no figure counts.
        drop(_simulator);
        drop(cp);
        let (cp, simulator, ns) = cluster().await?;
        let mut again = Bench::start(cp, simulator, ns, ironic, iso, limits).await?;
        eprintln!("[bench] N={hosts}: operator again");
        let provisioning = again.provision(hosts).await?;
        again.operator.ensure_running()?;
        let _ = again.operator.stop(Duration::from_secs(20)).await;
        again.ironic.restart(true).await?;
        eprintln!("[bench] N={hosts}: floor again");
        let (floor, floor_cpu) = floor_half(&again.cp, &again.ironic, hosts, &again.iso, &again.limits).await?;
        let _ = again.ironic.stop().await;
        Ok(Pair { floor, floor_cpu, provisioning })
    }

    fn hosts(&self) -> Api<BareMetalHost> {
        Api::namespaced(self.cp.client(), &self.ns)
    }

    fn nodesets(&self) -> Api<DynamicObject> {
        nodesets(self.cp.client(), &self.ns)
    }

    async fn scrape(&self) -> crate::Result<Scrape> {
        Scrape::fetch(&self.operator.metrics_url()).await
    }

    /// P1: `count` hosts created at once, timed until all are provisioned.
    async fn provision(&self, count: usize) -> crate::Result<Provisioning> {
        let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
        let sink = seen.clone();
        let watch = tokio::spawn(watcher::watcher(self.hosts(), watcher::Config::default()).for_each(move |event| {
            if let Ok(Event::Apply(host) | Event::InitApply(host)) = event
                && state_of(&host) == "provisioned"
            {
                sink.lock().unwrap_or_else(|e| e.into_inner()).insert(host.name_any());
            }
            async {}
        }));
        let before = self.scrape().await?;
        let mut sources = base_sources(&self.cp, &self.ironic);
        sources.push(("operator", Source::Group(self.operator.pid())));
        let cpu_before = CpuSnapshot::take(&sources);
        let started = Instant::now();
        let names: Vec<String> = (0..count).map(|i| format!("host-{i:04}")).collect();
        create_hosts(&self.hosts(), &names, Some(&self.iso)).await?;
        let done = wait::until("every host provisioned", self.limits.timeout, Duration::from_millis(100), || async {
            (seen.lock().unwrap_or_else(|e| e.into_inner()).len() >= count).then_some(())
        })
        .await;
        let elapsed = started.elapsed();
        let cpu = cpu_before.until(&CpuSnapshot::take(&sources));
        watch.abort();
        if let Err(err) = done {
            let provisioned = seen.lock().unwrap_or_else(|e| e.into_inner()).len();
            return Err(err.context(format!("{provisioned} of {count} hosts provisioned")));
        }
        let after = self.scrape().await?;
        Ok(Provisioning {
            elapsed,
            ironic: difference(&after.ironic(), &before.ironic()),
            status_writes: after.status_writes("host") - before.status_writes("host"),
            apiserver: difference(&after.apiserver(), &before.apiserver()),
            reconciles: after.reconciles("host") - before.reconciles("host"),
            wakes: difference(&after.host_wakes(), &before.host_wakes()),
            failures: after.reconcile_failures("host") - before.reconcile_failures("host"),
            cpu,
        })
    }

    /// `total` NodeSets: with `rollout_hosts`, one of them claims and provisions that many free
    /// hosts and has its MTU edited (P4); the others hold no nodes and cost only their watch
    /// and reconciles.
    async fn create_nodesets(&self, total: usize, rollout_hosts: usize) -> crate::Result<Option<Rollout>> {
        let api = self.nodesets();
        let rollout = if rollout_hosts > 0 && total > 0 { Some(self.rollout(rollout_hosts).await?) } else { None };
        let idle: Vec<String> = (rollout.iter().count()..total).map(|i| format!("idle-{i:03}")).collect();
        futures::stream::iter(&idle)
            .map(|name| {
                let api = api.clone();
                let nodeset = json!({
                    "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": name},
                    "spec": {
                        "baremetalSetTemplate": {"image": {"url": self.iso, "format": "live-iso"}},
                        "nodeTemplate": {"networks": network(1500), "managementNetwork": "ctlplane"},
                        "nodes": {},
                    }
                });
                async move {
                    api.create(&PostParams::default(), &serde_json::from_value(nodeset)?).await?;
                    Ok::<_, anyhow::Error>(())
                }
            })
            .buffer_unordered(CREATORS)
            .try_collect::<Vec<()>>()
            .await?;
        wait::until_ok("every NodeSet processed", self.limits.timeout, Duration::from_millis(500), || async {
            let list = api.list(&Default::default()).await?;
            Ok((list.items.len() == total && list.items.iter().all(processed)).then_some(()))
        })
        .await?;
        Ok(rollout)
    }

    /// P4 among the hosts of P1.
    async fn rollout(&self, count: usize) -> crate::Result<Rollout> {
        let day2 = Day2 {
            client: self.cp.client(),
            ns: &self.ns,
            iso: &self.iso,
            timeout: self.limits.timeout,
            metrics: vec![self.operator.metrics_url()],
        };
        day2.rollout(count).await
    }

    /// P2 and P3: after one slow poll interval to settle, a window of `window` with nothing
    /// changing, read from the process's counters and `/proc`.
    async fn steady(&self, window: Duration) -> crate::Result<(Steady, Footprint)> {
        tokio::time::sleep(self.limits.slow_poll).await;
        let pid = self.operator.pid();
        let sources = base_sources(&self.cp, &self.ironic);
        let (before, proc_before) = (self.scrape().await?, ProcSample::read(pid)?);
        let (cpu_before, started) = (CpuSnapshot::take(&sources), Instant::now());
        tokio::time::sleep(window).await;
        let (after, proc_after) = (self.scrape().await?, ProcSample::read(pid)?);
        let ironic_cpu = cpu_before.until(&CpuSnapshot::take(&sources)).of("ironic");
        let elapsed = started.elapsed();
        let minutes = elapsed.as_secs_f64() / 60.0;
        let writes = (after.status_writes("host") + after.status_writes("nodeset"))
            - (before.status_writes("host") + before.status_writes("nodeset"));
        let reconciles = (after.reconciles("host") + after.reconciles("nodeset"))
            - (before.reconciles("host") + before.reconciles("nodeset"));
        let steady = Steady {
            window: elapsed,
            polls: after.bulk_polls() - before.bulk_polls(),
            ironic: difference(&after.ironic(), &before.ironic()),
            ironic_cpu,
            status_writes_per_minute: writes as f64 / minutes,
            apiserver_writes_per_minute: apiserver_writes(&difference(&after.apiserver(), &before.apiserver())) as f64
                / minutes,
            reconciles_per_minute: reconciles as f64 / minutes,
        };
        let cpu = proc_after.cpu.saturating_sub(proc_before.cpu);
        let footprint = Footprint {
            peak_rss: proc_after.peak_rss,
            steady_rss: proc_after.rss,
            steady_anon_rss: proc_after.anon_rss,
            steady_file_rss: proc_after.file_rss,
            idle_cpu: cpu.as_secs_f64() / elapsed.as_secs_f64(),
        };
        Ok((steady, footprint))
    }
}

impl Bench {
    /// One look at every node against one delta look (its cursor at rest, as the operator's
    /// poller is: [`super::at_rest::settle`]), and one node's BIOS read, each the mean of
    /// [`LOOKS`] on the Ironic the operator left at rest (its own polls run beside them, rarely).
    async fn poll_costs(&self) -> crate::Result<PollCosts> {
        const LOOKS: u32 = 5;
        let client = IronicClient::builder(self.ironic.endpoint()).build().await?;
        let sources = base_sources(&self.cp, &self.ironic);
        let mut cursor = ChangeCursor::new(DEFAULT_FULL_EVERY);
        let listed = Instant::now();
        let nodes: Vec<String> =
            client.node_status_changes(&mut cursor, true).await?.into_nodes().into_iter().map(|n| n.uuid).collect();
        let (before, started) = (CpuSnapshot::take(&sources), Instant::now());
        for _ in 0..LOOKS {
            client.node_status_changes(&mut cursor, true).await?;
        }
        let (full_wall, full) = (started.elapsed() / LOOKS, before.until(&CpuSnapshot::take(&sources)));
        super::at_rest::settle(&client, &mut cursor, listed).await?;
        let (before, started) = (CpuSnapshot::take(&sources), Instant::now());
        for _ in 0..LOOKS {
            client.node_status_changes(&mut cursor, false).await?;
        }
        let (delta_wall, delta) = (started.elapsed() / LOOKS, before.until(&CpuSnapshot::take(&sources)));
        let (before, started) = (CpuSnapshot::take(&sources), Instant::now());
        let read = nodes.iter().take(LOOKS as usize);
        let reads = read.len().max(1) as u32;
        for uuid in read {
            client.list_bios_settings(uuid).await?;
        }
        let (bios_wall, bios) = (started.elapsed() / reads, before.until(&CpuSnapshot::take(&sources)));
        Ok(PollCosts {
            full_wall,
            full_cpu: full.of("ironic") / LOOKS,
            delta_wall,
            delta_cpu: delta.of("ironic") / LOOKS,
            bios_wall,
            bios_cpu: bios.of("ironic") / reads,
        })
    }
}
