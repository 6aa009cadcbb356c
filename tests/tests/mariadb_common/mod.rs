//! What the tests against the harness's real MariaDB share: the operator's check targets, the
//! server a managed database's pod would run (its init file, TLS and flags, read from the pod
//! and the Secrets it mounts), the MariaDB pod's kubelet played by a test, and Ironic-like data.

#![allow(dead_code)] // Each test binary uses its part.

use ferrometal_tests::mariadb::{ADMIN_PASSWORD, ADMIN_USER, MariaDb, ServedCertificate, ServerOptions};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use operator::testing::database::account::INIT_KEY;
use operator::testing::database::build::{CONTAINER, INIT_DIR, SERVER_TLS_DIR};
use operator::testing::database::check::{Target, Tls};
use operator::testing::database::credentials::{self, Credentials, Password};
use serde_json::json;
use sqlx::{Connection, Executor, MySqlConnection};
use std::time::Duration;

/// The harness's administrator, as the operator's checks connect.
pub fn admin(server: &MariaDb) -> Target {
    Target {
        host: "127.0.0.1".into(),
        port: server.port(),
        database: None,
        credentials: Credentials { username: ADMIN_USER.into(), password: Password::new(ADMIN_PASSWORD) },
        tls: Tls::Disabled,
        timeout: Duration::from_secs(10),
    }
}

/// `credentials` on `server`, as the operator's checks connect: with the CA the server serves
/// from its pod options (its name not verified: the test reaches it by address), else without TLS.
pub fn target(server: &MariaDb, credentials: Credentials) -> Target {
    let tls = server.options().tls.as_ref().map_or(Tls::Disabled, |served| Tls::Verify {
        ca_pem: served.ca_pem.clone().into_bytes(),
        verify_hostname: false,
    });
    Target { credentials, tls, ..admin(server) }
}

/// Ironic-like data: a table with rows, some of them deleted (undo records for purge, and redo
/// log work past the last checkpoint).
pub async fn write_data(server: &MariaDb) -> anyhow::Result<()> {
    let mut conn = MySqlConnection::connect(&server.admin_url(None)).await?;
    conn.execute("CREATE DATABASE IF NOT EXISTS ironic").await?;
    conn.execute("CREATE TABLE IF NOT EXISTS ironic.nodes (id INT PRIMARY KEY, name VARCHAR(255)) ENGINE=InnoDB")
        .await?;
    for batch in 0..20 {
        let values: Vec<String> = (0..100).map(|i| format!("({}, 'node-{batch}-{i}')", batch * 100 + i)).collect();
        conn.execute(sqlx::AssertSqlSafe(format!("INSERT INTO ironic.nodes VALUES {}", values.join(",")))).await?;
    }
    conn.execute("DELETE FROM ironic.nodes WHERE id % 2 = 1").await?;
    conn.close().await?;
    Ok(())
}

/// A text value of a Secret.
pub async fn secret_text(client: &kube::Client, ns: &str, name: &str, key: &str) -> anyhow::Result<String> {
    let secret = Api::<Secret>::namespaced(client.clone(), ns).get(name).await?;
    let value = secret.data.and_then(|d| d.get(key).cloned());
    let value = value.ok_or_else(|| anyhow::anyhow!("Secret {name} has no key {key}"))?;
    Ok(String::from_utf8(value.0)?)
}

/// The maintenance account's credentials, as the operator stored them.
pub async fn maintenance(client: &kube::Client, ns: &str, secret: &str) -> anyhow::Result<Credentials> {
    let stored = Api::<Secret>::namespaced(client.clone(), ns).get(secret).await?;
    Ok(credentials::from_secret(&stored)?)
}

/// What `pod` gives the MariaDB server, as its kubelet would mount and pass it: the init file
/// and the serving certificate from the Secrets its volumes name, and the flags of its
/// container's arguments.
pub async fn pod_options(client: &kube::Client, ns: &str, pod: &Pod) -> anyhow::Result<ServerOptions> {
    let spec = pod.spec.clone().unwrap_or_default();
    let container = spec.containers.iter().find(|c| c.name == CONTAINER).cloned().unwrap_or_default();
    let args = container.args.unwrap_or_default();
    let has = |arg: &str| args.iter().any(|a| a == arg);
    let secret_at = |path: &str| {
        let mount = container.volume_mounts.iter().flatten().find(|m| m.mount_path == path)?;
        let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name)?;
        volume.secret.as_ref()?.secret_name.clone()
    };
    let init_sql = match secret_at(INIT_DIR) {
        Some(name) if has(&format!("--init-file={INIT_DIR}/{INIT_KEY}")) => {
            Some(secret_text(client, ns, &name, INIT_KEY).await?)
        }
        _ => None,
    };
    let tls = match secret_at(SERVER_TLS_DIR) {
        Some(name) if args.iter().any(|a| a.starts_with("--ssl-cert=")) => Some(ServedCertificate {
            cert_pem: secret_text(client, ns, &name, "tls.crt").await?,
            key_pem: secret_text(client, ns, &name, "tls.key").await?,
            ca_pem: secret_text(client, ns, &name, "ca.crt").await?,
        }),
        _ => None,
    };
    Ok(ServerOptions {
        init_sql,
        slow_shutdown: has("--innodb-fast-shutdown=0"),
        tls,
        require_secure_transport: has("--require-secure-transport=ON"),
    })
}

/// The status a kubelet reports for a MariaDB pod that started and is ready.
pub fn ready_status(image: &str) -> serde_json::Value {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    json!({"phase": "Running", "podIP": "10.244.9.9", "startTime": now,
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
        "initContainerStatuses": [{"name": operator::testing::database::clean_stop::INIT_CONTAINER, "image": image,
            "imageID": "simulated://", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0,
            "reason": "Completed", "startedAt": now, "finishedAt": now}}}],
        "containerStatuses": [{"name": CONTAINER, "image": image, "imageID": "simulated://",
            "ready": true, "restartCount": 0, "started": true, "state": {"running": {"startedAt": now}}}]})
}

/// The MariaDB pod's kubelet, played by the test (the pod simulator is told to leave the pod
/// Pending): a new pod stops the real server the way its predecessor's preStop hook does (a
/// clean shutdown), starts it again with what the new pod gives it ([`pod_options`]), and
/// reports the pod Running and Ready. The server's error log keeps every start and stop.
pub struct Kubelet {
    client: kube::Client,
    ns: String,
    pod: String,
    /// The options of every start, in order.
    pub starts: Vec<ServerOptions>,
}

impl Kubelet {
    pub fn new(client: kube::Client, ns: &str, pod: &str) -> Self {
        Self { client, ns: ns.to_string(), pod: pod.to_string(), starts: Vec::new() }
    }

    /// Serves a pod the kubelet has not started yet, if there is one; true when it did.
    pub async fn tick(&mut self, server: &mut MariaDb) -> anyhow::Result<bool> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let Some(pod) = pods.get_opt(&self.pod).await? else { return Ok(false) };
        let started = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref()).is_some();
        if started || pod.metadata.deletion_timestamp.is_some() {
            return Ok(false);
        }
        let image = pod.spec.as_ref().and_then(|s| s.containers.first()?.image.clone()).unwrap_or_default();
        let revision = pod.labels().get("controller-revision-hash").cloned().unwrap_or_default();
        println!(
            "kubelet: starting pod {} (uid {}, revision {revision}, {image})",
            pod.name_any(),
            pod.uid().unwrap_or_default()
        );
        let options = pod_options(&self.client, &self.ns, &pod).await?;
        if server.is_running() {
            server.shutdown().await?;
        }
        server.configure(&options)?;
        server.restart().await?;
        self.starts.push(options);
        let patch = json!({"status": ready_status(&image)});
        pods.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
        Ok(true)
    }
}

/// The kubelet at work beside a test that runs the operator: it serves every new MariaDB pod
/// until dropped. The server is shared with the test.
pub struct RunningKubelet {
    kubelet: std::sync::Arc<tokio::sync::Mutex<Kubelet>>,
    failure: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningKubelet {
    pub fn spawn(kubelet: Kubelet, server: std::sync::Arc<tokio::sync::Mutex<MariaDb>>) -> Self {
        let kubelet = std::sync::Arc::new(tokio::sync::Mutex::new(kubelet));
        let failure = std::sync::Arc::new(std::sync::Mutex::new(None));
        let (shared, failed) = (kubelet.clone(), failure.clone());
        let task = tokio::spawn(async move {
            loop {
                let result = {
                    let mut server = server.lock().await;
                    shared.lock().await.tick(&mut server).await
                };
                if let Err(e) = result {
                    eprintln!("the MariaDB pod's kubelet failed: {e:#}");
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{e:#}"));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self { kubelet, failure, task }
    }

    /// The options of every start so far, in order; fails if the kubelet stopped on an error.
    pub async fn starts(&self) -> anyhow::Result<Vec<ServerOptions>> {
        if let Some(failure) = self.failure.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            anyhow::bail!("the MariaDB pod's kubelet failed: {failure}");
        }
        Ok(self.kubelet.lock().await.starts.clone())
    }
}

impl Drop for RunningKubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}
