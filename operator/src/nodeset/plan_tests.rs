use super::*;
use crate::nodeset::consumer::{Purpose, recorded_completions};
use crate::nodeset::machine::Phase;
use crds::baremetalhost::{BareMetalHostStatus, ProvisionStatus, ProvisioningState};
use crds::nodeset::{
    BmhRef, HOSTNAME_LABEL, HostStatus, NODESET_LABEL, NodeSetStatus, PROVISIONED_HASH_ANNOTATION, provisioning_hash,
};
use crds::nodeset::{host_config_hash, nodeset_config_hash};
use crds::nodesetservice::{NodeSetService, service_hash};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

fn now() -> Time {
    Time(Timestamp::from_second(1_000).expect("time"))
}

fn spec() -> Value {
    json!({
        "baremetalSetTemplate": {
            "image": {"url": "http://images/os-1.qcow2", "checksum": "abc", "checksumType": "sha256", "format": "qcow2"},
            "userData": {"name": "user-data"},
            "automatedCleaningMode": "metadata",
        },
        "nodeTemplate": {
            "networks": [{"name": "ctlplane", "interface": "eno1", "mtu": 1500, "gateway": "192.0.2.1"}],
            "dns": {"nameservers": ["192.0.2.53"]},
            "managementNetwork": "ctlplane",
            "variables": {"timezone": "UTC"}
        },
        "nodes": {
            "compute-0": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.10/24"]}]},
            "compute-1": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.11/24"]}]},
            "compute-2": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.12/24"]}]}
        },
        "services": ["bootstrap", "configure-network"],
        "rollout": {"maxUnavailable": 1}
    })
}

fn nodeset(spec: &Value) -> NodeSet {
    serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": "computes", "namespace": "metal3", "uid": "ns-uid", "generation": 2},
        "spec": spec
    }))
    .expect("nodeset")
}

fn bmh(name: &str, state: ProvisioningState) -> BareMetalHost {
    let mut host: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": "metal3", "uid": format!("uid-{name}"), "resourceVersion": "7"},
        "spec": {"online": true, "bmc": {"address": format!("fake://{name}"), "credentialsName": "c"}}
    }))
    .expect("host");
    host.status = Some(BareMetalHostStatus {
        provisioning: ProvisionStatus { state, ..Default::default() },
        ..Default::default()
    });
    host
}

/// The machines of `spec`'s hosts, provisioned by this NodeSet with `spec`'s inputs, every
/// service completed at the current configuration.
fn provisioned(spec: &Value) -> Vec<Arc<BareMetalHost>> {
    let n = nodeset(spec);
    let owner = Owner::of(&n);
    n.spec
        .nodes
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, (hostname, section))| {
            let mut host = bmh(&format!("server-{i}"), ProvisioningState::Provisioned);
            host.metadata.labels = Some(BTreeMap::from([
                (NODESET_LABEL.to_string(), owner.label.clone()),
                (HOSTNAME_LABEL.to_string(), hostname.clone()),
            ]));
            let completed = every_service_done(&n, hostname, section);
            host.metadata.annotations = Some(BTreeMap::from([
                (PROVISIONED_HASH_ANNOTATION.to_string(), provisioning_hash(hostname, &n.spec).expect("hash")),
                (
                    crds::nodeset::SERVICES_COMPLETED_ANNOTATION.to_string(),
                    serde_json::to_string(&completed).expect("json"),
                ),
            ]));
            host.spec.consumer_ref = Some(owner.consumer_ref());
            host.spec.image = n.spec.baremetal_set_template.as_ref().and_then(|t| t.image.clone());
            host.spec.user_data = Some(k8s_openapi::api::core::v1::SecretReference {
                name: Some("user-data".into()),
                namespace: Some("metal3".into()),
            });
            host.spec.automated_cleaning_mode = Some(crds::baremetalhost::AutomatedCleaningMode::Metadata);
            Arc::new(host)
        })
        .collect()
}

/// `hostname`'s completions of both services at its configuration in `n`.
fn every_service_done(n: &NodeSet, hostname: &str, section: &crds::nodeset::NodeSection) -> Vec<CompletedService> {
    let desired = host_config_hash(hostname, n.spec.node_template.as_ref(), Some(section));
    ["bootstrap", "configure-network"]
        .iter()
        .map(|s| CompletedService {
            name: s.to_string(),
            config_hash: Some(desired.clone()),
            service_hash: Some(service_hash(&service(s).spec)),
            completed_at: Some(now()),
        })
        .collect()
}

/// The status the NodeSet had when `hosts` were provisioned and configured.
fn status(spec: &Value, hosts: &[Arc<BareMetalHost>]) -> NodeSetStatus {
    let n = nodeset(spec);
    let entries = n
        .spec
        .nodes
        .iter()
        .flatten()
        .zip(hosts)
        .map(|((hostname, section), host)| {
            let desired = host_config_hash(hostname, n.spec.node_template.as_ref(), Some(section));
            (
                hostname.clone(),
                HostStatus {
                    bmh_ref: Some(BmhRef { name: host.name_any(), namespace: "metal3".into(), uid: host.uid() }),
                    reprovision_token: Some(String::new()),
                    deployed_config_hash: Some(desired.clone()),
                    desired_config_hash: Some(desired),
                    ..Default::default()
                },
            )
        })
        .collect();
    NodeSetStatus {
        hosts: Some(entries),
        claimed_hosts: Some(3),
        rollout: Some(RolloutStatus { config_hash: Some(nodeset_config_hash(&n.spec)), ..Default::default() }),
        ..Default::default()
    }
}

fn service(name: &str) -> NodeSetService {
    let mut service: NodeSetService = serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService",
        "metadata": {"name": name, "namespace": "metal3"},
        "spec": {"job": {"image": format!("{name}:1")}, "runOnce": name == "bootstrap"}
    }))
    .expect("service");
    service.metadata.uid = Some(format!("uid-{name}"));
    service
}

fn facts(hosts: Vec<Arc<BareMetalHost>>) -> Facts {
    let services = ["bootstrap", "configure-network", "configure-os"]
        .iter()
        .map(|s| (s.to_string(), Arc::new(service(s))))
        .collect();
    Facts { bmh_namespace: "metal3".into(), hosts, services, ..Facts::default() }
}

/// Plans `edited` on a NodeSet whose hosts were provisioned and configured with `spec()`.
fn plan_edit(edited: &Value) -> Plan {
    let hosts = provisioned(&spec());
    let mut n = nodeset(edited);
    n.status = Some(status(&spec(), &hosts));
    plan(&n, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now())
}

fn edited(edit: impl FnOnce(&mut Value)) -> Value {
    let mut spec = spec();
    edit(&mut spec);
    spec
}

fn purposes(plan: &Plan) -> Vec<(String, Purpose)> {
    plan.writes.iter().map(|w| (w.hostname.clone(), w.purpose)).collect()
}

/// Every kind of edit of the design's field classification, by what it touches.
fn edits() -> Vec<(&'static str, Value)> {
    vec![
        ("nothing", spec()),
        ("the MTU (a)", edited(|s| s["nodeTemplate"]["networks"][0]["mtu"] = json!(9000))),
        (
            "a network added (a)",
            edited(|s| {
                s["nodeTemplate"]["networks"]
                    .as_array_mut()
                    .expect("list")
                    .push(json!({"name": "storage", "interface": "eno2", "vlan": 30}))
            }),
        ),
        (
            "the BIOS settings (a)",
            edited(|s| s["baremetalSetTemplate"]["firmwareSettings"] = json!({"ProcTurboMode": "Disabled"})),
        ),
        (
            "a host's firmware updates (a)",
            edited(|s| {
                s["nodes"]["compute-1"]["firmwareUpdates"] = json!([{"component": "bios", "url": "http://i/bios.bin"}])
            }),
        ),
        ("the DNS servers (a)", edited(|s| s["nodeTemplate"]["dns"]["nameservers"] = json!(["192.0.2.54"]))),
        ("the variables (a)", edited(|s| s["nodeTemplate"]["variables"]["timezone"] = json!("Europe/Paris"))),
        ("a host's variables (a)", edited(|s| s["nodes"]["compute-1"]["variables"] = json!({"role": "hci"}))),
        (
            "a host's address (a)",
            edited(|s| s["nodes"]["compute-1"]["networks"][0]["addresses"] = json!(["192.0.2.99/24"])),
        ),
        ("the management network (a)", edited(|s| s["nodeTemplate"]["managementNetwork"] = Value::Null)),
        ("the services (a)", edited(|s| s["services"] = json!(["bootstrap", "configure-os", "configure-network"]))),
        (
            "the rollout strategy (a)",
            edited(|s| s["rollout"] = json!({"strategy": "Manual", "token": "x", "maxUnavailable": "50%"})),
        ),
        ("the cleaning mode (a)", edited(|s| s["baremetalSetTemplate"]["automatedCleaningMode"] = json!("disabled"))),
        ("the deletion policy (a)", edited(|s| s["deletionPolicy"] = json!("Deprovision"))),
        ("a host added (a)", edited(|s| s["nodes"]["compute-3"] = json!({}))),
        ("the image (b)", edited(|s| s["baremetalSetTemplate"]["image"]["url"] = json!("http://images/os-2.qcow2"))),
        ("the boot mode (b)", edited(|s| s["baremetalSetTemplate"]["bootMode"] = json!("legacy"))),
        (
            "the root device hints (b)",
            edited(|s| s["baremetalSetTemplate"]["rootDeviceHints"] = json!({"minSizeGigabytes": 500})),
        ),
        ("the user data (b)", edited(|s| s["baremetalSetTemplate"]["userData"] = json!({"name": "other"}))),
        ("the network data (b)", edited(|s| s["baremetalSetTemplate"]["networkData"] = json!({"name": "nd"}))),
        ("a host's user data (b)", edited(|s| s["nodes"]["compute-0"]["userData"] = json!({"name": "ud-0"}))),
        (
            "the ramdisk network (b)",
            edited(|s| {
                s["baremetalSetTemplate"]["provisioningNetwork"] = json!({"preprovisioningNetworkDataName": "ramdisk"})
            }),
        ),
        (
            "the selector, past the lock (c)",
            edited(|s| s["baremetalSetTemplate"]["bmhLabelSelector"] = json!({"matchLabels": {"rack": "r9"}})),
        ),
        (
            "the hardware requirements, past the lock (c)",
            edited(|s| s["baremetalSetTemplate"]["hardwareReqs"] = json!({"minCpuCount": 512})),
        ),
        (
            "a host's selector, past the lock (c)",
            edited(|s| s["nodes"]["compute-0"]["bmhLabelSelector"] = json!({"matchLabels": {"x": "y"}})),
        ),
        ("a host removed under Retain", edited(|s| drop(s["nodes"].as_object_mut().expect("map").remove("compute-2")))),
        (
            "a host removed under Detach",
            edited(|s| {
                s["deletionPolicy"] = json!("Detach");
                drop(s["nodes"].as_object_mut().expect("map").remove("compute-2"));
            }),
        ),
        (
            "a first reprovision token (request, first sight is recorded)",
            edited(|s| s["nodes"]["compute-0"]["reprovisionToken"] = json!("")),
        ),
    ]
}

#[test]
fn no_edit_but_the_two_explicit_requests_deprovisions_a_machine() {
    let hosts = provisioned(&spec());
    for (what, edited) in edits() {
        let plan = plan_edit(&edited);
        for write in &plan.writes {
            assert!(!write.clears_image(), "editing {what} cleared the image of {}: {write:?}", write.host);
            assert_ne!(write.purpose, Purpose::Provision, "editing {what} provisioned {} again", write.host);
            if let (Some(applied), Some(host)) =
                (write.applied_image(), hosts.iter().find(|h| h.name_any() == write.host))
            {
                let live = serde_json::to_value(&host.spec.image).expect("json");
                assert_eq!(applied, &live, "editing {what} changed the image applied to {}", write.host);
            }
            if let Body::Apply(body) = &write.body
                && hosts.iter().any(|h| h.name_any() == write.host)
            {
                assert!(
                    body.pointer("/spec/image").is_some(),
                    "editing {what} applied {} without its image",
                    write.host
                );
            }
        }
    }
}

#[test]
fn a_new_reprovision_token_reprovisions_that_machine_only() {
    let mut n = nodeset(&edited(|s| s["nodes"]["compute-1"]["reprovisionToken"] = json!("2026-09-01")));
    let hosts = provisioned(&spec());
    n.status = Some(status(&spec(), &hosts));
    let plan = plan(&n, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let clearing: Vec<&str> = plan.writes.iter().filter(|w| w.clears_image()).map(|w| w.hostname.as_str()).collect();
    assert_eq!(clearing, ["compute-1"]);
    assert_eq!(purposes(&plan), [("compute-1".to_string(), Purpose::Reprovision)]);
    assert!(plan.hosts["compute-1"].completed.is_empty(), "every service runs again after it");
}

#[test]
fn removing_a_host_under_deprovision_deprovisions_that_machine_only() {
    let hosts = provisioned(&spec());
    let mut n = nodeset(&edited(|s| {
        s["deletionPolicy"] = json!("Deprovision");
        drop(s["nodes"].as_object_mut().expect("map").remove("compute-2"));
    }));
    // Deprovision was in force before the removal.
    n.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Deprovision), ..status(&spec(), &hosts) });
    let plan = plan(&n, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let clearing: Vec<(&str, Purpose)> =
        plan.writes.iter().filter(|w| w.clears_image()).map(|w| (w.hostname.as_str(), w.purpose)).collect();
    assert_eq!(clearing, [("compute-2", Purpose::Deprovision)]);
    assert_eq!(plan.releases.len(), 1);
}

#[test]
fn deleting_the_nodeset_deprovisions_only_under_the_deprovision_policy() {
    for (policy, clears, writes) in [("Retain", 0, 0), ("Detach", 0, 3), ("Deprovision", 3, 3)] {
        let mut n = nodeset(&edited(|s| s["deletionPolicy"] = json!(policy)));
        n.status =
            Some(NodeSetStatus { deletion_policy: serde_json::from_value(json!(policy)).ok(), ..Default::default() });
        // Three at once is more than maxUnavailable: confirmed.
        n.annotations_mut().insert("ferrometal.io/confirm-deprovision".into(), "all".into());
        let plan = plan_deletion(&n, &facts(provisioned(&spec())));
        assert_eq!(plan.writes.iter().filter(|w| w.clears_image()).count(), clears, "{policy}");
        assert_eq!(plan.writes.len(), writes, "{policy}");
        assert_eq!(plan.releases.len(), 3, "{policy}: every host is released");
    }
}

#[test]
fn deleting_the_nodeset_leaves_machines_released_earlier_alone() {
    let n = nodeset(&edited(|s| {
        s["deletionPolicy"] = json!("Deprovision");
        drop(s["nodes"].as_object_mut().expect("map").remove("compute-2"));
    }));
    // compute-2 was removed under Retain: its machine still carries the labels.
    let plan = plan_deletion(&n, &facts(provisioned(&spec())));
    let released: Vec<&str> = plan.releases.iter().map(|r| r.hostname.as_str()).collect();
    assert_eq!(released, ["compute-0", "compute-1"]);
}

#[test]
fn deleting_a_nodeset_whose_status_never_saw_deprovision_deprovisions_nothing() {
    let n = nodeset(&edited(|s| s["deletionPolicy"] = json!("Deprovision")));
    let plan = plan_deletion(&n, &facts(provisioned(&spec())));
    assert!(plan.writes.iter().all(|w| !w.clears_image()));
    assert_eq!(plan.releases.len(), 3, "released under Retain");
}

#[test]
fn an_edited_mtu_reruns_the_network_service_on_one_host_at_a_time_and_writes_nothing_on_the_machines() {
    let plan = plan_edit(&edited(|s| s["nodeTemplate"]["networks"][0]["mtu"] = json!(9000)));
    assert!(plan.writes.is_empty(), "{:?}", plan.writes);
    let jobs: Vec<(String, Vec<String>)> =
        plan.rollout.batches.iter().map(|b| (b.service.clone(), b.hosts.keys().cloned().collect())).collect();
    assert_eq!(jobs, [("configure-network".to_string(), vec!["compute-0".to_string()])], "bootstrap runs once");
    assert_eq!(plan.jobs.len(), 1);
}

#[test]
fn an_edited_image_marks_every_machine_outdated_and_writes_nothing() {
    let plan = plan_edit(&edited(|s| s["baremetalSetTemplate"]["image"]["url"] = json!("http://images/os-2.qcow2")));
    assert!(plan.writes.is_empty());
    for host in plan.hosts.values() {
        let HostPhase::Machine(decision) = &host.phase else { panic!("claimed") };
        assert_eq!((decision.outdated, &decision.phase), (Some(true), &Phase::Provisioned));
    }
}

#[test]
fn a_new_nodeset_claims_one_free_machine_per_host() {
    let free: Vec<Arc<BareMetalHost>> =
        (0..4).map(|i| Arc::new(bmh(&format!("server-{i}"), ProvisioningState::Available))).collect();
    let plan = plan(&nodeset(&spec()), &facts(free), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(
        purposes(&plan),
        [
            ("compute-0".to_string(), Purpose::Claim),
            ("compute-1".to_string(), Purpose::Claim),
            ("compute-2".to_string(), Purpose::Claim)
        ]
    );
    assert!(plan.jobs.is_empty(), "nothing runs before the machines do");
}

/// `host`, claimed but free: no image, no record, `available`.
fn freed(host: &BareMetalHost) -> BareMetalHost {
    let mut free = host.clone();
    free.spec.image = None;
    free.metadata.annotations = None;
    free.status.as_mut().expect("status").provisioning.state = ProvisioningState::Available;
    free
}

#[test]
fn a_claimed_free_machine_is_provisioned_with_the_template() {
    let hosts = provisioned(&spec());
    let fresh = freed(&hosts[0]);
    let mut n = nodeset(&spec());
    n.status = Some(status(&spec(), &hosts));
    let plan =
        plan(&n, &facts(vec![Arc::new(fresh), hosts[1].clone(), hosts[2].clone()]), &Findings::default(), 3, &now());
    let write = plan.writes.iter().find(|w| w.purpose == Purpose::Provision).expect("a provision write");
    assert_eq!(write.hostname, "compute-0");
    assert_eq!(write.applied_image().and_then(|i| i["url"].as_str()), Some("http://images/os-1.qcow2"));
    assert_eq!(plan.network_data.len(), 1, "network data generated from the host's networks");
}

#[test]
fn a_blocking_finding_plans_nothing() {
    let findings = Findings { refused: Some(("NamespaceNotWatched", "no".into())), ..Findings::default() };
    let free = vec![Arc::new(bmh("server-0", ProvisioningState::Available))];
    let plan = plan(&nodeset(&spec()), &facts(free), &findings, 3, &now());
    assert!(plan.writes.is_empty() && plan.jobs.is_empty());
}

/// The machines of `spec()`, with `edit` applied to each.
fn provisioned_with(edit: impl Fn(&mut BareMetalHost)) -> Vec<Arc<BareMetalHost>> {
    provisioned(&spec())
        .into_iter()
        .map(|h| {
            let mut host = (*h).clone();
            edit(&mut host);
            Arc::new(host)
        })
        .collect()
}

#[test]
fn a_machine_whose_ferrometal_annotations_were_stripped_keeps_its_image_and_its_completions() {
    let hosts = provisioned_with(|h| h.metadata.annotations = None);
    let mut n = nodeset(&edited(|s| s["baremetalSetTemplate"]["automatedCleaningMode"] = json!("disabled")));
    let mut known = status(&spec(), &hosts);
    for (entry, host) in known.hosts.iter_mut().flat_map(|m| m.values_mut()).zip(&provisioned(&spec())) {
        entry.provisioned_hash = host.annotations().get(PROVISIONED_HASH_ANNOTATION).cloned();
        entry.services_completed = Some(recorded_completions(host));
    }
    n.status = Some(known);
    let plan = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(plan.writes.len(), 3, "the cleaning mode is written on every machine");
    for (write, host) in plan.writes.iter().zip(&hosts) {
        assert!(!write.drops_image(host), "{} would lose its image: {write:?}", write.host);
        let Body::Apply(body) = &write.body else { panic!("an apply") };
        assert!(body.pointer("/metadata/annotations").is_some_and(|a| a.get(PROVISIONED_HASH_ANNOTATION).is_some()));
    }
    assert!(plan.jobs.is_empty(), "nothing reruns: status knew what ran on these very machines");
    assert!(plan.hosts.values().all(|h| matches!(&h.phase, HostPhase::Machine(d) if d.phase == Phase::Provisioned)));
}

#[test]
fn an_edited_service_spec_waits_for_a_manual_nodesets_token() {
    let manual = edited(|s| s["rollout"] = json!({"strategy": "Manual", "maxUnavailable": 1}));
    let hosts = provisioned(&manual);
    let mut n = nodeset(&manual);
    n.status = Some(status(&manual, &hosts));
    // The rollout as this operator records it, with the services as they were.
    let settled = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(settled.jobs.is_empty());
    n.status = Some(NodeSetStatus { rollout: Some(settled.rollout_status.clone()), ..status(&manual, &hosts) });
    let mut changed = facts(hosts.clone());
    let mut network = service("configure-network");
    network.spec.job.image = "configure-network:2".into();
    changed.services.insert("configure-network".into(), Arc::new(network));
    let waiting = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(waiting.jobs.is_empty(), "no Job without a token");
    assert_eq!(waiting.rollout.pending.len(), 3, "every host waits");
    // A new token approves it.
    let mut approved = n.clone();
    approved.status = Some(NodeSetStatus { rollout: Some(waiting.rollout_status.clone()), ..status(&manual, &hosts) });
    approved.spec.rollout.as_mut().expect("rollout").token = Some("go".into());
    let rolling = plan(&approved, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(rolling.jobs.len(), 1, "one host at a time");
}

#[test]
fn a_removal_in_the_edit_that_switched_to_deprovision_is_released_under_the_policy_seen_before() {
    let hosts = provisioned(&spec());
    let removed = edited(|s| {
        s["deletionPolicy"] = json!("Deprovision");
        drop(s["nodes"].as_object_mut().expect("map").remove("compute-2"));
    });
    let mut n = nodeset(&removed);
    n.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Retain), ..status(&spec(), &hosts) });
    let retained = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(retained.writes.iter().all(|w| !w.clears_image()), "{:?}", purposes(&retained));
    assert_eq!(retained.releases.iter().map(|r| r.policy).collect::<Vec<_>>(), [DeletionPolicy::Retain]);
    // Once status recorded Deprovision, a removal is deprovisioned.
    n.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Deprovision), ..status(&spec(), &hosts) });
    let released = plan(&n, &facts(hosts), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(released.releases.iter().map(|r| r.policy).collect::<Vec<_>>(), [DeletionPolicy::Deprovision]);
}

#[test]
fn a_recreated_pre_provisioned_nodeset_reads_what_ran_from_its_record_and_reruns_nothing() {
    let pre = json!({
        "preProvisioned": true,
        "nodeTemplate": spec()["nodeTemplate"].clone(),
        "nodes": spec()["nodes"].clone(),
        "services": ["bootstrap", "configure-network"],
        "rollout": {"maxUnavailable": 1}
    });
    let n = nodeset(&pre);
    let completions: crate::nodeset::record::Completions = n
        .spec
        .nodes
        .iter()
        .flatten()
        .map(|(hostname, section)| {
            let completed = every_service_done(&n, hostname, section);
            (hostname.clone(), crate::nodeset::record::Entry { completed, ..Default::default() })
        })
        .collect();
    // Recreated: no status at all.
    let fresh = plan(&n, &facts(vec![]), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(fresh.jobs.len(), 1, "without a record every host is new: one bootstrap Job for all");
    let records = crate::nodeset::record::writes(&Owner::of(&n), &completions, &BTreeMap::new())
        .iter()
        .map(|cm| (cm.metadata.name.clone().unwrap_or_default(), crate::nodeset::record::read(cm)))
        .collect();
    let with_record = Facts { records, ..facts(vec![]) };
    let recreated = plan(&n, &with_record, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(recreated.jobs.is_empty(), "nothing reruns: {:?}", recreated.rollout.batches);
    assert!(recreated.records.is_empty(), "the record is current");
    // An MTU edit afterwards is an update, one host at a time: the hosts are not new.
    let mut edited = pre.clone();
    edited["nodeTemplate"]["networks"][0]["mtu"] = json!(9000);
    let rolled = plan(&nodeset(&edited), &with_record, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(rolled.rollout.batches.iter().map(|b| b.hosts.len()).sum::<usize>(), 1, "{:?}", rolled.rollout.batches);
    assert!(rolled.rollout.batches.iter().all(|b| b.service == "configure-network"));
}

/// The NodeSet of `hosts` under Deprovision, its `nodes` emptied in one edit.
fn emptied_under_deprovision(hosts: &[Arc<BareMetalHost>]) -> NodeSet {
    let mut n = nodeset(&edited(|s| {
        s["deletionPolicy"] = json!("Deprovision");
        s["nodes"] = json!({});
    }));
    n.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Deprovision), ..status(&spec(), hosts) });
    n
}

#[test]
fn deprovisioning_more_hosts_than_max_unavailable_at_once_waits_for_a_confirmation() {
    let hosts = provisioned(&spec());
    let mut n = emptied_under_deprovision(&hosts);
    let emptied = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert!(emptied.writes.iter().all(|w| !w.clears_image()), "an emptied nodes deprovisions nothing by itself");
    assert_eq!(emptied.held(), ["compute-0", "compute-1", "compute-2"]);
    n.annotations_mut().insert("ferrometal.io/confirm-deprovision".into(), "compute-0,compute-2".into());
    let confirmed = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let clearing: Vec<&str> =
        confirmed.writes.iter().filter(|w| w.clears_image()).map(|w| w.hostname.as_str()).collect();
    assert_eq!(clearing, ["compute-0", "compute-2"]);
    assert_eq!(confirmed.held(), ["compute-1"]);
    // Deleting the NodeSet is held the same way.
    let mut whole = nodeset(&edited(|s| s["deletionPolicy"] = json!("Deprovision")));
    whole.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Deprovision), ..Default::default() });
    let deletion = plan_deletion(&whole, &facts(hosts));
    assert!(deletion.writes.is_empty());
    assert_eq!(deletion.held().len(), 3);
}

#[test]
fn a_confirmation_that_let_hosts_go_is_spent_and_holds_the_next_mass_removal() {
    let hosts = provisioned(&spec());
    let mut n = emptied_under_deprovision(&hosts);
    n.annotations_mut().insert("ferrometal.io/confirm-deprovision".into(), "all".into());
    let planned = plan(&n, &facts(hosts.clone()), &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(planned.writes.iter().filter(|w| w.clears_image()).count(), 3, "a planned scale-in, confirmed");
    let mut applied = crate::nodeset::apply::Applied::default();
    applied.released.extend(["compute-0", "compute-1", "compute-2"].map(String::from));
    let (written, _) = crate::nodeset::status::compute(&n, &planned, &applied, &Findings::default(), &now());
    assert_eq!(written.spent_deprovision_confirmations.as_ref().map(Vec::len), Some(1));
    // Months later, with the annotation still there, the NodeSet is pruned with new hosts.
    let mut later = nodeset(&edited(|s| s["deletionPolicy"] = json!("Deprovision")));
    later.annotations_mut().insert("ferrometal.io/confirm-deprovision".into(), "all".into());
    later.status = Some(NodeSetStatus { deletion_policy: Some(DeletionPolicy::Deprovision), ..written });
    let deletion = plan_deletion(&later, &facts(hosts));
    assert!(deletion.writes.is_empty(), "the spent confirmation waves nothing through");
    assert_eq!(deletion.held().len(), 3);
}

/// One reconcile of `n` as the operator runs it, nothing refused: its plan, and `n`'s status
/// replaced by what it writes.
fn reconcile(n: &mut NodeSet, facts: &Facts) -> Plan {
    let planned = plan(n, facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    let applied = crate::nodeset::apply::Applied::default();
    let (written, _) = crate::nodeset::status::compute(n, &planned, &applied, &Findings::default(), &now());
    n.status = Some(written);
    planned
}

fn manual() -> Value {
    edited(|s| s["rollout"] = json!({"strategy": "Manual", "maxUnavailable": 1}))
}

/// A Manual NodeSet of `spec()`'s hosts, configured, whose MTU edit a token approved: its
/// first host is being rolled out, the others wait for their turn.
fn approved_mtu_rollout() -> (NodeSet, Vec<Arc<BareMetalHost>>) {
    let hosts = provisioned(&manual());
    let mut n = nodeset(&manual());
    n.status = Some(status(&manual(), &hosts));
    reconcile(&mut n, &facts(hosts.clone()));
    n.spec.node_template.as_mut().and_then(|t| t.networks.as_mut()).expect("networks")[0].mtu = Some(9000);
    n.spec.rollout.as_mut().expect("rollout").token = Some("2026-08-01".into());
    let approved = reconcile(&mut n, &facts(hosts.clone()));
    let started: Vec<(String, Vec<String>)> =
        approved.rollout.batches.iter().map(|b| (b.service.clone(), b.hosts.keys().cloned().collect())).collect();
    assert_eq!(started, [("configure-network".to_string(), vec!["compute-0".to_string()])]);
    (n, hosts)
}

fn batches_of(plan: &Plan) -> Vec<(String, Vec<String>)> {
    plan.rollout.batches.iter().map(|b| (b.service.clone(), b.hosts.keys().cloned().collect())).collect()
}

#[test]
fn a_host_added_during_an_approved_manual_rollout_is_brought_up_and_the_rollout_goes_on() {
    let (mut n, mut hosts) = approved_mtu_rollout();
    // compute-3 joins with a provisioned machine that never ran anything.
    let mut four = manual();
    four["nodes"]["compute-3"] = json!({"networks": [{"name": "ctlplane", "addresses": ["192.0.2.13/24"]}]});
    let mut machine = (*provisioned(&four)[3]).clone();
    machine.annotations_mut().remove(crds::nodeset::SERVICES_COMPLETED_ANNOTATION);
    hosts.push(Arc::new(machine));
    n.spec.nodes = nodeset(&four).spec.nodes;
    let added = reconcile(&mut n, &facts(hosts));
    assert_eq!(
        batches_of(&added),
        [
            ("bootstrap".to_string(), vec!["compute-3".to_string()]),
            ("configure-network".to_string(), vec!["compute-0".to_string()]),
        ],
        "a bring-up needs no token, and the approved rollout does not wait again"
    );
}

#[test]
fn a_host_removed_during_an_approved_manual_rollout_does_not_make_it_wait_again() {
    let (mut n, hosts) = approved_mtu_rollout();
    n.spec.nodes.as_mut().expect("nodes").remove("compute-2");
    let removed = reconcile(&mut n, &facts(hosts));
    assert_eq!(batches_of(&removed), [("configure-network".to_string(), vec!["compute-0".to_string()])]);
}

#[test]
fn a_manual_edit_waiting_for_its_token_leaves_the_hosts_configured_at_what_was_approved() {
    let hosts = provisioned(&manual());
    let mut n = nodeset(&manual());
    n.status = Some(status(&manual(), &hosts));
    reconcile(&mut n, &facts(hosts.clone()));
    n.spec.node_template.as_mut().and_then(|t| t.networks.as_mut()).expect("networks")[0].mtu = Some(9000);
    let waiting = reconcile(&mut n, &facts(hosts));
    assert!(waiting.jobs.is_empty(), "no token, no Job");
    let written = n.status.as_ref().expect("status");
    assert_eq!(written.configured_hosts.as_deref(), Some("3/3"), "they run what was approved for them");
    let condition = |t: &str| written.conditions.iter().flatten().find(|c| c.type_ == t).cloned().expect("condition");
    assert_eq!(condition("Configured").status, "True", "{:?}", condition("Configured"));
    let ready = condition("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "RolloutPending"));
    assert!(ready.message.starts_with("3 of 3 hosts"), "{}", ready.message);
}

#[test]
fn an_edit_after_an_approved_manual_rollout_waits_for_the_next_token_whatever_hosts_came() {
    let (mut n, hosts) = approved_mtu_rollout();
    n.spec.nodes.as_mut().expect("nodes").remove("compute-2");
    reconcile(&mut n, &facts(hosts.clone()));
    let timezone = |n: &mut NodeSet, zone: &str| {
        let variables = n.spec.node_template.as_mut().and_then(|t| t.variables.as_mut()).expect("variables");
        variables.insert("timezone".into(), json!(zone));
    };
    timezone(&mut n, "Europe/Paris");
    let edited = reconcile(&mut n, &facts(hosts.clone()));
    assert!(edited.jobs.is_empty(), "{:?}", batches_of(&edited));
    assert_eq!(edited.rollout.pending.len(), 2, "both hosts wait");
    // A service edited: the same.
    timezone(&mut n, "UTC");
    let mut changed = facts(hosts);
    let mut network = service("configure-network");
    network.spec.job.image = "configure-network:2".into();
    changed.services.insert("configure-network".into(), Arc::new(network));
    let service_edited = reconcile(&mut n, &changed);
    assert!(service_edited.jobs.is_empty(), "{:?}", batches_of(&service_edited));
}

#[test]
fn a_manual_nodeset_seen_first_approves_nothing_even_with_hosts_recorded() {
    let (mut n, hosts) = approved_mtu_rollout();
    // Status lost (or the NodeSet recreated), the token still in spec.
    n.status = None;
    let first = reconcile(&mut n, &facts(hosts));
    assert!(first.jobs.is_empty(), "{:?}", batches_of(&first));
    let written = n.status.as_ref().expect("status");
    assert_eq!(written.rollout.as_ref().and_then(|r| r.approved_services.clone()), None);
    assert!(written.hosts.iter().flatten().all(|(_, h)| h.approved_config_hash.is_none()));
    assert_eq!(written.pending_hosts, Some(3));
}

#[path = "plan_sources_tests.rs"]
mod sources;

/// Each machine's settings object, read for its spec (`settings`), its settings matched.
fn settings_objects(
    hosts: &[Arc<BareMetalHost>],
    settings: Value,
) -> BTreeMap<String, Arc<crds::firmware::HostFirmwareSettings>> {
    hosts
        .iter()
        .map(|h| {
            let object: crds::firmware::HostFirmwareSettings = serde_json::from_value(json!({
                "apiVersion": "metal3.io/v1alpha1", "kind": "HostFirmwareSettings",
                "metadata": {"name": h.name_any(), "namespace": "metal3", "generation": 1},
                "spec": {"settings": settings},
                "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True",
                    "reason": "SettingsMatch", "message": "", "lastTransitionTime": "2026-12-05T00:00:00Z"}]},
            }))
            .expect("settings");
            (h.name_any(), Arc::new(object))
        })
        .collect()
}

/// Plans `edited` on configured, provisioned hosts whose settings objects ask for `settings`.
fn plan_firmware_edit(edited: &Value, settings: Value) -> Plan {
    let hosts = provisioned(&spec());
    let mut n = nodeset(edited);
    n.status = Some(status(&spec(), &hosts));
    let mut facts = facts(hosts.clone());
    facts.firmware = settings_objects(&hosts, settings);
    plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now())
}

fn turbo_off(s: &mut Value) {
    s["baremetalSetTemplate"]["firmwareSettings"] = json!({"ProcTurboMode": "Disabled"});
}

#[test]
fn a_bios_edit_hands_one_host_its_settings_under_max_unavailable_one_and_reruns_no_service() {
    let plan = plan_firmware_edit(&edited(turbo_off), json!({}));
    let handed: Vec<&str> = plan.firmware.writes.iter().map(|w| w.hostname.as_str()).collect();
    assert_eq!(handed, ["compute-0"]);
    assert!(plan.jobs.is_empty(), "a firmware edit is no configuration edit: {:?}", plan.rollout.batches);
    assert!(!plan.hosts["compute-0"].configured, "not configured until its firmware is settled");
    assert!(plan.hosts["compute-1"].firmware.stage == Some(super::firmware::Stage::Queued));
}

#[test]
fn a_bios_edit_and_a_configuration_edit_share_max_unavailable() {
    let both = edited(|s| {
        turbo_off(s);
        s["nodeTemplate"]["networks"][0]["mtu"] = json!(9000);
    });
    let plan = plan_firmware_edit(&both, json!({}));
    let mut out: BTreeSet<&str> = plan.firmware.writes.iter().map(|w| w.hostname.as_str()).collect();
    out.extend(plan.rollout.batches.iter().flat_map(|b| b.hosts.keys().map(String::as_str)));
    assert_eq!(out.len(), 1, "one host at a time, Job or firmware: {out:?}");
}

#[test]
fn a_host_whose_settings_are_on_their_way_runs_no_job_and_holds_the_only_slot() {
    let both = edited(|s| {
        turbo_off(s);
        s["nodeTemplate"]["networks"][0]["mtu"] = json!(9000);
    });
    // Handed over, not read yet: every object carries the settings at a generation unread.
    let hosts = provisioned(&spec());
    let mut n = nodeset(&both);
    n.status = Some(status(&spec(), &hosts));
    let mut facts = facts(hosts.clone());
    facts.firmware = settings_objects(&hosts, json!({"ProcTurboMode": "Disabled"}));
    let first = facts.firmware.get_mut("server-0").map(Arc::make_mut).expect("server-0");
    first.metadata.generation = Some(2);
    let plan = plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    // server-0 is in flight; the other two already say what is wanted and matched: settled.
    assert_eq!(plan.hosts["compute-0"].firmware.stage, Some(super::firmware::Stage::Written));
    assert!(plan.rollout.batches.is_empty(), "the only slot is taken: {:?}", plan.rollout.batches);
}

#[path = "token_tests.rs"]
mod tokens;
