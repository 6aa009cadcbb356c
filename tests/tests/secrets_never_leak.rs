//! No secret ever reaches a log, an Event or a status (issue 14, item 4), proven for the whole
//! class rather than for one field: the operator runs as its own process (the shipped RBAC, the
//! Deployment's arguments, `RUST_LOG=debug`) and takes Ironics, BareMetalHosts and a NodeSet (its
//! variables read from a Secret, its service's Job reading others) to
//! their steady state with sentinel values planted in every secret a user gives it, and through
//! error paths where a secret sits next to the error. Then every value of every Secret in the
//! cluster (the user's and those the operator generated: htpasswd, passwords, TLS keys,
//! inventories) is looked for in the operator's whole log, in every Event, and in the status of
//! every object of every listable resource the apiserver serves.
//!
//! Out of scope: what Ironic, MariaDB or a Job's pod log themselves, and the apiserver's audit
//! log; the Secrets themselves, and the pod specs and config Secrets where secrets belong.

mod install_common;

use base64::Engine as _;
use install_common::cluster::Cluster;
use install_common::workloads::{self, apply, condition, host_state, ready, resource, wait_steady};
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, verbs};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const BMC_PASSWORD: &str = "SENTINEL-bmc-5f2c9a1e7d3b";
const DATABASE_PASSWORD: &str = "SENTINEL-db-8e41c07b2a9f";
const WRONG_DATABASE_PASSWORD: &str = "SENTINEL-wrongdb-3c9d5e2f1a";
const API_PASSWORD: &str = "SENTINEL-api-b7d2e94c1f60";
const USER_DATA: &str = "#cloud-config\npassword: SENTINEL-userdata-2a7f4c9e8b\n";
const NETWORK_DATA_TOKEN: &str = "SENTINEL-netdata-6d1b8f3e0c";
const NODESET_USER_DATA: &str = "#cloud-config\npassword: SENTINEL-nodeset-4e8a2c6f9d\n";
const SERVICE_TOKEN: &str = "SENTINEL-svc-key-9b3e7a1d5c";
const SERVICE_ENV: &str = "SENTINEL-svc-env-1f6c8e2b4a";
/// A NodeSet variable read through variablesFrom: it reaches the inventory Secret only.
const NODESET_VARIABLE: &str = "SENTINEL-variable-5d2a8f1c6e";
const MISPLACED_PASSWORD: &str = "SENTINEL-misplaced-7a2d9c4e1b";
/// A line of a networkData Secret that is not YAML: the parser's error would quote it.
const MALFORMED_LINE: &str = "SENTINEL-badyaml-8c3f1e9a2d7b";
/// Shorter values are not distinctive enough to mean a leak when they appear.
const MIN_SECRET_LEN: usize = 12;
/// Keys whose values are public by nature.
const PUBLIC_KEYS: [&str; 5] = ["ca.crt", "tls.crt", "username", "namespace", "service-ca.crt"];

fn secret(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data})
}

fn ironic(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": name}, "spec": spec})
}

/// Ironics: one on an external database and user-given API credentials, one with everything
/// generated (API credentials, the Auto TLS CA and serving key), one whose database password
/// is wrong, and one with a managed database (generated database passwords, the maintenance
/// account's among them, and its TLS key) that cannot be reached here (no cluster DNS): an
/// error next to generated secrets. Returns the
/// managed one's namespace.
async fn ironics(
    cluster: &mut Cluster,
    operator: &mut ferrometal_tests::operator_process::OperatorProcess,
    namespaces: &[String],
) -> anyhow::Result<String> {
    let client = cluster.cp.client();
    let [given, generated, failing, managed] = namespaces else { anyhow::bail!("four namespaces") };
    let (given, generated, failing, managed) = (given.clone(), generated.clone(), failing.clone(), managed.clone());
    let database = &cluster.database;
    database.create_database("sentinel", "sentinel", DATABASE_PASSWORD).await?;
    database.ironic_dbsync("sentinel", "sentinel", DATABASE_PASSWORD, "create_schema")?;
    let host = format!("127.0.0.1:{}", database.port());

    apply(&client, &given, secret("db", json!({"username": "sentinel", "password": DATABASE_PASSWORD}))).await?;
    apply(&client, &given, secret("api", json!({"username": "admin", "password": API_PASSWORD}))).await?;
    let spec = json!({"version": "38.0", "apiCredentialsName": "api",
        "database": {"credentialsName": "db", "host": host, "name": "sentinel"}});
    apply(&client, &given, ironic("ironic", spec)).await?;
    apply(&client, &generated, ironic("ironic", json!({"version": "38.0"}))).await?;
    apply(&client, &failing, secret("db", json!({"username": "sentinel", "password": WRONG_DATABASE_PASSWORD})))
        .await?;
    let spec = json!({"version": "38.0", "database": {"credentialsName": "db", "host": host, "name": "sentinel"}});
    apply(&client, &failing, ironic("ironic", spec)).await?;
    apply(
        &client,
        &managed,
        ironic("ironic", json!({"version": "38.0", "database": {"managed": {"version": "10.11"}}})),
    )
    .await?;

    let ironics = resource("ironic.metal3.io", "Ironic");
    wait_steady(&client, operator, &given, &ironics, "ironic", "Ready", ready).await?;
    wait_steady(&client, operator, &generated, &ironics, "ironic", "Ready", ready).await?;
    wait_steady(&client, operator, &failing, &ironics, "ironic", "refused by the database", |o| {
        o["status"]["conditions"].as_array().into_iter().flatten().any(|c| c["reason"] == "AuthenticationFailed")
    })
    .await?;
    wait_steady(&client, operator, &managed, &ironics, "ironic", "waiting for its database", |o| {
        o["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == "DatabaseReady"
                && c["status"] == "False"
                && c["message"].as_str().is_some_and(|m| !m.is_empty())
        })
    })
    .await?;
    Ok(managed)
}

/// Hosts: one provisioned with userData and networkData, one whose redfish BMC cannot be
/// reached with a sentinel password (Ironic's error reaches status), one whose credentials
/// Secret holds the password under the wrong key; a NodeSet with userData and a service whose
/// Job takes secrets by `secretKeyRef` and `envFrom`.
async fn hosts(
    cluster: &mut Cluster,
    operator: &mut ferrometal_tests::operator_process::OperatorProcess,
) -> anyhow::Result<()> {
    let client = cluster.cp.client();
    let ns = cluster.cp.namespace("sentinel-hosts").await?;
    let image = cluster.ironic.image_server().write_live_iso(&format!("{ns}/live.iso"))?;
    apply(&client, &ns, secret("bmc", json!({"username": "admin", "password": BMC_PASSWORD}))).await?;
    apply(&client, &ns, secret("misplaced", json!({"username": "admin", "passwd": MISPLACED_PASSWORD}))).await?;
    apply(&client, &ns, secret("user-data", json!({"userData": USER_DATA}))).await?;
    let network = json!({"links": [], "networks": [], "services": [{"type": "dns", "address": NETWORK_DATA_TOKEN}]});
    apply(&client, &ns, secret("network-data", json!({"networkData": network.to_string()}))).await?;
    let malformed = format!("links: [\n{MALFORMED_LINE}\n: {{\n");
    apply(&client, &ns, secret("bad-network-data", json!({"networkData": malformed}))).await?;

    let mut provisioned = workloads::fake_host("provisioned-0", true, Some(&image), json!({}));
    provisioned["spec"]["bmc"]["credentialsName"] = "bmc".into();
    provisioned["spec"]["userData"] = json!({"name": "user-data"});
    provisioned["spec"]["networkData"] = json!({"name": "network-data"});
    apply(&client, &ns, provisioned).await?;
    let mut unreachable = workloads::fake_host("unreachable-0", false, None, json!({}));
    unreachable["spec"]["bmc"] = json!({"credentialsName": "bmc",
        "address": format!("redfish://127.0.0.1:{}/redfish/v1/Systems/sentinel", ferrometal_tests::ports::free_port()?)});
    apply(&client, &ns, unreachable).await?;
    let mut misplaced = workloads::fake_host("misplaced-0", false, None, json!({}));
    misplaced["spec"]["bmc"] =
        json!({"credentialsName": "misplaced", "address": "redfish://127.0.0.1:9/redfish/v1/Systems/misplaced"});
    apply(&client, &ns, misplaced).await?;

    // A disk image, so that a config drive is built (a live ISO takes none), from network data
    // that does not parse: the error reaches status, the Secret's content must not.
    let mut malformed = workloads::fake_host("malformed-0", true, None, json!({}));
    malformed["spec"]["image"] = json!({"url": "http://127.0.0.1:9/disk.qcow2", "format": "qcow2",
        "checksum": "a".repeat(64), "checksumType": "sha256"});
    malformed["spec"]["networkData"] = json!({"name": "bad-network-data"});
    apply(&client, &ns, malformed).await?;

    let hosts = resource("metal3.io", "BareMetalHost");
    let failed = |h: &Value| !h["status"]["errorMessage"].as_str().unwrap_or_default().is_empty();
    wait_steady(&client, operator, &ns, &hosts, "malformed-0", "failed on its network data", |h| {
        h["status"]["errorMessage"].as_str().is_some_and(|m| m.contains("networkData"))
    })
    .await?;
    wait_steady(&client, operator, &ns, &hosts, "provisioned-0", "provisioned", |h| host_state(h) == "provisioned")
        .await?;
    wait_steady(&client, operator, &ns, &hosts, "unreachable-0", "failed to register", failed).await?;
    wait_steady(&client, operator, &ns, &hosts, "misplaced-0", "failed on its credentials", failed).await?;

    if !workloads::nodeset_controller_exists() {
        return Ok(());
    }
    apply(&client, &ns, secret("nodeset-user-data", json!({"userData": NODESET_USER_DATA}))).await?;
    apply(&client, &ns, secret("service-key", json!({"token": SERVICE_TOKEN}))).await?;
    apply(&client, &ns, secret("service-env", json!({"SERVICE_SECRET": SERVICE_ENV}))).await?;
    apply(&client, &ns, secret("nodeset-variables", json!({"db_password": NODESET_VARIABLE}))).await?;
    let pool = workloads::fake_host("pool-0", false, None, json!({"pool": "sentinel"}));
    workloads::host_reaches(&client, operator, &ns, pool, "available").await?;
    apply(
        &client,
        &ns,
        json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSetService", "metadata": {"name": "configure"},
        "spec": {"job": {"image": "configure:1", "command": ["/bin/configure"],
            "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "service-key", "key": "token"}}}],
            "envFrom": [{"secretRef": {"name": "service-env"}}]}}}),
    )
    .await?;
    apply(
        &client,
        &ns,
        json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet", "metadata": {"name": "computes"},
        "spec": {"baremetalSetTemplate": {"bmhLabelSelector": {"matchLabels": {"pool": "sentinel"}},
            "image": {"url": image, "format": "live-iso"}, "userData": {"name": "nodeset-user-data"}},
            "nodeTemplate": {"variablesFrom": [{"secretRef": {"name": "nodeset-variables"}}]},
            "services": ["configure"], "nodes": {"compute-0": {}}}}),
    )
    .await?;
    let nodesets = resource("ferrometal.io", "NodeSet");
    wait_steady(&client, operator, &ns, &nodesets, "computes", "Ready with its service run", |n| {
        ready(n) && !condition(n, "Progressing", "True")
    })
    .await?;
    Ok(())
}

/// One secret value to look for, and where it came from.
struct Needle {
    value: String,
    origin: String,
}

impl Needle {
    /// The value as it may be written: itself, escaped as JSON or by `Debug`, and in base64.
    fn forms(&self) -> Vec<String> {
        let json = serde_json::to_string(&self.value).unwrap_or_default();
        let debug = format!("{:?}", self.value);
        let base64 = base64::engine::general_purpose::STANDARD.encode(&self.value);
        let mut forms =
            vec![self.value.clone(), json.trim_matches('"').to_string(), debug.trim_matches('"').to_string()];
        forms.push(base64);
        forms.sort();
        forms.dedup();
        forms
    }

    /// Where it came from and a hint of it, never the value in full.
    fn describe(&self) -> String {
        let hint: String = self.value.chars().take(6).collect();
        format!("{} ({hint}..., {} characters)", self.origin, self.value.chars().count())
    }
}

/// Every distinctive secret value in the cluster: each value of each Secret that is not public
/// by nature, and each long line of a multi-line value (PEM keys, htpasswd files).
async fn secret_values(client: &kube::Client) -> anyhow::Result<Vec<Needle>> {
    let api: Api<Secret> = Api::all(client.clone());
    let mut needles = Vec::new();
    for secret in api.list(&ListParams::default()).await? {
        if secret.type_.as_deref() == Some("kubernetes.io/service-account-token") {
            continue;
        }
        let name = format!(
            "Secret {}/{}",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        for (key, value) in secret.data.unwrap_or_default() {
            if PUBLIC_KEYS.contains(&key.as_str()) {
                continue;
            }
            let text = String::from_utf8_lossy(&value.0).into_owned();
            let mut values: Vec<String> = vec![text.trim().to_string()];
            if text.trim().contains('\n') {
                values.extend(text.lines().map(|l| l.trim().to_string()));
            }
            for value in values {
                // PEM armour lines ("-----BEGIN PRIVATE KEY-----") are the same in every key.
                if value.chars().count() >= MIN_SECRET_LEN && !value.starts_with("-----") {
                    needles.push(Needle { value, origin: format!("{name} key {key}") });
                }
            }
        }
    }
    Ok(needles)
}

/// Every string in `value`, with its JSON path.
fn strings<'a>(value: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(s) => out.push((path, s)),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| strings(v, format!("{path}[{i}]"), out)),
        Value::Object(fields) => fields.iter().for_each(|(k, v)| strings(v, format!("{path}.{k}"), out)),
        _ => {}
    }
}

/// Where any needle appears in `text`, described as `place`.
fn search(needles: &[Needle], place: &str, text: &str, found: &mut Vec<String>) {
    for needle in needles {
        if needle.forms().iter().any(|form| text.contains(form.as_str())) {
            found.push(format!("{} appears in {place}", needle.describe()));
        }
    }
}

/// Text to scan, by where it was: every Event's fields, and the status of every object of every
/// listable resource.
async fn cluster_texts(client: &kube::Client) -> anyhow::Result<Vec<(String, String)>> {
    let mut texts = Vec::new();
    let events: Api<Event> = Api::all(client.clone());
    for event in events.list(&ListParams::default()).await? {
        let place = format!(
            "Event {}/{}",
            event.metadata.namespace.as_deref().unwrap_or_default(),
            event.metadata.name.as_deref().unwrap_or_default()
        );
        let value = serde_json::to_value(&event)?;
        let mut fields = Vec::new();
        strings(&value, String::new(), &mut fields);
        texts.extend(fields.into_iter().map(|(path, s)| (format!("{place} {path}"), s.to_string())));
    }
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut scanned = 0;
    for group in discovery.groups() {
        for (resource, capabilities) in group.recommended_resources() {
            if !capabilities.supports_operation(verbs::LIST) || resource.kind == "Secret" {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            for object in api.list(&ListParams::default()).await? {
                scanned += 1;
                let place = format!(
                    "{} {}/{} status",
                    resource.kind,
                    object.metadata.namespace.as_deref().unwrap_or_default(),
                    object.metadata.name.as_deref().unwrap_or_default()
                );
                let mut fields = Vec::new();
                strings(&object.data["status"], String::new(), &mut fields);
                texts.extend(fields.into_iter().map(|(path, s)| (format!("{place}{path}"), s.to_string())));
            }
        }
    }
    anyhow::ensure!(scanned > 0, "discovery found objects to scan");
    Ok(texts)
}

#[tokio::test]
async fn no_secret_reaches_the_debug_log_an_event_or_any_status() -> anyhow::Result<()> {
    let mut cluster = Cluster::start().await?;
    let mut namespaces = Vec::new();
    for name in ["sentinel-given", "sentinel-generated", "sentinel-failing", "sentinel-managed"] {
        namespaces.push(cluster.cp.namespace(name).await?);
    }
    let listed: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    let mut operator = cluster.install_cluster_wide(vec![("RUST_LOG".into(), "debug".into())], &listed).await?;
    let managed = ironics(&mut cluster, &mut operator, &namespaces).await?;
    hosts(&mut cluster, &mut operator).await?;
    // Events are published after the status write, and debug lines of the last reconciles
    // trail it: let both settle.
    tokio::time::sleep(Duration::from_secs(5)).await;

    let client = cluster.cp.client();
    let needles = secret_values(&client).await?;
    let origins: BTreeMap<&str, &str> = needles.iter().map(|n| (n.value.as_str(), n.origin.as_str())).collect();
    let planted =
        [BMC_PASSWORD, DATABASE_PASSWORD, WRONG_DATABASE_PASSWORD, API_PASSWORD, MISPLACED_PASSWORD, MALFORMED_LINE];
    let mut expected: Vec<String> = planted.iter().map(|s| s.to_string()).collect();
    expected.extend([USER_DATA, NODESET_USER_DATA].iter().filter_map(|d| d.lines().nth(1).map(str::to_string)));
    if workloads::nodeset_controller_exists() {
        expected.extend([SERVICE_TOKEN.to_string(), SERVICE_ENV.to_string()]);
    }
    for value in &expected {
        assert!(origins.contains_key(value.as_str()), "the planted secret {value} is among those scanned");
    }
    assert!(
        needles.iter().any(|n| n.value.contains(NETWORK_DATA_TOKEN)),
        "the networkData Secret is among those scanned"
    );
    // What the operator generated: an htpasswd line, a generated password, a private key line.
    assert!(needles.iter().any(|n| n.value.contains(":$2")), "an htpasswd line (bcrypt) is among those scanned");
    assert!(needles.iter().any(|n| n.origin.ends_with("key tls.key")), "a TLS key is among those scanned");
    assert!(
        needles.iter().any(|n| n.origin.contains(&format!("Secret {managed}/"))),
        "the managed database's generated Secrets are among those scanned"
    );
    for secret in ["ironic-mariadb-maintenance", "ironic-mariadb-admin", "ironic-mariadb-credentials"] {
        let origin = format!("Secret {managed}/{secret} key password");
        assert!(needles.iter().any(|n| n.origin == origin), "the generated password of {secret} is scanned");
    }
    assert!(
        needles.iter().any(|n| n.origin.ends_with("key password") && !planted.contains(&n.value.as_str())),
        "a generated password is among those scanned"
    );

    // The scan sees a value however a log line or an object writes it (JSON-escaped, as the
    // operator's JSON log and the apiserver do): each needle is found in such a line.
    for needle in &needles {
        let mut seen = Vec::new();
        search(std::slice::from_ref(needle), "a test line", &json!({"message": needle.value}).to_string(), &mut seen);
        assert!(!seen.is_empty(), "the scan finds {} written as JSON", needle.describe());
    }

    let mut found = Vec::new();
    let log = operator.log();
    assert!(log.contains("DEBUG"), "the operator logged at debug level");
    for (number, line) in log.lines().enumerate() {
        search(&needles, &format!("the operator's log, line {}", number + 1), line, &mut found);
    }
    for (place, text) in cluster_texts(&client).await? {
        search(&needles, &place, &text, &mut found);
    }
    assert!(found.is_empty(), "secrets leaked:\n{}", found.join("\n"));
    cluster.cp.ensure_running()?;
    operator.stop(Duration::from_secs(20)).await?;
    Ok(())
}
