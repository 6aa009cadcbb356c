//! The managed MariaDB for real: the StatefulSet the operator renders runs ferrometal's MariaDB
//! images (`images/mariadb`: Debian bookworm's 10.11 and trixie's 11.8, an entrypoint of ours)
//! on a real node (containerd, kubelet, kube-proxy, CoreDNS; `scripts/node.sh`). Its probes,
//! its `preStop` hook, its init container (the clean-stop check) and the `mariadb-upgrade` Job
//! are the operator's own and really run; nothing plays the kubelet or the server.
//!
//! The operator is driven as `database/e2e.rs` drives it: `database::reconcile` in-process,
//! through a ledger scoped as the Ironic controller scopes it. Its own connections go to the
//! pod's address (the address override, followed to each new pod: this process is outside the
//! cluster); the Jobs inside reach the Service's name through CoreDNS. No Ironic runs (its
//! image is not built on this branch), so the assertions are on the database: the StatefulSet,
//! its pod, the operator's progress and `status.database`, and a row written through the server.
//!
//! The data volume is a `hostPath` PersistentVolume of the test's, owned by 999 (mysql), bound
//! by kube-controller-manager's binder; the claim is the StatefulSet's own.
//!
//! A third test runs the image alone, for the part of the official image's contract the
//! operator does not use (`images/mariadb/README.md`).

use crate::mariadb_common::secret_text;
use anyhow::{Context as _, ensure};
use crds::ironic::Ironic;
use crds::ironic::status::DatabaseUpgradeStep as Step;
use ferrometal_tests::node::{MARIADB_IMAGES, RealNode};
use ferrometal_tests::{ControlPlane, ControlPlaneConfig};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use operator::testing::database::clean_stop::INIT_CONTAINER;
use operator::testing::database::names::JOB_LABEL;
use operator::testing::database::status::reasons;
use operator::testing::database::{self, Address, Config, DatabaseOutcome};
use operator::testing::kit::{Context, Ledger, Notices, Progress};
use serde_json::json;
use sqlx::mysql::{MySqlConnectOptions, MySqlSslMode};
use sqlx::{ConnectOptions, Connection, Executor, MySqlConnection};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const POD: &str = "ironic-mariadb-0";
const STATEFUL_SET: &str = "ironic-mariadb";
const MARIADB_UID: u32 = 999;
const POLL: Duration = Duration::from_millis(500);

/// A control plane with a real node holding both images, a namespace and a volume for the data.
struct Cluster {
    cp: ControlPlane,
    ns: String,
    ctx: Context,
    data: tempfile::TempDir,
}

fn old() -> (&'static str, &'static str) {
    (MARIADB_IMAGES[0].0, "10.11")
}

fn new() -> (&'static str, &'static str) {
    (MARIADB_IMAGES[1].0, "11.8")
}

impl Cluster {
    async fn start(prefix: &str) -> anyhow::Result<Self> {
        let start = Instant::now();
        let mut cp = ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }).await?;
        cp.install_crds(&crds::all_crds()).await?;
        let ns = cp.namespace(prefix).await?;
        eprintln!("control plane and node up in {:?} (the node lock included)", start.elapsed());
        let node = cp.node().context("the real node")?;
        let start = Instant::now();
        for (_, archive) in MARIADB_IMAGES {
            node.import(&RealNode::cached_image(archive)?)?;
        }
        eprintln!("both MariaDB images imported in {:?}", start.elapsed());
        // The data directory: the server runs as mysql (999) from its first instruction.
        let data = ferrometal_tests::node::host_path_volume(&cp.client(), &format!("{ns}-data"), MARIADB_UID).await?;
        let ctx = crate::common::kit_context(cp.client(), &ns, format!("database-real-{ns}"));
        Ok(Self { cp, ns, ctx, data })
    }

    /// [`Self::start`], and the Ironic with a managed database of the older image.
    async fn with_database(prefix: &str) -> anyhow::Result<Self> {
        let cluster = Self::start(prefix).await?;
        let (image, version) = old();
        let ironic = json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
            "spec": {"database": {"managed": {"version": version, "image": image}}}});
        cluster.api::<Ironic>().create(&PostParams::default(), &serde_json::from_value(ironic)?).await?;
        Ok(cluster)
    }

    fn node(&self) -> anyhow::Result<&RealNode> {
        self.cp.node().context("the real node")
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.cp.client(), &self.ns)
    }

    async fn pod(&self) -> anyhow::Result<Option<Pod>> {
        Ok(self.api::<Pod>().get_opt(POD).await?)
    }

    /// The MariaDB pod's address, once it has one.
    async fn pod_ip(&self) -> anyhow::Result<Option<String>> {
        Ok(self.pod().await?.and_then(|p| p.status?.pod_ip))
    }

    /// One reconcile of the database as the Ironic controller makes it, its connections sent to
    /// the pod's current address.
    async fn reconcile(&self) -> anyhow::Result<DatabaseOutcome> {
        // No address yet: a port nothing listens on, so the check waits as it would.
        let host = self.pod_ip().await?.unwrap_or_else(|| "127.0.0.1".into());
        let port = if host == "127.0.0.1" { 9 } else { 3306 };
        let config = Config {
            address_override: Some(Address { host, port }),
            job_backoff_limit: 0,
            step_timeout: Duration::from_secs(240),
            ..Config::default()
        };
        let ironic = self.api::<Ironic>().get("ironic").await?;
        let scope = [(crds::ironic::IRONIC_LABEL.to_string(), ironic.name_any())].into();
        let ledger = Ledger::new(self.ctx.client.clone(), &ironic, scope)?
            .scoped(operator::testing::ironic::names::database_scope());
        let mut notices = Notices::default();
        let outcome = database::reconcile(&ledger, &ironic, &config, &mut notices).await?;
        self.ctx.publisher("ironic").publish(&ironic, notices).await;
        Ok(outcome)
    }

    /// Reconciles until `done` holds of the outcome.
    async fn reconcile_until(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(&DatabaseOutcome) -> bool,
    ) -> anyhow::Result<DatabaseOutcome> {
        let deadline = Instant::now() + limit;
        loop {
            let outcome = self.reconcile().await?;
            if done(&outcome) {
                return Ok(outcome);
            }
            ensure!(Instant::now() < deadline, "{what}: still {:?} after {limit:?}", outcome.progress);
            tokio::time::sleep(POLL).await;
        }
    }

    async fn set_version(&self, (image, version): (&str, &str)) -> anyhow::Result<()> {
        let patch = json!({"spec": {"database": {"managed": {"version": version, "image": image}}}});
        self.api::<Ironic>().patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        Ok(())
    }

    /// Ironic's account on the server, as the operator generated it, over TLS (the server
    /// requires it) to the pod's address.
    async fn connect(&self) -> anyhow::Result<MySqlConnection> {
        let secret = "ironic-mariadb-credentials";
        let user = secret_text(&self.cp.client(), &self.ns, secret, "username").await?;
        let password = secret_text(&self.cp.client(), &self.ns, secret, "password").await?;
        let host = self.pod_ip().await?.context("the MariaDB pod's address")?;
        let options = MySqlConnectOptions::new()
            .host(&host)
            .port(3306)
            .username(&user)
            .password(&password)
            .database("ironic")
            .ssl_mode(MySqlSslMode::Required);
        Ok(options.connect().await?)
    }

    /// A row written through the server, before any change.
    async fn write_row(&self) -> anyhow::Result<()> {
        let mut conn = self.connect().await?;
        conn.execute("CREATE TABLE survivors (id INT PRIMARY KEY, name VARCHAR(64)) ENGINE=InnoDB").await?;
        conn.execute("INSERT INTO survivors VALUES (1, 'written at 10.11')").await?;
        conn.close().await?;
        Ok(())
    }

    /// The server's version and the row, read through it.
    async fn read_row(&self) -> anyhow::Result<(String, String)> {
        let mut conn = self.connect().await?;
        let (version,): (String,) = sqlx::query_as("SELECT VERSION()").fetch_one(&mut conn).await?;
        let (name,): (String,) = sqlx::query_as("SELECT name FROM survivors WHERE id = 1").fetch_one(&mut conn).await?;
        conn.close().await?;
        Ok((version, name))
    }

    /// A file of the data directory, as the pods left it.
    fn data_file(&self, name: &str) -> PathBuf {
        self.data.path().join(name)
    }

    /// Reconciles until the managed database is available, and checks it runs `image` on the
    /// real node, ready through its own probe.
    async fn until_available(&self, image: &str) -> anyhow::Result<(DatabaseOutcome, Duration)> {
        let start = Instant::now();
        let outcome = self
            .reconcile_until("the managed database available", Duration::from_secs(240), |o| o.progress.is_done())
            .await?;
        let took = start.elapsed();
        let pod = self.pod().await?.context("the MariaDB pod")?;
        let node = self.node()?.name().to_string();
        assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.clone()), Some(node), "on the real node");
        let status = pod.status.clone().unwrap_or_default();
        let main = status.container_statuses.iter().flatten().find(|c| c.name == "mariadb").context("mariadb")?;
        assert!(main.ready && main.state.as_ref().and_then(|s| s.running.as_ref()).is_some(), "{main:?}");
        assert_eq!(main.image.trim_start_matches("docker.io/library/"), image);
        let sts = self.api::<StatefulSet>().get(STATEFUL_SET).await?;
        assert_eq!(sts.status.and_then(|s| s.ready_replicas), Some(1));
        Ok((outcome, took))
    }
}

fn server_version(outcome: &DatabaseOutcome) -> String {
    outcome.status.as_ref().and_then(|s| s.server_version.clone()).unwrap_or_default()
}

fn upgrade_step(outcome: &DatabaseOutcome) -> Option<Step> {
    outcome.status.as_ref().and_then(|s| s.upgrade.as_ref()).and_then(|u| u.step)
}

/// How long the pod `uid` took from its deletion to its end.
async fn old_pod_stop(pods: Api<Pod>, uid: String) -> anyhow::Result<Duration> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut deleted = None;
    loop {
        let pod = pods.get_opt(POD).await?.filter(|p| p.uid().as_deref() == Some(uid.as_str()));
        match (&pod, deleted) {
            (None, Some(at)) => return Ok(Instant::now().duration_since(at)),
            (None, None) => anyhow::bail!("the old pod went before it was seen terminating"),
            (Some(p), None) if p.metadata.deletion_timestamp.is_some() => deleted = Some(Instant::now()),
            _ => {}
        }
        ensure!(Instant::now() < deadline, "the old pod still there after 300 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Events the kubelet reports when a preStop hook failed.
async fn failed_hooks(cluster: &Cluster) -> anyhow::Result<Vec<String>> {
    let events = cluster.api::<Event>().list(&ListParams::default()).await?;
    Ok(events
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedPreStopHook"))
        .map(|e| e.message.unwrap_or_default())
        .collect())
}

#[tokio::test]
async fn a_managed_mariadb_runs_on_the_node_and_changes_series_through_its_slow_stop() -> anyhow::Result<()> {
    let cluster = Cluster::with_database("db-real").await?;
    let (outcome, took) = cluster.until_available(old().0).await?;
    eprintln!("MariaDB 10.11 available in {took:?}");
    assert!(server_version(&outcome).starts_with("10.11."), "{:?}", outcome.status);
    cluster.write_row().await?;
    let old_uid = cluster.pod().await?.context("the old pod")?.uid();

    cluster.set_version(new()).await?;
    let start = Instant::now();
    let stop = tokio::spawn(old_pod_stop(cluster.api::<Pod>(), old_uid.clone().context("the old pod's uid")?));
    let outcome = cluster
        .reconcile_until("the version change", Duration::from_secs(300), |o| {
            o.progress.is_done() && upgrade_step(o) == Some(Step::Completed)
        })
        .await?;
    eprintln!("MariaDB 10.11 to 11.8 in {:?}", start.elapsed());
    // The old pod went well within its grace period (300 s): its hook's slow stop, not a kill.
    let stopped_in = stop.await??;
    eprintln!("the old pod went {stopped_in:?} after its deletion");
    assert!(stopped_in < Duration::from_secs(60), "{stopped_in:?}");
    assert!(server_version(&outcome).starts_with("11.8."), "{:?}", outcome.status);

    // The old server stopped through its hook (the kubelet reports none failed), and the new
    // series' check found the directory cleanly stopped by 10.11 before 11.8 opened it.
    let pod = cluster.pod().await?.context("the new pod")?;
    assert_ne!(pod.uid(), old_uid);
    assert_eq!(failed_hooks(&cluster).await?, Vec::<String>::new());
    let params = LogParams { container: Some(INIT_CONTAINER.into()), ..Default::default() };
    let check = cluster.api::<Pod>().logs(POD, &params).await?;
    assert!(check.contains("stopped cleanly by MariaDB 10.11; MariaDB 11.8 may open it"), "{check}");
    assert_eq!(std::fs::read_to_string(cluster.data_file(".ferrometal-series"))?.trim(), "11.8");
    // mariadb-upgrade ran as a Job of the new image, against the new server.
    let upgrades = ListParams::default().labels(&format!("{JOB_LABEL}=mariadb-upgrade"));
    let jobs = cluster.api::<Job>().list(&upgrades).await;
    let succeeded: i32 = jobs?.items.iter().filter_map(|j| j.status.as_ref()?.succeeded).sum();
    assert_eq!(succeeded, 1, "one mariadb-upgrade Job succeeded");

    let (version, row) = cluster.read_row().await?;
    assert!(version.starts_with("11.8."), "{version}");
    assert_eq!(row, "written at 10.11");
    Ok(())
}

/// Makes the old pod's preStop hook wait: its socket (`/run/mysqld/mysqld.sock` in the
/// container, reached through `/proc/PID/root`) is moved aside and a listener that never
/// answers takes its place. The server keeps serving on the network (the operator's checks),
/// the hook's `mariadb` client hangs on the listener, and so the kill lands before any
/// shutdown: what a slow shutdown cut short by its grace period leaves.
struct HeldSocket {
    path: PathBuf,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl HeldSocket {
    fn hold(pid: u32) -> anyhow::Result<Self> {
        let path = PathBuf::from(format!("/proc/{pid}/root/run/mysqld/mysqld.sock"));
        std::fs::rename(&path, path.with_extension("sock.moved"))?;
        let listener = tokio::net::UnixListener::bind(&path)?;
        // The hook runs as mysql: a socket is connected to only with write permission on it.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        Ok(Self { path, accepted, task })
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for HeldSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The container id of the pod's `mariadb` container.
fn container_id(pod: &Pod) -> anyhow::Result<String> {
    let status = pod.status.as_ref().context("pod status")?;
    let main = status.container_statuses.iter().flatten().find(|c| c.name == "mariadb").context("mariadb")?;
    main.container_id.clone().context("a container id")
}

fn exists(path: &Path) -> bool {
    path.try_exists().unwrap_or(false)
}

#[tokio::test]
async fn a_server_killed_mid_change_is_refused_by_the_new_series_and_nothing_is_lost() -> anyhow::Result<()> {
    let cluster = Cluster::with_database("db-real-kill").await?;
    cluster.until_available(old().0).await?;
    cluster.write_row().await?;
    let old_pod = cluster.pod().await?.context("the old pod")?;
    let id = container_id(&old_pod)?;
    let pid = cluster.node()?.container_pid(&id)?;
    let held = HeldSocket::hold(pid)?;

    // The change: the flag read over the network, the roll, and the old pod terminating with
    // its hook stuck on the held socket.
    cluster.set_version(new()).await?;
    cluster.reconcile_until("the roll", Duration::from_secs(20), |o| upgrade_step(o) == Some(Step::RollingOut)).await?;
    let pods = cluster.api::<Pod>();
    let deadline = Instant::now() + Duration::from_secs(30);
    let before = loop {
        let pod = pods.get_opt(POD).await?.filter(|p| p.uid() == old_pod.uid());
        if pod.and_then(|p| p.metadata.deletion_timestamp).is_some() {
            break held.accepted();
        }
        ensure!(Instant::now() < deadline, "the old pod was not deleted for the roll");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The hook's client is on the held socket (readiness probes connect too, every 10 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    while held.accepted() == before {
        ensure!(Instant::now() < deadline, "the preStop hook never reached the socket");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.node()?.ctr(&["tasks", "kill", "--signal", "SIGKILL", id.trim_start_matches("containerd://")])?;
    drop(held);
    assert!(exists(&cluster.data_file("ibtmp1")), "a killed server leaves its temporary tablespace");

    // The new series refuses the directory: the check's words, the way out.
    let start = Instant::now();
    let outcome = cluster
        .reconcile_until(
            "the refusal",
            Duration::from_secs(180),
            |o| matches!(&o.progress, Progress::Failed { reason, .. } if reason == reasons::NOT_CLEANLY_STOPPED),
        )
        .await?;
    eprintln!("refused {:?} after the kill", start.elapsed());
    let Progress::Failed { message, .. } = &outcome.progress else { unreachable!("matched above") };
    // ibtmp1 is the sign a kill always leaves; records after the checkpoint only when InnoDB
    // wrote since its last checkpoint, which depends on its background flushing.
    for part in [
        "the old server did not stop cleanly",
        "ibtmp1 is still there",
        "set spec.database.managed back to the old version (ferrometal.local/mariadb:10.11) and delete pod ironic-mariadb-0",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let upgrade = outcome.status.as_ref().and_then(|s| s.upgrade.clone()).context("status.database.upgrade")?;
    assert_eq!((upgrade.step, upgrade.failed_step), (Some(Step::Failed), Some(Step::RollingOut)));
    let pod = cluster.pod().await?.context("the new pod")?;
    let status = pod.status.clone().unwrap_or_default();
    let main = status.container_statuses.iter().flatten().find(|c| c.name == "mariadb").context("mariadb")?;
    assert!(main.state.as_ref().and_then(|s| s.running.as_ref()).is_none(), "11.8 never started: {main:?}");
    assert!(main.last_state.as_ref().and_then(|s| s.terminated.as_ref()).is_none(), "11.8 never ran: {main:?}");
    // Nothing was touched: the directory still belongs to 10.11, its crash still there.
    assert_eq!(std::fs::read_to_string(cluster.data_file(".ferrometal-series"))?.trim(), "10.11");
    assert!(exists(&cluster.data_file("ibtmp1")));

    // What the message says: the old version back, the refused pod deleted. 10.11 recovers.
    cluster.set_version(old()).await?;
    pods.delete(POD, &DeleteParams::default()).await?;
    let start = Instant::now();
    let (outcome, _) = cluster.until_available(old().0).await?;
    eprintln!("10.11 back and available {:?} after the pod was deleted", start.elapsed());
    assert!(server_version(&outcome).starts_with("10.11."), "{:?}", outcome.status);
    let (version, row) = cluster.read_row().await?;
    assert!(version.starts_with("10.11."), "{version}");
    assert_eq!(row, "written at 10.11");
    Ok(())
}

/// The image's own contract, beyond what the operator sets: started as root (it drops to
/// mysql), the root password from a file (`MARIADB_ROOT_PASSWORD_FILE`), `root@'%'` by default,
/// a user from a password hash (`MARIADB_PASSWORD_HASH`), and `/docker-entrypoint-initdb.d`
/// with an SQL file and a sourced shell script.
#[tokio::test]
async fn the_image_initialises_a_new_directory_from_the_official_images_variables() -> anyhow::Result<()> {
    let cluster = Cluster::start("db-real-image").await?;
    let root_password = r"r'oo\t";
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "root"},
        "stringData": {"password": root_password}});
    cluster
        .api::<k8s_openapi::api::core::v1::Secret>()
        .create(&PostParams::default(), &serde_json::from_value(secret)?)
        .await?;
    let initdb = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "initdb"},
        "data": {
            "01-table.sql": "CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (42);",
            // Not executable in a ConfigMap volume: sourced, with root's password in MYSQL_PWD.
            "02-row.sh": "mariadb --user=root --execute='INSERT INTO app.t VALUES (43)'\n"}});
    cluster
        .api::<k8s_openapi::api::core::v1::ConfigMap>()
        .create(&PostParams::default(), &serde_json::from_value(initdb)?)
        .await?;
    let hash = operator::testing::database::account::password_hash(
        &operator::testing::database::credentials::Password::new("apppass"),
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain-mariadb"},
        "spec": {"containers": [{"name": "mariadb", "image": old().0, "imagePullPolicy": "Never",
            "env": [
                {"name": "MARIADB_ROOT_PASSWORD_FILE", "value": "/run/secrets/root/password"},
                {"name": "MARIADB_DATABASE", "value": "app"},
                {"name": "MARIADB_USER", "value": "appuser"},
                {"name": "MARIADB_PASSWORD_HASH", "value": hash}],
            "volumeMounts": [
                {"name": "data", "mountPath": "/var/lib/mysql"},
                {"name": "root", "mountPath": "/run/secrets/root", "readOnly": true},
                {"name": "initdb", "mountPath": "/docker-entrypoint-initdb.d", "readOnly": true}]}],
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "root", "secret": {"secretName": "root"}},
                {"name": "initdb", "configMap": {"name": "initdb"}}]}});
    cluster.api::<Pod>().create(&PostParams::default(), &serde_json::from_value(pod)?).await?;

    let connect = |user: &'static str, password: &'static str, database: Option<&'static str>| {
        let pods = cluster.api::<Pod>();
        async move {
            let ip = pods.get("plain-mariadb").await?.status.and_then(|s| s.pod_ip).context("an address")?;
            let mut options = MySqlConnectOptions::new().host(&ip).port(3306).username(user).password(password);
            if let Some(database) = database {
                options = options.database(database);
            }
            anyhow::Ok(options.ssl_mode(MySqlSslMode::Disabled).connect().await?)
        }
    };
    let start = Instant::now();
    let mut app = loop {
        match connect("appuser", "apppass", Some("app")).await {
            Ok(conn) => break conn,
            Err(e) => ensure!(start.elapsed() < Duration::from_secs(120), "no server: {e:#}"),
        }
        tokio::time::sleep(POLL).await;
    };
    eprintln!("initialised and serving in {:?}", start.elapsed());
    let rows: Vec<(i32,)> = sqlx::query_as("SELECT id FROM t ORDER BY id").fetch_all(&mut app).await?;
    assert_eq!(rows, vec![(42,), (43,)], "the SQL file, then the sourced script");
    app.close().await?;
    // root from the file, also over the network (MARIADB_ROOT_HOST unset is '%').
    let mut root = connect("root", r"r'oo\t", None).await?;
    let accounts: Vec<(String, String)> =
        sqlx::query_as("SELECT CAST(User AS CHAR), CAST(Host AS CHAR) FROM mysql.user ORDER BY User, Host")
            .fetch_all(&mut root)
            .await?;
    let names: Vec<String> = accounts.iter().map(|(u, h)| format!("{u}@{h}")).collect();
    assert_eq!(names, ["appuser@%", "mariadb.sys@localhost", "root@%", "root@localhost"]);
    let (user,): (String,) = sqlx::query_as("SELECT CAST(USER() AS CHAR)").fetch_one(&mut root).await?;
    assert!(user.starts_with("root@"), "{user}");
    root.close().await?;
    // Started as root, the server runs as mysql (999).
    let pod = cluster.api::<Pod>().get("plain-mariadb").await?;
    let pid = cluster.node()?.container_pid(&container_id(&pod)?)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let uid = status.lines().find(|l| l.starts_with("Uid:")).context("Uid")?;
    assert_eq!(uid.split_whitespace().nth(1), Some("999"), "{uid}");
    Ok(())
}
