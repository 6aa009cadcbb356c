//! The exporter's ServiceMonitor end to end, with the operator running as a ServiceAccount
//! that has exactly the roles the install manifests grant: without the Prometheus operator's
//! CRD the Ironic is Ready and ServiceMonitorReady says the API is missing; the CRD installed
//! later is discovered (the cache's answer goes stale) and the ServiceMonitor is created;
//! `disableServiceMonitor` and disabling the exporter each remove it; without the permission
//! the condition names it.

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use ferrometal_tests::wait;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use operator::testing::install::rbac::{Feature, render};
use operator::testing::ironic::build::service_monitor::api_resource;
use operator::testing::ironic::monitor::SERVICE_MONITOR_READY;
use serde_json::{Value, json};
use std::time::Duration;

/// How long an answer of API discovery is trusted here (five minutes by default).
const DISCOVERY_REFRESH: Duration = Duration::from_secs(2);

fn service_monitor_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_saphyr::from_str(include_str!("../fixtures/servicemonitors.monitoring.coreos.com.yaml"))?)
}

/// A ServiceAccount `ferrometal` in the test namespace with the roles the manifests grant by
/// default (namespaced layout: Roles in the watched namespace), and a client with its token.
async fn shipped_identity(env: &Env) -> anyhow::Result<kube::Client> {
    let client = env.client();
    let account = ServiceAccount {
        metadata: ObjectMeta { name: Some("ferrometal".into()), ..Default::default() },
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(client.clone(), &env.ns).create(&PostParams::default(), &account).await?;
    let grantee = render::Grantee {
        namespace: env.ns.clone(),
        service_account: "ferrometal".into(),
        watch_namespaces: vec![env.ns.clone()],
        ironic_namespaces: Default::default(),
        labels: Default::default(),
    };
    let post = PostParams::default();
    for object in render::objects(&grantee, Feature::Always) {
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or(&env.ns).to_string();
        match object["kind"].as_str().unwrap_or_default() {
            "Role" => {
                let role: Role = serde_json::from_value(object)?;
                Api::<Role>::namespaced(client.clone(), &namespace).create(&post, &role).await?;
            }
            "RoleBinding" => {
                let binding: RoleBinding = serde_json::from_value(object)?;
                Api::<RoleBinding>::namespaced(client.clone(), &namespace).create(&post, &binding).await?;
            }
            "ClusterRole" => {
                let role: ClusterRole = serde_json::from_value(object)?;
                Api::<ClusterRole>::all(client.clone()).create(&post, &role).await?;
            }
            "ClusterRoleBinding" => {
                let binding: ClusterRoleBinding = serde_json::from_value(object)?;
                Api::<ClusterRoleBinding>::all(client.clone()).create(&post, &binding).await?;
            }
            other => anyhow::bail!("unexpected RBAC kind {other}"),
        }
    }
    let kubeconfig = env.cp.service_account_kubeconfig(&env.ns, "ferrometal").await?;
    ferrometal_tests::control_plane::client_from_kubeconfig(&kubeconfig).await
}

fn monitors(env: &Env) -> Api<DynamicObject> {
    Api::namespaced_with(env.client(), &env.ns, &api_resource())
}

async fn patch_exporter(env: &Env, exporter: Value) -> anyhow::Result<()> {
    let patch = json!({"spec": {"prometheusExporter": exporter}});
    ironics(env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

async fn wait_monitor_gone(env: &Env, why: &str) -> anyhow::Result<()> {
    wait::until(why, STEP, POLL, || async {
        monitors(env).get_opt("ironic-metrics").await.ok().flatten().is_none().then_some(())
    })
    .await?;
    Ok(())
}

async fn wait_without_condition(env: &Env) -> anyhow::Result<()> {
    wait_for(env, "ironic", "ServiceMonitorReady to be gone", STEP, |i| {
        condition_of(i, SERVICE_MONITOR_READY).is_none()
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn the_service_monitor_follows_the_crd_and_the_spec_with_the_shipped_permissions() -> anyhow::Result<()> {
    let env = Env::start("ironic-smon").await?;
    let client = shipped_identity(&env).await?;
    let mut config = env.operator_config();
    config.ironic =
        Some(operator::testing::ironic::Config { api_discovery_refresh: DISCOVERY_REFRESH, ..ironic_config() });
    let _operator = operator::Operator::start(client, config).await?;
    create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"prometheusExporter": {"enabled": true}}}),
    )
    .await?;

    // No CRD: Ready all the same (the exporter runs), and the condition says why there is no
    // ServiceMonitor, with a Warning Event.
    let ironic = wait_condition(&env, "ironic", SERVICE_MONITOR_READY, "False", "ServiceMonitorCRDMissing").await?;
    let missing = condition_of(&ironic, SERVICE_MONITOR_READY).expect("ServiceMonitorReady");
    assert!(missing.message.contains("monitoring.coreos.com/v1 servicemonitors"), "{}", missing.message);
    wait_ready(&env, "ironic", "38.0").await?;
    let service = api::<Service>(&env).get("ironic").await?;
    let ports = service.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
    assert!(ports.iter().any(|p| p.name.as_deref() == Some("metrics") && p.port == 9608), "{ports:?}");
    wait_event(&env, "ironic", "ServiceMonitorCRDMissing").await?;

    // The CRD installed later: discovered once the cached answer is stale, without a change
    // to the Ironic.
    env.cp.install_crds(&[service_monitor_crd()?]).await?;
    let ironic = wait_condition(&env, "ironic", SERVICE_MONITOR_READY, "True", "ServiceMonitorCreated").await?;
    assert_eq!(condition_of(&ironic, "Ready").map(|c| c.status).as_deref(), Some("True"));
    let monitor = monitors(&env).get("ironic-metrics").await?;
    let owner = monitor.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.iter().map(|o| (o.kind.as_str(), o.controller)).collect::<Vec<_>>(), [("Ironic", Some(true))]);
    let spec = &monitor.data["spec"];
    assert_eq!(spec["endpoints"], json!([{"port": "metrics", "scheme": "http", "path": "/metrics"}]));
    // The selector selects the Ironic's Service, the one with the metrics port.
    let service_labels = service.metadata.labels.clone().unwrap_or_default();
    let selector = spec["selector"]["matchLabels"].as_object().cloned().unwrap_or_default();
    assert!(!selector.is_empty());
    for (key, value) in &selector {
        assert_eq!(service_labels.get(key).map(String::as_str), value.as_str(), "{key}");
    }
    assert_eq!(
        monitor.metadata.labels.as_ref().and_then(|l| l.get("ironic.metal3.io/ironic")).map(String::as_str),
        Some("ironic")
    );

    // disableServiceMonitor removes it, and the condition with it.
    patch_exporter(&env, json!({"enabled": true, "disableServiceMonitor": true})).await?;
    wait_monitor_gone(&env, "the ServiceMonitor to be removed for disableServiceMonitor").await?;
    wait_without_condition(&env).await?;
    wait_ready(&env, "ironic", "38.0").await?;

    // Wanted again: made again.
    patch_exporter(&env, json!({"enabled": true, "disableServiceMonitor": false})).await?;
    wait_condition(&env, "ironic", SERVICE_MONITOR_READY, "True", "ServiceMonitorCreated").await?;
    assert!(monitors(&env).get_opt("ironic-metrics").await?.is_some());

    // The exporter disabled: removed as well.
    patch_exporter(&env, json!({"enabled": false, "disableServiceMonitor": false})).await?;
    wait_monitor_gone(&env, "the ServiceMonitor to be removed with the exporter").await?;
    wait_without_condition(&env).await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    assert!(condition_of(&ironic, SERVICE_MONITOR_READY).is_none());

    // Without the permission (an administrator's narrower role): a condition that names it,
    // and the Ironic stays Ready.
    let roles = Api::<Role>::namespaced(env.client(), &env.ns);
    let mut role = roles.get("ferrometal-ironic-workloads").await?;
    let rules = role.rules.take().unwrap_or_default();
    let before = rules.len();
    let rules: Vec<_> = rules
        .into_iter()
        .filter(|r| !r.resources.iter().flatten().any(|resource| resource == "servicemonitors"))
        .collect();
    assert_eq!(rules.len() + 1, before, "the shipped role grants servicemonitors in one rule");
    role.rules = Some(rules);
    roles.replace("ferrometal-ironic-workloads", &PostParams::default(), &role).await?;
    patch_exporter(&env, json!({"enabled": true, "disableServiceMonitor": false})).await?;
    let ironic = wait_condition(&env, "ironic", SERVICE_MONITOR_READY, "False", "Forbidden").await?;
    let forbidden = condition_of(&ironic, SERVICE_MONITOR_READY).expect("ServiceMonitorReady");
    // The first thing it may not do is read it by name (the ledger writes only over its own).
    assert!(forbidden.message.contains("may not read ServiceMonitor ironic-metrics"), "{}", forbidden.message);
    // The exporter comes back, so the pods roll first.
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let still = condition_of(&ironic, SERVICE_MONITOR_READY).map(|c| (c.status, c.reason));
    assert_eq!(still, Some(("False".to_string(), "Forbidden".to_string())));
    Ok(())
}
