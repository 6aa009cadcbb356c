//! Self-tests of the test environment: each proves one piece of the harness
//! against the real servers, so that a failure elsewhere is never the
//! environment's.

use ferrometal_tests::control_plane::TEST_FIELD_MANAGER;
use ferrometal_tests::ironic::{IronicAuth, IronicConfig, IronicDatabase, IronicServer};
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig};
use ferrometal_tests::sushy::{Sushy, SushyConfig};
use ferrometal_tests::{ControlPlane, PodFate, PodSimulator, wait};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "selftest.ferrometal.io", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
struct WidgetSpec {
    size: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
struct WidgetStatus {
    seen: bool,
}

#[tokio::test]
async fn a_crd_installs_and_server_side_apply_and_watch_work() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    cp.install_crds(&[Widget::crd()]).await?;
    let ns = cp.namespace("crd").await?;
    let widgets: Api<Widget> = Api::namespaced(cp.client(), &ns);

    let mut events = watcher::watcher(widgets.clone(), watcher::Config::default()).boxed();
    let params = PatchParams::apply(TEST_FIELD_MANAGER);
    let apply = json!({"apiVersion": "selftest.ferrometal.io/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 3}});
    widgets.patch("w", &params, &Patch::Apply(&apply)).await?;
    let status = json!({"apiVersion": "selftest.ferrometal.io/v1", "kind": "Widget", "status": {"seen": true}});
    widgets.patch_status("w", &params, &Patch::Apply(&status)).await?;

    let seen = tokio::time::timeout(20 * SECOND, async {
        while let Some(event) = events.next().await {
            if let Ok(watcher::Event::Apply(w) | watcher::Event::InitApply(w)) = event
                && w.status.as_ref().is_some_and(|s| s.seen)
            {
                return Some(w);
            }
        }
        None
    })
    .await?
    .expect("the watch ended before the status update arrived");
    assert_eq!(seen.spec.size, 3);
    let managers: Vec<String> = seen.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
    assert!(managers.iter().all(|m| m == TEST_FIELD_MANAGER), "field managers: {managers:?}");
    Ok(())
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "example.invalid/app:1"}]}}}})
}

#[tokio::test]
async fn a_deployment_becomes_available_through_the_pod_simulator() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let _sim = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("deploy").await?;
    let deployments: Api<Deployment> = Api::namespaced(cp.client(), &ns);
    deployments.patch("web", &PatchParams::apply(TEST_FIELD_MANAGER), &Patch::Apply(deployment("web", 2))).await?;

    let available = wait::until("2 available replicas", 60 * SECOND, 200 * Duration::from_millis(1), || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get("web").await.ok()?;
            let status = d.status?;
            (status.available_replicas == Some(2)).then_some(status)
        }
    })
    .await?;
    let condition = available.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Available");
    assert_eq!(condition.map(|c| c.status).as_deref(), Some("True"));
    Ok(())
}

#[tokio::test]
async fn a_recreate_rollout_replaces_pods_although_no_kubelet_confirms_deletion() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let _sim = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("recreate").await?;
    let deployments: Api<Deployment> = Api::namespaced(cp.client(), &ns);
    let params = PatchParams::apply(TEST_FIELD_MANAGER);
    let mut spec = deployment("app", 1);
    spec["spec"]["strategy"] = json!({"type": "Recreate"});
    deployments.patch("app", &params, &Patch::Apply(&spec)).await?;
    wait_rollout(&deployments, "app", 1).await?;
    spec["spec"]["template"]["spec"]["containers"][0]["image"] = json!("example.invalid/app:2");
    deployments.patch("app", &params, &Patch::Apply(&spec)).await?;
    wait_rollout(&deployments, "app", 2).await?;
    Ok(())
}

async fn wait_rollout(deployments: &Api<Deployment>, name: &str, generation: i64) -> anyhow::Result<()> {
    wait::until(&format!("rollout of generation {generation}"), 60 * SECOND, 200 * Duration::from_millis(1), || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get(name).await.ok()?;
            let s = d.status?;
            (s.observed_generation == Some(generation)
                && s.updated_replicas == Some(1)
                && s.available_replicas == Some(1)
                && s.replicas == Some(1))
            .then_some(())
        }
    })
    .await
}

#[tokio::test]
async fn daemonset_and_statefulset_pods_run_on_the_simulated_node() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let _sim = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("workloads").await?;
    let params = PatchParams::apply(TEST_FIELD_MANAGER);
    let pod_template = |app: &str| {
        json!({"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "main", "image": "example.invalid/app:1"}]}})
    };
    let daemonsets: Api<DaemonSet> = Api::namespaced(cp.client(), &ns);
    daemonsets
        .patch(
            "agent",
            &params,
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": pod_template("agent")}})),
        )
        .await?;
    let statefulsets: Api<StatefulSet> = Api::namespaced(cp.client(), &ns);
    statefulsets
        .patch(
            "db",
            &params,
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                "template": pod_template("db"),
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})),
        )
        .await?;
    wait::until("the DaemonSet's pod to be ready", 60 * SECOND, 200 * Duration::from_millis(1), || {
        let daemonsets = daemonsets.clone();
        async move { (daemonsets.get("agent").await.ok()?.status?.number_ready == 1).then_some(()) }
    })
    .await?;
    wait::until("the StatefulSet's pod to be ready", 60 * SECOND, 200 * Duration::from_millis(1), || {
        let statefulsets = statefulsets.clone();
        async move { (statefulsets.get("db").await.ok()?.status?.ready_replicas == Some(1)).then_some(()) }
    })
    .await?;
    Ok(())
}

fn job(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "example.invalid/job:1"}]}}}})
}

#[tokio::test]
async fn one_job_completes_and_another_fails() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let sim = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("jobs").await?;
    sim.set_job_fate(&ns, "bad", PodFate::Failed { exit_code: 3, message: "migration failed".into() });
    let jobs: Api<Job> = Api::namespaced(cp.client(), &ns);
    let params = PatchParams::apply(TEST_FIELD_MANAGER);
    jobs.patch("good", &params, &Patch::Apply(job("good"))).await?;
    jobs.patch("bad", &params, &Patch::Apply(job("bad"))).await?;

    let condition = |name: &'static str, wanted: &'static str| {
        let jobs = jobs.clone();
        async move {
            let job = jobs.get(name).await.ok()?;
            job.status?.conditions?.into_iter().find(|c| c.type_ == wanted && c.status == "True")
        }
    };
    wait::until("job good to complete", 60 * SECOND, 200 * Duration::from_millis(1), || condition("good", "Complete"))
        .await?;
    let failed =
        wait::until("job bad to fail", 60 * SECOND, 200 * Duration::from_millis(1), || condition("bad", "Failed"))
            .await?;
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert!(jobs.get("good").await?.status.and_then(|s| s.failed).unwrap_or(0) == 0);
    Ok(())
}

#[tokio::test]
async fn the_garbage_collector_deletes_an_owned_object() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let ns = cp.namespace("gc").await?;
    let maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let owner =
        maps.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "owner"}}))?).await?;
    let owned = json!({"metadata": {"name": "owned", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "owner", "uid": owner.uid(), "controller": true, "blockOwnerDeletion": true}]}});
    maps.create(&PostParams::default(), &serde_json::from_value(owned)?).await?;
    maps.delete("owner", &DeleteParams::background()).await?;
    wait::until("the owned ConfigMap to be collected", 60 * SECOND, 200 * Duration::from_millis(1), || {
        let maps = maps.clone();
        async move { maps.get_opt("owned").await.ok().and_then(|m| m.is_none().then_some(())) }
    })
    .await?;
    Ok(())
}

/// Puts `node` into `target` and waits until Ironic settles in `want`.
async fn provision(ironic: &IronicServer, node: &str, target: &str, want: &str) -> anyhow::Result<Value> {
    let client = ironic.http_client()?;
    let url = format!("{}/v1/nodes/{node}/states/provision", ironic.endpoint());
    let response = client.put(&url).json(&json!({"target": target})).send().await?;
    anyhow::ensure!(response.status().as_u16() == 202, "{target}: {}", response.text().await?);
    wait_node(ironic, node, want).await
}

async fn wait_node(ironic: &IronicServer, node: &str, want: &str) -> anyhow::Result<Value> {
    wait::until_ok(&format!("node {node} in {want}"), 120 * SECOND, 100 * Duration::from_millis(1), || async move {
        let node = ironic.get_json(&format!("/v1/nodes/{node}")).await?;
        if node["target_provision_state"].is_null() && node["provision_state"] == want {
            return Ok(Some(node));
        }
        if node["provision_state"].as_str().is_some_and(|s| s.ends_with("failed") || s == "error") {
            anyhow::bail!("node failed: {}", node["last_error"]);
        }
        Ok(None)
    })
    .await
}

#[tokio::test]
async fn ironic_takes_a_fake_hardware_node_from_enroll_to_active_and_back() -> anyhow::Result<()> {
    let ironic = IronicServer::start(IronicConfig::default()).await?;
    let client = ironic.http_client()?;
    let created: Value = client
        .post(format!("{}/v1/nodes", ironic.endpoint()))
        .json(&json!({"name": "fake-1", "driver": "fake-hardware"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    assert_eq!(created["provision_state"], "enroll");
    provision(&ironic, "fake-1", "manage", "manageable").await?;
    provision(&ironic, "fake-1", "provide", "available").await?;
    provision(&ironic, "fake-1", "active", "active").await?;
    let node = provision(&ironic, "fake-1", "deleted", "available").await?;
    assert!(node["last_error"].is_null());
    Ok(())
}

#[tokio::test]
async fn a_redfish_node_on_sushy_tools_powers_on_and_off_and_inspection_fills_its_cpu_count() -> anyhow::Result<()> {
    let (ironic, bmcs) = tokio::try_join!(
        IronicServer::start(IronicConfig::default()),
        Sushy::start(SushyConfig { systems: 1, cpus: 6, ..Default::default() })
    )?;
    let system = &bmcs.systems()[0];
    let client = ironic.http_client()?;
    client
        .post(format!("{}/v1/nodes", ironic.endpoint()))
        .json(&json!({"name": "rf-1", "driver": "redfish", "driver_info": {
            "redfish_address": bmcs.endpoint(), "redfish_system_id": bmcs.redfish_system_id(system),
            "redfish_username": "admin", "redfish_password": "password"}}))
        .send()
        .await?
        .error_for_status()?;
    provision(&ironic, "rf-1", "manage", "manageable").await?;

    for (target, redfish) in [("power on", "On"), ("power off", "Off")] {
        client
            .put(format!("{}/v1/nodes/rf-1/states/power", ironic.endpoint()))
            .json(&json!({"target": target}))
            .send()
            .await?
            .error_for_status()?;
        wait::until_ok(&format!("Ironic to report {target}"), 60 * SECOND, 200 * Duration::from_millis(1), || async {
            let node = ironic.get_json("/v1/nodes/rf-1").await?;
            Ok((node["power_state"] == target && node["target_power_state"].is_null()).then_some(()))
        })
        .await?;
        assert_eq!(bmcs.power_state(system).await?, redfish);
    }

    let node = provision(&ironic, "rf-1", "inspect", "manageable").await?;
    let inventory = ironic.get_json("/v1/nodes/rf-1/inventory").await?;
    assert_eq!(inventory["inventory"]["cpu"]["count"], 6, "inventory: {inventory}");
    assert_eq!(node["properties"]["memory_mb"], 8 * 1024);
    Ok(())
}

#[tokio::test]
async fn ironic_runs_on_mariadb_with_basic_auth_and_tls() -> anyhow::Result<()> {
    let db = MariaDb::start(MariaDbConfig::default()).await?;
    let url = db.ironic_database("ironic").await?;
    let ironic = IronicServer::start(IronicConfig {
        auth: IronicAuth::Basic { username: "ironic".into(), password: "s3cret".into() },
        database: IronicDatabase::MySql { url },
        tls: true,
        ..Default::default()
    })
    .await?;
    assert!(ironic.endpoint().starts_with("https://"));
    let anonymous = ironic.http_client()?.get(format!("{}/v1/nodes", ironic.endpoint())).send().await?;
    assert_eq!(anonymous.status().as_u16(), 401);
    let nodes = ironic.get_json("/v1/nodes").await?;
    assert_eq!(nodes["nodes"], json!([]));
    Ok(())
}

#[tokio::test]
async fn sushy_tools_requires_its_credentials_over_tls() -> anyhow::Result<()> {
    let bmcs = Sushy::start(SushyConfig {
        systems: 2,
        auth: Some(("admin".into(), "redfishpw".into())),
        tls: true,
        ..Default::default()
    })
    .await?;
    assert!(bmcs.endpoint().starts_with("https://"));
    let ca = reqwest::Certificate::from_pem(bmcs.ca_pem().expect("tls is on").as_bytes())?;
    let client = reqwest::Client::builder().tls_certs_only([ca]).build()?;
    let url = format!("{}{}", bmcs.endpoint(), bmcs.redfish_system_id(&bmcs.systems()[1]));
    assert_eq!(client.get(&url).send().await?.status().as_u16(), 401);
    assert_eq!(client.get(&url).basic_auth("admin", Some("wrong")).send().await?.status().as_u16(), 401);
    assert_eq!(bmcs.power_state(&bmcs.systems()[1]).await?, "Off");
    Ok(())
}

#[tokio::test]
async fn a_sqlx_connection_to_mariadb_runs_a_query() -> anyhow::Result<()> {
    use sqlx::Connection;
    let db = MariaDb::start(MariaDbConfig::default()).await?;
    let mut conn = sqlx::MySqlConnection::connect(&db.admin_url(None)).await?;
    let (answer, version): (i64, String) = sqlx::query_as("SELECT 6 * 7, VERSION()").fetch_one(&mut conn).await?;
    assert_eq!(answer, 42);
    assert!(version.contains("MariaDB"), "version: {version}");
    Ok(())
}

#[tokio::test]
async fn mariadb_offers_tls_with_its_test_ca() -> anyhow::Result<()> {
    use sqlx::ConnectOptions;
    use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
    let db = MariaDb::start(MariaDbConfig { tls: true, ..Default::default() }).await?;
    let ca = db.ca_pem().expect("tls is on").as_bytes().to_vec();
    let mut conn = db
        .admin_url(None)
        .parse::<MySqlConnectOptions>()?
        .ssl_mode(MySqlSslMode::VerifyCa)
        .ssl_ca_from_pem(ca)
        .connect()
        .await?;
    let (cipher,): (String,) = sqlx::query_as(
        "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'",
    )
    .fetch_one(&mut conn)
    .await?;
    assert!(!cipher.is_empty(), "the session is not encrypted");
    Ok(())
}
