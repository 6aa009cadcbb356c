//! The managed database end to end, on the harness apiserver: `database::reconcile` is driven
//! directly, through a ledger scoped as the Ironic controller scopes it and with its Events
//! published after each reconcile (the controller itself is not needed), the StatefulSet and Job
//! controllers and the pod simulator play the cluster, and the operator's sqlx connections go
//! to the harness's real MariaDB through the address override (the Service's name does not
//! resolve here).
//!
//! The real server stands in for whatever the StatefulSet's pod would run. The test plays the
//! MariaDB pod's kubelet (`crate::mariadb_common::Kubelet`): each new pod stops the server cleanly
//! and starts it again with what the pod gives it (its init file, its certificate, its flags,
//! from the Secrets it mounts), so the accounts and TLS are the operator's own; the server's
//! version never changes. What is proven is what the operator asks of Kubernetes and of the
//! server, and in which order.

use crate::common::{Env, POLL};
use crate::mariadb_common::{Kubelet, secret_text};
use crds::ironic::Ironic;
use crds::ironic::status::{DatabaseMode, DatabaseUpgradeStep as Step};
use ferrometal_tests::PodFate;
use ferrometal_tests::mariadb::{ADMIN_PASSWORD, ADMIN_USER, MariaDb, MariaDbConfig};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use operator::testing::database::account::{MAINTENANCE_USER, UPGRADE_USER};
use operator::testing::database::names::Names;
use operator::testing::database::{
    self, Address, Config, DatabaseOutcome, RETRY_ANNOTATION, SchemaPlan, SchemaRevision,
};
use operator::testing::kit::ledger::Written;
use operator::testing::kit::{Context, Ledger, Notices, Progress};
use serde_json::json;
use sqlx::{Connection, MySqlConnection};
use std::time::{Duration, Instant};

const IRONIC_PASSWORD: &str = "ironic-e2e-password";
const OLD_IMAGE: &str = "docker.io/library/mariadb:10.6";
const NEW_IMAGE: &str = "docker.io/library/mariadb:10.11";
const STEP: Duration = Duration::from_secs(120);

struct Harness {
    env: Env,
    db: tokio::sync::Mutex<MariaDb>,
    kubelet: tokio::sync::Mutex<Kubelet>,
    ctx: Context,
    config: Config,
}

impl Harness {
    /// A control plane, a MariaDB, and an Ironic with a managed database of MariaDB 10.6.
    /// Ironic's and root's Secrets are created up front with the harness server's
    /// credentials: the operator keeps credentials it finds (as it would after a restore), and
    /// this way the real server knows them. The maintenance account and TLS are the
    /// operator's: the server takes them from the pod the test starts.
    async fn start(prefix: &str, backup: bool) -> anyhow::Result<Self> {
        let env = Env::start(prefix).await?;
        // The test is the MariaDB pod's kubelet.
        env.sim.set_fate_by_prefix(&env.ns, "ironic-mariadb-0", PodFate::Pending);
        let kubelet = Kubelet::new(env.client(), &env.ns, "ironic-mariadb-0");
        let db = MariaDb::start(MariaDbConfig::default()).await?;
        db.create_database("ironic", "ironic", IRONIC_PASSWORD).await?;
        let names = Names::new("ironic");
        secret(&env, &names.admin(), ADMIN_USER, ADMIN_PASSWORD).await?;
        secret(&env, &names.credentials(), "ironic", IRONIC_PASSWORD).await?;
        let mut managed = json!({"version": "10.6"});
        if backup {
            managed["backup"] = json!({"enabled": true, "keep": 2});
        }
        let ironic = json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic"}, "spec": {"database": {"managed": managed}}});
        ironics(&env).create(&PostParams::default(), &serde_json::from_value(ironic)?).await?;
        let ctx = crate::common::kit_context(env.client(), &env.ns, format!("database-e2e-{}", env.ns));
        let config = Config {
            address_override: Some(Address { host: "127.0.0.1".into(), port: db.port() }),
            job_backoff_limit: 0,
            step_timeout: Duration::from_secs(120),
            ..Config::default()
        };
        let (db, kubelet) = (tokio::sync::Mutex::new(db), tokio::sync::Mutex::new(kubelet));
        Ok(Self { env, db, kubelet, ctx, config })
    }

    /// One reconcile, then the kubelet's turn: a new MariaDB pod starts the server.
    async fn reconcile(&self) -> anyhow::Result<(DatabaseOutcome, Vec<Written>)> {
        let reconciled = reconcile_once(&self.ctx, &self.ironic().await?, &self.config).await?;
        let mut db = self.db.lock().await;
        self.kubelet.lock().await.tick(&mut db).await?;
        Ok(reconciled)
    }

    async fn ironic(&self) -> anyhow::Result<Ironic> {
        Ok(ironics(&self.env).get("ironic").await?)
    }

    /// Reconciles (as the Ironic controller will) until `done` holds, calling `observe` after
    /// every reconcile.
    async fn reconcile_until(
        &self,
        what: &str,
        mut observe: impl AsyncFnMut(&DatabaseOutcome, &Ironic) -> anyhow::Result<()>,
        done: impl Fn(&DatabaseOutcome) -> bool,
    ) -> anyhow::Result<(DatabaseOutcome, Vec<Written>)> {
        let deadline = Instant::now() + STEP;
        loop {
            let (outcome, written) = self.reconcile().await?;
            observe(&outcome, &self.ironic().await?).await?;
            if done(&outcome) {
                return Ok((outcome, written));
            }
            anyhow::ensure!(Instant::now() < deadline, "{what}: still {:?} after {STEP:?}", outcome.progress);
            tokio::time::sleep(POLL).await;
        }
    }

    async fn until_open(&self) -> anyhow::Result<(DatabaseOutcome, Vec<Written>)> {
        self.reconcile_until("the database becomes ready", async |_, _| Ok(()), |o| o.progress.is_done()).await
    }

    async fn set_version(&self, version: &str) -> anyhow::Result<()> {
        let patch = json!({"spec": {"database": {"managed": {"version": version}}}});
        ironics(&self.env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        Ok(())
    }

    /// `innodb_fast_shutdown` on the real server, read independently of the operator.
    async fn fast_shutdown(&self) -> anyhow::Result<String> {
        let url = self.db.lock().await.admin_url(None);
        let mut conn = MySqlConnection::connect(&url).await?;
        let (value,): (String,) =
            sqlx::query_as("SELECT CAST(@@GLOBAL.innodb_fast_shutdown AS CHAR)").fetch_one(&mut conn).await?;
        conn.close().await?;
        Ok(value)
    }

    /// The real server's accounts named `user`, read independently of the operator.
    async fn accounts_named(&self, user: &str) -> anyhow::Result<Vec<String>> {
        let url = self.db.lock().await.admin_url(None);
        let mut conn = MySqlConnection::connect(&url).await?;
        let hosts: Vec<(String,)> = sqlx::query_as("SELECT CAST(Host AS CHAR) FROM mysql.user WHERE User = ?")
            .bind(user)
            .fetch_all(&mut conn)
            .await?;
        conn.close().await?;
        Ok(hosts.into_iter().map(|(h,)| h).collect())
    }

    /// The init file the operator gives the server now (what its next start applies).
    async fn init_file(&self) -> anyhow::Result<String> {
        secret_text(&self.env.client(), &self.env.ns, "ironic-mariadb-init", "init.sql").await
    }
}

/// One reconcile of the database as the Ironic controller makes it: a ledger for the Ironic in
/// the database's label scope, and the Events published afterwards. Returns what it wrote.
async fn reconcile_once(
    ctx: &Context,
    ironic: &Ironic,
    config: &Config,
) -> anyhow::Result<(DatabaseOutcome, Vec<Written>)> {
    let scope = [(crds::ironic::IRONIC_LABEL.to_string(), ironic.name_any())].into();
    let ledger =
        Ledger::new(ctx.client.clone(), ironic, scope)?.scoped(operator::testing::ironic::names::database_scope());
    let mut notices = Notices::default();
    let outcome = database::reconcile(&ledger, ironic, config, &mut notices).await?;
    ctx.publisher("ironic").publish(ironic, notices).await;
    Ok((outcome, ledger.written()))
}

fn ironics(env: &Env) -> Api<Ironic> {
    Api::namespaced(env.client(), &env.ns)
}

fn api<K>(env: &Env) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(env.client(), &env.ns)
}

async fn secret(env: &Env, name: &str, username: &str, password: &str) -> anyhow::Result<()> {
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        data: Some(
            [("username", username), ("password", password)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Default::default()
    };
    api::<Secret>(env).create(&PostParams::default(), &secret).await?;
    Ok(())
}

fn sts_image(sts: &StatefulSet) -> Option<String> {
    sts.spec.as_ref()?.template.spec.as_ref()?.containers.first()?.image.clone()
}

fn job_complete(job: &Job) -> bool {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Complete" && c.status == "True")
}

#[tokio::test]
async fn managed_mode_renders_the_statefulset_service_secrets_and_claim() -> anyhow::Result<()> {
    let h = Harness::start("db-managed", false).await?;
    let spec_before = serde_json::to_value(&h.ironic().await?.spec)?;
    let (outcome, written) = h.until_open().await?;
    let ns = &h.env.ns;

    // The StatefulSet: one replica, the data claim template, the slow-shutdown hook.
    let sts = api::<StatefulSet>(&h.env).get("ironic-mariadb").await?;
    let spec = sts.spec.clone().expect("spec");
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.service_name.as_deref(), Some("ironic-mariadb"));
    assert_eq!(sts_image(&sts).as_deref(), Some(OLD_IMAGE));
    let pod = spec.template.spec.expect("pod");
    assert_eq!(pod.termination_grace_period_seconds, Some(300));
    let hook =
        pod.containers[0].lifecycle.clone().and_then(|l| l.pre_stop).and_then(|p| p.exec).and_then(|e| e.command);
    let hook = hook.unwrap_or_default().join(" ");
    assert!(hook.contains("SET GLOBAL innodb_fast_shutdown = 0") && hook.contains("shutdown"), "{hook}");
    let templates = spec.volume_claim_templates.expect("a claim template");
    assert_eq!(templates[0].metadata.name.as_deref(), Some("data"));
    // The StatefulSet controller made the claim from it.
    let claim = api::<PersistentVolumeClaim>(&h.env).get("data-ironic-mariadb-0").await?;
    let size = claim.spec.and_then(|s| s.resources).and_then(|r| r.requests).and_then(|r| r.get("storage").cloned());
    assert_eq!(size.map(|q| q.0), Some("10Gi".to_string()));

    // The headless Service.
    let service = api::<Service>(&h.env).get("ironic-mariadb").await?;
    let service_spec = service.spec.expect("spec");
    assert_eq!(service_spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(service_spec.ports.unwrap_or_default()[0].port, 3306);

    // The credentials the operator found are kept, and now owned by the Ironic.
    let credentials = api::<Secret>(&h.env).get("ironic-mariadb-credentials").await?;
    let password = credentials.data.as_ref().and_then(|d| d.get("password")).map(|p| p.0.clone());
    assert_eq!(password.as_deref(), Some(IRONIC_PASSWORD.as_bytes()));
    assert!(credentials.metadata.owner_references.unwrap_or_default().iter().any(|o| o.kind == "Ironic"));

    // What the Ironic controller gets: TLS by default, verified with the operator's CA.
    let connection = outcome.connection.clone().expect("a connection");
    assert_eq!(connection.host, format!("ironic-mariadb.{ns}.svc.cluster.local"));
    assert_eq!(connection.credentials_secret, "ironic-mariadb-credentials");
    assert!(connection.managed);
    assert_eq!(connection.ca_secret(), Some("ironic-mariadb-ca"), "Ironic's pods mount the CA");
    assert_eq!(connection.host_with_port(), format!("ironic-mariadb.{ns}.svc.cluster.local"), "the builders' seam");
    assert_eq!(outcome.schema, Some(SchemaRevision::Missing));
    assert_eq!(outcome.schema_plan(None, "38.0"), Some(SchemaPlan::Create));
    let condition = outcome.condition.clone().expect("DatabaseReady");
    assert_eq!((condition.type_.as_str(), condition.status.as_str()), ("DatabaseReady", "True"));
    assert!(condition.message.contains("MariaDB 10.11"), "{}", condition.message);
    assert!(condition.message.contains("over verified TLS"), "{}", condition.message);
    for kind in ["StatefulSet", "Service", "Secret"] {
        assert!(written.iter().any(|w| w.kind == kind), "{kind} applied: {written:?}");
    }

    // A default managed database is served with TLS and requires it: the pod's server (its
    // certificate from the operator's Secret) refuses clear text, and Ironic's own stack
    // (ironic-dbsync: oslo.db, PyMySQL) connects with the CA Ironic's pods mount, as
    // ironic-image builds its URL, verifying the server and its name.
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert!(args.contains(&"--require-secure-transport=ON".to_string()), "{args:?}");
    let served = h.kubelet.lock().await.starts.last().cloned().expect("the kubelet started the pod");
    let served = served.tls.expect("the pod serves TLS");
    let client_ca = secret_text(&h.env.client(), ns, "ironic-mariadb-ca", "tls.crt").await?;
    assert_eq!(client_ca, served.ca_pem, "Ironic's CA is the one that signed what the server serves");
    let plain = operator::testing::database::check::Target {
        host: "127.0.0.1".into(),
        port: h.db.lock().await.port(),
        database: Some("ironic".into()),
        credentials: operator::testing::database::credentials::Credentials {
            username: "ironic".into(),
            password: operator::testing::database::credentials::Password::new(IRONIC_PASSWORD),
        },
        tls: operator::testing::database::check::Tls::Disabled,
        timeout: Duration::from_secs(10),
    };
    let refused = operator::testing::database::check::check(&plain, false).await.expect_err("clear text");
    assert_eq!(refused.reason(), "TLSRequired", "{refused}");
    let db = h.db.lock().await;
    assert!(db.ironic_url("ironic", "ironic", IRONIC_PASSWORD).contains("ssl_ca="));
    db.ironic_dbsync("ironic", "ironic", IRONIC_PASSWORD, "create_schema")?;
    drop(db);

    // root on the socket only: the pod's init file made the maintenance account and left no
    // network entry of root.
    assert_eq!(h.accounts_named("root").await?, ["localhost"]);
    assert_eq!(h.accounts_named(MAINTENANCE_USER).await?, ["%"]);
    let env_of = |name: &str| pod.containers[0].env.iter().flatten().find(|e| e.name == name).cloned();
    assert_eq!(env_of("MARIADB_ROOT_HOST").and_then(|e| e.value).as_deref(), Some("localhost"));

    // status.database, written by the module itself; spec untouched.
    let ironic = h.ironic().await?;
    let db = ironic.status.and_then(|s| s.database).expect("status.database");
    assert_eq!(db.mode, Some(DatabaseMode::Managed));
    assert_eq!(db.credentials_secret_name.as_deref(), Some("ironic-mariadb-credentials"));
    assert_eq!(db.admin_secret_name.as_deref(), Some("ironic-mariadb-admin"));
    assert_eq!(db.maintenance_secret_name.as_deref(), Some("ironic-mariadb-maintenance"));
    assert_eq!(db.ca_secret_name.as_deref(), Some("ironic-mariadb-ca"));
    assert_eq!(db.stateful_set_name.as_deref(), Some("ironic-mariadb"));
    assert_eq!(db.image.as_deref(), Some(OLD_IMAGE));
    assert!(db.server_version.is_some_and(|v| v.starts_with("10.11.")));
    assert_eq!(db.upgrade, None);
    assert_eq!(serde_json::to_value(&ironic.spec)?, spec_before, "the spec belongs to the user");
    Ok(())
}

#[tokio::test]
async fn a_version_bump_runs_the_ordered_steps() -> anyhow::Result<()> {
    let h = Harness::start("db-bump", true).await?;
    h.until_open().await?;
    assert_eq!(h.fast_shutdown().await?, "0", "the pod starts MariaDB with --innodb-fast-shutdown=0");
    assert!(h.accounts_named(UPGRADE_USER).await?.is_empty(), "no upgrade account outside a change");
    h.set_version("10.11").await?;

    let names = Names::new("ironic");
    let backup_job = names.backup_job(OLD_IMAGE, NEW_IMAGE, 1);
    let upgrade_job = names.upgrade_job(OLD_IMAGE, NEW_IMAGE, 1);
    let mut steps: Vec<Step> = Vec::new();
    let (outcome, _) = h
        .reconcile_until(
            "the version change completes",
            async |outcome: &DatabaseOutcome, ironic: &Ironic| {
                let upgrade = ironic.status.as_ref().and_then(|s| s.database.as_ref()).and_then(|d| d.upgrade.clone());
                if let Some(step) = upgrade.as_ref().and_then(|u| u.step)
                    && steps.last() != Some(&step)
                {
                    steps.push(step);
                }
                let sts = api::<StatefulSet>(&h.env).get("ironic-mariadb").await?;
                if sts_image(&sts).as_deref() == Some(NEW_IMAGE) {
                    // Only after the backup, the flag and the old version's record.
                    let backup = api::<Job>(&h.env).get(&backup_job).await?;
                    assert!(job_complete(&backup), "the backup finished before the roll");
                    assert_eq!(h.fast_shutdown().await?, "0", "innodb_fast_shutdown = 0 before the roll");
                    let from = upgrade.as_ref().and_then(|u| u.from_version.clone());
                    assert!(from.is_some_and(|v| v.starts_with("10.11.")), "the old version recorded before the roll");
                } else {
                    assert!(
                        api::<Job>(&h.env).get_opt(&upgrade_job).await?.is_none(),
                        "no mariadb-upgrade before the roll"
                    );
                }
                if let Some(job) = api::<Job>(&h.env).get_opt(&upgrade_job).await? {
                    assert_eq!(sts_image(&sts).as_deref(), Some(NEW_IMAGE));
                    let pod = api::<k8s_openapi::api::core::v1::Pod>(&h.env).get("ironic-mariadb-0").await?;
                    let image = pod.spec.and_then(|s| s.containers.first().and_then(|c| c.image.clone()));
                    assert_eq!(image.as_deref(), Some(NEW_IMAGE), "mariadb-upgrade runs once the new pod is up");
                    let container = job.spec.and_then(|s| s.template.spec).map(|p| p.containers[0].clone());
                    let user =
                        container.and_then(|c| c.env).unwrap_or_default().into_iter().find(|e| e.name == "DB_USER");
                    assert_eq!(user.and_then(|u| u.value).as_deref(), Some(UPGRADE_USER), "as the upgrade account");
                    // The new server started with it (its init file, from the roll on).
                    let started = h.kubelet.lock().await.starts.last().cloned().unwrap_or_default();
                    let init = started.init_sql.unwrap_or_default();
                    assert!(init.contains("GRANT ALL PRIVILEGES ON *.* TO 'ferrometal-upgrade'@'%'"), "{init}");
                }
                if !matches!(upgrade.as_ref().and_then(|u| u.step), None | Some(Step::Completed)) {
                    assert!(!outcome.progress.is_done(), "Ironic waits while the change runs");
                }
                Ok(())
            },
            |o| o.progress.is_done(),
        )
        .await?;

    let order = [
        Step::Backup,
        Step::SlowShutdownEnabled,
        Step::RollingOut,
        Step::RunningMariadbUpgrade,
        Step::VerifyingVersion,
        Step::Completed,
    ];
    let positions: Vec<usize> = steps.iter().map(|s| order.iter().position(|o| o == s).unwrap_or(usize::MAX)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "steps in order: {steps:?}");
    assert!(steps.contains(&Step::RollingOut) && steps.last() == Some(&Step::Completed), "{steps:?}");

    let db = h.ironic().await?.status.and_then(|s| s.database).expect("status.database");
    let upgrade = db.upgrade.expect("the change is recorded");
    assert_eq!(upgrade.step, Some(Step::Completed));
    assert_eq!((upgrade.from_image.as_deref(), upgrade.to_image.as_deref()), (Some(OLD_IMAGE), Some(NEW_IMAGE)));
    assert_eq!(upgrade.to_version.as_deref(), Some("10.11"));
    assert_eq!(upgrade.upgrade_job_name.as_deref(), Some(upgrade_job.as_str()));
    assert_eq!(db.image.as_deref(), Some(NEW_IMAGE));
    let backup = db.last_backup.expect("a backup");
    assert_eq!(backup.job_name.as_deref(), Some(backup_job.as_str()));
    assert!(backup.file.is_some_and(|f| f.starts_with("ironic-mariadb-") && f.ends_with(".sql.gz")));
    assert!(job_complete(&api::<Job>(&h.env).get(&upgrade_job).await?));
    assert_eq!(outcome.condition.map(|c| c.status), Some("True".to_string()));

    let events = api::<Event>(&h.env).list(&ListParams::default()).await?;
    let reasons: Vec<String> = events.items.iter().filter_map(|e| e.reason.clone()).collect();
    for reason in ["DatabaseUpgradeStarted", "DatabaseUpgradeStep", "DatabaseUpgradeCompleted"] {
        assert!(reasons.iter().any(|r| r == reason), "{reason} in {reasons:?}");
    }
    // mariadb-upgrade ran: the account that held root's privileges for it is gone from the
    // server, and the next start will not make it again.
    assert!(h.accounts_named(UPGRADE_USER).await?.is_empty(), "the upgrade account removed itself");
    let init = h.init_file().await?;
    assert!(init.contains("DROP USER IF EXISTS 'ferrometal-upgrade'@'%'"), "{init}");
    Ok(())
}

/// Runs a rendered Job's script the way its pod would, on this machine: bash, the real
/// MariaDB client tools, the harness's server in place of the Service, `dir` in place of the
/// backup volume, the Secrets its environment and its CA volume name read from the apiserver.
/// The pod simulator runs nothing, so this is how the script itself is proven.
async fn run_job_script(h: &Harness, job: &Job, dir: &std::path::Path, file: &str) -> anyhow::Result<String> {
    use operator::testing::database::build::CLIENT_CA_DIR;
    let container = job.spec.as_ref().and_then(|s| s.template.spec.as_ref()).map(|p| p.containers[0].clone());
    let container = container.ok_or_else(|| anyhow::anyhow!("the Job has no container"))?;
    // The CA volume, beside (not in) the backup volume.
    let ca_dir = tempfile::tempdir()?;
    let ca = secret_text(&h.env.client(), &h.env.ns, "ironic-mariadb-ca", "tls.crt").await?;
    std::fs::write(ca_dir.path().join("tls.crt"), ca)?;
    let script = container.command.as_ref().and_then(|c| c.last()).cloned().unwrap_or_default();
    let script = script
        .replace(operator::testing::database::build::jobs::BACKUP_DIR, &dir.display().to_string())
        .replace(CLIENT_CA_DIR, &ca_dir.path().display().to_string());
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c").arg(&script).env_clear().env("PATH", "/usr/bin:/bin");
    for var in container.env.iter().flatten() {
        let value = match (&var.value, var.value_from.as_ref().and_then(|f| f.secret_key_ref.as_ref())) {
            (Some(value), _) => value.clone(),
            (None, Some(key)) => secret_text(&h.env.client(), &h.env.ns, &key.name, &key.key).await?,
            (None, None) => continue,
        };
        cmd.env(&var.name, value);
    }
    cmd.env("DB_HOST", "127.0.0.1").env("DB_PORT", h.db.lock().await.port().to_string()).env("BACKUP_FILE", file);
    let output = cmd.output()?;
    anyhow::ensure!(output.status.success(), "the script failed: {}", String::from_utf8_lossy(&output.stderr));
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[tokio::test]
async fn the_backup_jobs_script_dumps_the_real_server_and_keeps_the_newest_dumps() -> anyhow::Result<()> {
    let h = Harness::start("db-backup-script", true).await?;
    h.until_open().await?;
    h.set_version("10.11").await?;
    let backup_job = Names::new("ironic").backup_job(OLD_IMAGE, NEW_IMAGE, 1);
    let job = reconcile_until_job(&h, &backup_job).await?;
    let env_value = |name: &str| {
        let container = job.spec.as_ref().and_then(|s| s.template.spec.as_ref()).map(|p| p.containers[0].clone());
        container.and_then(|c| c.env).into_iter().flatten().find(|v| v.name == name).and_then(|v| v.value)
    };
    assert_eq!(env_value("BACKUP_KEEP").as_deref(), Some("2"), "spec.database.managed.backup.keep");

    let dir = tempfile::tempdir()?;
    // A stale dump of another database, and three runs of this one, oldest first.
    std::fs::write(dir.path().join("other-20260101T000000Z-10.6.sql.gz"), b"not ours")?;
    let files = [
        "ironic-mariadb-20261101T000000Z-10.11.9.sql.gz",
        "ironic-mariadb-20261102T000000Z-10.11.9.sql.gz",
        "ironic-mariadb-20261103T000000Z-10.11.9.sql.gz",
    ];
    for file in files {
        let out = run_job_script(&h, &job, dir.path(), file).await?;
        assert!(out.contains(file), "{out}");
    }
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path())?.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    left.sort();
    assert_eq!(
        left,
        [
            "ironic-mariadb-20261102T000000Z-10.11.9.sql.gz",
            "ironic-mariadb-20261103T000000Z-10.11.9.sql.gz",
            "other-20260101T000000Z-10.6.sql.gz"
        ],
        "the newest two dumps are kept, nothing else of this database, no partial file, others untouched"
    );
    // A real, complete dump of the server: gzip, with Ironic's database in it.
    let newest = std::process::Command::new("gzip").arg("-dc").arg(dir.path().join(files[2])).output()?;
    assert!(newest.status.success(), "a valid gzip file");
    let dump = String::from_utf8_lossy(&newest.stdout);
    assert!(dump.contains("CREATE DATABASE") && dump.contains("`ironic`"), "the dump holds the ironic database");
    assert!(dump.contains("-- Dump completed"), "mariadb-dump finished");
    assert!(!dump.contains("global_priv"), "as the maintenance account: Ironic's database, not the accounts");
    Ok(())
}

/// Reconciles until the Job `name` exists.
async fn reconcile_until_job(h: &Harness, name: &str) -> anyhow::Result<Job> {
    let jobs = api::<Job>(&h.env);
    let deadline = Instant::now() + STEP;
    loop {
        h.reconcile().await?;
        if let Some(job) = jobs.get_opt(name).await? {
            return Ok(job);
        }
        anyhow::ensure!(Instant::now() < deadline, "Job {name} was not created");
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn a_failing_mariadb_upgrade_job_halts_the_sequence_and_a_retry_resumes() -> anyhow::Result<()> {
    let h = Harness::start("db-fail", false).await?;
    h.until_open().await?;
    let fate = PodFate::Failed { exit_code: 1, message: "mariadb-upgrade: Got error 1 from mariadb-check".into() };
    h.env.sim.set_fate_by_prefix(&h.env.ns, "ironic-mariadb-upgrade-", fate);
    h.set_version("10.11").await?;

    let (halted, _) = h.reconcile_until("the sequence halts", async |_, _| Ok(()), |o| o.progress.is_failed()).await?;
    let Progress::Failed { reason, message } = &halted.progress else { unreachable!("halted") };
    assert_eq!(reason, "DatabaseUpgradeFailed");
    assert!(message.contains("RunningMariadbUpgrade"), "{message}");
    assert!(message.contains("exited with code 1") && message.contains("Got error 1 from mariadb-check"), "{message}");
    assert!(message.contains(RETRY_ANNOTATION), "{message}");
    let condition = halted.condition.clone().expect("DatabaseReady");
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "DatabaseUpgradeFailed"));
    let upgrade = h.ironic().await?.status.and_then(|s| s.database).and_then(|d| d.upgrade).expect("recorded");
    assert_eq!((upgrade.step, upgrade.failed_step), (Some(Step::Failed), Some(Step::RunningMariadbUpgrade)));

    // Nothing deleted, nothing rolled back, and it stays halted.
    let failed_job = upgrade.upgrade_job_name.clone().expect("the Job");
    api::<Job>(&h.env).get(&failed_job).await?;
    assert_eq!(sts_image(&api::<StatefulSet>(&h.env).get("ironic-mariadb").await?).as_deref(), Some(NEW_IMAGE));
    api::<PersistentVolumeClaim>(&h.env).get("data-ironic-mariadb-0").await?;
    api::<Secret>(&h.env).get("ironic-mariadb-credentials").await?;
    // A retry needs the upgrade account: halted at mariadb-upgrade, the server keeps it.
    assert_eq!(h.accounts_named(UPGRADE_USER).await?, ["%"]);
    assert!(h.init_file().await?.contains("TO 'ferrometal-upgrade'@'%'"));
    let (again, _) = h.reconcile().await?;
    assert!(again.progress.is_failed());
    let jobs = api::<Job>(&h.env)
        .list(&ListParams::default().labels("ironic.ferrometal.io/database-job=mariadb-upgrade"))
        .await?;
    assert_eq!(jobs.items.len(), 1, "no new Job without a retry");

    // The user fixed the cause and asks for a retry: a new Job, then completion.
    let names = Names::new("ironic");
    h.env.sim.set_job_fate(&h.env.ns, &names.upgrade_job(OLD_IMAGE, NEW_IMAGE, 2), PodFate::Succeeded);
    let patch = json!({"metadata": {"annotations": {RETRY_ANNOTATION: "1"}}});
    ironics(&h.env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    h.until_open().await?;
    let upgrade = h.ironic().await?.status.and_then(|s| s.database).and_then(|d| d.upgrade).expect("recorded");
    assert_eq!((upgrade.step, upgrade.attempt), (Some(Step::Completed), Some(2)));
    assert_eq!(upgrade.upgrade_job_name, Some(names.upgrade_job(OLD_IMAGE, NEW_IMAGE, 2)));
    api::<Job>(&h.env).get(&failed_job).await?;
    assert!(h.accounts_named(UPGRADE_USER).await?.is_empty(), "gone once mariadb-upgrade succeeded");
    Ok(())
}

#[tokio::test]
async fn an_external_database_is_checked_with_clear_conditions() -> anyhow::Result<()> {
    let env = Env::start("db-external").await?;
    let db = MariaDb::start(MariaDbConfig::default()).await?;
    db.create_database("ironic", "ironic", IRONIC_PASSWORD).await?;
    secret(&env, "ironic-db", "ironic", IRONIC_PASSWORD).await?;
    let port = ferrometal_tests::ports::free_port()?;
    for (name, host) in [("good", format!("127.0.0.1:{}", db.port())), ("gone", format!("127.0.0.1:{port}"))] {
        let ironic = json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": name},
            "spec": {"database": {"credentialsName": "ironic-db", "host": host, "name": "ironic"}}});
        ironics(&env).create(&PostParams::default(), &serde_json::from_value(ironic)?).await?;
    }
    let ctx = crate::common::kit_context(env.client(), &env.ns, "database-e2e".into());
    let config = Config::default();
    let check = async |name: &str| -> anyhow::Result<(DatabaseOutcome, Vec<Written>)> {
        reconcile_once(&ctx, &ironics(&env).get(name).await?, &config).await
    };

    let (good, written) = check("good").await?;
    assert!(good.progress.is_done());
    let condition = good.condition.expect("DatabaseReady");
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "DatabaseAvailable"));
    assert!(
        condition.message.contains("without TLS") && condition.message.contains("no Ironic schema yet"),
        "{}",
        condition.message
    );
    let status = ironics(&env).get("good").await?.status.and_then(|s| s.database).expect("status.database");
    assert_eq!(status.mode, Some(DatabaseMode::External));
    assert_eq!(status.host, Some(format!("127.0.0.1:{}", db.port())));
    assert!(status.server_version.is_some_and(|v| v.starts_with("10.11.")));
    assert_eq!(good.connection.map(|c| c.port), Some(db.port()));
    assert!(written.is_empty(), "an external database is only checked");

    // A wrong password: refused, precisely, without the password.
    let wrong = "wrong-Password-123";
    let patch = json!({"data": {"password": ByteString(wrong.as_bytes().to_vec())}});
    api::<Secret>(&env).patch("ironic-db", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let (refused, _) = check("good").await?;
    let condition = refused.condition.expect("DatabaseReady");
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "AuthenticationFailed"));
    assert!(condition.message.contains("refused the credentials of user \"ironic\""), "{}", condition.message);
    assert!(!condition.message.contains(wrong));
    assert!(refused.progress.is_failed(), "Ironic does not roll onto a database that refuses it");

    // Nothing listens: unreachable, a wait rather than a failure.
    let (gone, _) = check("gone").await?;
    let condition = gone.condition.expect("DatabaseReady");
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "DatabaseUnreachable"));
    assert!(condition.message.contains(&format!("127.0.0.1:{port}")), "{}", condition.message);
    assert!(matches!(gone.progress, Progress::Waiting { .. }));
    assert!(gone.requeue_after.is_some());
    Ok(())
}
