//! A namespace is a wall, on the real apiserver, with the operator watching every namespace
//! and no webhook installed (the controller alone keeps it): a NodeSet in one namespace never
//! claims, provisions or writes anything in another unless an operator admin opened that host
//! pool; no controller holds a full-object watch of Secrets or ConfigMaps; and no object
//! someone else made under a name the operator writes is overwritten.

mod common;
mod ironic_common;

use common::{Env, POLL, SECOND};
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::NodeSet;
use http::{Request, header::ACCEPT};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::client::Body;
use operator::OperatorConfig;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A free BareMetalHost `name` in `namespace`, `available` as baremetal-operator reports it.
async fn free_host(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<()> {
    let hosts: Api<BareMetalHost> = Api::namespaced(client.clone(), namespace);
    let host: BareMetalHost = serde_json::from_value(json!({
        "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": name},
        "spec": {"online": true, "bootMACAddress": "52:54:00:00:00:01",
                 "bmc": {"address": "redfish://127.0.0.1:1/redfish/v1/Systems/1", "credentialsName": "bmc"}},
    }))?;
    hosts.create(&PostParams::default(), &host).await?;
    let status = json!({"status": {"operationalStatus": "OK", "errorCount": 0, "errorMessage": "", "poweredOn": false,
                                   "provisioning": {"state": "available", "ID": ""}}});
    hosts.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(())
}

/// A NodeSet in `namespace` whose hosts are in `bmh_namespace`, with first-boot user data
/// named `user_data` (resolved, were it claimed, in `bmh_namespace`).
fn nodeset(namespace: &str, bmh_namespace: &str, user_data: &str) -> anyhow::Result<NodeSet> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": "computes", "namespace": namespace},
        "spec": {
            "baremetalSetTemplate": {"bmhNamespace": bmh_namespace, "image": {"url": "http://images/os.qcow2",
                "checksum": "a".repeat(64), "checksumType": "sha256"}, "userData": {"name": user_data}},
            "nodeTemplate": {"networks": [{"name": "ctlplane", "interface": "eno1"}]},
            "nodes": {"compute-0": {"networks": [{"name": "ctlplane", "addresses": ["192.0.2.10/24"]}]}},
        }
    }))?)
}

/// Waits until `check` holds of the NodeSet.
async fn wait_nodeset(api: &Api<NodeSet>, what: &str, check: impl Fn(&NodeSet) -> bool) -> anyhow::Result<NodeSet> {
    let deadline = Instant::now() + 60 * SECOND;
    loop {
        let current = api.get("computes").await?;
        if check(&current) {
            return Ok(current);
        }
        anyhow::ensure!(Instant::now() < deadline, "{what}: {:?}", current.status);
        tokio::time::sleep(POLL).await;
    }
}

fn degraded_reason(nodeset: &NodeSet) -> Option<String> {
    let conditions = nodeset.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == "Degraded" && c.status == "True").map(|c| c.reason.clone())
}

/// A cluster-wide operator running only the NodeSet controller, no webhook.
fn cluster_wide(pools: &str) -> anyhow::Result<OperatorConfig> {
    let mut config = OperatorConfig::minimal("tenancy");
    config.nodeset = Some(operator::testing::nodeset::Config::default());
    config.host_pools = pools.parse().map_err(anyhow::Error::msg)?;
    Ok(config)
}

#[tokio::test]
async fn a_nodeset_never_claims_another_namespaces_hosts_unless_an_admin_opened_that_pool() -> anyhow::Result<()> {
    let mut env = Env::start("team-a").await?;
    let team_a = env.ns.clone();
    let team_b = env.cp.namespace("team-b").await?;
    let client = env.client();
    free_host(&client, &team_b, "server-0").await?;
    // What Cluster API keeps a workload cluster's admin kubeconfig under.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &team_b);
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "workload-kubeconfig"}, "stringData": {"value": "admin"}}))?;
    secrets.create(&PostParams::default(), &secret).await?;
    let nodesets: Api<NodeSet> = Api::namespaced(client.clone(), &team_a);
    nodesets.create(&PostParams::default(), &nodeset(&team_a, &team_b, "workload-kubeconfig")?).await?;

    let operator = env.start_operator(cluster_wide("")?).await?;
    let refused =
        wait_nodeset(&nodesets, "refused", |n| degraded_reason(n).as_deref() == Some("HostPoolNotOpened")).await?;
    let message = refused.status.iter().flat_map(|s| s.conditions.iter().flatten()).map(|c| c.message.clone());
    assert!(message.clone().any(|m| m.contains(&format!("--nodeset-host-pools {team_a}={team_b}"))), "{refused:?}");
    // A few more reconciles' worth of time: still nothing written in team-b.
    tokio::time::sleep(3 * SECOND).await;
    let host = Api::<BareMetalHost>::namespaced(client.clone(), &team_b).get("server-0").await?;
    assert_eq!(host.spec.consumer_ref, None, "claimed across the wall");
    assert_eq!(host.spec.image, None, "provisioned across the wall");
    assert!(host.metadata.labels.unwrap_or_default().keys().all(|k| !k.starts_with("ferrometal.io/")));
    let secrets_now = secrets.list(&ListParams::default()).await?;
    let generated: Vec<String> = secrets_now
        .items
        .iter()
        .map(|s| s.metadata.name.clone().unwrap_or_default())
        .filter(|n| n.contains("network-data"))
        .collect();
    assert!(generated.is_empty(), "network data Secrets written in team-b: {generated:?}");
    let hosts = refused.status.and_then(|s| s.hosts).unwrap_or_default();
    assert!(hosts.values().all(|h| h.bmh_ref.is_none() && h.message.is_none()), "team-b's inventory leaked: {hosts:?}");
    operator.shutdown().await?;

    // The admin opens team-b to team-a: the same NodeSet claims there.
    let operator = env.start_operator(cluster_wide(&format!("{team_a}={team_b}"))?).await?;
    wait_nodeset(&nodesets, "claimed", |n| {
        n.status.as_ref().and_then(|s| s.claimed_hosts) == Some(1) && degraded_reason(n).is_none()
    })
    .await?;
    operator.shutdown().await?;
    Ok(())
}

/// One request the operator sent: its method, URI and Accept header.
type Sent = Arc<Mutex<Vec<(String, String, String)>>>;

/// `client`, with every request recorded in `sent`.
fn recording(client: kube::Client, sent: Sent) -> kube::Client {
    let namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (inner, sent) = (client.clone(), sent.clone());
        let accept = request.headers().get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        if let Ok(mut sent) = sent.lock() {
            sent.push((request.method().to_string(), request.uri().to_string(), accept));
        }
        async move { inner.send(request).await }
    });
    kube::Client::new(service, namespace)
}

fn is_collection_read(uri: &str, plural: &str) -> bool {
    let path = uri.split('?').next().unwrap_or_default();
    path.ends_with(&format!("/{plural}"))
}

#[tokio::test]
async fn no_controller_reads_other_secrets_or_config_maps_beyond_their_metadata() -> anyhow::Result<()> {
    let env = Env::start("watch-scope").await?;
    let sent = Sent::default();
    let mut config = OperatorConfig::minimal("watch-scope");
    config.ironic = Some(operator::testing::ironic::Config::default());
    config.host = Some(operator::testing::host::Config::default());
    config.nodeset = Some(operator::testing::nodeset::Config::default());
    let operator = operator::Operator::start(recording(env.client(), sent.clone()), config).await?;
    // Until all three controllers have listed Secrets and ConfigMaps (the Ironic controller
    // both, the host and NodeSet controllers Secrets).
    let deadline = Instant::now() + 60 * SECOND;
    loop {
        let reads = sent.lock().map(|s| s.clone()).unwrap_or_default();
        let count = |plural| reads.iter().filter(|(_, uri, _)| is_collection_read(uri, plural)).count();
        if count("secrets") >= 3 && count("configmaps") >= 1 {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the controllers did not list: {reads:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Only the requests matter here: the controllers are stopped without waiting for them.
    operator.abort();
    let reads = sent.lock().map(|s| s.clone()).unwrap_or_default();
    for (method, uri, accept) in &reads {
        // The one full read: the NodeSet controller's own records, selected by their label.
        let own_records = uri.contains("labelSelector=app.kubernetes.io%2Fcomponent%3Dnodeset-record");
        if method == "GET" && (is_collection_read(uri, "secrets") || is_collection_read(uri, "configmaps")) {
            assert!(
                accept.contains("as=PartialObjectMetadata") || own_records,
                "a full-object read: {method} {uri} ({accept})"
            );
            if !uri.contains("watch=true") && !uri.contains("resourceVersion=0") {
                assert!(uri.contains("limit=100"), "a list in pages of more than 100: {uri}");
            }
        }
    }
    Ok(())
}

/// The kinds the Ironic controller watches for what Ironics make and name.
const IRONIC_OBJECTS: [&str; 8] =
    ["deployments", "daemonsets", "statefulsets", "services", "ingresses", "jobs", "secrets", "configmaps"];

#[tokio::test]
async fn the_cluster_wide_ironic_controller_watches_objects_by_metadata_only_where_an_ironic_may_run()
-> anyhow::Result<()> {
    let env = Env::start("watch-ironic-ns").await?;
    let sent = Sent::default();
    let mut config = OperatorConfig::minimal("watch-ironic-ns");
    config.ironic = Some(operator::testing::ironic::Config::default());
    config.ironic_namespaces = env.ns.parse().map_err(anyhow::Error::msg)?;
    let operator = operator::Operator::start(recording(env.client(), sent.clone()), config).await?;
    let deadline = Instant::now() + 60 * SECOND;
    let reads = loop {
        let reads = sent.lock().map(|s| s.clone()).unwrap_or_default();
        let watched =
            |plural| reads.iter().any(|(_, uri, _)| is_collection_read(uri, plural) && uri.contains("watch=true"));
        if IRONIC_OBJECTS.iter().all(|plural| watched(plural)) && watched("ironics") {
            break reads;
        }
        anyhow::ensure!(Instant::now() < deadline, "the controller did not watch: {reads:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    operator.abort();
    let within = format!("/namespaces/{}/", env.ns);
    for (method, uri, accept) in &reads {
        if method != "GET" || !IRONIC_OBJECTS.iter().any(|plural| is_collection_read(uri, plural)) {
            continue;
        }
        assert!(uri.contains(&within), "a read outside the one namespace an Ironic may run in: {uri}");
        assert!(accept.contains("as=PartialObjectMetadata"), "a full-object read: {uri} ({accept})");
    }
    // The Ironics themselves in every namespace: one elsewhere is told why it does not run.
    assert!(reads.iter().any(|(_, uri, _)| uri.starts_with("/apis/ironic.metal3.io/v1alpha1/ironics")));
    Ok(())
}

#[tokio::test]
async fn a_secret_someone_else_made_under_a_name_the_operator_writes_is_reported_not_overwritten() -> anyhow::Result<()>
{
    let env = Env::start("tenancy-in-the-way").await?;
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    // Made first, by someone who may create Secrets here, under the name of the Secret the
    // operator writes an Ironic's API credentials digest to.
    let theirs: Secret = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "ironic-htpasswd"}, "stringData": {"htpasswd": "theirs"}}))?;
    secrets.create(&PostParams::default(), &theirs).await?;
    let operator = ironic_common::start(&env).await?;
    ironic_common::create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": "ironic"}, "spec": {}}),
    )
    .await?;

    let ironic = ironic_common::wait_for(&env, "ironic", "the Secret in the way reported", 90 * SECOND, |ironic| {
        ironic.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| {
            c.reason == "ObjectInTheWay"
                && c.message.contains("Secret ironic-htpasswd")
                && c.message.contains("Ironic ironic")
        })
    })
    .await?;
    assert!(ironic_common::condition_of(&ironic, "Ready").is_some_and(|c| c.status == "False"));
    let kept = secrets.get("ironic-htpasswd").await?;
    assert_eq!(kept.data.unwrap_or_default().get("htpasswd").map(|b| b.0.as_slice()), Some(b"theirs".as_slice()));
    assert!(kept.metadata.owner_references.unwrap_or_default().is_empty(), "not taken over");

    // Once it is gone, the operator writes its own.
    secrets.delete("ironic-htpasswd", &Default::default()).await?;
    ironic_common::wait_for(&env, "ironic", "its own Secret written", 90 * SECOND, |_| true).await?;
    let deadline = Instant::now() + 90 * SECOND;
    loop {
        if let Ok(ours) = secrets.get("ironic-htpasswd").await
            && ours.metadata.owner_references.unwrap_or_default().iter().any(|o| o.kind == "Ironic")
        {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the operator did not write its own Secret");
        tokio::time::sleep(POLL).await;
    }
    operator.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn an_ironic_outside_the_namespaces_an_admin_listed_is_refused_and_nothing_is_made_there() -> anyhow::Result<()> {
    let env = Env::start("tenancy-ironic-ns").await?;
    let mut config = env.operator_config();
    config.ironic = Some(ironic_common::ironic_config());
    config.ironic_namespaces = "ferrometal-system".parse().map_err(anyhow::Error::msg)?;
    let operator = env.start_operator(config).await?;
    ironic_common::create_ironic(
        &env,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": "ironic"}, "spec": {}}),
    )
    .await?;

    let ironic = ironic_common::wait_for(&env, "ironic", "the namespace refused", 90 * SECOND, |ironic| {
        ironic_common::condition_of(ironic, "Degraded")
            .is_some_and(|c| c.status == "True" && c.reason == "NamespaceNotListed")
    })
    .await?;
    assert!(ironic_common::condition_of(&ironic, "Ready").is_some_and(|c| c.status == "False"));
    let ready = ironic_common::condition_of(&ironic, "Degraded").map(|c| c.message.clone()).unwrap_or_default();
    assert!(ready.contains("--ironic-namespaces") && ready.contains("ferrometal-system"), "{ready}");
    // A few more reconciles' time: still nothing of Ironic's in the namespace.
    tokio::time::sleep(3 * SECOND).await;
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    let made = secrets.list(&ListParams::default()).await?;
    assert!(
        made.items.is_empty(),
        "no Secret written: {:?}",
        made.items.iter().map(|s| s.metadata.name.clone()).collect::<Vec<_>>()
    );
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(env.client(), &env.ns);
    assert!(deployments.list(&ListParams::default()).await?.items.is_empty(), "no Deployment");
    operator.shutdown().await?;
    Ok(())
}
