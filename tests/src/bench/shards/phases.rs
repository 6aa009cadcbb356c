//! The phases of a sharded run, each measured from outside the processes: their metrics,
//! `/proc`, the shard Leases, and a watch of the hosts.

use super::scenario::Run;
use super::{Adoption, Handover, Lists, Memory, Rest};
use crate::bench::Rollout;
use crate::bench::cpu::{CpuSnapshot, Source};
use crate::bench::day2::{AbortOnDrop, Day2};
use crate::bench::probe::{ProcSample, Scrape, difference, ironic_summed};
use crds::baremetalhost::BareMetalHost;
use crds::baremetalhost::annotations::STATUS;
use futures::StreamExt;
use ironic_client::{ChangeCursor, DEFAULT_FULL_EVERY, IronicClient};
use k8s_openapi::api::coordination::v1::LeaseSpec;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Looks timed per kind in [`Run::lists`].
const LOOKS: u32 = 5;
/// What a replica's poll costs Ironic; everything else counts as work.
const POLLING: [&str; 2] = ["node_status", "node_changes"];
/// How often the waits look again.
const TICK: Duration = Duration::from_millis(200);

impl Run {
    /// Both replicas start on the fleet; timed until every host has its status back, each
    /// replica holds its share of the shards, and the replicas are quiet.
    pub(super) async fn adopt(&mut self, hosts: usize) -> crate::Result<Adoption> {
        let restored = Arc::new(Mutex::new(HashSet::new()));
        let _watch = AbortOnDrop(tokio::spawn(watch_restored(self.hosts(), restored.clone())));
        let (started, cpu_before) = (Instant::now(), CpuSnapshot::take(&self.sources()));
        for index in 0..self.options.replicas {
            let replica = self.start_replica(index)?;
            self.replicas.push(replica);
        }
        let fair = self.options.shards.len() / self.options.replicas.max(1);
        let deadline = started + self.options.timeout;
        loop {
            self.alive()?;
            let done = restored.lock().unwrap_or_else(|e| e.into_inner()).len() >= hosts;
            if done && self.shards_held().await?.iter().all(|n| *n == fair) {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "the fleet was not adopted in {:?}", self.options.timeout);
            tokio::time::sleep(TICK).await;
        }
        let (settled, scrapes) = self.quiet(&self.live(), 0, hosts as u64).await?;
        let cpu = cpu_before.until(&CpuSnapshot::take(&self.sources()));
        let sum = |f: &dyn Fn(&Scrape) -> u64| scrapes.iter().map(f).sum::<u64>();
        Ok(Adoption {
            wall: settled.duration_since(started),
            ironic: ironic_summed(&scrapes),
            reconciles: sum(&|s| s.reconciles("host")),
            status_writes: sum(&|s| s.status_writes("host")),
            cpu,
            memory: self.replicas.iter().map(|r| memory(r.pid())).collect(),
            shards_held: self.shards_held().await?,
        })
    }

    /// Waits until the replicas `indexes` have reconciled `needed` hosts beyond `baseline`
    /// (summed), and then neither reconciled nor asked Ironic anything but polls for
    /// [`super::Options::quiet`]. Returns when the last change was seen (or the quiet wait
    /// began, when nothing changed after it), and their last scrapes.
    async fn quiet(&mut self, indexes: &[usize], baseline: u64, needed: u64) -> crate::Result<(Instant, Vec<Scrape>)> {
        let deadline = Instant::now() + self.options.timeout;
        let (mut last, mut changed) = (None, Instant::now());
        loop {
            self.alive()?;
            let scrapes = self.scrape(indexes).await?;
            let work: Vec<(u64, u64)> = scrapes.iter().map(|s| (s.reconciles("host"), non_poll(s))).collect();
            let reconciled = work.iter().map(|(r, _)| r).sum::<u64>().saturating_sub(baseline);
            if reconciled < needed || last.as_ref() != Some(&work) {
                (last, changed) = (Some(work), Instant::now());
            } else if changed.elapsed() >= self.options.quiet {
                return Ok((changed, scrapes));
            }
            anyhow::ensure!(Instant::now() < deadline, "the replicas were never quiet");
            tokio::time::sleep(TICK).await;
        }
    }

    /// A window at rest after one slow poll interval to settle.
    pub(super) async fn rest(&self) -> crate::Result<Rest> {
        tokio::time::sleep(self.options.slow_poll).await;
        let live = self.live();
        let pids: Vec<u32> = live.iter().map(|i| self.replicas[*i].pid()).collect();
        let before = (self.scrape(&live).await?, samples(&pids)?, CpuSnapshot::take(&self.sources()));
        tokio::time::sleep(self.options.steady_window).await;
        let after = (self.scrape(&live).await?, samples(&pids)?, CpuSnapshot::take(&self.sources()));
        let cpu = before.2.until(&after.2);
        let total = |s: &[Scrape], f: &dyn Fn(&Scrape) -> u64| s.iter().map(f).sum::<u64>();
        let delta = |f: &dyn Fn(&Scrape) -> u64| total(&after.0, f).saturating_sub(total(&before.0, f));
        let share = |b: &ProcSample, a: &ProcSample| a.cpu.saturating_sub(b.cpu).as_secs_f64() / cpu.wall.as_secs_f64();
        Ok(Rest {
            window: cpu.wall,
            polls: delta(&|s| s.bulk_polls()),
            ironic: difference(&ironic_summed(&after.0), &ironic_summed(&before.0)),
            status_writes: delta(&|s| s.status_writes("host")),
            reconciles: delta(&|s| s.reconciles("host")),
            replica_cpu: before.1.iter().zip(&after.1).map(|(b, a)| share(b, a)).collect(),
            cpu,
        })
    }

    /// The first replica's look at its shards' nodes, a full list against a delta (its cursor
    /// at rest, as the replicas' pollers are), each the mean of [`LOOKS`]; Ironic's cost is its
    /// API process and MariaDB (whose own background work, and the replicas' polls meanwhile,
    /// are in it too).
    pub(super) async fn lists(&self) -> crate::Result<Lists> {
        let shards = self.shards_of(0).await?;
        let client = IronicClient::builder(self.ironic.endpoint()).build().await?;
        let mut cursor = ChangeCursor::new(DEFAULT_FULL_EVERY).with_shards(shards.clone());
        let listed = Instant::now();
        let nodes = client.node_status_changes(&mut cursor, true).await?.nodes().len();
        let sources = self.sources();
        let (full_wall, full_cpu) = looks(&client, &mut cursor, true, &sources).await?;
        crate::bench::at_rest::settle(&client, &mut cursor, listed).await?;
        let (delta_wall, delta_cpu) = looks(&client, &mut cursor, false, &sources).await?;
        Ok(Lists { shards, nodes, full_wall, full_cpu, delta_wall, delta_cpu })
    }

    /// P4 among the fleet: a NodeSet process (started and answering first) brings up a
    /// NodeSet of new hosts, which the replicas register and provision, then its MTU is edited.
    pub(super) async fn rollout(&mut self) -> crate::Result<Option<Rollout>> {
        let count = self.options.rollout_hosts;
        if count == 0 {
            return Ok(None);
        }
        self.nodeset = Some(self.start_nodeset()?);
        let deadline = Instant::now() + self.options.timeout;
        loop {
            self.alive()?;
            let answered = match &self.nodeset {
                Some(nodeset) => nodeset.readyz().await.is_some(),
                None => false,
            };
            if answered {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "the NodeSet process never answered");
            tokio::time::sleep(TICK).await;
        }
        let mut metrics: Vec<String> = self.replicas.iter().map(|r| r.metrics_url()).collect();
        metrics.extend(self.nodeset.iter().map(|n| n.metrics_url()));
        let (client, timeout) = (self.cp.client(), self.options.timeout);
        let day2 = Day2 { client, ns: &self.ns, iso: &self.iso, timeout, metrics };
        Ok(Some(day2.rollout(count).await?))
    }

    /// Kills replica 0; replica 1 is timed taking every shard, then reconciling the `hosts`
    /// it now serves and settling.
    pub(super) async fn handover(&mut self, hosts: usize) -> crate::Result<Handover> {
        let survivor = 1;
        let before = Scrape::fetch(&self.replicas[survivor].metrics_url()).await?;
        let killed = Instant::now();
        self.replicas[0].kill();
        self.killed = Some(0);
        let (every, deadline) = (self.options.shards.len(), killed + self.options.timeout);
        // A renewal already sent when the kill came lands within moments; then they stand.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let renewed = self.leases().await?;
        let leases = loop {
            self.alive()?;
            if self.shards_held().await?.get(survivor) == Some(&every) {
                break killed.elapsed();
            }
            anyhow::ensure!(Instant::now() < deadline, "the survivor never held every shard");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let (settled, scrapes) = self.quiet(&[survivor], before.reconciles("host"), hosts as u64).await?;
        let after = scrapes.first().ok_or_else(|| anyhow::anyhow!("no scrape of the survivor"))?;
        let taken = self.leases().await?;
        Ok(Handover {
            leases,
            past_term_ms: past_term(&renewed, &taken, "replica-0"),
            settled: settled.duration_since(killed),
            ironic: difference(&after.ironic(), &before.ironic()),
            reconciles: after.reconciles("host").saturating_sub(before.reconciles("host")),
            wakes: difference(&after.host_wakes(), &before.host_wakes()),
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

/// The earliest and the latest takeover of the Leases `killed` held in `renewed`, as `taken`
/// shows them, past the end of the term each one's last renewal gave, in milliseconds.
fn past_term(renewed: &[(String, LeaseSpec)], taken: &[(String, LeaseSpec)], killed: &str) -> Option<(i64, i64)> {
    let ends =
        renewed.iter().filter(|(_, spec)| spec.holder_identity.as_deref() == Some(killed)).map(|(shard, spec)| {
            let renew = spec.renew_time.as_ref()?.0;
            let seconds = i64::from(spec.lease_duration_seconds?);
            let acquired = taken.iter().find(|(s, _)| s == shard)?.1.acquire_time.as_ref()?.0;
            let past = acquired.duration_since(renew).as_millis().saturating_sub(i128::from(seconds) * 1000);
            i64::try_from(past).ok()
        });
    let past = ends.collect::<Option<Vec<i64>>>()?;
    Some((*past.iter().min()?, *past.iter().max()?))
}

fn non_poll(scrape: &Scrape) -> u64 {
    scrape.ironic().iter().filter(|(op, _)| !POLLING.contains(&op.as_str())).map(|(_, n)| n).sum()
}

fn samples(pids: &[u32]) -> crate::Result<Vec<ProcSample>> {
    pids.iter().map(|pid| ProcSample::read(*pid)).collect()
}

fn memory(pid: u32) -> Memory {
    ProcSample::read(pid).unwrap_or_default()
}
