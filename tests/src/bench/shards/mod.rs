//! The sharded run of `make bench` (issue 27, item 4): a fleet of N hosts served by two
//! operator replicas that divide four shards through shard Leases, against a split Ironic
//! (one API process and conductors reached over JSON-RPC, sharing MariaDB), at N = 1000 and
//! 10,000. It measures; it asserts nothing about time.
//!
//! Per host count, on a fresh control plane, MariaDB and Ironic:
//! - the fleet is pre-registered (`fleet`: one node through the API, copied in MariaDB per
//!   host, `active` and in its host's shard), and N BareMetalHosts are created with the
//!   `baremetalhost.metal3.io/status` annotation of a provisioned host, as a move between
//!   clusters leaves them (the apiserver's CPU per host is measured while they are created);
//! - **adoption**: both replicas start; timed until every host has its status back and the
//!   replicas are quiet (no reconcile and no Ironic request but polls for a while). Ironic
//!   requests, reconciles and status writes per host; CPU per process; each replica's memory;
//! - **steady**: a window at rest: Ironic requests per poll, writes, each replica's CPU, and
//!   what Ironic spends at rest (its conductors sync every node's power state);
//! - **lists**: one replica's look at its shards' nodes, a full list against a delta;
//! - **day 2 among the fleet**: the NodeSet controller, in its own process as `config/shards`
//!   runs it, brings up a NodeSet of new hosts (which the replicas register and provision)
//!   and its MTU is edited: the first new Job is timed and Ironic requests counted, as in the
//!   scale run's P4 but among every host of the fleet;
//! - **handover**: one replica is killed (SIGKILL, so its Leases run out rather than being
//!   released); timed until the other holds every shard's Lease and until it is quiet again,
//!   with its memory serving every host;
//! - **integrity**: Ironic's database after all of it: nodes, duplicate names, nodes not
//!   `active`, nodes moved since the fleet was made.

pub mod fleet;
mod phases;
mod scenario;
mod table;

pub use fleet::Integrity;
pub use table::render;

use super::Rollout;
use super::cpu::PhaseCpu;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The shard of the host `namespace/name`, as the operator computes it (the benchmark's
/// caller passes the operator's own function: this crate's library does not link it).
pub type ShardOf = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

/// What to run.
#[derive(Clone)]
pub struct Options {
    /// Host counts, one run each.
    pub hosts: Vec<usize>,
    pub conductors: usize,
    /// The shards the replicas divide (`--shards`).
    pub shards: Vec<String>,
    pub replicas: usize,
    /// Hosts of the NodeSet edited among the fleet (0 skips the edit).
    pub rollout_hosts: usize,
    pub steady_window: Duration,
    pub fast_poll: Duration,
    pub slow_poll: Duration,
    /// How long nothing may change for the replicas to count as quiet.
    pub quiet: Duration,
    /// The shard Leases' duration, seconds.
    pub lease_seconds: u64,
    /// Longest wait for any phase.
    pub timeout: Duration,
    pub shard_of: ShardOf,
    /// The fleet made and last written at one second (`FERROMETAL_BENCH_FLEET_ONE_TIME=1`),
    /// not one second apart.
    pub one_time: bool,
}

impl Options {
    /// N = 1000 and 10,000 (`FERROMETAL_BENCH_SHARD_HOSTS`, a comma list, changes them), two
    /// conductors, four shards over two replicas, the operator's default 15 s Leases, the
    /// main benchmark's polls (3 s fast, 20 s slow), a one-minute steady window and a NodeSet
    /// of 100 hosts edited.
    pub fn full(shard_of: ShardOf) -> Self {
        Self {
            hosts: hosts_from_env().unwrap_or_else(|| vec![1000, 10_000]),
            conductors: 2,
            shards: ["0", "1", "2", "3"].map(String::from).into(),
            replicas: 2,
            rollout_hosts: 100,
            steady_window: Duration::from_secs(60),
            fast_poll: Duration::from_secs(3),
            slow_poll: Duration::from_secs(20),
            quiet: Duration::from_secs(15),
            lease_seconds: 15,
            timeout: Duration::from_secs(3600),
            shard_of,
            one_time: std::env::var("FERROMETAL_BENCH_FLEET_ONE_TIME").is_ok_and(|v| v == "1"),
        }
    }

    /// The short form `make test` runs to prove the run works: 40 hosts, short intervals.
    pub fn short(shard_of: ShardOf) -> Self {
        Self {
            hosts: vec![40],
            rollout_hosts: 5,
            steady_window: Duration::from_secs(5),
            fast_poll: Duration::from_millis(500),
            slow_poll: Duration::from_secs(2),
            quiet: Duration::from_secs(4),
            lease_seconds: 6,
            timeout: Duration::from_secs(300),
            ..Self::full(shard_of)
        }
    }
}

fn hosts_from_env() -> Option<Vec<usize>> {
    let value = std::env::var("FERROMETAL_BENCH_SHARD_HOSTS").ok()?;
    let counts: Vec<usize> = value.split(',').filter_map(|v| v.trim().parse().ok()).filter(|n| *n > 0).collect();
    (!counts.is_empty()).then_some(counts)
}

/// One replica's memory (resident, its peak, and of it anonymous and file-backed), as read from
/// `/proc` with its CPU time.
pub type Memory = super::probe::ProcSample;

/// Both replicas taking the fleet in.
#[derive(Clone, Debug)]
pub struct Adoption {
    pub wall: Duration,
    pub ironic: BTreeMap<String, u64>,
    pub reconciles: u64,
    pub status_writes: u64,
    pub cpu: PhaseCpu,
    /// Per replica once quiet.
    pub memory: Vec<Memory>,
    /// Shard Leases each replica held once quiet.
    pub shards_held: Vec<usize>,
}

/// The window at rest, both replicas.
#[derive(Clone, Debug)]
pub struct Rest {
    pub window: Duration,
    pub polls: u64,
    pub ironic: BTreeMap<String, u64>,
    pub status_writes: u64,
    pub reconciles: u64,
    /// Per replica, a fraction of one core.
    pub replica_cpu: Vec<f64>,
    pub cpu: PhaseCpu,
}

/// One replica's look at its shards' nodes.
#[derive(Clone, Debug, Default)]
pub struct Lists {
    /// The shards looked at, and how many nodes they have.
    pub shards: Vec<String>,
    pub nodes: usize,
    pub full_wall: Duration,
    pub full_cpu: Duration,
    pub delta_wall: Duration,
    pub delta_cpu: Duration,
}

/// The survivor taking a killed replica's shards.
#[derive(Clone, Debug)]
pub struct Handover {
    /// From the kill until the survivor held every shard's Lease.
    pub leases: Duration,
    /// The earliest and the latest of the survivor's takeovers past the end of the term the
    /// killed replica's last renewal gave (each Lease's `acquireTime` less `renewTime` and
    /// duration, both written on this machine's clock), milliseconds; negative would be a
    /// takeover inside a term.
    pub past_term_ms: Option<(i64, i64)>,
    /// From the kill until the survivor was quiet again.
    pub settled: Duration,
    pub ironic: BTreeMap<String, u64>,
    pub reconciles: u64,
    /// The survivor's host wake-ups by cause meanwhile: what its reconciles beyond one per
    /// host came from, besides the restart's listing.
    pub wakes: BTreeMap<String, u64>,
    pub status_writes: u64,
    /// The survivor, serving every host.
    pub memory: Memory,
}

/// Everything measured at one host count.
#[derive(Clone, Debug)]
pub struct Report {
    pub hosts: usize,
    pub conductors: usize,
    pub shards: usize,
    pub lease_seconds: u64,
    /// The fleet made and last written at one second.
    pub one_time: bool,
    pub preregister: Duration,
    /// Creating the hosts' objects (no operator running yet).
    pub create: PhaseCpu,
    pub adoption: Adoption,
    pub rest: Rest,
    pub lists: Lists,
    /// The NodeSet edit among the fleet.
    pub rollout: Option<Rollout>,
    pub handover: Handover,
    pub integrity: Integrity,
}

/// Runs every host count of `options` in turn, printing progress on stderr; `each` sees each
/// report as it is made (the larger counts take long).
pub async fn run(options: &Options, mut each: impl FnMut(&Report)) -> crate::Result<Vec<Report>> {
    crate::init();
    let mut reports = Vec::new();
    for &hosts in &options.hosts {
        let report = scenario::run(hosts, options).await?;
        each(&report);
        reports.push(report);
    }
    Ok(reports)
}
