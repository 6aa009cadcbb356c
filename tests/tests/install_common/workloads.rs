//! What the install tests take to their steady state, as a user would create it: an `Ironic`
//! on an external MariaDB, BareMetalHosts on Ironic's fake hardware, and (once the NodeSet
//! controller exists) a NodeSet claiming one of them.

use anyhow::Context as _;
use ferrometal_tests::ironic::IronicServer;
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig};
use ferrometal_tests::operator_process::OperatorProcess;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::{Value, json};
use std::time::Duration;

const DATABASE_PASSWORD: &str = "install-e2e-db-password";
const MANAGER: &str = "ferrometal-tests";
/// How long one object may take to reach its steady state.
pub const STEADY: Duration = Duration::from_secs(180);

/// True once the NodeSet controller is part of the operator (`--controllers nodeset`): the
/// NodeSet steps run from then on, with no change here.
pub fn nodeset_controller_exists() -> bool {
    <operator::cli::ControllerKind as clap::ValueEnum>::from_str("nodeset", true).is_ok()
}

/// `--controllers` for the operator process: every controller there is.
pub fn controllers() -> String {
    if nodeset_controller_exists() { "ironic,host,nodeset".into() } else { "ironic,host".into() }
}

/// The operator a test waits on: it fails the wait early when the operator died.
pub trait Running {
    fn ensure_running(&mut self) -> anyhow::Result<()>;
}

/// The operator as its own process.
impl Running for OperatorProcess {
    fn ensure_running(&mut self) -> anyhow::Result<()> {
        OperatorProcess::ensure_running(self)
    }
}

/// The webhook's refusal of an `Ironic` where Ironics may not run, once the apiserver reaches
/// the webhook through its Service. Ready pods are not kube-proxy's endpoints yet: until it has
/// rewritten its rules the Service refuses the connection (`failed calling webhook …
/// connection refused`, met on a loaded machine right after the pods became ready).
pub async fn webhook_refusal(client: &kube::Client, namespace: &str) -> anyhow::Result<String> {
    ferrometal_tests::wait::until_ok(
        "the webhook's answer through its Service",
        Duration::from_secs(30),
        Duration::from_millis(500),
        || async move {
            match apply(client, namespace, minimal_ironic()).await {
                Ok(()) => anyhow::bail!("the Ironic was stored: the webhook did not refuse it"),
                Err(refused) => Ok(Some(format!("{refused:#}")).filter(|r| !r.contains("connection refused"))),
            }
        },
    )
    .await
}

pub fn resource(group: &str, kind: &str) -> ApiResource {
    ferrometal_tests::api_resource(group, "v1alpha1", kind)
}

/// Server-side applies `object` (JSON with apiVersion, kind, metadata.name) in `namespace`.
pub async fn apply(client: &kube::Client, namespace: &str, object: Value) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let params = PatchParams::apply(MANAGER).force();
    if kind == "Secret" {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        api.patch(&name, &params, &Patch::Apply(&object)).await?;
        return Ok(());
    }
    let resource = ferrometal_tests::api_resource(group, version, &kind);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    api.patch(&name, &params, &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {kind} {namespace}/{name}"))?;
    Ok(())
}

/// Waits until the object's status satisfies `steady`, failing early if the operator died;
/// returns the object.
pub async fn wait_steady(
    client: &kube::Client,
    operator: &mut impl Running,
    namespace: &str,
    resource: &ApiResource,
    name: &str,
    what: &str,
    steady: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    let deadline = tokio::time::Instant::now() + STEADY;
    loop {
        operator.ensure_running()?;
        let object = api.get_opt(name).await?.map(|o| serde_json::to_value(o).unwrap_or_default());
        if let Some(object) = &object
            && steady(object)
        {
            return Ok(object.clone());
        }
        if tokio::time::Instant::now() >= deadline {
            let status = object.map(|o| o["status"].clone()).unwrap_or_default();
            anyhow::bail!(
                "{} {namespace}/{name} is not {what} after {STEADY:?}; its status: {status:#}",
                resource.kind
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The condition `type_` of an object's status has `status`.
pub fn condition(object: &Value, type_: &str, status: &str) -> bool {
    object["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == type_ && c["status"] == status)
}

/// `Ready` was written for the current generation, whatever it says.
pub fn reconciled(object: &Value) -> bool {
    let generation = &object["metadata"]["generation"];
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && &c["observedGeneration"] == generation)
}

/// Ready=True, at the current generation.
pub fn ready(object: &Value) -> bool {
    object["status"]["observedGeneration"] == object["metadata"]["generation"] && condition(object, "Ready", "True")
}

pub fn host_state(object: &Value) -> &str {
    object["status"]["provisioning"]["state"].as_str().unwrap_or_default()
}

/// Applies the BareMetalHost `host` in `namespace` and waits until its provisioning state is
/// `state`, the operator's pods checked meanwhile.
pub async fn host_reaches(
    client: &kube::Client,
    operator: &mut impl Running,
    namespace: &str,
    host: Value,
    state: &str,
) -> anyhow::Result<Value> {
    let name = host["metadata"]["name"].as_str().unwrap_or_default().to_string();
    apply(client, namespace, host).await?;
    let hosts = ferrometal_tests::api_resource("metal3.io", "v1alpha1", "BareMetalHost");
    wait_steady(client, operator, namespace, &hosts, &name, state, |h| host_state(h) == state).await
}

/// An external database for Ironics: a real MariaDB on loopback with Ironic's schema.
pub async fn database() -> anyhow::Result<MariaDb> {
    let server = MariaDb::start(MariaDbConfig::default()).await?;
    server.create_database("ironic", "ironic", DATABASE_PASSWORD).await?;
    server.ironic_dbsync("ironic", "ironic", DATABASE_PASSWORD, "create_schema")?;
    Ok(server)
}

/// Creates an Ironic on `database` in `namespace` and waits until it is Ready.
pub async fn ironic_ready(
    client: &kube::Client,
    operator: &mut impl Running,
    namespace: &str,
    database: &MariaDb,
) -> anyhow::Result<Value> {
    apply(
        client,
        namespace,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ironic-db"},
        "stringData": {"username": "ironic", "password": DATABASE_PASSWORD}}),
    )
    .await?;
    apply(
        client,
        namespace,
        json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
        "metadata": {"name": "ironic"},
        "spec": {"version": "38.0", "database": {"credentialsName": "ironic-db",
            "host": format!("127.0.0.1:{}", database.port()), "name": "ironic"}}}),
    )
    .await?;
    let ironic = resource("ironic.metal3.io", "Ironic");
    wait_steady(client, operator, namespace, &ironic, "ironic", "Ready", ready).await
}

/// The smallest Ironic, for admission checks.
pub fn minimal_ironic() -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"}, "spec": {}})
}

/// A MAC of its own for each host name (Ironic refuses a MAC another node has).
pub fn mac(name: &str) -> String {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    let [a, b, c, _] = hash.to_be_bytes();
    format!("52:54:00:{a:02x}:{b:02x}:{c:02x}")
}

/// A fake-hardware host spec.
pub fn fake_host(name: &str, online: bool, image: Option<&str>, labels: Value) -> Value {
    let mut host = json!({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
        "metadata": {"name": name, "labels": labels},
        "spec": {"online": online, "bootMACAddress": mac(name),
            "bmc": {"address": format!("fake://{name}"), "credentialsName": "fake-bmc"}}});
    if let Some(url) = image {
        host["spec"]["image"] = json!({"url": url, "format": "live-iso"});
    }
    host
}

/// Creates a provisioned host and an available one in `namespace`, and waits for both.
pub async fn hosts_steady(
    client: &kube::Client,
    operator: &mut impl Running,
    namespace: &str,
    ironic: &IronicServer,
) -> anyhow::Result<()> {
    let iso = ironic.image_server().write_live_iso(&format!("{namespace}/live.iso"))?;
    apply(client, namespace, fake_host("provisioned-0", true, Some(&iso), json!({}))).await?;
    apply(client, namespace, fake_host("available-0", false, None, json!({}))).await?;
    let hosts = resource("metal3.io", "BareMetalHost");
    wait_steady(client, operator, namespace, &hosts, "provisioned-0", "provisioned", |h| {
        host_state(h) == "provisioned"
    })
    .await?;
    wait_steady(client, operator, namespace, &hosts, "available-0", "available", |h| host_state(h) == "available")
        .await?;
    Ok(())
}

/// With the NodeSet controller: a NodeSet claiming one available host of `namespace` reaches
/// Ready. Without it, nothing.
pub async fn nodeset_steady(
    client: &kube::Client,
    operator: &mut impl Running,
    namespace: &str,
    ironic: &IronicServer,
) -> anyhow::Result<()> {
    if !nodeset_controller_exists() {
        return Ok(());
    }
    let iso = ironic.image_server().write_live_iso(&format!("{namespace}/nodeset.iso"))?;
    host_reaches(
        client,
        operator,
        namespace,
        fake_host("pool-0", false, None, json!({"pool": "install-e2e"})),
        "available",
    )
    .await?;
    apply(
        client,
        namespace,
        json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
        "metadata": {"name": "computes"},
        "spec": {"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"pool": "install-e2e"}},
            "image": {"url": iso, "format": "live-iso"}},
            "nodes": {"compute-0": {}}}}),
    )
    .await?;
    let nodesets = resource("ferrometal.io", "NodeSet");
    wait_steady(client, operator, namespace, &nodesets, "computes", "Ready", ready).await?;
    Ok(())
}
