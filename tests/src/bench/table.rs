//! The one table `make bench` prints: a column per host count, a row per figure with the
//! issue's target beside it, then what each count's requests were made of.

use super::cpu::PhaseCpu;
use super::{Pair, Report};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const MIB: f64 = 1024.0 * 1024.0;

/// A ratio, or `none` when the floor was no lower bound.
fn cpu_cell(ratio: Result<f64, String>) -> String {
    ratio.map_or_else(|_| "none".to_string(), |r| format!("{r:.2}"))
}

/// The first pair's figure, and the second's after a bar when there is one.
fn pair(first: String, second: Option<String>) -> String {
    match second {
        Some(second) => format!("{first}|{second}"),
        None => first,
    }
}

fn row(out: &mut String, name: &str, target: &str, reports: &[Report], cell: impl Fn(&Report) -> String) {
    let _ = write!(out, "{name:<44}{target:>10}");
    for report in reports {
        let _ = write!(out, "{:>12}", cell(report));
    }
    out.push('\n');
}

fn ops(map: &BTreeMap<String, u64>) -> String {
    map.iter().map(|(op, n)| format!("{op}={n}")).collect::<Vec<_>>().join(" ")
}

/// Each process's CPU seconds in a phase, then the machine's.
fn cpu_line(cpu: &PhaseCpu) -> String {
    let sources: Vec<String> = cpu.sources.iter().map(|(name, t)| format!("{name}={:.1}", t.as_secs_f64())).collect();
    format!(
        "{} | machine busy {:.1} of {:.1} ({} cores), stolen {:.1}",
        sources.join(" "),
        cpu.machine_busy.as_secs_f64(),
        cpu.wall.as_secs_f64() * cpu.cores as f64,
        cpu.cores,
        cpu.machine_steal.as_secs_f64()
    )
}

/// The table of `reports`.
pub fn render(reports: &[Report]) -> String {
    let mut out = String::new();
    let _ = write!(out, "{:<44}{:>10}", "figure", "target");
    for report in reports {
        let _ = write!(out, "{:>12}", format!("N={}", report.hosts));
    }
    out.push('\n');
    out.push_str(&"-".repeat(54 + 12 * reports.len()));
    out.push('\n');
    row(&mut out, "P1 floor: N nodes to active and on (s)", "", reports, |r| {
        format!("{:.1}", r.floor.elapsed.as_secs_f64())
    });
    row(&mut out, "P1 operator: N hosts to provisioned (s)", "", reports, |r| {
        format!("{:.1}", r.provisioning.elapsed.as_secs_f64())
    });
    row(&mut out, "P1 Ironic CPU per host, op / floor (f,o|o,f)", "<= 1.05", reports, |r| {
        let second = r.second.as_ref().map(Pair::ironic_cpu_ratio);
        pair(cpu_cell(r.ironic_cpu_ratio()), second.map(cpu_cell))
    });
    row(&mut out, "P1 wall time, op / floor (f,o|o,f)", "<= 1.10", reports, |r| {
        pair(format!("{:.2}", r.ratio()), r.second.as_ref().map(|p| format!("{:.2}", p.ratio())))
    });
    row(&mut out, "P1 Ironic requests per host, operator", "<= 7", reports, |r| format!("{:.1}", r.ironic_per_host()));
    row(&mut out, "P1 Ironic requests per host, floor", "", reports, |r| {
        format!("{:.1}", r.floor.ironic_requests as f64 / r.hosts.max(1) as f64)
    });
    row(&mut out, "P1 status writes per host", "<= 6", reports, |r| format!("{:.1}", r.status_writes_per_host()));
    row(&mut out, "P1 apiserver writes per host, all kinds", "", reports, |r| {
        format!("{:.1}", r.apiserver_per_host().0)
    });
    apiserver_rows(&mut out, reports, true);
    row(&mut out, "P1 apiserver reads and watches per host", "", reports, |r| {
        format!("{:.1}", r.apiserver_per_host().1)
    });
    apiserver_rows(&mut out, reports, false);
    row(&mut out, "P1 host reconciles per host", "<= 12", reports, |r| {
        format!("{:.1}", r.provisioning.reconciles as f64 / r.hosts.max(1) as f64)
    });
    // What the reconciles came from, besides the hosts' own events and requeues.
    for cause in ["Poll", "Slot", "Settings", "Components", "Change"] {
        row(&mut out, &format!("  wakes per host: {cause}"), "", reports, |r| {
            let woken = r.provisioning.wakes.get(cause).copied().unwrap_or_default();
            format!("{:.1}", woken as f64 / r.hosts.max(1) as f64)
        });
    }
    row(&mut out, "  failed reconciles per host", "", reports, |r| {
        format!("{:.2}", r.provisioning.failures as f64 / r.hosts.max(1) as f64)
    });
    let per_host =
        |cpu: &PhaseCpu, source: &str, r: &Report| cpu.of(source).as_secs_f64() * 1e3 / r.hosts.max(1) as f64;
    row(&mut out, "P1 Ironic CPU per host, floor (ms)", "", reports, |r| {
        format!("{:.0}", per_host(&r.floor_cpu, "ironic", r))
    });
    row(&mut out, "P1 Ironic CPU per host, operator (ms)", "", reports, |r| {
        format!("{:.0}", per_host(&r.provisioning.cpu, "ironic", r))
    });
    row(&mut out, "P1 operator CPU per host (ms)", "", reports, |r| {
        format!("{:.0}", per_host(&r.provisioning.cpu, "operator", r))
    });
    row(&mut out, "P1 cores busy, floor / operator", "", reports, |r| {
        format!("{:.2}/{:.2}", r.floor_cpu.busy_cores(), r.provisioning.cpu.busy_cores())
    });
    row(&mut out, "P1 CPU stolen, floor / operator (%)", "", reports, |r| {
        format!("{:.1}/{:.1}", r.floor_cpu.steal_share() * 100.0, r.provisioning.cpu.steal_share() * 100.0)
    });
    row(&mut out, "P2 Ironic requests per poll", "<= 3 (a delta)", reports, |r| format!("{:.2}", r.per_poll().0));
    row(&mut out, "P2 Ironic requests besides the polls", "0", reports, |r| r.per_poll().1.to_string());
    row(&mut out, "P2 one full list: Ironic CPU / wall (ms)", "", reports, |r| {
        format!("{:.1}/{:.1}", r.poll_costs.full_cpu.as_secs_f64() * 1e3, r.poll_costs.full_wall.as_secs_f64() * 1e3)
    });
    row(&mut out, "P2 one delta look: Ironic CPU / wall (ms)", "", reports, |r| {
        format!("{:.1}/{:.1}", r.poll_costs.delta_cpu.as_secs_f64() * 1e3, r.poll_costs.delta_wall.as_secs_f64() * 1e3)
    });
    row(&mut out, "P2 one BIOS read: Ironic CPU / wall (ms)", "", reports, |r| {
        format!("{:.1}/{:.1}", r.poll_costs.bios_cpu.as_secs_f64() * 1e3, r.poll_costs.bios_wall.as_secs_f64() * 1e3)
    });
    row(&mut out, "P2 Ironic CPU at rest (% of a core)", "", reports, |r| {
        format!("{:.1}", r.steady.ironic_cpu.as_secs_f64() / r.steady.window.as_secs_f64().max(1e-9) * 100.0)
    });
    row(&mut out, "P2 status writes per minute", "0", reports, |r| format!("{:.1}", r.steady.status_writes_per_minute));
    row(&mut out, "P2 apiserver writes per minute, all kinds", "", reports, |r| {
        format!("{:.1}", r.steady.apiserver_writes_per_minute)
    });
    row(&mut out, "P2 reconciles per minute", "", reports, |r| format!("{:.1}", r.steady.reconciles_per_minute));
    row(&mut out, "P3 peak RSS (MiB)", "<= 64", reports, |r| format!("{:.1}", r.footprint.peak_rss as f64 / MIB));
    row(&mut out, "P3 steady RSS (MiB)", "<= 64", reports, |r| format!("{:.1}", r.footprint.steady_rss as f64 / MIB));
    row(&mut out, "  of it anonymous / file (MiB)", "", reports, |r| {
        format!("{:.1}/{:.1}", r.footprint.steady_anon_rss as f64 / MIB, r.footprint.steady_file_rss as f64 / MIB)
    });
    row(&mut out, "P3 idle CPU (% of a core)", "< 1", reports, |r| format!("{:.2}", r.footprint.idle_cpu * 100.0));
    for r in reports {
        let _ = writeln!(
            out,
            "\nN={} (provisioning limit {}, {} hosts reconciled at once, {} NodeSets in the steady window of {:.0} s):",
            r.hosts,
            r.provisioning_limit,
            r.reconciles,
            r.nodesets,
            r.steady.window.as_secs_f64()
        );
        let _ = writeln!(out, "  P1 operator Ironic requests: {}", ops(&r.provisioning.ironic));
        let _ = writeln!(out, "  P1 floor: {} Ironic requests, {} bulk polls", r.floor.ironic_requests, r.floor.polls);
        if let Err(why) = r.ironic_cpu_ratio() {
            let _ = writeln!(out, "  P1 no Ironic CPU ratio: {why} (under 95 %, the floor is no lower bound)");
        }
        let _ = writeln!(out, "  P1 CPU seconds, floor: {}", cpu_line(&r.floor_cpu));
        let _ = writeln!(out, "  P1 CPU seconds, operator: {}", cpu_line(&r.provisioning.cpu));
        if let Some(second) = &r.second {
            let _ = writeln!(
                out,
                "  P1 again, operator then floor: operator {:.1} s, floor {:.1} s",
                second.provisioning.elapsed.as_secs_f64(),
                second.floor.elapsed.as_secs_f64()
            );
            if let Err(why) = second.ironic_cpu_ratio() {
                let _ = writeln!(out, "  P1 again, no Ironic CPU ratio: {why}");
            }
            let _ = writeln!(out, "  P1 again, CPU seconds, operator: {}", cpu_line(&second.provisioning.cpu));
            let _ = writeln!(out, "  P1 again, CPU seconds, floor: {}", cpu_line(&second.floor_cpu));
        }
        let _ = writeln!(out, "  P2 {} polls, Ironic requests: {}", r.steady.polls, ops(&r.steady.ironic));
        if let Some(p4) = &r.rollout {
            let _ = writeln!(
                out,
                "  P4 MTU edit of a NodeSet with {} provisioned hosts (brought up in {:.1} s):",
                p4.hosts,
                p4.bring_up.as_secs_f64()
            );
            let _ = writeln!(out, "     first Job after {:.0} ms (target < 1000)", p4.first_job.as_secs_f64() * 1e3);
            let _ = writeln!(out, "     Ironic requests until then: {}", ops(&p4.ironic_to_first_job));
            let _ = writeln!(
                out,
                "     rollout complete after {:.1} s, {} NodeSet reconciles",
                p4.complete.as_secs_f64(),
                p4.reconciles
            );
            let _ = writeln!(
                out,
                "     provision-state requests during it: {} (target 0); all Ironic requests: {}",
                p4.provision_state_requests(),
                ops(&p4.ironic_during)
            );
        }
    }
    out
}

/// Where P1's apiserver writes (`writes`) or reads and watches went, by verb and resource, per
/// provisioned host.
fn apiserver_rows(out: &mut String, reports: &[Report], writes: bool) {
    let keys: std::collections::BTreeSet<&String> = reports
        .iter()
        .flat_map(|r| r.provisioning.apiserver.keys())
        .filter(|k| super::probe::is_write(k) == writes)
        .collect();
    for key in keys {
        row(out, &format!("  per host: {key}"), "", reports, |r| {
            let n = r.provisioning.apiserver.get(key).copied().unwrap_or_default();
            format!("{:.1}", n as f64 / r.hosts.max(1) as f64)
        });
    }
}
