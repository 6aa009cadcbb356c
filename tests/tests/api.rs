//! The API against the real apiserver: every CRD installs and becomes
//! Established, every sample is created and passes the webhooks, and the
//! apiserver prunes no field of any sample, spec or status.

mod common;

use common::Env;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::Value;

/// The apiserver's view of a kind, from our own CRDs.
fn api_resource(kind: &str) -> ApiResource {
    let crd = crds::all_crds().into_iter().find(|c| c.spec.names.kind == kind).expect("a CRD for every sample kind");
    ferrometal_tests::api_resource(&crd.spec.group, &crd.spec.versions[0].name, kind)
}

#[tokio::test]
async fn every_crd_installs_and_every_sample_round_trips_without_pruning() -> anyhow::Result<()> {
    let mut env = Env::start_api_only("api").await?;
    let mut config = env.operator_config();
    env.with_webhooks(&mut config)?;
    let _operator = env.start_operator(config).await?;
    let mut checked_status = Vec::new();

    for (index, sample) in crds::samples::ALL.iter().enumerate() {
        let input: Value = serde_saphyr::from_str(sample.yaml)?;
        let resource = api_resource(sample.kind);
        let mut object: DynamicObject = serde_json::from_value(input.clone())?;
        // A sample's namespace matters: same-namespace Secret references are checked.
        let namespace = object.metadata.namespace.clone().unwrap_or_else(|| env.ns.clone());
        env.cp.create_namespace(&namespace).await?;
        let api: Api<DynamicObject> = Api::namespaced_with(env.client(), &namespace, &resource);
        // Samples of one kind share names.
        let name = format!("{}-{index}", object.metadata.name.clone().expect("samples are named"));
        object.metadata.name = Some(name.clone());
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| anyhow::anyhow!("creating sample {}: {e}", sample.file))?;
        // Schema defaults may add fields (as in metal3's CRDs); none may be lost.
        assert_kept(&input["spec"], &created.data["spec"], &format!("{}: spec", sample.file));
        // The status fixtures (every status field of the kind) go onto the full samples.
        let fixture = status_fixture(sample.kind).filter(|_| sample.file.ends_with("-full.yaml"));
        let status = input.get("status").cloned().or(fixture.map(|f| f["status"].clone()));
        if let Some(status) = &status {
            let body = serde_json::json!({
                "apiVersion": input["apiVersion"], "kind": input["kind"], "status": status });
            let patched = api
                .patch_status(&name, &PatchParams::apply("ferrometal-tests").force(), &Patch::Apply(&body))
                .await
                .map_err(|e| anyhow::anyhow!("writing the status of sample {}: {e}", sample.file))?;
            assert_kept(status, &patched.data["status"], &format!("{}: status", sample.file));
            checked_status.push(sample.kind);
        }
    }
    for kind in ["Ironic", "BareMetalHost", "NodeSet", "NodeSetService"] {
        assert!(checked_status.contains(&kind), "a status of every kind was written: {kind} was not");
    }
    Ok(())
}

/// ironic-standalone-operator's own sample has an empty `spec:`, sent as null; others leave
/// the spec out. The apiserver prunes the null, defaults the spec to `{}`, the webhook passes
/// it, and the typed client reads it back.
#[tokio::test]
async fn an_ironic_without_a_spec_is_accepted_and_reads_back_with_an_empty_spec() -> anyhow::Result<()> {
    let env = Env::start_api_only("api-empty-spec").await?;
    let mut config = env.operator_config();
    env.with_webhooks(&mut config)?;
    let _operator = env.start_operator(config).await?;
    let resource = api_resource("Ironic");
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), &env.ns, &resource);
    let irso_sample = "apiVersion: ironic.metal3.io/v1alpha1\nkind: Ironic\nmetadata:\n  name: ironic\nspec:\n";
    let without_spec = "apiVersion: ironic.metal3.io/v1alpha1\nkind: Ironic\nmetadata:\n  name: bare\n";
    for text in [irso_sample, without_spec] {
        let input: Value = serde_saphyr::from_str(text)?;
        let object: DynamicObject = serde_json::from_value(input)?;
        let created = api.create(&PostParams::default(), &object).await.map_err(|e| anyhow::anyhow!("{text}: {e}"))?;
        assert_eq!(created.data["spec"], serde_json::json!({}), "{text}");
    }
    let typed: Api<crds::ironic::Ironic> = Api::namespaced(env.client(), &env.ns);
    for name in ["ironic", "bare"] {
        assert_eq!(typed.get(name).await?.spec, crds::ironic::IronicSpec::default(), "{name}");
    }
    Ok(())
}

/// The status fixture of `kind`: every status field of its schema (see `crds/tests/samples.rs`).
fn status_fixture(kind: &str) -> Option<Value> {
    let text = match kind {
        "Ironic" => include_str!("../../crds/tests/fixtures/ironic-status.yaml"),
        "BareMetalHost" => include_str!("../../crds/tests/fixtures/baremetalhost-status.yaml"),
        "NodeSet" => include_str!("../../crds/tests/fixtures/nodeset-status.yaml"),
        "NodeSetService" => include_str!("../../crds/tests/fixtures/nodesetservice-status.yaml"),
        _ => return None,
    };
    serde_saphyr::from_str(text).ok()
}

/// Every field of `sent` is in `stored` with the same value.
fn assert_kept(sent: &Value, stored: &Value, path: &str) {
    match (sent, stored) {
        (Value::Object(sent), Value::Object(stored)) => {
            for (key, value) in sent {
                let Some(kept) = stored.get(key) else { panic!("the apiserver pruned {path}.{key}") };
                assert_kept(value, kept, &format!("{path}.{key}"));
            }
        }
        (Value::Array(sent), Value::Array(stored)) => {
            assert_eq!(sent.len(), stored.len(), "the apiserver changed the length of {path}");
            for (i, (a, b)) in sent.iter().zip(stored).enumerate() {
                assert_kept(a, b, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(sent, stored, "the apiserver changed {path}"),
    }
}

/// The operator's Events against the real apiserver: a notice said again about the same object
/// (same severity and reason) is one Event whose series counts it and keeps its first note, as
/// kube-runtime's recorder did; another reason is an Event of its own; the apiserver accepts
/// both the Events and the series' patches.
#[tokio::test]
async fn an_event_said_again_is_one_event_with_a_series_and_another_reason_another() -> anyhow::Result<()> {
    use k8s_openapi::api::events::v1::Event;
    use operator::testing::kit::{Notice, Publisher};
    let env = Env::start_api_only("events").await?;
    let object = event_subject(&env).await?;
    let publisher = Publisher::new(env.client(), "ferrometal-test", "replica-0");
    for _ in 0..2 {
        publisher.one(&object, &Notice::warning("Failed", "no BMC")).await;
    }
    publisher.one(&object, &Notice::warning("Failed", "the BMC refused the credentials")).await;
    publisher.one(&object, &Notice::normal("Registered", "registered")).await;

    let events: Api<Event> = Api::namespaced(env.client(), &env.ns);
    let mut listed = events.list(&Default::default()).await?.items;
    listed.sort_by_key(|e| e.event_time.clone().map(|t| t.0));
    let said: Vec<_> = listed
        .iter()
        .map(|e| {
            (
                e.reason.clone().unwrap_or_default(),
                e.note.clone().unwrap_or_default(),
                e.series.as_ref().map(|s| s.count),
            )
        })
        .collect();
    let said: Vec<(&str, &str, Option<i32>)> = said.iter().map(|(r, n, c)| (r.as_str(), n.as_str(), *c)).collect();
    assert_eq!(said, [("Failed", "no BMC", Some(3)), ("Registered", "registered", None)]);
    let first = &listed[0];
    assert_eq!(first.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("about"));
    assert_eq!(first.reporting_controller.as_deref(), Some("ferrometal-test"));
    assert_eq!(first.type_.as_deref(), Some("Warning"));
    Ok(())
}

/// Eight publishes of one notice about one object at once are still one Event, whose series
/// counts all eight: publishes of one key take turns rather than each creating an Event or
/// patching the same count.
#[tokio::test]
async fn a_notice_said_eight_times_at_once_is_one_event_counting_eight() -> anyhow::Result<()> {
    use k8s_openapi::api::events::v1::Event;
    use operator::testing::kit::{Notice, Publisher};
    let env = Env::start_api_only("events-at-once").await?;
    let object = event_subject(&env).await?;
    let publisher = Publisher::new(env.client(), "ferrometal-test", "replica-0");
    let notice = Notice::warning("Failed", "no BMC");
    futures::future::join_all((0..8).map(|_| publisher.one(&object, &notice))).await;

    let listed = Api::<Event>::namespaced(env.client(), &env.ns).list(&Default::default()).await?.items;
    let counts: Vec<Option<i32>> = listed.iter().map(|e| e.series.as_ref().map(|s| s.count)).collect();
    assert_eq!(counts, [Some(8)], "one Event, its series at 8");
    Ok(())
}

/// A ConfigMap for Events to be about.
async fn event_subject(env: &Env) -> anyhow::Result<k8s_openapi::api::core::v1::ConfigMap> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let maps: Api<ConfigMap> = Api::namespaced(env.client(), &env.ns);
    let mut object = ConfigMap::default();
    object.metadata.name = Some("about".into());
    Ok(maps.create(&PostParams::default(), &object).await?)
}
