//! What the Secrets and ConfigMaps a NodeSet reads do to a plan: `variablesFrom` values reach
//! the inventory only, and a content change of a source reruns what depends on it, in place,
//! by the rollout's rules (runOnce services never rerun).

use super::*;
use crate::nodeset::job::INVENTORY_KEY;
use crds::nodeset::sources::{SourceData, SourceRef, Sources};
use crds::nodeset::{ApprovedService, SERVICES_COMPLETED_ANNOTATION, host_config_hash_with};
use crds::nodesetservice::run_hash;

const SENTINEL: &str = "s3cr3t-sentinel";

fn db(password: &str) -> Sources {
    let data = SourceData { data: BTreeMap::from([("db_password".into(), password.into())]), binary: Vec::new() };
    Sources(BTreeMap::from([(SourceRef::secret("db"), data)]))
}

fn with_variables_from() -> Value {
    edited(|s| s["nodeTemplate"]["variablesFrom"] = json!([{"secretRef": {"name": "db"}}]))
}

/// Facts of `spec`'s hosts provisioned and every service completed with `read` as it is.
fn configured_with(spec: &Value, services: &Facts, read: &Sources) -> (NodeSet, Facts) {
    let mut n = nodeset(spec);
    let hosts: Vec<Arc<BareMetalHost>> = provisioned(spec)
        .into_iter()
        .map(|host| {
            let mut host = (*host).clone();
            let hostname = host.labels()[HOSTNAME_LABEL].clone();
            let section = n.spec.nodes.as_ref().and_then(|nodes| nodes.get(&hostname));
            let desired = host_config_hash_with(&hostname, n.spec.node_template.as_ref(), section, read);
            let completed: Vec<CompletedService> = ["bootstrap", "configure-network"]
                .iter()
                .map(|s| CompletedService {
                    name: s.to_string(),
                    config_hash: Some(desired.clone()),
                    service_hash: Some(run_hash(&services.services[*s].spec, read)),
                    completed_at: Some(now()),
                })
                .collect();
            let completions = serde_json::to_string(&completed).expect("json");
            host.metadata.annotations.get_or_insert_default().insert(SERVICES_COMPLETED_ANNOTATION.into(), completions);
            Arc::new(host)
        })
        .collect();
    n.status = Some(status(spec, &hosts));
    let facts = Facts { hosts, sources: read.clone(), ..services.clone() };
    (n, facts)
}

fn runs(plan: &Plan) -> Vec<(String, Vec<String>)> {
    plan.rollout.batches.iter().map(|b| (b.service.clone(), b.hosts.keys().cloned().collect())).collect()
}

#[test]
fn a_variables_from_content_change_reruns_the_services_in_place_and_reaches_only_the_inventory() {
    let spec = with_variables_from();
    let (n, facts) = configured_with(&spec, &facts(Vec::new()), &db("one"));
    let settled = plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(runs(&settled), [], "configured with the content as it is: nothing to do");

    let changed = Facts { sources: db(SENTINEL), ..facts };
    let p = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(
        runs(&p),
        [("configure-network".to_string(), vec!["compute-0".to_string()])],
        "the content change is an edit: maxUnavailable (1) hosts at a time, the runOnce bootstrap not again"
    );
    assert!(p.writes.iter().all(|w| w.purpose == Purpose::Update), "no machine touched: {:?}", purposes(&p));
    let inventory = p.jobs[0].secret.data.as_ref().and_then(|d| d.get(INVENTORY_KEY)).expect("inventory");
    let inventory: Value = serde_json::from_slice(&inventory.0).expect("json");
    assert_eq!(inventory["hosts"]["compute-0"]["variables"]["db_password"], SENTINEL);
    assert_eq!(inventory["hosts"]["compute-0"]["variables"]["timezone"], "UTC");
    let mut seen = format!("{:?} {:?} {}", p.hosts, p.rollout, p.config_hash);
    seen.push_str(&serde_json::to_string(&p.jobs[0].job).expect("json"));
    assert!(!seen.contains(SENTINEL), "the value is in the inventory Secret only");
}

#[test]
fn a_content_change_of_what_a_services_job_reads_reruns_that_service_and_never_a_run_once_one() {
    let mut services = facts(Vec::new());
    for name in ["bootstrap", "configure-network"] {
        let mut service = service(name);
        service.spec.job.env_from =
            Some(vec![serde_json::from_value(json!({"secretRef": {"name": "db"}})).expect("envFrom")]);
        services.services.insert(name.into(), Arc::new(service));
    }
    let (n, facts) = configured_with(&spec(), &services, &db("one"));
    assert_eq!(runs(&plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now())), []);
    let changed = Facts { sources: db("two"), ..facts.clone() };
    let p = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(runs(&p), [("configure-network".to_string(), vec!["compute-0".to_string()])]);
    assert!(
        p.hosts
            .values()
            .all(|h| h.desired == plan(&n, &facts, &Findings::default(), 3, &now()).hosts[&h.config.hostname].desired),
        "the hosts' configuration did not change"
    );

    // Gone, and not optional: the service waits; nothing new runs.
    let gone = Facts { sources: Sources::default(), ..facts };
    let p = plan(&n, &gone, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(runs(&p), []);
}

#[test]
fn a_manual_nodeset_reruns_for_a_content_change_only_after_its_token() {
    let manual = edited(|s| {
        s["nodeTemplate"]["variablesFrom"] = json!([{"secretRef": {"name": "db"}}]);
        s["rollout"] = json!({"strategy": "Manual", "token": "1"});
    });
    let (mut n, facts) = configured_with(&manual, &facts(Vec::new()), &db("one"));
    // The token was acknowledged with the content as it was.
    let first = plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    if let Some(status) = n.status.as_mut() {
        status.rollout = Some(first.rollout_status.clone());
        for (name, host) in status.hosts.iter_mut().flatten() {
            host.approved_config_hash = first.hosts[name].approved.clone();
        }
    }
    let changed = Facts { sources: db("two"), ..facts };
    let p = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(runs(&p), [], "pending: the new content was not approved");
    assert_eq!(p.rollout.pending.len(), 3);
    n.spec.rollout.as_mut().expect("rollout").token = Some("2".into());
    let p = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
    assert_eq!(runs(&p), [("configure-network".to_string(), vec!["compute-0".to_string()])]);
}

#[test]
fn an_upgrade_reruns_no_service_that_reads_a_secret_and_holds_no_manual_nodeset() {
    let mut services = facts(Vec::new());
    let mut configure = service("configure-network");
    configure.spec.job.env_from =
        Some(vec![serde_json::from_value(json!({"secretRef": {"name": "db"}})).expect("envFrom")]);
    services.services.insert("configure-network".into(), Arc::new(configure.clone()));
    for strategy in ["Automatic", "Manual"] {
        // Completed and approved by an operator that recorded the spec hash alone.
        let spec = edited(|s| s["rollout"] = json!({"strategy": strategy, "token": "1"}));
        let (mut n, mut facts) = configured_with(&spec, &services, &db("one"));
        let old = |c: &CompletedService| CompletedService {
            service_hash: Some(service_hash(&services.services[&c.name].spec)),
            ..c.clone()
        };
        let hosts = facts.hosts.iter().map(|h| {
            let mut h = (**h).clone();
            let completed: Vec<CompletedService> =
                crate::nodeset::consumer::recorded_completions(&h).iter().map(old).collect();
            let annotations = h.metadata.annotations.get_or_insert_default();
            annotations.insert(SERVICES_COMPLETED_ANNOTATION.into(), serde_json::to_string(&completed).expect("json"));
            Arc::new(h)
        });
        facts.hosts = hosts.collect();
        let plain = |name: &str| ApprovedService {
            name: name.into(),
            service_hash: Some(service_hash(&services.services[name].spec)),
        };
        if let Some(status) = n.status.as_mut() {
            let rollout = status.rollout.get_or_insert_default();
            rollout.acknowledged_token = Some("1".into());
            rollout.approved_services = Some(vec![plain("bootstrap"), plain("configure-network")]);
            for (_, host) in status.hosts.iter_mut().flatten() {
                host.approved_config_hash = host.desired_config_hash.clone();
            }
        }
        let p = plan(&n, &facts, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
        assert_eq!(runs(&p), [], "{strategy}: nothing reruns");
        assert!(p.rollout.pending.is_empty(), "{strategy}: nothing waits for a token");
        let recorded = &p.hosts["compute-0"].completed;
        let hash = recorded.iter().find(|c| c.name == "configure-network").and_then(|c| c.service_hash.clone());
        assert_eq!(hash, Some(run_hash(&configure.spec, &db("one"))), "{strategy}: recorded with today's content");
        // Written back (the machines' annotations, status), the next content change reruns it.
        let written = facts.hosts.iter().map(|h| {
            let mut h = (**h).clone();
            let completed = &p.hosts[&h.labels()[HOSTNAME_LABEL]].completed;
            let annotations = h.metadata.annotations.get_or_insert_default();
            annotations.insert(SERVICES_COMPLETED_ANNOTATION.into(), serde_json::to_string(completed).expect("json"));
            Arc::new(h)
        });
        let changed = Facts { sources: db("two"), hosts: written.collect(), ..facts };
        n.status.get_or_insert_default().rollout = Some(p.rollout_status.clone());
        let p = plan(&n, &changed, &Findings::default(), DEFAULT_JOB_HISTORY, &now());
        assert_eq!(runs(&p).len(), usize::from(strategy == "Automatic"), "{strategy}");
    }
}
