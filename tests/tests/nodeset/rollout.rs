//! Rollouts of day-2 configuration: Manual waits for its token, maxUnavailable is never
//! exceeded, a failed Job stops the rollout and a fixed service resumes it, old Jobs go once
//! their outcome is in status, unknown services, and preProvisioned NodeSets.

use crate::host_common::secs;
use crate::nodeset_common::{NodeSetEnv, Setup, condition, condition_is, names, processed, settle};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

fn mtu(mtu: u16) -> serde_json::Value {
    json!({"nodeTemplate": {"networks": [{"name": "ctlplane", "interface": "eno1", "mtu": mtu, "gateway": "192.0.2.1"}]}})
}

fn rollout_phase(n: &crds::nodeset::NodeSet) -> Option<crds::nodeset::RolloutPhase> {
    n.status.as_ref()?.rollout.as_ref()?.phase
}

#[tokio::test]
async fn a_manual_rollout_waits_for_its_token_and_an_unknown_service_is_a_condition() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-manual", Setup::default()).await?;
    env.free_hosts(&names("server", 2), json!({})).await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let jobs = env.record_jobs().await?;
    let mut spec = env.spec(&["compute-0", "compute-1"], &["configure-os"]);
    spec["rollout"] = json!({"strategy": "Manual"});
    env.create_nodeset("computes", spec).await?;
    env.wait_ready("computes", secs(300)).await?;
    assert_eq!(jobs.runs_by_service()["configure-os"], 2, "new hosts are brought up without a token");

    let edited = env.patch_spec("computes", mtu(9000)).await?;
    let pending = env
        .wait_nodeset("computes", "the rollout pending", secs(60), |n| {
            processed(n) && n.metadata.generation == edited.metadata.generation
        })
        .await?;
    let ready = condition(&pending, "Ready").cloned().expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "RolloutPending"), "{ready:?}");
    assert!(condition_is(&pending, "Progressing", "False"));
    assert_eq!(rollout_phase(&pending), Some(crds::nodeset::RolloutPhase::Pending));
    settle(&env).await?;
    assert_eq!(jobs.runs_by_service()["configure-os"], 2, "nothing runs before the token");

    env.patch_spec("computes", json!({"rollout": {"token": "2026-08-01"}})).await?;
    let done = env.wait_ready("computes", secs(120)).await?;
    assert_eq!(jobs.runs_by_service()["configure-os"], 4, "the token rolled the edit out to both hosts");
    let rollout = done.status.as_ref().and_then(|s| s.rollout.clone()).unwrap_or_default();
    assert_eq!(rollout.acknowledged_token.as_deref(), Some("2026-08-01"));
    assert_eq!(rollout.config_hash, done.status.as_ref().and_then(|s| s.config_hash.clone()));

    // A service that does not exist is a condition, not a crash; once it exists, its spec is
    // what a token approves (on a Manual NodeSet): the next token runs it.
    env.patch_spec("computes", json!({"services": ["configure-os", "not-yet"], "rollout": {"token": "2"}})).await?;
    let degraded = env
        .wait_nodeset("computes", "degraded", secs(60), |n| processed(n) && condition_is(n, "Degraded", "True"))
        .await?;
    let cause = condition(&degraded, "Degraded").cloned().expect("Degraded");
    assert_eq!(cause.reason, "ServiceNotFound");
    assert!(cause.message.contains("not-yet"), "{}", cause.message);
    env.service("not-yet", false, "not-yet:1").await?;
    env.wait_nodeset("computes", "pending", secs(60), |n| {
        rollout_phase(n) == Some(crds::nodeset::RolloutPhase::Pending)
    })
    .await?;
    assert_eq!(jobs.runs_by_service().get("not-yet"), None, "a spec nobody approved runs nowhere");
    env.patch_spec("computes", json!({"rollout": {"token": "3"}})).await?;
    env.wait_ready("computes", secs(120)).await?;
    assert_eq!(jobs.runs_by_service().get("not-yet"), Some(&2));
    Ok(())
}

#[tokio::test]
async fn max_unavailable_is_never_exceeded_and_old_jobs_go_once_recorded() -> anyhow::Result<()> {
    let mut setup = Setup::default();
    setup.nodeset.job_history = 1;
    let env = NodeSetEnv::start("nset-batch", setup).await?;
    let hosts = ["compute-0", "compute-1", "compute-2", "compute-3"];
    env.free_hosts(&names("server", 4), json!({})).await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let mut spec = env.spec(&hosts, &["configure-os"]);
    spec["rollout"] = json!({"maxUnavailable": 2});
    env.create_nodeset("computes", spec).await?;
    env.wait_ready("computes", secs(300)).await?;
    let _hold = env.hold_service_pods(Duration::from_secs(2));

    for (max_unavailable, limit) in [(json!(2), 2), (json!("25%"), 1)] {
        let jobs = env.record_jobs().await?;
        let mut edit = mtu(if limit == 2 { 9000 } else { 1500 });
        edit["rollout"] = json!({"maxUnavailable": max_unavailable});
        env.patch_spec("computes", edit).await?;
        env.wait_nodeset("computes", "the edit rolled out", secs(180), |n| {
            processed(n)
                && condition_is(n, "Ready", "True")
                && rollout_phase(n) == Some(crds::nodeset::RolloutPhase::Complete)
        })
        .await?;
        let seen = jobs.max_running_hosts();
        println!("maxUnavailable {max_unavailable}: at most {seen} hosts in running Jobs at once");
        assert_eq!(
            seen,
            limit,
            "never more than {limit} hosts unavailable, and that many when it may: {:?}",
            jobs.seen()
        );
        assert_eq!(jobs.runs_by_service()["configure-os"], 4);
    }

    // One finished Job kept; the outcome of every other is in status.
    let remaining = crate::nodeset_common::wait_for_jobs(&env, 1).await?;
    let nodeset = env.nodesets.get("computes").await?;
    println!("service Jobs left: {remaining:?}");
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(env.t.env.client(), env.ns());
    let inventories = secrets.list(&kube::api::ListParams::default().labels(crds::nodeset::SERVICE_LABEL)).await?;
    let inventory_names: Vec<String> = inventories.items.iter().filter_map(|s| s.metadata.name.clone()).collect();
    assert_eq!(inventory_names, remaining, "each inventory Secret goes with its Job");
    let selector = format!("app.kubernetes.io/component=nodeset-record,{}=computes", crds::nodeset::NODESET_LABEL);
    let records: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(env.t.env.client(), env.ns());
    let recorded = records.list(&kube::api::ListParams::default().labels(&selector)).await?;
    let ran: serde_json::Map<String, serde_json::Value> = recorded
        .items
        .iter()
        .filter_map(|r| r.data.as_ref().and_then(|d| d.get("servicesCompleted")))
        .flat_map(|text| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).unwrap_or_default())
        .collect();
    for (host, status) in nodeset.status.and_then(|s| s.hosts).unwrap_or_default() {
        assert_eq!(status.deployed_config_hash, status.desired_config_hash, "{host}");
        assert!(status.services_completed.is_none(), "{host}: status keeps no per-service rows");
        let completed = ran[&host]["completed"].as_array().cloned().unwrap_or_default();
        assert!(
            completed.iter().any(|s| s["name"] == "configure-os"),
            "{host}: the record says what ran: {completed:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_failed_job_degrades_quoting_the_job_stops_the_rollout_and_a_fixed_service_resumes_it() -> anyhow::Result<()>
{
    let env = NodeSetEnv::start("nset-fail", Setup::default()).await?;
    let machines = names("server", 2);
    env.free_hosts(&machines, json!({})).await?;
    env.fail_image("configure-network:broken", "ip: invalid MTU 9000 on eno1");
    env.service_with("configure-network", false, json!({"image": "configure-network:1", "backoffLimit": 0})).await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let jobs = env.record_jobs().await?;
    // Two configured hosts, one at a time: an update reaches the second host only after the
    // first, so a failure on the first can be seen to stop it.
    let mut spec = env.spec(&["compute-0", "compute-1"], &["configure-network", "configure-os"]);
    spec["rollout"] = json!({"maxUnavailable": 1});
    env.create_nodeset("computes", spec).await?;
    env.wait_ready("computes", secs(180)).await?;
    let before = jobs.runs_by_service();

    patch_image(&env, "configure-network", "configure-network:broken").await?;
    let failed = env
        .wait_nodeset("computes", "degraded by the Job", secs(300), |n| {
            condition(n, "Degraded").is_some_and(|c| c.status == "True" && c.reason == "JobFailed")
        })
        .await?;
    let degraded = condition(&failed, "Degraded").cloned().expect("Degraded");
    let broken: Vec<(String, Vec<String>)> = jobs
        .seen()
        .into_iter()
        .filter(|(_, j)| j.image == "configure-network:broken")
        .map(|(name, j)| (name, j.hosts))
        .collect();
    let failed_job = broken.iter().map(|(name, _)| name).find(|name| degraded.message.contains(name.as_str())).cloned();
    let failed_job = failed_job.unwrap_or_else(|| panic!("the condition quotes a Job: {}", degraded.message));
    assert!(degraded.message.contains("invalid MTU 9000"), "and its container's failure: {}", degraded.message);
    assert_eq!(rollout_phase(&failed), Some(crds::nodeset::RolloutPhase::Failed));
    // Published right after the status write.
    env.t.wait_events("computes", &["RolloutFailed"]).await?;
    settle(&env).await?;
    let broken_hosts: Vec<String> =
        jobs.seen().into_values().filter(|j| j.image == "configure-network:broken").flat_map(|j| j.hosts).collect();
    assert_eq!(broken_hosts.len(), 1, "the rollout stopped at the first host's failure: {:?}", jobs.seen());
    assert_eq!(jobs.runs_by_service(), before_with(&before, "configure-network", 1), "and nothing else ran");
    assert!(env.jobs.get_opt(&failed_job).await?.is_some(), "nothing is deleted");
    for machine in &machines {
        assert_eq!(crate::host_common::state_of(&env.t.hosts.get(machine).await?), "provisioned");
    }

    // Fixing the service (its spec hash changes) resumes the rollout, on both hosts.
    patch_image(&env, "configure-network", "configure-network:2").await?;
    env.wait_ready("computes", secs(120)).await?;
    let mut fixed: Vec<String> =
        jobs.seen().into_values().filter(|j| j.image == "configure-network:2").flat_map(|j| j.hosts).collect();
    fixed.sort();
    assert_eq!(fixed, ["compute-0", "compute-1"], "the fixed service ran on both hosts: {:?}", jobs.seen());
    Ok(())
}

/// Sets a service's image.
async fn patch_image(env: &NodeSetEnv, service: &str, image: &str) -> anyhow::Result<()> {
    let patch = json!({"spec": {"job": {"image": image}}});
    env.services.patch(service, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(patch)).await?;
    Ok(())
}

/// `runs` with `more` runs of `service` added.
fn before_with(
    runs: &std::collections::BTreeMap<String, usize>,
    service: &str,
    more: usize,
) -> std::collections::BTreeMap<String, usize> {
    let mut out = runs.clone();
    *out.entry(service.to_string()).or_default() += more;
    out
}

#[tokio::test]
async fn a_preprovisioned_nodeset_only_runs_services_addressed_through_its_management_network() -> anyhow::Result<()> {
    let env = NodeSetEnv::start("nset-prepro", Setup::default()).await?;
    env.service("configure-os", false, "configure-os:1").await?;
    let jobs = env.record_jobs().await?;
    let mut spec = env.spec(&["edge-0", "edge-1"], &["configure-os"]);
    spec.as_object_mut().map(|s| s.remove("baremetalSetTemplate"));
    spec["preProvisioned"] = json!(true);
    env.create_nodeset("edge", spec).await?;
    let ready = env.wait_ready("edge", secs(120)).await?;
    assert_eq!(ready.status.as_ref().and_then(|s| s.claimed_hosts), Some(0), "no BareMetalHost");
    assert!(condition(&ready, "Provisioned").is_none(), "nothing to provision");
    assert_eq!(jobs.runs_by_service()["configure-os"], 2);
    let name = jobs.seen().into_keys().next().expect("a Job ran");
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(env.t.env.client(), env.ns());
    let secret = secrets.get(&name).await?;
    let inventory: serde_json::Value =
        serde_json::from_slice(&secret.data.unwrap_or_default()[operator::testing::nodeset::INVENTORY_KEY].0)?;
    assert_eq!(inventory["hosts"]["edge-0"]["managementAddress"], "192.0.2.10");
    assert_eq!(inventory["hosts"]["edge-1"]["managementAddress"], "192.0.2.11");
    assert!(inventory["hosts"]["edge-0"].get("bmh").is_none());
    assert_eq!(env.t.hosts.list(&Default::default()).await?.items.len(), 0);
    Ok(())
}

/// Waits until the NodeSet's desired configuration moved from `before` and rolled out.
async fn rolled_out_from(env: &NodeSetEnv, before: &crds::nodeset::NodeSet) -> anyhow::Result<crds::nodeset::NodeSet> {
    let old = before.status.as_ref().and_then(|s| s.config_hash.clone());
    env.wait_nodeset("computes", "the new content rolled out", secs(120), |n| {
        let status = n.status.as_ref();
        status.and_then(|s| s.config_hash.clone()) != old
            && condition_is(n, "Ready", "True")
            && rollout_phase(n) == Some(crds::nodeset::RolloutPhase::Complete)
            && status.and_then(|s| s.hosts.as_ref()).is_some_and(|hosts| {
                hosts
                    .values()
                    .all(|h| h.deployed_config_hash.is_some() && h.deployed_config_hash == h.desired_config_hash)
            })
    })
    .await
}

#[tokio::test]
async fn editing_a_secret_a_nodeset_reads_reruns_its_services_in_place_once_and_never_a_run_once_one()
-> anyhow::Result<()> {
    const PASSWORDS: [&str; 2] = ["SENTINEL-db-1-4c7e2a9f", "SENTINEL-db-2-8b1d5e3c"];
    const VARIABLES: [&str; 2] = ["SENTINEL-var-1-2f9a6c1d", "SENTINEL-var-2-7e3b0d5a"];
    let env = NodeSetEnv::start("nset-sources", Setup::default()).await?;
    env.free_hosts(&names("server", 2), json!({})).await?;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(env.t.env.client(), env.ns());
    let secret = |name: &str, key: &str, value: &str| -> anyhow::Result<k8s_openapi::api::core::v1::Secret> {
        Ok(serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name}, "stringData": {key: value}}))?)
    };
    let set = |name: &'static str, key: &'static str, value: &'static str| {
        let secrets = secrets.clone();
        async move {
            let patch = json!({"stringData": {key: value}});
            secrets.patch(name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(patch)).await
        }
    };
    secrets.create(&Default::default(), &secret("db", "password", PASSWORDS[0])?).await?;
    secrets.create(&Default::default(), &secret("vars", "db_password", VARIABLES[0])?).await?;
    let reads_db = json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]);
    env.service_with("bootstrap", true, json!({"image": "bootstrap:1", "envFrom": [{"secretRef": {"name": "db"}}]}))
        .await?;
    env.service_with("configure-os", false, json!({"image": "configure-os:1", "env": reads_db})).await?;
    let jobs = env.record_jobs().await?;
    let mut spec = env.spec(&["compute-0", "compute-1"], &["bootstrap", "configure-os"]);
    spec["nodeTemplate"]["variablesFrom"] = json!([{"secretRef": {"name": "vars"}}]);
    env.create_nodeset("computes", spec).await?;
    let first = env.wait_ready("computes", secs(300)).await?;
    assert_eq!(jobs.runs_by_service(), [("bootstrap".into(), 2), ("configure-os".into(), 2)].into());
    let provisioning = env.provision_state_requests()?;

    // The Secret a service's env reads: that service reruns on every host, once.
    set("db", "password", PASSWORDS[1]).await?;
    let second = rolled_out_from(&env, &first).await?;
    settle(&env).await?;
    assert_eq!(jobs.runs_by_service(), [("bootstrap".into(), 2), ("configure-os".into(), 4)].into());
    assert_eq!(jobs.runs("configure-os", "compute-0"), 2);
    assert_eq!(jobs.runs("configure-os", "compute-1"), 2);

    // The Secret variablesFrom reads: the hosts' configuration moves; the new value is in the
    // inventory of the rerun.
    set("vars", "db_password", VARIABLES[1]).await?;
    let third = rolled_out_from(&env, &second).await?;
    settle(&env).await?;
    assert_eq!(jobs.runs_by_service(), [("bootstrap".into(), 2), ("configure-os".into(), 6)].into());
    let mut given = BTreeMap::new();
    for job in env.service_jobs().await? {
        let data = secrets.get(&job.metadata.name.unwrap_or_default()).await?.data.unwrap_or_default();
        let inventory: serde_json::Value = serde_json::from_slice(&data[operator::testing::nodeset::INVENTORY_KEY].0)?;
        for (host, entry) in inventory["hosts"].as_object().into_iter().flatten() {
            assert_eq!(entry["variables"]["timezone"], "UTC", "spec variables and read ones together");
            given.entry(host.clone()).or_insert_with(Vec::new).push(entry["variables"]["db_password"].clone());
        }
    }
    for host in ["compute-0", "compute-1"] {
        assert!(given[host].contains(&json!(VARIABLES[1])), "{host}'s rerun got the new value: {given:?}");
    }
    assert_eq!(env.provision_state_requests()?, provisioning, "in place: no machine reprovisioned");

    // No value in the NodeSet's status or any Event of the namespace.
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = kube::Api::namespaced(env.t.env.client(), env.ns());
    let mut seen = serde_json::to_string(&third.status)?;
    seen.push_str(&serde_json::to_string(&events.list(&Default::default()).await?.items)?);
    for value in PASSWORDS.iter().chain(&VARIABLES) {
        assert!(!seen.contains(value), "{value} leaked into status or Events");
    }

    // The services' own status says they may run.
    let service = env.services.get("configure-os").await?;
    let status = service.status.clone().unwrap_or_default();
    assert_eq!(status.observed_generation, service.metadata.generation);
    let ready = status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("True", "Valid"));

    // A source that is not there and not optional blocks, named, never quoted.
    let edited = env
        .patch_spec(
            "computes",
            json!({"nodeTemplate": {"variablesFrom": [{"secretRef": {"name": "vars"}},
            {"secretRef": {"name": "not-yet"}}]}}),
        )
        .await?;
    let blocked = env
        .wait_nodeset("computes", "blocked on the missing Secret", secs(60), |n| {
            processed(n) && n.metadata.generation == edited.metadata.generation && condition_is(n, "Degraded", "True")
        })
        .await?;
    let degraded = condition(&blocked, "Degraded").cloned().expect("Degraded");
    assert_eq!(degraded.reason, "VariablesSourceInvalid");
    assert!(degraded.message.contains("spec.nodeTemplate.variablesFrom[1]: Secret not-yet"), "{}", degraded.message);
    secrets.create(&Default::default(), &secret("not-yet", "extra", "x")?).await?;
    rolled_out_from(&env, &third).await?;
    Ok(())
}
