//! The short form of `make bench` (50 hosts, 10 NodeSets, P1 in both orders): proves the
//! benchmark still runs end to end and that its figures were measured. It asserts no timing.

use ferrometal_tests::bench::{self, Options};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn the_benchmark_runs_at_fifty_hosts_and_reports_every_figure() -> anyhow::Result<()> {
    let options = Options::short();
    let reports = bench::run(&options).await?;
    println!("{}", bench::render(&reports));
    let [report] = reports.as_slice() else { anyhow::bail!("one report per host count: {}", reports.len()) };
    assert_eq!(report.hosts, 50);
    assert_eq!(report.floor.hosts, 50, "the floor took every node to active and on");
    assert!(
        report.floor.ironic_requests >= 50 * 5,
        "the floor registered, managed, provided, set up and deployed each node"
    );
    let ops = &report.provisioning.ironic;
    assert!(ops.get("create_node").copied().unwrap_or(0) >= 50, "the operator registered every host: {ops:?}");
    assert!(report.provisioning.status_writes >= 50, "status writes were counted");
    let (writes, reads) = report.apiserver_per_host();
    assert!(
        writes * report.hosts as f64 >= report.provisioning.status_writes as f64 && reads > 0.0,
        "every apiserver request was counted, status writes among the writes: {:?}",
        report.provisioning.apiserver
    );
    assert!(report.steady.polls > 0, "the steady window saw bulk polls");
    let costs = &report.poll_costs;
    assert!(
        costs.full_wall > Duration::ZERO && costs.delta_wall > Duration::ZERO && costs.bios_wall > Duration::ZERO,
        "one full list, one delta look and one BIOS read were timed: {costs:?}"
    );
    assert!(report.steady.ironic_cpu > Duration::ZERO, "Ironic's CPU at rest was counted: {:?}", report.steady);
    let footprint = &report.footprint;
    assert!(footprint.steady_rss > 0 && footprint.peak_rss >= footprint.steady_rss);
    assert!(
        footprint.steady_anon_rss > 0
            && footprint.steady_file_rss > 0
            && footprint.steady_anon_rss + footprint.steady_file_rss <= footprint.steady_rss,
        "the resident memory's two parts were read: {footprint:?}"
    );
    for (phase, cpu) in [("floor", &report.floor_cpu), ("operator", &report.provisioning.cpu)] {
        assert!(cpu.of("ironic") > Duration::ZERO, "Ironic's CPU was counted in the {phase} phase: {cpu:?}");
        assert!(cpu.of("kube-apiserver") > Duration::ZERO, "the apiserver's CPU was counted: {cpu:?}");
        assert!(cpu.machine_busy >= cpu.of("ironic"), "the machine was busy at least as long as Ironic: {cpu:?}");
    }
    match report.ironic_cpu_ratio() {
        Ok(ratio) => assert!(ratio > 0.0, "the Ironic CPU ratio was measured"),
        Err(why) => assert!(why.contains("busy"), "a ratio refused says why: {why}"),
    }
    let second = report.second.as_ref().ok_or_else(|| anyhow::anyhow!("no second pair (operator, then floor)"))?;
    assert_eq!(second.floor.hosts, 50, "the floor ran again, after the operator");
    assert!(second.provisioning.status_writes >= 50, "the operator ran again, in a fresh cluster");
    for cpu in [&second.floor_cpu, &second.provisioning.cpu] {
        assert!(cpu.of("ironic") > Duration::ZERO, "Ironic's CPU was counted in the second pair: {cpu:?}");
    }
    let cpu = &report.provisioning.cpu;
    assert!(cpu.of("operator") > Duration::ZERO, "the operator's CPU was counted while it provisioned: {cpu:?}");
    let rollout = report.rollout.as_ref().ok_or_else(|| anyhow::anyhow!("no day-2 figures"))?;
    assert_eq!(rollout.hosts, 5);
    assert!(rollout.reconciles > 0, "the edit was reconciled");
    Ok(())
}
