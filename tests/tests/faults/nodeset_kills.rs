//! The operator SIGKILLed at random seeded moments while a NodeSet brings its hosts up (claims
//! free fake-hardware machines, provisions them, runs its two services on them, one of them
//! `runOnce`), and again while it rolls an edit out (an MTU change: only the other service runs
//! again, at most `maxUnavailable` hosts at a time). Service Job pods run for 1.5 to 4 s, so that
//! kills land while Jobs run. Several kills per phase, each followed by a restart after a
//! random pause.

use crate::cluster::Cluster;
use crate::install_common::workloads::fake_host;
use ferrometal_tests::PodFate;
use ferrometal_tests::faults::job_figures::most_hosts_running;
use ferrometal_tests::faults::jobs::{self, JobEnd};
use ferrometal_tests::faults::{self, Convergence, Figures, IronicLog, KillRound, Record, Recorder};
use ferrometal_tests::ironic::IronicConfig;
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::time::Instant;

const NODESET: &str = "computes";
const POOL: &str = "nodeset-faults";
/// The `runOnce` service and the one an MTU change runs again.
const BOOTSTRAP: &str = "bootstrap";
const CONFIGURE: &str = "configure-network";
const SERVICES: [&str; 2] = [BOOTSTRAP, CONFIGURE];
/// `spec.rollout.maxUnavailable`: 1 host of the short form's 3, 3 of the full form's 30.
const MAX_UNAVAILABLE_PERCENT: usize = 10;

#[test]
fn the_harness_reads_the_job_annotations_the_controller_writes() {
    assert_eq!(jobs::SERVICE_ANNOTATION, operator::testing::nodeset::SERVICE_ANNOTATION);
    assert_eq!(jobs::HOSTS_ANNOTATION, operator::testing::nodeset::HOSTS_ANNOTATION);
}

#[tokio::test]
async fn the_operator_killed_while_a_nodeset_brings_hosts_up_and_rolls_an_edit_out_repeats_no_job() -> anyhow::Result<()>
{
    ferrometal_tests::init();
    let scenario = "operator SIGKILLed while a NodeSet brings hosts up and rolls an edit out";
    let seed = faults::seed(scenario);
    let mut rng = StdRng::seed_from_u64(seed);
    let (hosts, rounds) = (faults::length(3, 30), faults::length(3, 10));
    // Milliseconds between kills: spread over what a phase takes (3 hosts: about 10 s; 30
    // hosts: a minute or more), so that kills land from the claims to the last Jobs.
    let spacing = faults::length(300..4000, 1000..10000);
    let timeout = Duration::from_secs(faults::length(180, 480));
    let cluster = Cluster::start("faults-nodeset", IronicConfig::default()).await?;
    service_jobs_take_time(&cluster, seed);
    let recorder = cluster.recorder()?;
    let mut replicas = cluster.one_replica().await?;
    free_machines(&cluster, hosts, timeout).await?;
    for (service, run_once) in [(BOOTSTRAP, true), (CONFIGURE, false)] {
        cluster.apply_retrying(nodeset_service(service, run_once)).await?;
    }
    let iso = cluster.ironic.image_server().write_live_iso(&format!("{}/nodeset.iso", cluster.ns))?;
    cluster.apply_retrying(nodeset(&iso, hosts, 1500)).await?;

    let client = cluster.cp.client();
    let mut phases = Vec::new();
    for (phase, mtu) in [("bring-up", None), ("edit", Some(9000))] {
        let log = IronicLog::new(&cluster.ironic.dir().join("ironic.log"));
        let (mark, events) = (log.mark(), recorder.snapshot().job_events);
        if let Some(mtu) = mtu {
            cluster.apply_retrying(nodeset(&iso, hosts, mtu)).await?;
        }
        let started = Instant::now();
        let mut mid_work = 0;
        for round in 0..rounds {
            let kill = KillRound::draw(&mut rng, spacing.clone(), 0..2000);
            kill.kill(&mut replicas, 0).await?;
            let at = started.elapsed();
            let (busy, what) = under_way(&client, &cluster.ns, &recorder).await;
            mid_work += usize::from(busy);
            println!("{phase} round {round}: killed {at:.1?} into the phase ({what}), restarted after {:?}", kill.down);
            kill.restart(&mut replicas, 0).await?;
        }
        let last_fault = Instant::now();
        let convergence = faults::nodeset::converge(&client, &cluster.ns, NODESET, hosts, last_fault, timeout).await;
        println!(
            "{phase}: {rounds} kills over {:.1?}, {mid_work} while work was under way; converged {convergence:?}",
            last_fault - started
        );
        phases.push(Phase { convergence, mark, events, log });
        if convergence.not_converged > 0 {
            break; // the figures say it, with what was recorded until now
        }
    }

    replicas.ensure_running()?;
    let record = recorder.stop();
    let convergence = phases.last().map(|p| p.convergence).unwrap_or_default();
    let mut figures = Figures::compute(scenario, replicas.kills, &record, convergence);
    figures.panics = replicas.panics();
    faults::report(&figures);
    let [_, edit] = phases.as_slice() else { anyhow::bail!("the edit phase did not run") };
    println!("{}", host_events(&client, &cluster.ns, hosts).await?);
    check_runs(&record, hosts);
    check_edit(&record, edit, hosts);
    Ok(())
}

/// What a phase left to check.
struct Phase {
    convergence: Convergence,
    /// Ironic's log and the Job watch's event count when the phase began.
    mark: u64,
    events: u64,
    log: IronicLog,
}

/// Service Job pods of the cluster's namespace run for 1.5 to 4 s (by their name and the seed),
/// then succeed: the harness decides how Jobs end, and kills land while they run.
fn service_jobs_take_time(cluster: &Cluster, seed: u64) {
    let namespace = cluster.ns.clone();
    cluster.sim.add_rule(move |pod| {
        if pod.namespace().as_deref() != Some(namespace.as_str())
            || !pod.labels().contains_key(crds::nodeset::NODESET_LABEL)
        {
            return None;
        }
        let spread = pod.name_any().bytes().fold(seed, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        let running = Duration::from_millis(1500 + spread % 2500);
        Some(PodFate::RunsFor { running, then: Box::new(PodFate::Succeeded) })
    });
}

/// `n` free fake-hardware machines for the NodeSet to claim (no image; inspection and
/// cleaning off, as nothing runs a ramdisk here), waited for until available.
async fn free_machines(cluster: &Cluster, n: usize, timeout: Duration) -> anyhow::Result<()> {
    for i in 0..n {
        let mut host = fake_host(&format!("machine-{i}"), false, None, json!({"pool": POOL}));
        host["spec"]["inspectionMode"] = json!("disabled");
        host["spec"]["automatedCleaningMode"] = json!("disabled");
        cluster.apply_retrying(host).await?;
    }
    let available = |h: &Value| faults::host_state(h) == "available";
    let c = faults::converge(&cluster.cp.client(), &cluster.ns, n, Instant::now(), timeout, available).await;
    anyhow::ensure!(c.not_converged == 0, "the free machines did not become available: {c:?}");
    Ok(())
}

fn nodeset_service(name: &str, run_once: bool) -> Value {
    json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService", "metadata": {"name": name},
        "spec": {"runOnce": run_once, "job": {"image": format!("faults/{name}:1"), "command": [format!("/bin/{name}")]}}})
}

/// The NodeSet: `hosts` (at most 240) hosts `compute-<i>` claimed from the pool and provisioned with the
/// live ISO, the two services, the ctlplane network at `mtu`.
fn nodeset(iso: &str, hosts: usize, mtu: u32) -> Value {
    let nodes: serde_json::Map<String, Value> = (0..hosts)
        .map(|i| {
            let address = format!("192.0.2.{}/24", 10 + i);
            (format!("compute-{i}"), json!({"networks": [{"name": "ctlplane", "addresses": [address]}]}))
        })
        .collect();
    json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": NODESET},
    "spec": {
        "baremetalSetTemplate": {
            "bmhLabelSelector": {"matchLabels": {"pool": POOL}},
            "image": {"url": iso, "format": "live-iso"},
            "automatedCleaningMode": "disabled",
        },
        "nodeTemplate": {
            "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": mtu, "gateway": "192.0.2.1"}],
            "dns": {"nameservers": ["192.0.2.53"]},
            "managementNetwork": "ctlplane",
            "variables": {"timezone": "UTC"},
        },
        "nodes": nodes,
        "services": SERVICES,
        "rollout": {"strategy": "Automatic", "maxUnavailable": format!("{MAX_UNAVAILABLE_PERCENT}%")},
    }})
}

/// What was under way at a kill: whether anything was (the NodeSet had not converged, or a
/// Job ran), and the NodeSet's progress and the Jobs running.
async fn under_way(client: &Client, namespace: &str, recorder: &Recorder) -> (bool, String) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &faults::nodeset::resource());
    let nodeset = match api.get_opt(NODESET).await {
        Ok(Some(n)) => serde_json::to_value(n).unwrap_or_default(),
        _ => Value::Null,
    };
    let status = &nodeset["status"];
    let record = recorder.snapshot();
    let running: Vec<&str> = record
        .jobs
        .values()
        .filter(|j| j.end == JobEnd::Running && j.deleted.is_none())
        .map(|j| j.service.as_str())
        .collect();
    let busy = faults::nodeset::unconverged(&nodeset) > 0 || !running.is_empty();
    let what = format!(
        "claimed {}, provisioned {}, configured {}, rollout {}, Jobs running: {running:?}",
        status["claimedHosts"], status["provisionedHosts"], status["configuredHosts"], status["rollout"]["phase"]
    );
    (busy, what)
}

/// Besides the figures: every host ran the `runOnce` service once and the other once per
/// configuration (bring-up and edit), none missing.
fn check_runs(record: &Record, hosts: usize) {
    let mut runs: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for job in record.jobs.values() {
        for (host, with) in &job.hosts {
            runs.entry((host.as_str(), job.service.as_str())).or_default().insert(with.config_hash.as_str());
            *counts.entry((host.as_str(), job.service.as_str())).or_default() += 1;
        }
    }
    for i in 0..hosts {
        let host = format!("compute-{i}");
        let count = |service| counts.get(&(host.as_str(), service)).copied().unwrap_or(0);
        let configs = runs.get(&(host.as_str(), CONFIGURE)).map(BTreeSet::len).unwrap_or(0);
        assert_eq!(
            (count(BOOTSTRAP), count(CONFIGURE), configs),
            (1, 2, 2),
            "{host}: {BOOTSTRAP} once, {CONFIGURE} once per configuration (runs, configurations)"
        );
    }
}

/// Besides the figures: the edit asked nothing of Ironic (no provision-state request), and
/// at most `maxUnavailable` hosts were in running Jobs at once.
fn check_edit(record: &Record, edit: &Phase, hosts: usize) {
    let requests: Vec<_> = edit
        .log
        .requests_since(edit.mark)
        .into_iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/states/provision"))
        .collect();
    assert!(requests.is_empty(), "the edit changed provision states: {requests:?}");
    let allowed = (hosts * MAX_UNAVAILABLE_PERCENT / 100).max(1);
    let most = most_hosts_running(record.jobs.values(), edit.events);
    println!("edit: at most {most} hosts in running Jobs at once (maxUnavailable {allowed})");
    assert!(most <= allowed, "{most} hosts in running Jobs at once during the edit, over maxUnavailable {allowed}");
}

/// How many per-host transition Events the NodeSet got (the publisher folds Events of one
/// reason about one object into one with a series count, keeping the first note, so they are
/// counted, not read by host): measured, not asserted, as Events are published after the
/// status write and a kill in between loses them.
async fn host_events(client: &Client, namespace: &str, hosts: usize) -> anyhow::Result<String> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), namespace);
    let mut told: BTreeMap<String, i32> = BTreeMap::new();
    for event in events.list(&Default::default()).await?.items {
        if event.regarding.as_ref().and_then(|r| r.name.as_deref()) != Some(NODESET) {
            continue;
        }
        let count = event.series.as_ref().map(|s| s.count).unwrap_or(1);
        *told.entry(event.reason.unwrap_or_default()).or_default() += count;
    }
    let told = |reason: &str| told.get(reason).copied().unwrap_or(0);
    Ok(format!(
        "Events published for {hosts} hosts: Claimed {}, Provisioning {}, Provisioned {}",
        told("Claimed"),
        told("Provisioning"),
        told("Provisioned")
    ))
}
