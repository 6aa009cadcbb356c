//! The short form of `make bench`'s sharded run (40 hosts, two conductors over MariaDB, two
//! replicas dividing four shards, a NodeSet of 5 new hosts edited, one replica killed): proves
//! the run still works end to end and that its figures were measured. It asserts no timing.

use ferrometal_tests::bench::shards::{self, Options};
use operator::testing::host::Shards;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn the_sharded_run_adopts_forty_hosts_edits_a_nodeset_among_them_hands_a_killed_replicas_shards_over_and_reports_every_figure()
-> anyhow::Result<()> {
    let all: Vec<String> = ["0", "1", "2", "3"].map(String::from).into();
    let assignment = Shards::parse(&all, &[])?.ok_or_else(|| anyhow::anyhow!("no shards"))?;
    let options = Options::short(Arc::new(move |ns: &str, name: &str| assignment.shard_of(ns, name).to_string()));
    let reports = shards::run(&options, |_| {}).await?;
    println!("{}", shards::render(&reports));
    let [report] = reports.as_slice() else { anyhow::bail!("one report per host count: {}", reports.len()) };
    assert_eq!(report.hosts, 40);
    let adoption = &report.adoption;
    assert_eq!(adoption.shards_held, vec![2, 2], "each replica held two shards");
    assert!(adoption.reconciles >= 40, "every host was reconciled: {}", adoption.reconciles);
    assert!(adoption.status_writes >= 40, "every host's status was written back");
    assert!(
        !adoption.ironic.contains_key("create_node") && !adoption.ironic.contains_key("set_provision_state"),
        "adopting made no node and moved none: {:?}",
        adoption.ironic
    );
    assert!(adoption.memory.iter().all(|m| m.rss > 0 && m.peak_rss >= m.rss), "{:?}", adoption.memory);
    assert!(
        adoption.memory.iter().all(|m| m.anon_rss > 0 && m.file_rss > 0 && m.anon_rss + m.file_rss <= m.rss),
        "each replica's resident memory's two parts were read: {:?}",
        adoption.memory
    );
    // Not the conductors: adopting asks them nothing, and idle they may use less than a tick.
    for source in ["kube-apiserver", "ironic-api", "mariadb", "operators"] {
        assert!(adoption.cpu.of(source) > Duration::ZERO, "{source}'s CPU was counted: {:?}", adoption.cpu);
    }
    assert!(report.create.of("kube-apiserver") > Duration::ZERO, "creating the hosts cost the apiserver CPU");
    assert!(report.rest.polls > 0, "the window at rest saw polls");
    assert_eq!(report.rest.replica_cpu.len(), 2);
    let lists = &report.lists;
    assert!(lists.nodes > 0 && lists.nodes < 40, "one replica's shards list some nodes only: {lists:?}");
    assert!(lists.full_wall > Duration::ZERO && lists.delta_wall > Duration::ZERO, "{lists:?}");
    let rollout = report.rollout.as_ref().ok_or_else(|| anyhow::anyhow!("no NodeSet edit among the fleet"))?;
    assert_eq!(rollout.hosts, 5);
    assert!(rollout.first_job > Duration::ZERO && rollout.complete >= rollout.first_job, "{rollout:?}");
    assert!(rollout.reconciles > 0, "the edit was reconciled");
    let handover = &report.handover;
    assert!(handover.leases > Duration::ZERO && handover.settled >= handover.leases, "{handover:?}");
    assert!(handover.reconciles >= 45, "the survivor reconciled every host it took: {handover:?}");
    assert!(handover.memory.rss > 0);
    // Measured, and never inside the killed replica's term: a Lease taken early would be two
    // replicas serving one shard.
    assert!(handover.past_term_ms.is_some_and(|(earliest, _)| earliest >= 0), "{handover:?}");
    assert!(!handover.ironic.contains_key("create_node"), "the survivor made no node: {:?}", handover.ironic);
    let integrity = report.integrity;
    assert_eq!((integrity.nodes, integrity.replaced), (45, 0), "one node per host, the fleet's kept: {integrity:?}");
    assert_eq!((integrity.not_active, integrity.moved), (0, 0), "no node of the fleet moved: {integrity:?}");
    Ok(())
}
