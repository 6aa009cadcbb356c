//! MariaDB killed during a managed version change, on the harness apiserver with the real
//! MariaDB 10.11 behind the simulated pod (as in `database/e2e.rs`: `database::reconcile` driven
//! directly, the address override pointing at the real server). The test plays the kubelet of
//! the MariaDB pod: it stops the real server when the old pod goes (cleanly, as the preStop
//! hook does, or with a kill), runs the new pod's clean-stop check (the init container's
//! script) on the real data directory as the new image's series, and starts the server (with
//! the pod's init file, certificate and flags) and reports the pod ready only when the check
//! lets it.
//!
//! Each round: the server is killed before the roll (the sequence retries, nothing rolls, and
//! it goes on once the server is back), then killed instead of stopping slowly when the roll
//! replaces it (the new version is refused: DatabaseNotCleanlyStopped, never started, nothing
//! lost), the user rolls back as the condition says and the old version recovers, and the
//! change asked again completes. Ironic's progress is never done while a change is under way.

use crate::common::{Env, POLL};
use crds::ironic::Ironic;
use crds::ironic::status::DatabaseUpgradeStep as Step;
use ferrometal_tests::PodFate;
use ferrometal_tests::clean_stop;
use ferrometal_tests::faults::{self, Figures};
use ferrometal_tests::mariadb::{ADMIN_PASSWORD, ADMIN_USER, MariaDb, MariaDbConfig};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use operator::testing::database::clean_stop::{INIT_CONTAINER, SCRIPT, SERIES_MARKER};
use operator::testing::database::names::Names;
use operator::testing::database::status::reasons;
use operator::testing::database::{self, Address, Config, DatabaseOutcome};
use operator::testing::kit::{Context, Ledger, Notices, Progress};
use serde_json::json;
use sqlx::{Connection, Executor, MySqlConnection};
use std::time::{Duration, Instant};

const POD: &str = "ironic-mariadb-0";
const STEP: Duration = Duration::from_secs(120);

fn image(series: &str) -> String {
    format!("docker.io/library/mariadb:{series}")
}

struct Scenario {
    env: Env,
    db: MariaDb,
    ctx: Context,
    config: Config,
    scratch: tempfile::TempDir,
    /// Reconciles whose progress was done while a change was under way (must stay 0).
    let_through: usize,
    /// Servers killed.
    kills: usize,
    /// Starts of a new series that needed crash recovery (must stay 0).
    crashed_opens: usize,
}

impl Scenario {
    async fn start(first: &str) -> anyhow::Result<Self> {
        let env = Env::start("faults-db").await?;
        // The test is the MariaDB pod's kubelet.
        env.sim.set_fate_by_prefix(&env.ns, POD, PodFate::Pending);
        let db = MariaDb::start(MariaDbConfig::default()).await?;
        db.create_database("ironic", "ironic", "ironic-faults-password").await?;
        let names = Names::new("ironic");
        secret(&env, &names.admin(), ADMIN_USER, ADMIN_PASSWORD).await?;
        secret(&env, &names.credentials(), "ironic", "ironic-faults-password").await?;
        let ironic = json!({"apiVersion": "ironic.metal3.io/v1alpha1", "kind": "Ironic",
            "metadata": {"name": "ironic"}, "spec": {"database": {"managed": {"image": image(first)}}}});
        Api::<Ironic>::namespaced(env.client(), &env.ns)
            .create(&PostParams::default(), &serde_json::from_value(ironic)?)
            .await?;
        let ctx = crate::common::kit_context(env.client(), &env.ns, format!("faults-db-{}", env.ns));
        let config = Config {
            address_override: Some(Address { host: "127.0.0.1".into(), port: db.port() }),
            job_backoff_limit: 0,
            step_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(2),
            ..Config::default()
        };
        let scratch = tempfile::tempdir()?;
        std::fs::write(db.data_dir().join(SERIES_MARKER), format!("{first}\n"))?;
        Ok(Self { env, db, ctx, config, scratch, let_through: 0, kills: 0, crashed_opens: 0 })
    }

    fn ironics(&self) -> Api<Ironic> {
        Api::namespaced(self.env.client(), &self.env.ns)
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.env.client(), &self.env.ns)
    }

    async fn reconcile(&mut self) -> anyhow::Result<DatabaseOutcome> {
        let ironic = self.ironics().get("ironic").await?;
        let scope = [(crds::ironic::IRONIC_LABEL.to_string(), ironic.name_any())].into();
        let ledger = Ledger::new(self.ctx.client.clone(), &ironic, scope)?
            .scoped(operator::testing::ironic::names::database_scope());
        let mut notices = Notices::default();
        let outcome = database::reconcile(&ledger, &ironic, &self.config, &mut notices).await?;
        self.ctx.publisher("ironic").publish(&ironic, notices).await;
        let ironic = self.ironics().get("ironic").await?;
        let upgrade = ironic.status.and_then(|s| s.database).and_then(|d| d.upgrade);
        let under_way = upgrade.and_then(|u| u.step).is_some_and(|s| s != Step::Completed);
        if under_way && outcome.progress.is_done() {
            self.let_through += 1;
        }
        Ok(outcome)
    }

    async fn upgrade_step(&self) -> anyhow::Result<(Option<Step>, Option<Step>)> {
        let ironic = self.ironics().get("ironic").await?;
        let upgrade = ironic.status.and_then(|s| s.database).and_then(|d| d.upgrade).unwrap_or_default();
        Ok((upgrade.step, upgrade.failed_step))
    }

    async fn set_image(&self, series: &str) -> anyhow::Result<()> {
        let patch = json!({"spec": {"database": {"managed": {"image": image(series)}}}});
        self.ironics().patch("ironic", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        Ok(())
    }

    async fn sts_image(&self) -> anyhow::Result<Option<String>> {
        let sts = Api::<StatefulSet>::namespaced(self.env.client(), &self.env.ns).get("ironic-mariadb").await?;
        Ok(sts.spec.and_then(|s| s.template.spec).and_then(|p| p.containers.first().and_then(|c| c.image.clone())))
    }

    /// The MariaDB pod the kubelet has not started yet, with the series of its image. Any
    /// image: the StatefulSet controller may recreate a deleted pod at the old revision first
    /// (it counts the current replicas before it sees the deletion), and only replaces that
    /// pod once it is ready, as with a real kubelet.
    async fn fresh_pod(&self) -> anyhow::Result<Option<(Pod, String)>> {
        let Some(pod) = self.pods().get_opt(POD).await? else { return Ok(None) };
        let running = pod.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone());
        let series = running.as_deref().and_then(|i| i.rsplit_once(':')).map(|(_, tag)| tag.to_string());
        let fresh = pod.status.as_ref().and_then(|s| s.init_container_statuses.as_ref()).is_none()
            && pod.metadata.deletion_timestamp.is_none();
        Ok(series.filter(|_| fresh).map(|series| (pod, series)))
    }

    /// Plays the kubelet for `pod` of `series`: the clean-stop check on the real directory,
    /// then the server and Ready, or the refusal in the pod's status. Returns the check's exit.
    async fn start_pod(&mut self, pod: &Pod, series: &str) -> anyhow::Result<i32> {
        let before = clean_stop::recorded_series(&self.db.data_dir(), SERIES_MARKER);
        let run = clean_stop::run(SCRIPT, &self.db.data_dir(), Some(series), self.scratch.path())?;
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let check = |code: i32, message: &str| {
            json!({"name": INIT_CONTAINER, "image": image(series), "imageID": "simulated://", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": code, "message": message,
                "reason": if code == 0 { "Completed" } else { "Error" }, "startedAt": now, "finishedAt": now}}})
        };
        let status = if run.exit_code == 0 {
            let logged = self.db.error_log().len();
            // What the new pod gives its server: its init file, certificate and flags.
            self.db.configure(&crate::mariadb_common::pod_options(&self.env.client(), &self.env.ns, pod).await?)?;
            self.db.restart().await?;
            // The server's own word on what it found: a new series must never recover a crash.
            let start = self.db.error_log().get(logged..).unwrap_or_default().to_string();
            if before.as_deref() != Some(series) && start.contains("crash recovery") {
                self.crashed_opens += 1;
            }
            json!({"phase": "Running", "podIP": "10.244.9.9", "startTime": now,
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [check(0, "")],
                "containerStatuses": [{"name": "mariadb", "image": image(series), "imageID": "simulated://",
                    "ready": true, "restartCount": 0, "started": true, "state": {"running": {"startedAt": now}}}]})
        } else {
            json!({"phase": "Pending", "startTime": now,
                "conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "False"}],
                "initContainerStatuses": [check(run.exit_code, &run.message)],
                "containerStatuses": [{"name": "mariadb", "image": image(series), "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]})
        };
        self.pods()
            .patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
            .await?;
        Ok(run.exit_code)
    }

    /// Reconciles until `done`, playing the kubelet for every new pod; `clean` is how the
    /// running server ends when a new pod replaces its own: a slow shutdown (`true`, as the
    /// preStop hook makes it) or a kill.
    async fn drive(
        &mut self,
        what: &str,
        clean: bool,
        done: impl Fn(&DatabaseOutcome) -> bool,
    ) -> anyhow::Result<DatabaseOutcome> {
        let deadline = Instant::now() + STEP;
        loop {
            let outcome = self.reconcile().await?;
            if done(&outcome) {
                return Ok(outcome);
            }
            if let Some((pod, series)) = self.fresh_pod().await? {
                if self.db.is_running() {
                    if clean {
                        self.db.shutdown().await?
                    } else {
                        self.db.crash();
                        self.kills += 1;
                    }
                }
                self.start_pod(&pod, &series).await?;
                continue;
            }
            anyhow::ensure!(Instant::now() < deadline, "{what}: still {:?} after {STEP:?}", outcome.progress);
            tokio::time::sleep(POLL).await;
        }
    }

    async fn rows(&self) -> anyhow::Result<i64> {
        let mut conn = MySqlConnection::connect(&self.db.admin_url(None)).await?;
        let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ironic.nodes").fetch_one(&mut conn).await?;
        conn.close().await?;
        Ok(count)
    }

    async fn write_rows(&self, round: usize) -> anyhow::Result<()> {
        let mut conn = MySqlConnection::connect(&self.db.admin_url(None)).await?;
        conn.execute("CREATE TABLE IF NOT EXISTS ironic.nodes (id INT PRIMARY KEY, name VARCHAR(255)) ENGINE=InnoDB")
            .await?;
        let values: Vec<String> = (0..500).map(|i| format!("({}, 'node-{round}-{i}')", round * 1000 + i)).collect();
        conn.execute(sqlx::AssertSqlSafe(format!("INSERT INTO ironic.nodes VALUES {}", values.join(",")))).await?;
        conn.close().await?;
        Ok(())
    }
}

async fn secret(env: &Env, name: &str, username: &str, password: &str) -> anyhow::Result<()> {
    let data = [("username", username), ("password", password)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect();
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        data: Some(data),
        ..Default::default()
    };
    Api::<Secret>::namespaced(env.client(), &env.ns).create(&PostParams::default(), &secret).await?;
    Ok(())
}

fn is_completed(outcome: &DatabaseOutcome) -> bool {
    outcome.progress.is_done()
}

#[tokio::test]
async fn mariadb_killed_during_a_version_change_never_starts_the_new_version_on_a_crash() -> anyhow::Result<()> {
    ferrometal_tests::init();
    let scenario = "MariaDB killed during managed version changes (before the roll, instead of the slow stop)";
    // Each round moves one series on; the harness's 10.11 plays every one of them.
    let series = ["10.6", "10.11", "11.4", "11.8", "12.0", "12.1"];
    let rounds = faults::length(1, series.len() - 1);
    let mut s = Scenario::start(series[0]).await?;
    s.drive("the first start", true, is_completed).await?;
    let mut refused = 0;
    let mut last_recovery = Duration::ZERO;
    for round in 0..rounds {
        let (old, new) = (series[round], series[round + 1]);
        s.write_rows(round).await?;
        let rows = s.rows().await?;

        // Killed before the roll: the sequence retries, nothing rolls until the server is back.
        s.set_image(new).await?;
        s.db.crash();
        s.kills += 1;
        for _ in 0..3 {
            let outcome = s.reconcile().await?;
            anyhow::ensure!(!outcome.progress.is_done(), "Ironic let through while the server is down");
            tokio::time::sleep(POLL).await;
        }
        assert_eq!(s.sts_image().await?, Some(image(old)), "no roll while the server is down");
        assert_eq!(s.upgrade_step().await?.0, Some(Step::SlowShutdownEnabled));
        // The kubelet restarts the container: the same series recovers its own crash.
        assert_eq!(clean_stop::run(SCRIPT, &s.db.data_dir(), Some(old), s.scratch.path())?.exit_code, 0);
        s.db.restart().await?;

        // Killed instead of stopping slowly when the roll replaces it: the new version refuses.
        let outcome = s.drive("the refusal", false, |o| matches!(&o.progress, Progress::Failed { .. })).await?;
        let Progress::Failed { reason, message } = &outcome.progress else { unreachable!() };
        assert_eq!(reason, reasons::NOT_CLEANLY_STOPPED, "{message}");
        assert!(message.contains("did not stop cleanly") && message.contains(&image(old)), "{message}");
        assert_eq!(s.upgrade_step().await?, (Some(Step::Failed), Some(Step::RollingOut)));
        let condition = outcome.condition.clone().expect("DatabaseReady");
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", reasons::NOT_CLEANLY_STOPPED));
        assert!(!s.db.is_running(), "the new version never started on the crashed directory");
        let recorded = clean_stop::recorded_series(&s.db.data_dir(), SERIES_MARKER);
        assert_eq!(recorded.as_deref(), Some(old), "the directory is still the old series'");
        refused += 1;

        // What the condition says to do: back to the old version, delete the stuck pod.
        let since = Instant::now();
        s.set_image(old).await?;
        s.reconcile().await?;
        s.pods().delete(POD, &DeleteParams::default()).await?;
        s.drive("the roll back", true, is_completed).await?;
        assert!(s.db.error_log().contains("Starting crash recovery"), "the old version recovered its crash");
        assert_eq!(s.rows().await?, rows, "nothing lost");

        // Asked again, the change completes on a cleanly stopped directory.
        s.set_image(new).await?;
        s.drive("the change asked again", true, is_completed).await?;
        last_recovery = since.elapsed();
        assert_eq!(s.rows().await?, rows, "nothing lost");
        assert_eq!(s.upgrade_step().await?.0, Some(Step::Completed));
        assert_eq!(clean_stop::recorded_series(&s.db.data_dir(), SERIES_MARKER).as_deref(), Some(new));
        println!("round {round}: {old} -> {new}: refused on the crash, rolled back, completed after {last_recovery:?}");
    }
    assert_eq!(s.let_through, 0, "Ironic's progress was done during a change");
    assert_eq!(s.crashed_opens, 0, "a new series started on a directory that needed crash recovery");
    let kills = s.kills;
    println!(
        "{scenario}: {kills} kills, {refused} refusals, {} new versions on a crashed directory, 0 rows lost, \
         {} reconciles let Ironic through during a change",
        s.crashed_opens, s.let_through
    );
    let figures = Figures {
        scenario: scenario.to_string(),
        faults: kills,
        not_converged: 0,
        converge_time: Some(last_recovery),
        ..Figures::default()
    };
    faults::report(&figures);
    Ok(())
}
