//! The scale benchmark of `make bench` (issue 17): the operator, as its own `ferrometal run`
//! process, against the floor (a minimal driver on `ironic-client`) on the same Ironic with
//! the same limits, at several host counts; one table of figures (`design/performance.md`
//! records them). It measures; it asserts nothing about time.
//!
//! Per host count, on a fresh control plane and Ironic (fake-hardware, SQLite):
//! - **P1**: the floor takes N nodes to `active` and powers them on; Ironic is emptied; the operator takes N
//!   BareMetalHosts (live ISO, no inspection or cleaning) to `provisioned`;
//! - **P4** (first host count only): a NodeSet claims, provisions and configures
//!   `rollout_hosts` more hosts, and its MTU is edited;
//! - then NodeSets up to `nodesets` (holding no nodes) are created, and after a settling
//!   slow poll a steady window gives **P2** (Ironic requests per poll, writes and reconciles
//!   per minute) and **P3** (the process's resident memory and CPU from `/proc`).
//!
//! During both halves of P1 the CPU time of every process (Ironic, the control plane, the
//! operator, the bench process itself) and the machine's busy and stolen time are recorded,
//! so a slow P1 shows whether a process did more work or the machine had less to give.

mod at_rest;
pub mod cpu;
mod day2;
pub mod floor;
pub mod probe;
mod scenario;
pub mod shards;
mod table;

pub use floor::FloorRun;
pub use table::render;

use std::collections::BTreeMap;
use std::time::Duration;

/// The limits both the operator and the floor run under.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Ironic requests in flight (the floor; the operator's Ironic client keeps its default
    /// of 8) and hosts reconciled at once (the operator, unless `reconciles` says otherwise).
    pub concurrency: usize,
    /// Hosts the operator reconciles at once (`BMO_CONCURRENCY`), when not `concurrency`:
    /// its reconciles also wait on the apiserver, which the floor never does.
    pub reconciles: Option<usize>,
    /// Nodes deploying at once.
    pub provisioning: usize,
    /// Poll interval while anything moves.
    pub fast_poll: Duration,
    /// Poll interval in steady state.
    pub slow_poll: Duration,
    /// Longest wait for any phase.
    pub timeout: Duration,
}

impl Limits {
    /// Hosts the operator reconciles at once: `reconciles`, else `concurrency`.
    pub fn operator_reconciles(&self) -> usize {
        self.reconciles.unwrap_or(self.concurrency)
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Host counts, one run each.
    pub hosts: Vec<usize>,
    /// NodeSets present during the steady window.
    pub nodesets: usize,
    /// Hosts of the NodeSet edited in P4 (in the first run only; 0 skips P4).
    pub rollout_hosts: usize,
    pub steady_window: Duration,
    pub limits: Limits,
    /// P1 a second time in the other order (operator, then floor), each pair's ratio reported
    /// (`FERROMETAL_BENCH_ALTERNATE=0` runs the first pair only).
    pub alternate: bool,
}

impl Options {
    /// The full benchmark: N = 100, 300, 1000 (`FERROMETAL_BENCH_HOSTS`, a comma list,
    /// changes it), 100 NodeSets, a NodeSet of 100 hosts edited (`FERROMETAL_BENCH_ROLLOUT_HOSTS`
    /// changes that; 0 skips P4). The limits are the
    /// operator's defaults (baremetal-operator's provisioning limit of 20, a 3 s fast poll)
    /// with 8 hosts reconciled at once; the slow poll is 20 s instead of 60 s so that a
    /// one-minute window holds three polls. `FERROMETAL_BENCH_PROVISIONING_LIMIT` sets the
    /// provisioning limit of both sides: with one as large as N nothing but Ironic paces P1,
    /// the run that gives the Ironic CPU ratio (design/performance.md).
    /// `FERROMETAL_BENCH_RECONCILES` sets the hosts the operator reconciles at once.
    pub fn full() -> Self {
        Self {
            hosts: hosts_from_env().unwrap_or_else(|| vec![100, 300, 1000]),
            nodesets: 100,
            rollout_hosts: std::env::var("FERROMETAL_BENCH_ROLLOUT_HOSTS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(100),
            steady_window: Duration::from_secs(60),
            alternate: std::env::var("FERROMETAL_BENCH_ALTERNATE").map_or(true, |v| v != "0"),
            limits: Limits {
                concurrency: 8,
                reconciles: positive_from_env("FERROMETAL_BENCH_RECONCILES"),
                provisioning: positive_from_env("FERROMETAL_BENCH_PROVISIONING_LIMIT").unwrap_or(20),
                fast_poll: Duration::from_secs(3),
                slow_poll: Duration::from_secs(20),
                timeout: Duration::from_secs(3600),
            },
        }
    }

    /// The short form `make test` runs to prove the benchmark works: 50 hosts, 10 NodeSets
    /// (one of 5 hosts edited), short intervals.
    pub fn short() -> Self {
        Self {
            hosts: vec![50],
            nodesets: 10,
            rollout_hosts: 5,
            steady_window: Duration::from_secs(5),
            alternate: true,
            limits: Limits {
                concurrency: 8,
                reconciles: None,
                provisioning: 20,
                fast_poll: Duration::from_millis(500),
                slow_poll: Duration::from_secs(2),
                timeout: Duration::from_secs(300),
            },
        }
    }
}

fn positive_from_env(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok().filter(|n| *n > 0)
}

fn hosts_from_env() -> Option<Vec<usize>> {
    let value = std::env::var("FERROMETAL_BENCH_HOSTS").ok()?;
    let counts: Vec<usize> = value.split(',').filter_map(|v| v.trim().parse().ok()).filter(|n| *n > 0).collect();
    (!counts.is_empty()).then_some(counts)
}

/// P1, the operator's side.
#[derive(Clone, Debug)]
pub struct Provisioning {
    pub elapsed: Duration,
    /// Ironic requests by operation.
    pub ironic: BTreeMap<String, u64>,
    pub status_writes: u64,
    /// Every request the operator sent the apiserver, by verb and resource (`patch
    /// baremetalhosts/status`): status writes, applies, metadata patches, Events, Leases,
    /// reads and watches alike.
    pub apiserver: BTreeMap<String, u64>,
    pub reconciles: u64,
    /// Host wake-ups by cause, and failed host reconciles: where the reconciles came from.
    pub wakes: BTreeMap<String, u64>,
    pub failures: u64,
    /// Where the CPU went while the operator provisioned.
    pub cpu: cpu::PhaseCpu,
}

/// P2.
#[derive(Clone, Debug)]
pub struct Steady {
    pub window: Duration,
    pub polls: u64,
    pub ironic: BTreeMap<String, u64>,
    /// Ironic's CPU over the window: its own periodic tasks, and the polls.
    pub ironic_cpu: Duration,
    pub status_writes_per_minute: f64,
    /// Every write the operator sent the apiserver (Lease renewals included).
    pub apiserver_writes_per_minute: f64,
    pub reconciles_per_minute: f64,
}

/// What one look at N nodes costs Ironic at rest, a full list against a delta, measured on
/// the same Ironic in the same run: wall time and Ironic's CPU per look.
#[derive(Clone, Copy, Debug)]
pub struct PollCosts {
    pub full_wall: Duration,
    pub full_cpu: Duration,
    pub delta_wall: Duration,
    pub delta_cpu: Duration,
    /// One node's BIOS settings read (`GET /v1/nodes/{id}/bios`), the request the operator
    /// makes per host that the floor does not (fake hardware's: an empty list).
    pub bios_wall: Duration,
    pub bios_cpu: Duration,
}

/// P3, bytes and a fraction of one core.
#[derive(Clone, Copy, Debug)]
pub struct Footprint {
    pub peak_rss: u64,
    pub steady_rss: u64,
    /// Of `steady_rss`, anonymous memory (heap, stacks) and mapped files (the binary).
    pub steady_anon_rss: u64,
    pub steady_file_rss: u64,
    pub idle_cpu: f64,
}

/// P4.
#[derive(Clone, Debug)]
pub struct Rollout {
    pub hosts: usize,
    /// The NodeSet created until Ready.
    pub bring_up: Duration,
    /// The edit until the first new Job exists.
    pub first_job: Duration,
    /// The edit until Ready again.
    pub complete: Duration,
    pub ironic_to_first_job: BTreeMap<String, u64>,
    pub ironic_during: BTreeMap<String, u64>,
    pub reconciles: u64,
}

impl Rollout {
    pub fn provision_state_requests(&self) -> u64 {
        self.ironic_during.get("set_provision_state").copied().unwrap_or(0)
    }
}

/// P1's second pair, run in the other order: the operator, then the floor.
#[derive(Clone, Debug)]
pub struct Pair {
    pub floor: FloorRun,
    pub floor_cpu: cpu::PhaseCpu,
    pub provisioning: Provisioning,
}

impl Pair {
    /// As [`Report::ironic_cpu_ratio`], for this pair.
    pub fn ironic_cpu_ratio(&self) -> Result<f64, String> {
        cpu_ratio(&self.floor_cpu, &self.provisioning.cpu)
    }

    /// Operator time over floor time.
    pub fn ratio(&self) -> f64 {
        self.provisioning.elapsed.as_secs_f64() / self.floor.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Ironic's CPU, the operator's half over the floor's, or why there is none: the floor's half
/// kept Ironic less than 95 % busy, so the floor was no lower bound.
fn cpu_ratio(floor_cpu: &cpu::PhaseCpu, operator_cpu: &cpu::PhaseCpu) -> Result<f64, String> {
    let floor = floor_cpu.of("ironic").as_secs_f64();
    let busy = floor / floor_cpu.wall.as_secs_f64().max(1e-9);
    if busy < 0.95 {
        return Err(format!("floor kept Ironic {:.0} % busy", busy * 100.0));
    }
    Ok(operator_cpu.of("ironic").as_secs_f64() / floor.max(1e-9))
}

/// Everything measured at one host count.
#[derive(Clone, Debug)]
pub struct Report {
    pub hosts: usize,
    pub nodesets: usize,
    /// Nodes deploying at once on either side of P1.
    pub provisioning_limit: usize,
    /// Hosts the operator reconciled at once (`Limits::operator_reconciles`).
    pub reconciles: usize,
    pub floor: FloorRun,
    /// Where the CPU went while the floor provisioned.
    pub floor_cpu: cpu::PhaseCpu,
    pub provisioning: Provisioning,
    pub steady: Steady,
    pub footprint: Footprint,
    pub poll_costs: PollCosts,
    pub rollout: Option<Rollout>,
    /// P1 again in the other order, when alternating.
    pub second: Option<Pair>,
}

impl Report {
    /// Ironic's CPU per host, operator ÷ floor: the work each side makes Ironic do, which a
    /// noisy machine does not bend as it bends wall time. `Err` says why there is no ratio:
    /// the floor's half kept Ironic less than 95 % busy, so the floor was no lower bound.
    pub fn ironic_cpu_ratio(&self) -> Result<f64, String> {
        cpu_ratio(&self.floor_cpu, &self.provisioning.cpu)
    }

    /// Operator time over floor time.
    pub fn ratio(&self) -> f64 {
        self.provisioning.elapsed.as_secs_f64() / self.floor.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn ironic_per_host(&self) -> f64 {
        self.provisioning.ironic.values().sum::<u64>() as f64 / self.hosts.max(1) as f64
    }

    pub fn status_writes_per_host(&self) -> f64 {
        self.provisioning.status_writes as f64 / self.hosts.max(1) as f64
    }

    /// Every apiserver write of the operator's while it provisioned, per host, and its other
    /// requests (reads and watches) per host.
    pub fn apiserver_per_host(&self) -> (f64, f64) {
        let writes = probe::apiserver_writes(&self.provisioning.apiserver);
        let all: u64 = self.provisioning.apiserver.values().sum();
        let hosts = self.hosts.max(1) as f64;
        (writes as f64 / hosts, all.saturating_sub(writes) as f64 / hosts)
    }

    /// Ironic requests per bulk poll in the steady window, and how many were not the poll's
    /// (full lists and delta looks).
    pub fn per_poll(&self) -> (f64, u64) {
        let total: u64 = self.steady.ironic.values().sum();
        let polling: u64 = ["node_status", "node_changes"].iter().filter_map(|op| self.steady.ironic.get(*op)).sum();
        (total as f64 / self.steady.polls.max(1) as f64, total - polling)
    }
}

/// Whether the bench binary `name` was started by `cargo bench`, which alone passes `--bench`.
/// Test runners run bench binaries too and get no output (nextest reads `--list`'s as a list
/// of tests, and these binaries have none); anyone else is told how to run it. When it was,
/// the harness's log tails of the servers are turned off: they would bury the figures.
/// Call it first in `main`, before any thread starts.
pub fn started_by_cargo_bench(name: &str) -> bool {
    if !std::env::args().any(|a| a == "--bench") {
        if !std::env::args().any(|a| a == "--list") {
            eprintln!("{name}: run with `make bench` or `cargo bench -p ferrometal-tests --bench {name}`");
        }
        return false;
    }
    // SAFETY: the caller runs this before any other thread exists.
    unsafe { std::env::set_var("FERROMETAL_LOG_TAILS", "0") };
    true
}

/// The `ferrometal` binary measured: `FERROMETAL_BENCH_OPERATOR` when set (`make bench`
/// passes the release build), else the workspace's debug build.
pub(crate) fn operator_binary() -> crate::Result<std::path::PathBuf> {
    match std::env::var_os("FERROMETAL_BENCH_OPERATOR") {
        Some(path) => Ok(std::path::PathBuf::from(path)),
        None => crate::operator_process::binary(),
    }
}

/// Runs every host count of `options` in turn, printing progress on stderr.
pub async fn run(options: &Options) -> crate::Result<Vec<Report>> {
    let mut reports = Vec::new();
    for i in 0..options.hosts.len() {
        reports.push(run_one(options, i).await?);
    }
    Ok(reports)
}

/// Runs the `index`th host count of `options` (P4 only with the first).
pub async fn run_one(options: &Options, index: usize) -> crate::Result<Report> {
    crate::init();
    let hosts = options.hosts.get(index).copied().ok_or_else(|| anyhow::anyhow!("no host count {index}"))?;
    let rollout = if index == 0 { options.rollout_hosts } else { 0 };
    scenario::run(hosts, options, rollout).await
}
