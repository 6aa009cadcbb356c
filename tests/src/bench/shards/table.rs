//! The sharded run's figures, one column per host count.

use super::{Memory, Report};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

const MIB: f64 = 1024.0 * 1024.0;

/// One row: a label and a value per report.
type Row = (String, Vec<String>);

/// The table, with the memory growth from the smallest host count to the largest.
pub fn render(reports: &[Report]) -> String {
    let Some(first) = reports.first() else { return "no sharded runs\n".to_string() };
    let mut out = format!(
        "Sharded fleet: {} conductors over MariaDB, {} shards over {} replicas (shard Leases of {} s), {}\n",
        first.conductors,
        first.shards,
        first.adoption.memory.len(),
        first.lease_seconds,
        if first.one_time { "every node written at one second" } else { "nodes written one second apart" }
    );
    let rows: Vec<Row> =
        [fleet_rows(reports), adoption_rows(reports), rest_rows(reports), day2_rows(reports), handover_rows(reports)]
            .concat();
    let width = rows.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
    let header: Vec<String> = reports.iter().map(|r| format!("N={}", r.hosts)).collect();
    let _ = writeln!(out, "{:width$}  {}", "", columns(&header));
    for (label, values) in rows {
        let _ = writeln!(out, "{label:width$}  {}", columns(&values));
    }
    if let (Some(small), Some(large)) = (reports.first(), reports.last())
        && large.hosts > small.hosts
    {
        let growth = largest(&large.adoption.memory) / largest(&small.adoption.memory).max(1.0);
        let _ = writeln!(
            out,
            "memory per replica, N={} over N={} ({:.0}x the hosts): {growth:.2}x (goal: at most 2x for 10x)",
            large.hosts,
            small.hosts,
            large.hosts as f64 / small.hosts.max(1) as f64
        );
    }
    out
}

fn columns(values: &[String]) -> String {
    values.iter().map(|v| format!("  {v:>22}")).collect()
}

fn row(label: &str, reports: &[Report], value: impl Fn(&Report) -> String) -> Row {
    (label.to_string(), reports.iter().map(value).collect())
}

fn per_host(total: f64, r: &Report) -> f64 {
    total / r.hosts.max(1) as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn largest(memory: &[Memory]) -> f64 {
    memory.iter().map(|m| m.rss as f64).fold(0.0, f64::max)
}

fn ops(ops: &BTreeMap<String, u64>) -> String {
    let text: Vec<String> = ops.iter().map(|(op, n)| format!("{op}={n}")).collect();
    if text.is_empty() { "none".to_string() } else { text.join(" ") }
}

fn fleet_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("fleet pre-registered (s)", reports, |r| format!("{:.1}", r.preregister.as_secs_f64())),
        row("hosts created: apiserver+etcd ms/host", reports, |r| {
            format!("{:.2}", per_host(ms(r.create.of("kube-apiserver") + r.create.of("etcd")), r))
        }),
    ]
}

fn adoption_rows(reports: &[Report]) -> Vec<Row> {
    let a = |r: &Report| r.adoption.clone();
    vec![
        row("adoption: wall (s)", reports, |r| format!("{:.1}", a(r).wall.as_secs_f64())),
        row("  Ironic requests/host", reports, |r| {
            format!("{:.2}", per_host(a(r).ironic.values().sum::<u64>() as f64, r))
        }),
        row("  reconciles/host", reports, |r| format!("{:.2}", per_host(a(r).reconciles as f64, r))),
        row("  status writes/host", reports, |r| format!("{:.2}", per_host(a(r).status_writes as f64, r))),
        row("  apiserver+etcd CPU ms/host", reports, |r| {
            format!("{:.2}", per_host(ms(a(r).cpu.of("kube-apiserver") + a(r).cpu.of("etcd")), r))
        }),
        row("  Ironic CPU ms/host (API+cond.+DB)", reports, |r| {
            let cpu = a(r).cpu;
            format!("{:.2}", per_host(ms(cpu.of("ironic-api") + cpu.of("ironic-conductors") + cpu.of("mariadb")), r))
        }),
        row("  operators CPU ms/host", reports, |r| format!("{:.2}", per_host(ms(a(r).cpu.of("operators")), r))),
        row("  shards held per replica", reports, |r| format!("{:?}", a(r).shards_held)),
        row("  RSS per replica (MiB)", reports, |r| {
            a(r).memory.iter().map(|m| format!("{:.1}", m.rss as f64 / MIB)).collect::<Vec<_>>().join(" / ")
        }),
        row("  peak RSS per replica (MiB)", reports, |r| {
            a(r).memory.iter().map(|m| format!("{:.1}", m.peak_rss as f64 / MIB)).collect::<Vec<_>>().join(" / ")
        }),
        row("  of RSS anonymous, file (MiB)", reports, |r| {
            let part = |m: &super::Memory| format!("{:.1}, {:.1}", m.anon_rss as f64 / MIB, m.file_rss as f64 / MIB);
            a(r).memory.iter().map(part).collect::<Vec<_>>().join(" / ")
        }),
        row("  Ironic requests", reports, |r| ops(&a(r).ironic)),
    ]
}

fn rest_rows(reports: &[Report]) -> Vec<Row> {
    let minutes = |r: &Report| r.rest.window.as_secs_f64() / 60.0;
    vec![
        row("at rest: requests per poll", reports, |r| {
            format!("{:.2}", r.rest.ironic.values().sum::<u64>() as f64 / r.rest.polls.max(1) as f64)
        }),
        row("  writes, reconciles /min", reports, |r| {
            format!("{:.1}, {:.1}", r.rest.status_writes as f64 / minutes(r), r.rest.reconciles as f64 / minutes(r))
        }),
        row("  CPU per replica (% core)", reports, |r| {
            r.rest.replica_cpu.iter().map(|c| format!("{:.2}", c * 100.0)).collect::<Vec<_>>().join(" / ")
        }),
        row("  Ironic CPU (% core: API, cond., DB)", reports, |r| {
            let share = |name| r.rest.cpu.of(name).as_secs_f64() / r.rest.window.as_secs_f64().max(1e-9) * 100.0;
            format!("{:.1}, {:.1}, {:.1}", share("ironic-api"), share("ironic-conductors"), share("mariadb"))
        }),
        row("one replica's shards, nodes", reports, |r| format!("{}: {}", r.lists.shards.join(","), r.lists.nodes)),
        row("  full list ms", reports, |r| format!("{:.0} ({:.0} CPU)", ms(r.lists.full_wall), ms(r.lists.full_cpu))),
        row("  delta look ms", reports, |r| {
            format!("{:.0} ({:.0} CPU)", ms(r.lists.delta_wall), ms(r.lists.delta_cpu))
        }),
    ]
}

fn day2_rows(reports: &[Report]) -> Vec<Row> {
    let some = |r: &Report, f: &dyn Fn(&super::Rollout) -> String| r.rollout.as_ref().map_or("-".into(), f);
    vec![
        row("NodeSet among the fleet: hosts", reports, |r| some(r, &|p| p.hosts.to_string())),
        row("  brought up (s)", reports, |r| some(r, &|p| format!("{:.1}", p.bring_up.as_secs_f64()))),
        row("  edit to first Job (ms)", reports, |r| some(r, &|p| format!("{:.0}", ms(p.first_job)))),
        row("  edit to Ready (s)", reports, |r| some(r, &|p| format!("{:.1}", p.complete.as_secs_f64()))),
        row("  Ironic requests to first Job", reports, |r| some(r, &|p| ops(&p.ironic_to_first_job))),
        row("  Ironic requests in the rollout", reports, |r| some(r, &|p| ops(&p.ironic_during))),
    ]
}

fn handover_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("handover: every Lease held (s)", reports, |r| format!("{:.2}", r.handover.leases.as_secs_f64())),
        row("  takeovers past their term (ms)", reports, |r| {
            r.handover.past_term_ms.map_or_else(|| "unknown".to_string(), |(first, last)| format!("{first} to {last}"))
        }),
        row("  survivor quiet again (s)", reports, |r| format!("{:.1}", r.handover.settled.as_secs_f64())),
        row("  reconciles, status writes", reports, |r| {
            format!("{}, {}", r.handover.reconciles, r.handover.status_writes)
        }),
        row("  survivor's host wakes", reports, |r| ops(&r.handover.wakes)),
        row("  survivor RSS, peak (MiB)", reports, |r| {
            format!("{:.1}, {:.1}", r.handover.memory.rss as f64 / MIB, r.handover.memory.peak_rss as f64 / MIB)
        }),
        row("  Ironic requests", reports, |r| ops(&r.handover.ironic)),
        row("integrity: nodes, fleet's replaced", reports, |r| {
            format!("{}, {}", r.integrity.nodes, r.integrity.replaced)
        }),
        row("  not active, moved", reports, |r| format!("{}, {}", r.integrity.not_active, r.integrity.moved)),
    ]
}
