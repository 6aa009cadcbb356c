//! The bundle's examples against its own CRDs and webhooks, as bundle validation asks: every
//! `alm-examples` object is admitted by a server-side dry run on a real apiserver, with no field
//! pruned. The install through OLM itself runs for real in `real::install` (`olm`: OLM's
//! operators on the real node, the bundle and catalog images in a loopback registry).

use crate::install_common::*;
use ferrometal_tests::operator_process::repo_root;
use ferrometal_tests::{ControlPlane, ports};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

fn bundle_objects() -> anyhow::Result<Vec<Value>> {
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("bundle/manifests"))? {
        let text = std::fs::read_to_string(entry?.path())?;
        objects.extend(serde_saphyr::from_multiple::<Value>(&text)?.into_iter().filter(|v| !v.is_null()));
    }
    Ok(objects)
}

#[tokio::test]
async fn every_alm_example_is_accepted_by_a_server_side_dry_run() -> anyhow::Result<()> {
    // Bundle validation's rule that examples are valid objects of their CRDs: here against the
    // bundle's CRDs on a real apiserver, with the operator's validating webhooks registered.
    let mut cp = ControlPlane::start().await?;
    let objects = bundle_objects()?;
    let crds: Vec<CustomResourceDefinition> = objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
        .map(|o| serde_json::from_value(o.clone()))
        .collect::<Result<_, _>>()?;
    cp.install_crds(&crds).await?;
    let ns = cp.namespace("olm-examples").await?;
    let port = ports::free_port()?;
    let mut config = operator::OperatorConfig::minimal("dry-run");
    config.webhook = Some(operator::testing::webhook::Config::new(
        ([127, 0, 0, 1], port).into(),
        operator::testing::webhook::Certificates::SelfManaged { secret_namespace: ns.clone() },
        Some(operator::testing::webhook::ClientConfig::Url(format!("https://127.0.0.1:{port}"))),
    ));
    let _operator = operator::Operator::start(cp.client(), config).await?;
    let csv = objects.iter().find(|o| kind_of(o) == "ClusterServiceVersion").cloned().expect("one CSV");
    let examples: Vec<Value> =
        serde_json::from_str(csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap_or("[]"))?;
    assert_eq!(examples.len(), operator::testing::install::bundle::csv::EXAMPLES.len());
    for example in &examples {
        let group_version = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
        let resource = ferrometal_tests::api_resource(group, version, kind_of(example));
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(cp.client(), &ns, &resource);
        let object: kube::api::DynamicObject = serde_json::from_value(example.clone())?;
        let params = kube::api::PostParams { dry_run: true, ..Default::default() };
        let stored =
            api.create(&params, &object).await.map_err(|e| anyhow::anyhow!("{} refused: {e}", kind_of(example)))?;
        // Kubernetes 1.20 prunes fields its schema does not know without a word: every field
        // of the example must come back.
        let stored = serde_json::to_value(stored)?;
        assert!(contains(&stored["spec"], &example["spec"]), "{} lost fields: {stored:#}", kind_of(example));
        assert!(api.get_opt(name_of(example)).await?.is_none(), "a dry run stores nothing");
    }
    cp.ensure_running()?;
    Ok(())
}

/// True when `outer` has every field of `inner`, with the same values (defaults may be added).
fn contains(outer: &Value, inner: &Value) -> bool {
    match (outer, inner) {
        (Value::Object(o), Value::Object(i)) => i.iter().all(|(k, v)| o.get(k).is_some_and(|ov| contains(ov, v))),
        (Value::Array(o), Value::Array(i)) => o.len() == i.len() && o.iter().zip(i).all(|(a, b)| contains(a, b)),
        _ => outer == inner,
    }
}
