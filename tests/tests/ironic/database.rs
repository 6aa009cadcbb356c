//! The Ironic controller with its database, end to end through the operator: an external
//! database is checked with sqlx before anything of Ironic's rolls out; a managed MariaDB is
//! run, checked and wired into Ironic's pods; Ironic's schema revision decides the schema Job.
//!
//! The databases are real MariaDB servers on loopback. A managed database's StatefulSet pod
//! comes from the pod simulator and runs nothing, so the operator's own connections go to the
//! harness's server through the database address override (the Service's name does not
//! resolve here), while Ironic's pods are still pointed at the Service. Jobs are completed by
//! the simulator; where a test needs what a Job would have done to the database, it runs
//! `ironic-dbsync` itself.

use crate::common::{Env, POLL};
use crate::ironic_common::*;
use crate::mariadb_common::{Kubelet, RunningKubelet};
use ferrometal_tests::mariadb::{ADMIN_PASSWORD, ADMIN_USER, MariaDb, MariaDbConfig};
use ferrometal_tests::{PodFate, wait};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams};
use operator::testing::database::Address;
use operator::testing::database::names::Names;
use serde_json::json;
use sqlx::{Connection, Executor, MySqlConnection};
use std::sync::Arc;

const MANAGED_PASSWORD: &str = "ironic-managed-e2e-password";

fn ironic_with(database: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic", "metadata": {"name": "ironic"},
        "spec": {"version": "38.0", "database": database}})
}

#[tokio::test]
async fn an_external_database_that_refuses_the_password_stops_ironic_before_it_rolls_out_until_the_secret_is_fixed()
-> anyhow::Result<()> {
    let env = Env::start("ironic-db-external").await?;
    let database = external_database(&env, "ironic-db", false).await?;
    let secrets = api::<Secret>(&env);
    let password = |p: &str| json!({"data": {"password": ByteString(p.as_bytes().to_vec())}});
    secrets.patch("ironic-db", &PatchParams::default(), &Patch::Merge(password("not-the-password"))).await?;
    let _operator = start(&env).await?;
    create_ironic(&env, ironic_with(database.spec())).await?;

    let refused = wait_condition(&env, "ironic", "DatabaseReady", "False", "AuthenticationFailed").await?;
    let degraded = condition_of(&refused, "Degraded").expect("Degraded");
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), ("True", "AuthenticationFailed"));
    let message = condition_of(&refused, "DatabaseReady").expect("DatabaseReady").message;
    assert!(message.contains(&database.host), "the condition names the server: {message}");
    assert!(!message.contains("not-the-password"), "no password in status: {message}");
    let ready = condition_of(&refused, "Ready").expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "DeploymentFailed"));
    assert!(api::<Deployment>(&env).get_opt("ironic-service").await?.is_none(), "nothing rolled out");
    assert!(api::<Job>(&env).list(&Default::default()).await?.items.is_empty(), "no schema Job ran");
    wait_event(&env, "ironic", "AuthenticationFailed").await?;

    // The user fixes the Secret: the watch on it brings the Ironic up.
    secrets.patch("ironic-db", &PatchParams::default(), &Patch::Merge(password(DATABASE_PASSWORD))).await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let db_ready = condition_of(&ironic, "DatabaseReady").expect("DatabaseReady");
    assert_eq!((db_ready.status.as_str(), db_ready.reason.as_str()), ("True", "DatabaseAvailable"));
    let status = ironic.status.and_then(|s| s.database).expect("status.database");
    assert!(status.server_version.is_some_and(|v| v.contains("MariaDB")), "the server version is reported");
    assert!(status.schema_revision.is_some(), "the schema revision is reported");
    Ok(())
}

/// A managed database's set-up: the real server (shared with the kubelet the test plays),
/// the kubelet, and the operator.
struct Managed {
    env: Env,
    server: Arc<tokio::sync::Mutex<MariaDb>>,
    kubelet: RunningKubelet,
    _operator: operator::Operator,
}

/// A control plane, the operator with its database connections redirected to a real MariaDB,
/// and Ironic's and root's Secrets made with that server's credentials (the operator keeps
/// credentials it finds, as after a restore; this way the real server knows them). The test
/// plays the MariaDB pod's kubelet: each new pod restarts the server with what it gives it
/// (its init file and certificate from the operator's Secrets, its flags).
async fn managed_env(prefix: &str) -> anyhow::Result<Managed> {
    let env = Env::start(prefix).await?;
    env.sim.set_fate_by_prefix(&env.ns, "ironic-mariadb-0", PodFate::Pending);
    let server = MariaDb::start(MariaDbConfig::default()).await?;
    server.create_database("ironic", "ironic", MANAGED_PASSWORD).await?;
    let names = Names::new("ironic");
    for (name, user, password) in
        [(names.admin(), ADMIN_USER, ADMIN_PASSWORD), (names.credentials(), "ironic", MANAGED_PASSWORD)]
    {
        create_secret(&env, &name, "Opaque", &[("username", user), ("password", password)]).await?;
    }
    let mut config = env.operator_config();
    let mut ironic = ironic_config();
    ironic.database.address_override = Some(Address { host: "127.0.0.1".into(), port: server.port() });
    ironic.database.progress_interval = std::time::Duration::from_secs(2);
    ironic.database.retry_interval = std::time::Duration::from_secs(2);
    // A failed Job pod fails its Job at once, as the Ironic upgrade Jobs do in these tests.
    ironic.database.job_backoff_limit = 0;
    config.ironic = Some(ironic);
    let server = Arc::new(tokio::sync::Mutex::new(server));
    let kubelet = RunningKubelet::spawn(Kubelet::new(env.client(), &env.ns, "ironic-mariadb-0"), server.clone());
    let operator = env.start_operator(config).await?;
    Ok(Managed { env, server, kubelet, _operator: operator })
}

#[tokio::test]
async fn a_managed_database_is_run_checked_and_wired_into_ironic_and_its_schema_decides_the_schema_job()
-> anyhow::Result<()> {
    let Managed { env, server, kubelet, _operator } = managed_env("ironic-db-managed").await?;
    create_ironic(&env, ironic_with(json!({"managed": {"version": "10.11"}}))).await?;

    // No Ironic schema in the database yet: the schema Job runs, but the simulator only
    // completes it and the schema is still missing. Rolling out would start Ironic on empty
    // tables, so the operator stops and says so.
    let stopped = wait_condition(&env, "ironic", "Degraded", "True", "UpgradeJobFailed").await?;
    let degraded = condition_of(&stopped, "Degraded").expect("Degraded").message;
    assert!(degraded.contains("no Ironic schema"), "{degraded}");
    assert!(api::<Deployment>(&env).get_opt("ironic-service").await?.is_none(), "nothing rolled out");
    let db_ready = condition_of(&stopped, "DatabaseReady").expect("DatabaseReady");
    assert_eq!(db_ready.status, "True", "the database itself is fine: {}", db_ready.message);

    // Do what the Job would have done, and run it again as the message says. ironic-dbsync
    // connects as Ironic does: over TLS, verified with the CA the pod's server was given.
    let db = server.lock().await;
    assert!(db.options().require_secure_transport, "a default managed database requires TLS");
    db.ironic_dbsync("ironic", "ironic", MANAGED_PASSWORD, "create_schema")?;
    let revision = db.ironic_dbsync("ironic", "ironic", MANAGED_PASSWORD, "version")?;
    drop(db);
    api::<Job>(&env).delete("ironic-pre-none-to-38.0", &DeleteParams::background()).await?;
    let ironic = wait_ready(&env, "ironic", "38.0").await?;
    let status = ironic.status.clone().and_then(|s| s.database).expect("status.database");
    assert_eq!(status.schema_revision.as_deref(), Some(revision.as_str()));
    assert!(api::<StatefulSet>(&env).get_opt(&Names::new("ironic").stateful_set()).await?.is_some());

    // Ironic's pods use the managed database's Service and generated credentials.
    let containers = template_containers(&deployment(&env, "ironic-service").await?);
    let ironic_container = container(&containers, "ironic");
    let host = format!("{}.{}.svc.cluster.local", Names::new("ironic").service(), env.ns);
    assert_eq!(env_value(ironic_container, "MARIADB_HOST").as_deref(), Some(host.as_str()));
    assert_eq!(env_value(ironic_container, "IRONIC_USE_MARIADB").as_deref(), Some("true"));
    // And the CA that verifies it, where ironic-image looks (/certs/ca/mariadb/tls.crt): the
    // one that signed what the server serves.
    assert_eq!(mounted_ca(&deployment(&env, "ironic-service").await?).as_deref(), Some("ironic-mariadb-ca"));
    let mount = ironic_container.volume_mounts.iter().flatten().find(|m| m.mount_path == "/certs/ca/mariadb");
    assert!(mount.is_some(), "the CA is mounted where ironic-image reads it");
    let ca = crate::mariadb_common::secret_text(&env.client(), &env.ns, "ironic-mariadb-ca", "tls.crt").await?;
    let served = kubelet.starts().await?.last().and_then(|o| o.tls.clone()).expect("the pod serves TLS");
    assert_eq!(ca, served.ca_pem);
    let ready = condition_of(&ironic, "DatabaseReady").expect("DatabaseReady").message;
    assert!(ready.contains("over verified TLS"), "{ready}");

    // The database loses Ironic's schema (replaced, restored empty) while the version stays:
    // the schema revision, read again, brings the schema Job back.
    let mut conn = MySqlConnection::connect(&server.lock().await.admin_url(None)).await?;
    conn.execute("DROP DATABASE ironic").await?;
    conn.execute("CREATE DATABASE ironic CHARACTER SET utf8mb3").await?;
    conn.close().await?;
    let touch = json!({"metadata": {"annotations": {"test.ferrometal.io/touch": "1"}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&touch)).await?;
    wait::until_ok("the schema Job for the unchanged version", STEP, POLL, || async {
        Ok(api::<Job>(&env).get_opt("ironic-pre-38.0-to-38.0").await?.map(|_| ()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_failing_mariadb_upgrade_job_degrades_the_ironic_and_leaves_ironic_running() -> anyhow::Result<()> {
    let Managed { env, server, kubelet: _kubelet, _operator } = managed_env("ironic-db-upgrade").await?;
    server.lock().await.ironic_dbsync("ironic", "ironic", MANAGED_PASSWORD, "create_schema")?;
    create_ironic(&env, ironic_with(json!({"managed": {"version": "10.6"}}))).await?;
    wait_ready(&env, "ironic", "38.0").await?;
    let before = deployment(&env, "ironic-service").await?;

    let fate = PodFate::Failed { exit_code: 1, message: "mariadb-upgrade: Got error 1 from mariadb-check".into() };
    env.sim.set_fate_by_prefix(&env.ns, "ironic-mariadb-upgrade-", fate);
    let patch = json!({"spec": {"database": {"managed": {"version": "10.11"}}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;

    let halted = wait_condition(&env, "ironic", "Degraded", "True", "DatabaseUpgradeFailed").await?;
    let degraded = condition_of(&halted, "Degraded").expect("Degraded").message;
    assert!(degraded.contains("RunningMariadbUpgrade"), "the step that failed: {degraded}");
    assert!(degraded.contains("Got error 1 from mariadb-check"), "why: {degraded}");
    let db_ready = condition_of(&halted, "DatabaseReady").expect("DatabaseReady");
    assert_eq!((db_ready.status.as_str(), db_ready.reason.as_str()), ("False", "DatabaseUpgradeFailed"));
    wait_event(&env, "ironic", "DatabaseUpgradeFailed").await?;

    // Ironic itself was not touched: the same Deployment, the same template.
    let after = deployment(&env, "ironic-service").await?;
    assert_eq!(after.metadata.generation, before.metadata.generation, "Ironic was not rolled");
    assert_eq!(halted.status.and_then(|s| s.installed_version).as_deref(), Some("38.0"));
    Ok(())
}

/// The Secret a workload's pod template mounts at /certs/ca/mariadb.
fn mounted_ca(workload: &Deployment) -> Option<String> {
    let pod = workload.spec.as_ref()?.template.spec.as_ref()?;
    let mount = pod
        .containers
        .iter()
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .find(|m| m.mount_path == "/certs/ca/mariadb")?;
    let volume = pod.volumes.iter().flatten().find(|v| v.name == mount.name)?;
    volume.secret.as_ref()?.secret_name.clone()
}

#[tokio::test]
async fn a_clear_text_managed_database_moves_to_tls_only_after_ironics_pods_trust_its_ca() -> anyhow::Result<()> {
    // A managed database in clear text with Ironic running on it, as a deployment of the
    // previous operator (or an explicit opt-out) has it, root allowed from anywhere too.
    let Managed { env, server, kubelet, _operator } = managed_env("ironic-db-to-tls").await?;
    server.lock().await.ironic_dbsync("ironic", "ironic", MANAGED_PASSWORD, "create_schema")?;
    let plain = json!({"managed": {"version": "10.11", "tls": {"enabled": false}}});
    create_ironic(&env, ironic_with(plain)).await?;
    wait_ready(&env, "ironic", "38.0").await?;
    assert_eq!(mounted_ca(&deployment(&env, "ironic-service").await?), None, "no CA in clear text");
    let url = server.lock().await.admin_url(None);
    let mut conn = MySqlConnection::connect(&url).await?;
    conn.execute("CREATE USER 'root'@'%' IDENTIFIED BY 'root-from-anywhere'").await?;
    conn.execute("CREATE TABLE ironic.marker (id INT PRIMARY KEY) ENGINE=InnoDB").await?;
    conn.execute("INSERT INTO ironic.marker VALUES (1), (2), (3)").await?;
    conn.close().await?;
    let starts_before = kubelet.starts().await?.len();

    // TLS on (the default). Ironic's pods with the CA would refuse a server without TLS
    // (PyMySQL with a CA requires it), and pods without it cannot meet one that requires it:
    // so the server first offers TLS, Ironic's pods roll with the CA, and only then does the
    // server require it.
    let patch = json!({"spec": {"database": {"managed": {"tls": null}}}});
    ironics(&env).patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let said = std::sync::Mutex::new(String::new());
    wait::until_ok("MariaDB requiring TLS", STEP, POLL, || async {
        let sts = api::<StatefulSet>(&env).get(&Names::new("ironic").stateful_set()).await?;
        let args = sts.spec.and_then(|s| s.template.spec).map(|p| p.containers[0].args.clone().unwrap_or_default());
        let args = args.unwrap_or_default();
        let offers = args.iter().any(|a| a.starts_with("--ssl-cert="));
        let requires = args.iter().any(|a| a == "--require-secure-transport=ON");
        let workload = deployment(&env, "ironic-service").await?;
        if mounted_ca(&workload).is_some() {
            assert!(offers, "Ironic's pods get the CA only once the server offers TLS");
        }
        if requires {
            assert_eq!(mounted_ca(&workload).as_deref(), Some("ironic-mariadb-ca"), "Ironic first");
            assert!(operator::testing::kit::observe::deployment_rollout(&workload).is_done(), "rolled out first");
            return Ok(Some(()));
        }
        let ready = condition_of(&ironics(&env).get("ironic").await?, "DatabaseReady").map(|c| c.message);
        if let Some(message) = ready.filter(|m| m.contains("not yet required")) {
            *said.lock().unwrap_or_else(|e| e.into_inner()) = message;
        }
        Ok(None)
    })
    .await?;
    // The wait is said twice: in DatabaseReady while it lasts (which a poll can miss when the
    // pods roll within one), and in the Event that starts it (which stays).
    let said = said.into_inner().unwrap_or_else(|e| e.into_inner());
    let offered = wait_event(&env, "ironic", "DatabaseTLSOffered").await?;
    assert!(
        said.contains("over verified TLS, not yet required (Ironic's") || said.is_empty(),
        "the wait was said: {said}"
    );
    assert!(offered.contains("requires it once Ironic's pods have rolled out"), "the wait was said: {offered}");
    wait_event(&env, "ironic", "DatabaseTLSRequired").await?;
    wait::until_ok("DatabaseReady over TLS", STEP, POLL, || async {
        let ironic = ironics(&env).get("ironic").await?;
        let ready = condition_of(&ironic, "DatabaseReady").filter(|c| c.status == "True");
        let required = |m: &str| m.contains("over verified TLS") && !m.contains("not yet required");
        Ok(ready.filter(|c| required(&c.message)).map(|_| ()))
    })
    .await?;

    // Two templates, in order, each started once (TLS offered, then required; the pod
    // simulator deletes pods at once, so the StatefulSet controller may first bring back a
    // deleted pod at its old template); every stop was clean; the data is all there; Ironic's
    // stack connects with the CA its pods mount; root from anywhere is gone.
    let starts = kubelet.starts().await?;
    let mut since: Vec<(bool, bool)> =
        starts[starts_before..].iter().map(|o| (o.tls.is_some(), o.require_secure_transport)).collect();
    since.dedup();
    let since: Vec<(bool, bool)> = since.into_iter().skip_while(|s| *s == (false, false)).collect();
    assert_eq!(since, [(true, false), (true, true)], "offered, then required: {starts:?}");
    let db = server.lock().await;
    let log = db.error_log();
    assert!(!log.contains("crash recovery"), "every stop was clean");
    db.ironic_dbsync("ironic", "ironic", MANAGED_PASSWORD, "version")?;
    let mut conn = MySqlConnection::connect(&db.admin_url(None)).await?;
    drop(db);
    let (rows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ironic.marker").fetch_one(&mut conn).await?;
    assert_eq!(rows, 3, "no data lost");
    let roots: Vec<(String,)> =
        sqlx::query_as("SELECT CAST(Host AS CHAR) FROM mysql.user WHERE User = 'root'").fetch_all(&mut conn).await?;
    conn.close().await?;
    assert_eq!(roots, [("localhost".to_string(),)], "root on the socket only");
    Ok(())
}
