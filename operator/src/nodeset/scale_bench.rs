//! The NodeSet planner at scale (issue 23, item 11): 1000 hosts with 16 services each in a
//! namespace of 5000 BareMetalHosts. A benchmark, run by `make bench` (ignored in `make test`,
//! which has no use for its figures): it prints how long planning takes when every host is
//! claimed at once and in a steady reconcile, how large the status it writes is, against
//! etcd's 1.5 MiB request limit, and how large the record of what ran is, spread over its
//! ConfigMaps. No figure is asserted.

use super::apply::Applied;
use super::claims::Owner;
use super::facts::Facts;
use super::plan::{DEFAULT_JOB_HISTORY, Plan, plan};
use super::status;
use super::validate::Findings;
use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, ProvisionStatus, ProvisioningState};
use crds::nodeset::{
    CompletedService, HOSTNAME_LABEL, NODESET_LABEL, NodeSet, PROVISIONED_HASH_ANNOTATION,
    SERVICES_COMPLETED_ANNOTATION, host_config_hash, provisioning_hash,
};
use crds::nodesetservice::{NodeSetService, service_hash};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAMESPACE: &str = "metal3";
/// etcd's default request limit, which a status write must stay under.
const ETCD_LIMIT: usize = 1536 * 1024;

fn now() -> Time {
    Time(Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH))
}

fn service_names(services: usize) -> Vec<String> {
    (0..services).map(|i| format!("configure-step-{i:02}")).collect()
}

fn nodeset(hosts: usize, services: usize) -> NodeSet {
    let nodes: serde_json::Map<String, Value> = (0..hosts)
        .map(|i| {
            let address = format!("10.{}.{}.{}/16", i / 65536, (i / 256) % 256, i % 256);
            (format!("compute-{i:04}"), json!({"networks": [{"name": "ctlplane", "addresses": [address]}]}))
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": "computes", "namespace": NAMESPACE, "uid": "ns-uid", "generation": 1},
        "spec": {
            "baremetalSetTemplate": {"image": {"url": "http://images/os-1.qcow2", "checksum": "abc", "checksumType": "sha256", "format": "qcow2"}},
            "nodeTemplate": {
                "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 9000, "gateway": "10.0.0.1"}],
                "dns": {"nameservers": ["10.0.0.53"]},
                "managementNetwork": "ctlplane"
            },
            "nodes": nodes,
            "services": service_names(services),
            "rollout": {"maxUnavailable": "10%"}
        }
    }))
    .expect("a NodeSet")
}

fn service(name: &str) -> NodeSetService {
    serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{name}")},
        "spec": {"job": {"image": format!("{name}:1")}}
    }))
    .expect("a NodeSetService")
}

fn machine(index: usize) -> BareMetalHost {
    let name = format!("server-{index:05}");
    let mut host: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{index}"), "resourceVersion": "7",
            "labels": {"rack": format!("r{}", index % 40)}},
        "spec": {"online": true, "bmc": {"address": format!("redfish://10.1.0.1/redfish/v1/Systems/{name}"), "credentialsName": "c"}}
    }))
    .expect("a BareMetalHost");
    host.status = Some(BareMetalHostStatus {
        provisioning: ProvisionStatus { state: ProvisioningState::Available, ..Default::default() },
        ..Default::default()
    });
    host
}

fn facts(n: &NodeSet, hosts: Vec<Arc<BareMetalHost>>) -> Facts {
    let services = n.spec.services.iter().flatten().map(|s| (s.clone(), Arc::new(service(s)))).collect();
    Facts { bmh_namespace: NAMESPACE.into(), hosts, services, ..Facts::default() }
}

/// The machines after the claims of `planned` were written and each machine was provisioned
/// and ran every service: what a steady NodeSet sees.
fn provisioned(n: &NodeSet, machines: &[Arc<BareMetalHost>], planned: &Plan) -> Vec<Arc<BareMetalHost>> {
    let owner = Owner::of(n);
    let chosen: BTreeMap<String, &str> = planned.writes.iter().map(|w| (w.host.clone(), w.hostname.as_str())).collect();
    let hashes: Vec<(String, String)> =
        n.spec.services.iter().flatten().map(|s| (s.clone(), service_hash(&service(s).spec))).collect();
    machines
        .iter()
        .map(|m| {
            let Some(hostname) = chosen.get(&m.metadata.name.clone().unwrap_or_default()) else { return m.clone() };
            let section = n.spec.nodes.as_ref().and_then(|nodes| nodes.get(*hostname));
            let desired = host_config_hash(hostname, n.spec.node_template.as_ref(), section);
            let completed: Vec<CompletedService> = hashes
                .iter()
                .map(|(name, hash)| CompletedService {
                    name: name.clone(),
                    config_hash: Some(desired.clone()),
                    service_hash: Some(hash.clone()),
                    completed_at: Some(now()),
                })
                .collect();
            let mut host = (**m).clone();
            host.metadata.labels.get_or_insert_default().extend([
                (NODESET_LABEL.to_string(), owner.label.clone()),
                (HOSTNAME_LABEL.to_string(), hostname.to_string()),
            ]);
            host.metadata.annotations = Some(BTreeMap::from([
                (PROVISIONED_HASH_ANNOTATION.to_string(), provisioning_hash(hostname, &n.spec).unwrap_or_default()),
                (SERVICES_COMPLETED_ANNOTATION.to_string(), serde_json::to_string(&completed).unwrap_or_default()),
            ]));
            host.spec.consumer_ref = Some(owner.consumer_ref());
            host.spec.image = n.spec.baremetal_set_template.as_ref().and_then(|t| t.image.clone());
            if let Some(status) = host.status.as_mut() {
                status.provisioning.state = ProvisioningState::Provisioned;
            }
            Arc::new(host)
        })
        .collect()
}

/// The median of `runs` timings of `work`.
fn median(runs: usize, mut work: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn status_bytes(n: &NodeSet, planned: &Plan, applied: &Applied) -> (usize, NodeSet) {
    let (computed, _) = status::compute(n, planned, applied, &Findings::default(), &now());
    let bytes = serde_json::to_vec(&json!({"status": computed})).map(|b| b.len()).unwrap_or_default();
    let mut next = n.clone();
    next.status = Some(computed);
    (bytes, next)
}

#[test]
#[ignore = "a benchmark: `make bench` runs it and prints its figures"]
fn nodeset_planning_at_scale_prints_its_figures() {
    let (hosts, services, machines) = (1000, 16, 5000);
    let n = nodeset(hosts, services);
    let free: Vec<Arc<BareMetalHost>> = (0..machines).map(|i| Arc::new(machine(i))).collect();
    let claiming = facts(&n, free.clone());
    let mut first = Plan::default();
    let claim_time = median(3, || first = plan(&n, &claiming, &Findings::default(), DEFAULT_JOB_HISTORY, &now()));
    assert_eq!(first.writes.len(), hosts, "every host gets a claim");

    let steady_hosts = provisioned(&n, &free, &first);
    let mut steady = facts(&n, steady_hosts);
    let adopted = plan(&n, &steady, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let (_, n) = status_bytes(&n, &adopted, &Applied::default());
    let shard_bytes: Vec<usize> =
        adopted.records.iter().map(|r| r.data.iter().flat_map(|d| d.values()).map(String::len).sum()).collect();
    steady.records =
        adopted.records.iter().map(|r| (r.metadata.name.clone().unwrap_or_default(), super::record::read(r))).collect();
    let mut again = Plan::default();
    let steady_time = median(3, || again = plan(&n, &steady, &Findings::default(), DEFAULT_JOB_HISTORY, &now()));
    let (bytes, _) = status_bytes(&n, &again, &Applied::default());
    let rows: usize = steady.records.values().flat_map(|r| r.values()).map(|e| e.completed.len()).sum();

    println!("NodeSet planner at scale: {hosts} hosts x {services} services, {machines} BareMetalHosts");
    println!("  plan, every host claimed at once:  {:>9.1} ms", claim_time.as_secs_f64() * 1000.0);
    println!("  plan, steady reconcile:            {:>9.1} ms", steady_time.as_secs_f64() * 1000.0);
    println!("  status written (JSON):             {:>9} bytes", bytes);
    println!(
        "  record: {} ConfigMaps, {} completion rows, largest {} bytes of a ConfigMap's 1 MiB; rewritten when steady: {}",
        shard_bytes.len(),
        rows,
        shard_bytes.iter().max().copied().unwrap_or_default(),
        again.records.len()
    );
    println!(
        "  etcd request limit:                {:>9} bytes ({})",
        ETCD_LIMIT,
        if bytes < ETCD_LIMIT { "status fits" } else { "status does NOT fit" }
    );
}
