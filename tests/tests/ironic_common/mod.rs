//! Helpers shared by the Ironic controller's end-to-end tests (`ironic_*.rs`).
#![allow(dead_code)]

use crate::common::{Env, POLL};
use crds::condition::{self, Condition};
use crds::ironic::Ironic;
use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig};
use ferrometal_tests::wait;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use operator::Operator;
use serde_json::Value;
use std::time::Duration;

/// How long a step of the control plane may take (controllers, the simulator, GC).
pub const STEP: Duration = Duration::from_secs(90);

/// The Ironic controller's configuration for tests: upgrade Jobs fail on their first failed
/// pod, and work in progress is looked at often.
pub fn ironic_config() -> operator::testing::ironic::Config {
    operator::testing::ironic::Config {
        upgrade_job_backoff_limit: 0,
        progress_interval: Duration::from_secs(2),
        retry_interval: Duration::from_secs(1),
        ..Default::default()
    }
}

/// An external database for an Ironic: a real MariaDB on loopback (the operator checks it
/// with sqlx before it rolls Ironic out), a database and user for Ironic, Ironic's schema as
/// `ironic-dbsync` makes it, and the credentials Secret `credentials`. With TLS, the CA Secret
/// `<credentials>-ca` holds the server's CA under `tls.crt`, where ironic-image reads it.
pub struct ExternalDatabase {
    pub server: MariaDb,
    /// What `spec.database.host` takes: `127.0.0.1:<port>`.
    pub host: String,
    pub credentials: String,
    pub ca_secret: Option<String>,
}

pub const DATABASE_PASSWORD: &str = "ironic-e2e-db-password";

pub async fn external_database(env: &Env, credentials: &str, tls: bool) -> anyhow::Result<ExternalDatabase> {
    let server = MariaDb::start(MariaDbConfig { tls, ..Default::default() }).await?;
    server.create_database("ironic", "ironic", DATABASE_PASSWORD).await?;
    server.ironic_dbsync("ironic", "ironic", DATABASE_PASSWORD, "create_schema")?;
    create_secret(env, credentials, "Opaque", &[("username", "ironic"), ("password", DATABASE_PASSWORD)]).await?;
    let ca_secret = match server.ca_pem() {
        Some(ca) => {
            let name = format!("{credentials}-ca");
            create_secret(env, &name, "Opaque", &[("tls.crt", ca)]).await?;
            Some(name)
        }
        None => None,
    };
    let host = format!("127.0.0.1:{}", server.port());
    Ok(ExternalDatabase { server, host, credentials: credentials.to_string(), ca_secret })
}

impl ExternalDatabase {
    /// `spec.database` for this server.
    pub fn spec(&self) -> Value {
        let mut spec = serde_json::json!({"credentialsName": self.credentials, "host": self.host, "name": "ironic"});
        if let Some(ca) = &self.ca_secret {
            spec["tlsCertificateName"] = Value::from(ca.as_str());
        }
        spec
    }
}

/// Starts the operator with the Ironic controller watching the test namespace.
pub async fn start(env: &Env) -> anyhow::Result<Operator> {
    let mut config = env.operator_config();
    config.ironic = Some(ironic_config());
    env.start_operator(config).await
}

pub fn ironics(env: &Env) -> Api<Ironic> {
    Api::namespaced(env.client(), &env.ns)
}

pub fn api<K>(env: &Env) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(env.client(), &env.ns)
}

/// Creates an Ironic from JSON and returns what the apiserver stored.
pub async fn create_ironic(env: &Env, object: Value) -> anyhow::Result<Ironic> {
    Ok(ironics(env).create(&PostParams::default(), &serde_json::from_value(object)?).await?)
}

/// Creates a Secret with string data.
pub async fn create_secret(env: &Env, name: &str, type_: &str, data: &[(&str, &str)]) -> anyhow::Result<Secret> {
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        type_: Some(type_.into()),
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    };
    Ok(api::<Secret>(env).create(&PostParams::default(), &secret).await?)
}

fn conditions(ironic: &Ironic) -> Vec<Condition> {
    ironic.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default()
}

/// The condition `type_` of the stored Ironic.
pub fn condition_of(ironic: &Ironic, type_: &str) -> Option<Condition> {
    condition::find(&conditions(ironic), type_).cloned()
}

/// Waits until `check` holds for the Ironic, which must have been reconciled at its current
/// generation.
pub async fn wait_for(
    env: &Env,
    name: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&Ironic) -> bool,
) -> anyhow::Result<Ironic> {
    let api = ironics(env);
    let result = wait::until(what, timeout, POLL, || async {
        let ironic = api.get(name).await.ok()?;
        let current = ironic.status.as_ref().and_then(|s| s.observed_generation) == ironic.metadata.generation;
        (current && check(&ironic)).then_some(ironic)
    })
    .await;
    if result.is_err()
        && let Ok(ironic) = api.get(name).await
    {
        eprintln!("last status of {name}: {}", serde_json::to_string_pretty(&ironic.status).unwrap_or_default());
    }
    result
}

/// Waits until the condition `type_` has `status` and `reason`.
pub async fn wait_condition(env: &Env, name: &str, type_: &str, status: &str, reason: &str) -> anyhow::Result<Ironic> {
    wait_for(env, name, &format!("{name}: {type_}={status} ({reason})"), STEP, |ironic| {
        condition_of(ironic, type_).is_some_and(|c| c.status == status && c.reason == reason)
    })
    .await
}

/// Waits until the Ironic is Ready with `version` installed.
pub async fn wait_ready(env: &Env, name: &str, version: &str) -> anyhow::Result<Ironic> {
    wait_for(env, name, &format!("{name} ready with {version} installed"), STEP, |ironic| {
        condition_of(ironic, "Ready").is_some_and(|c| c.status == "True" && c.reason == "DeploymentAvailable")
            && ironic.status.as_ref().and_then(|s| s.installed_version.as_deref()) == Some(version)
    })
    .await
}

/// The Deployment `name`.
pub async fn deployment(env: &Env, name: &str) -> anyhow::Result<Deployment> {
    Ok(api::<Deployment>(env).get(name).await?)
}

/// A container of a pod template by name.
pub fn container<'a>(containers: &'a [Container], name: &str) -> &'a Container {
    containers.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no container {name}"))
}

/// The value of `name` in a container's environment (`None` when set from a source).
pub fn env_value(container: &Container, name: &str) -> Option<String> {
    container.env.iter().flatten().find(|e| e.name == name).and_then(|e| e.value.clone())
}

/// True when the container's environment has `name`, however it is set.
pub fn has_env(container: &Container, name: &str) -> bool {
    container.env.iter().flatten().any(|e| e.name == name)
}

/// The pod template's containers of a Deployment.
pub fn template_containers(deployment: &Deployment) -> Vec<Container> {
    deployment.spec.as_ref().and_then(|s| s.template.spec.as_ref()).map(|s| s.containers.clone()).unwrap_or_default()
}

/// The content-hash annotation of a Deployment's pod template.
pub fn content_hash(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.as_ref())
        .and_then(|a| a.get(operator::testing::ironic::names::CONTENT_HASH_ANNOTATION).cloned())
}

/// The Ironic pods (selected like the workload selects them) that are Ready.
pub async fn ready_pods(env: &Env, ironic: &str) -> anyhow::Result<Vec<Pod>> {
    let selector = format!("ironic.metal3.io/app={ironic}-service");
    let pods = api::<Pod>(env).list(&ListParams::default().labels(&selector)).await?;
    Ok(pods
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .collect())
}

/// Waits until exactly one Ironic pod runs, and returns its uid.
pub async fn the_one_pod(env: &Env, ironic: &str) -> anyhow::Result<String> {
    wait::until_ok("one ready Ironic pod", STEP, POLL, || async {
        let selector = format!("ironic.metal3.io/app={ironic}-service");
        let all = api::<Pod>(env).list(&ListParams::default().labels(&selector)).await?.items;
        let ready = ready_pods(env, ironic).await?;
        Ok((all.len() == 1 && ready.len() == 1).then(|| ready[0].metadata.uid.clone().unwrap_or_default()))
    })
    .await
}

/// A renewed certificate leaves the one pod alone, which reloads it in place: once a
/// reconcile that started after `started` (taken before the renewal) has finished, and for a
/// few seconds more, the same pod runs the same template (design/ironic.md, "A renewed
/// certificate reaches the pods without a restart").
pub async fn assert_kept(
    env: &Env,
    operator: &Operator,
    started: u64,
    pod: &str,
    before: &Deployment,
) -> anyhow::Result<()> {
    wait_for_reconcile_since(operator, started).await?;
    for _ in 0..10 {
        anyhow::ensure!(the_one_pod(env, "ironic").await? == pod, "the pod was replaced");
        let after = deployment(env, "ironic-service").await?;
        anyhow::ensure!(content_hash(&after) == content_hash(before), "the content hash moved: the pod would roll");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    Ok(())
}

/// Reconciles of the Ironic controller that have finished (the duration histogram's count).
pub fn finished_reconciles(operator: &Operator) -> u64 {
    let text = operator.metrics().encode();
    text.lines()
        .find(|l| l.starts_with("ferrometal_reconcile_duration_seconds_count{controller=\"ironic\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Reconciles started so far; take it before a change, then [`wait_for_reconcile_since`].
pub fn reconciles_started(operator: &Operator) -> u64 {
    operator.metrics().reconcile_count("ironic")
}

/// Waits until a reconcile that started after `started` was taken has finished. A reconcile
/// of one object never overlaps another of the same object, so the finished count passing
/// `started` means one that began after the mark has ended.
pub async fn wait_for_reconcile_since(operator: &Operator, started: u64) -> anyhow::Result<()> {
    wait::until("a reconcile that started after the change to finish", STEP, POLL, || async {
        (finished_reconciles(operator) > started).then_some(())
    })
    .await
}

/// Events about `name` with `reason`.
pub async fn events(env: &Env, name: &str, reason: &str) -> anyhow::Result<Vec<Event>> {
    let events = api::<Event>(env).list(&ListParams::default()).await?;
    Ok(events
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect())
}

/// Waits for an Event about `name` with `reason`, and returns its note.
pub async fn wait_event(env: &Env, name: &str, reason: &str) -> anyhow::Result<String> {
    wait::until_ok(&format!("event {reason} about {name}"), STEP, POLL, || async {
        Ok(events(env, name, reason).await?.first().map(|e| e.note.clone().unwrap_or_default()))
    })
    .await
}

/// A CA and a serving certificate for `names`, PEM: (ca, cert, key).
pub fn certificate(names: &[&str], days: i64) -> anyhow::Result<(String, String, String)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let now = time::OffsetDateTime::now_utc();
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, format!("test CA {}", now.unix_timestamp_nanos()));
    ca_params.not_before = now - time::Duration::hours(1);
    ca_params.not_after = now + time::Duration::days(days + 1);
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

/// The text of `key` in `secret`, empty when it is missing.
pub fn secret_text(secret: &Secret, key: &str) -> String {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned())
        .unwrap_or_default()
}
