//! Where the CPU went during a phase of the benchmark: each process of the run (a whole
//! process group, reaped children included) and the machine as a whole (busy and stolen
//! time from `/proc/stat`). With it a slow phase can be told apart: the machine was busy
//! with something else or its hypervisor took the time (steal), or a process of ours did more
//! work per host.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A process whose CPU time is counted.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// Every process of the group led by this pid (the harness starts each server in its
    /// own group), with what they reaped from children that have ended.
    Group(u32),
    /// This one process, all its threads.
    Process(u32),
}

/// CPU time so far of named sources and of the machine, at one moment.
#[derive(Clone, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    sources: BTreeMap<&'static str, Duration>,
    machine: MachineTimes,
}

/// The machine's CPU time in clock ticks, summed over its cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MachineTimes {
    busy: u64,
    steal: u64,
    total: u64,
    cores: usize,
}

/// The CPU of one phase: the difference of two snapshots.
#[derive(Clone, Debug, Default)]
pub struct PhaseCpu {
    pub wall: Duration,
    /// CPU time of each source during the phase.
    pub sources: BTreeMap<&'static str, Duration>,
    /// CPU time the machine spent busy (all cores), stolen by the hypervisor, and in all.
    pub machine_busy: Duration,
    pub machine_steal: Duration,
    pub machine_total: Duration,
    pub cores: usize,
}

impl PhaseCpu {
    /// CPU time of `source` during the phase.
    pub fn of(&self, source: &str) -> Duration {
        self.sources.get(source).copied().unwrap_or_default()
    }

    /// Cores busy on average (of `cores`).
    pub fn busy_cores(&self) -> f64 {
        self.machine_busy.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }

    /// The share of the machine's time the hypervisor gave to someone else.
    pub fn steal_share(&self) -> f64 {
        self.machine_steal.as_secs_f64() / self.machine_total.as_secs_f64().max(1e-9)
    }
}

impl CpuSnapshot {
    /// Reads each of `sources` and the machine now. A source that is gone counts as zero.
    pub fn take(sources: &[(&'static str, Source)]) -> Self {
        let groups: Vec<u32> = sources
            .iter()
            .filter_map(|(_, s)| match s {
                Source::Group(pgid) => Some(*pgid),
                Source::Process(_) => None,
            })
            .collect();
        let by_group = group_ticks(&groups);
        // Sources of one name add up (a split Ironic's conductors, say).
        let mut ticks: BTreeMap<&'static str, Duration> = BTreeMap::new();
        for (name, source) in sources {
            let own = match source {
                Source::Group(pgid) => by_group.get(pgid).copied().unwrap_or(0),
                Source::Process(pid) => read_stat(*pid).map(|s| s.own).unwrap_or(0),
            };
            *ticks.entry(*name).or_default() += from_ticks(own);
        }
        let machine = std::fs::read_to_string("/proc/stat").map(|s| parse_machine(&s)).unwrap_or_default();
        Self { at: Instant::now(), sources: ticks, machine }
    }

    /// What was used from `self` until `later`.
    pub fn until(&self, later: &Self) -> PhaseCpu {
        let sources = later
            .sources
            .iter()
            .map(|(name, t)| (*name, t.saturating_sub(self.sources.get(name).copied().unwrap_or_default())))
            .collect();
        PhaseCpu {
            wall: later.at.saturating_duration_since(self.at),
            sources,
            machine_busy: from_ticks(later.machine.busy.saturating_sub(self.machine.busy)),
            machine_steal: from_ticks(later.machine.steal.saturating_sub(self.machine.steal)),
            machine_total: from_ticks(later.machine.total.saturating_sub(self.machine.total)),
            cores: later.machine.cores,
        }
    }
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100).max(1)
}

pub(super) fn from_ticks(ticks: u64) -> Duration {
    Duration::from_millis(ticks.saturating_mul(1000) / ticks_per_second())
}

/// The parts of `/proc/<pid>/stat` counted here, in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stat {
    pgrp: u32,
    /// utime + stime: the process's own threads.
    pub own: u64,
    /// cutime + cstime: children it has reaped.
    reaped: u64,
}

fn parse_stat(line: &str) -> Option<Stat> {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let fields: Vec<&str> = line.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    // After the name: state (0), ppid (1), pgrp (2), ... utime (11), stime (12),
    // cutime (13), cstime (14).
    Some(Stat {
        pgrp: u32::try_from(field(2)?).ok()?,
        own: field(11)?.saturating_add(field(12)?),
        reaped: field(13)?.saturating_add(field(14)?),
    })
}

pub(super) fn read_stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Ticks used by each group of `groups`, summed over the processes in it now.
fn group_ticks(groups: &[u32]) -> BTreeMap<u32, u64> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return BTreeMap::new() };
    let stats =
        entries.flatten().filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok()).filter_map(read_stat);
    sum_by_group(stats, groups)
}

/// Each group's own and reaped ticks, summed over its members among `stats`.
fn sum_by_group(stats: impl IntoIterator<Item = Stat>, groups: &[u32]) -> BTreeMap<u32, u64> {
    let mut sums = BTreeMap::new();
    for stat in stats.into_iter().filter(|s| groups.contains(&s.pgrp)) {
        let sum = sums.entry(stat.pgrp).or_insert(0u64);
        *sum = sum.saturating_add(stat.own).saturating_add(stat.reaped);
    }
    sums
}

/// The machine's line of `/proc/stat`: user nice system idle iowait irq softirq steal.
fn parse_machine(stat: &str) -> MachineTimes {
    let cores = stat.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else { return MachineTimes::default() };
    let v: Vec<u64> = line.split_whitespace().skip(1).take(8).filter_map(|v| v.parse().ok()).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    MachineTimes { busy: [0, 1, 2, 5, 6].iter().map(|i| at(*i)).sum(), steal: at(7), total: v.iter().sum(), cores }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_a_name_with_spaces_and_parentheses() {
        let line = "4242 (python3 (ironic) x) S 1 4242 4242 0 -1 4194304 1 0 0 0 150 25 7 3 20 0 4 0 1 2 3";
        assert_eq!(parse_stat(line), Some(Stat { pgrp: 4242, own: 175, reaped: 10 }));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_machine_line_counts_busy_and_stolen_time_apart_from_idle() {
        let stat = "cpu  100 5 50 1000 20 3 2 40 0 0\ncpu0 50 2 25 500 10 1 1 20 0 0\ncpu1 50 3 25 500 10 2 1 20 0 0\nintr 1\n";
        let m = parse_machine(stat);
        assert_eq!(m, MachineTimes { busy: 160, steal: 40, total: 1220, cores: 2 });
    }

    #[test]
    fn a_phase_of_this_process_burning_cpu_shows_its_time_and_the_machine_s() {
        let me = [("bench", Source::Process(std::process::id()))];
        let before = CpuSnapshot::take(&me);
        // Spin until the process's own reading shows 200 ms more; on a busy machine that takes
        // longer than 200 ms of wall time, so the bound is on the reading, not the clock.
        let give_up = Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        let phase = loop {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let phase = before.until(&CpuSnapshot::take(&me));
            if phase.of("bench") >= Duration::from_millis(200) || Instant::now() > give_up {
                break phase;
            }
        };
        assert!(phase.of("bench") >= Duration::from_millis(200), "{phase:?}");
        assert!(phase.wall >= phase.of("bench") / 2, "one spinning thread: {phase:?}");
        assert!(phase.machine_busy >= phase.of("bench") / 2, "{phase:?}");
        assert!(phase.machine_total >= phase.machine_busy && phase.cores >= 1, "{phase:?}");
    }

    #[test]
    fn a_group_counts_every_member_with_what_it_reaped_and_nothing_of_other_groups() {
        let stat = |pgrp, own, reaped| Stat { pgrp, own, reaped };
        let stats = [stat(10, 100, 5), stat(10, 40, 0), stat(20, 7, 1), stat(30, 1000, 0)];
        let sums = sum_by_group(stats, &[10, 20, 40]);
        assert_eq!(sums.get(&10), Some(&145));
        assert_eq!(sums.get(&20), Some(&8));
        assert_eq!(sums.get(&30), None, "a group not asked for");
        assert_eq!(sums.get(&40), None, "a group with no process left");
    }

    #[test]
    fn a_spinning_process_group_is_read_from_proc() -> std::io::Result<()> {
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done & while :; do :; done"])
            .process_group(0)
            .spawn()?;
        let group = [("spinners", Source::Group(child.id()))];
        let before = CpuSnapshot::take(&group);
        std::thread::sleep(Duration::from_millis(500));
        let phase = before.until(&CpuSnapshot::take(&group));
        let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        // SAFETY: kill only sends a signal, to the group this test started.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        child.wait()?;
        // Two shells spinning for half a second, on a machine that may be busy.
        assert!(phase.of("spinners") >= Duration::from_millis(100), "{phase:?}");
        Ok(())
    }
}
