//! The pod simulator running Job pods of `ferrometal.io/local-exec` as local
//! processes, on the real apiserver with the real Job controller: what the
//! process is given (command, arguments, environment, volumes), how its exit
//! becomes the pod's and the Job's status, and that every other pod keeps its
//! simulated fate.

use base64::Engine;
use ferrometal_tests::control_plane::TEST_FIELD_MANAGER;
use ferrometal_tests::pod_simulator::{LOCAL_EXEC_IMAGE, LocalRun};
use ferrometal_tests::{ControlPlane, PodFate, PodSimulator, wait};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerStateTerminated, Pod, PodStatus, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const POLL: Duration = Duration::from_millis(200);

struct Env {
    cp: ControlPlane,
    sim: PodSimulator,
    ns: String,
}

impl Env {
    /// A control plane, the simulator with local execution on, a namespace.
    async fn start(prefix: &str) -> anyhow::Result<Self> {
        let mut cp = ControlPlane::start().await?;
        let sim = PodSimulator::start(cp.client()).await?;
        sim.run_local_exec(true);
        let ns = cp.namespace(prefix).await?;
        Ok(Self { cp, sim, ns })
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.cp.client(), &self.ns)
    }

    async fn create(&self, object: Value) -> anyhow::Result<()> {
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let params = PatchParams::apply(TEST_FIELD_MANAGER);
        match kind.as_str() {
            "Job" => drop(self.api::<Job>().patch(&name, &params, &Patch::Apply(&object)).await?),
            "Secret" => drop(self.api::<Secret>().patch(&name, &params, &Patch::Apply(&object)).await?),
            "ConfigMap" => drop(self.api::<ConfigMap>().patch(&name, &params, &Patch::Apply(&object)).await?),
            "Deployment" => drop(self.api::<Deployment>().patch(&name, &params, &Patch::Apply(&object)).await?),
            other => anyhow::bail!("no helper for {other}"),
        }
        Ok(())
    }

    /// Waits for the Job's `Complete` or `Failed` condition and returns which.
    async fn job_end(&self, job: &str) -> anyhow::Result<(String, Option<String>)> {
        let jobs: Api<Job> = self.api();
        wait::until(&format!("Job {job} to end"), 90 * SECOND, POLL, || {
            let jobs = jobs.clone();
            async move {
                let conditions = jobs.get(job).await.ok()?.status?.conditions?;
                let end = conditions
                    .into_iter()
                    .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")?;
                Some((end.type_, end.reason))
            }
        })
        .await
    }

    /// The pods of the Job.
    async fn pods(&self, job: &str) -> anyhow::Result<Vec<Pod>> {
        let pods: Api<Pod> = self.api();
        Ok(pods.list(&ListParams::default().labels(&format!("job-name={job}"))).await?.items)
    }

    /// The Job's one pod, once its status satisfies `ready`.
    async fn pod_when(&self, job: &str, what: &str, ready: impl Fn(&PodStatus) -> bool) -> anyhow::Result<Pod> {
        wait::until_ok(&format!("the pod of Job {job}: {what}"), 60 * SECOND, POLL, || async {
            let pods = self.pods(job).await?;
            Ok(pods.into_iter().find(|p| p.status.as_ref().is_some_and(&ready)))
        })
        .await
    }

    fn the_run(&self, job: &str) -> LocalRun {
        let runs = self.sim.local_runs_of_job(&self.ns, job);
        assert_eq!(runs.len(), 1, "one pod of {job} ran: {runs:?}");
        runs.into_iter().next().expect("one run")
    }
}

/// A Job of one pod that never retries, running `script` with `/bin/sh -c`.
fn job(name: &str, script: &str, pod: Value) -> Value {
    let mut spec = json!({"restartPolicy": "Never",
        "containers": [{"name": "main", "image": LOCAL_EXEC_IMAGE, "command": ["/bin/sh", "-c", script]}]});
    merge(&mut spec, pod);
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": spec}}})
}

/// `patch` merged into `target`: objects key by key, the first container's
/// fields into the first container.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (Value::Array(target), Value::Array(patch)) if target.len() == 1 && patch.len() == 1 => {
            merge(&mut target[0], patch.into_iter().next().expect("one element"));
        }
        (target, patch) => *target = patch,
    }
}

fn terminated(pod: &Pod, container: &str) -> Option<ContainerStateTerminated> {
    let status = pod.status.as_ref()?;
    let all = status.container_statuses.iter().flatten().chain(status.init_container_statuses.iter().flatten());
    all.filter(|s| s.name == container).find_map(|s| s.state.as_ref()?.terminated.clone())
}

fn phase(status: &PodStatus) -> &str {
    status.phase.as_deref().unwrap_or_default()
}

fn secret(name: &str, data: &[(&str, &str)]) -> Value {
    let encode = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    let data: serde_json::Map<String, Value> = data.iter().map(|(k, v)| (k.to_string(), json!(encode(v)))).collect();
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data})
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

#[tokio::test]
async fn a_job_reads_its_mounted_secret_through_the_rewritten_path_and_completes() -> anyhow::Result<()> {
    let env = Env::start("local-exec-secret").await?;
    env.create(secret("creds", &[("password", "s3cret"), ("user", "admin"), ("unused", "x")])).await?;
    // The script sees only paths under the mount; the simulator maps them
    // (in the environment and the arguments) to where it wrote the Secret.
    let script = r#"set -e
        test "$(cat "$PASSWORD_FILE")" = s3cret
        printf '%s:%s' "$(cat "$1")" "$(cat "$PASSWORD_FILE")" > "$FERROMETAL_SCRATCH/result"
        case "$PASSWORD_FILE" in /etc/creds/*) exit 9;; esac
        echo done"#;
    let pod = json!({
        "volumes": [{"name": "creds", "secret": {"secretName": "creds",
            "items": [{"key": "password", "path": "pass/word"}, {"key": "user", "path": "user"}]}}],
        "containers": [{"args": ["sh", "/etc/creds/user"],
            "env": [{"name": "PASSWORD_FILE", "value": "/etc/creds/pass/word"}],
            "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds", "readOnly": true}]}]});
    env.create(job("reader", script, pod)).await?;

    assert_eq!(env.job_end("reader").await?.0, "Complete");
    let run = env.the_run("reader");
    assert_eq!(std::fs::read_to_string(run.scratch.join("result"))?, "admin:s3cret");
    assert!(run.scratch.join("creds/pass/word").is_file(), "items map keys to paths");
    assert!(!run.scratch.join("creds/unused").exists(), "only the listed items are written");
    assert_eq!(run.output("main"), "done\n");
    let pod = env.pod_when("reader", "Succeeded", |s| phase(s) == "Succeeded").await?;
    let exit = terminated(&pod, "main").expect("the container terminated");
    assert_eq!((exit.exit_code, exit.reason.as_deref()), (0, Some("Completed")));
    Ok(())
}

#[tokio::test]
async fn a_job_that_exits_3_fails_with_the_code_and_the_tail_of_its_output() -> anyhow::Result<()> {
    let env = Env::start("local-exec-fail").await?;
    let script = "seq 1 200; echo 'migration failed: no such table' >&2; exit 3";
    env.create(job("migrate", script, json!({}))).await?;

    assert_eq!(env.job_end("migrate").await?, ("Failed".to_string(), Some("BackoffLimitExceeded".to_string())));
    let pod = env.pod_when("migrate", "Failed", |s| phase(s) == "Failed").await?;
    let exit = terminated(&pod, "main").expect("the container terminated");
    assert_eq!((exit.exit_code, exit.reason.as_deref()), (3, Some("Error")));
    let message = exit.message.unwrap_or_default();
    assert!(message.ends_with("migration failed: no such table\n"), "{message}");
    // What FallbackToLogsOnError shows: the last 80 lines, not the whole output.
    assert_eq!(message.lines().count(), 80, "{message}");
    assert!(message.starts_with("122\n"), "{message}");
    assert_eq!(env.the_run("migrate").output("main").lines().count(), 201);
    Ok(())
}

#[tokio::test]
async fn env_value_from_secret_config_map_and_fields_and_env_from_reach_the_process() -> anyhow::Result<()> {
    let env = Env::start("local-exec-env").await?;
    env.create(config_map("settings", json!({"colour": "blue", "size": "3"}))).await?;
    let script = r#"{ printf '%s\n' "$PASSWORD" "$COLOUR" "$POD" "$GREETING" "$CFG_colour" "$CFG_size" "${MISSING-unset}" "$1";
        env | grep -c '^CFG_'; } > "$FERROMETAL_SCRATCH/env""#;
    let pod = json!({"containers": [{
        "args": ["sh", "$(COLOUR)-$(POD)"],
        "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
        "env": [
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
            {"name": "COLOUR", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "colour"}}},
            {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nope", "optional": true}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "GREETING", "value": "$(COLOUR) sky, $$(COLOUR), $(UNDEFINED)"}]}]});
    env.create(job("env", script, pod)).await?;

    // A kubelet waits for a missing Secret, and says why.
    let waiting = env
        .pod_when("env", "waiting for its Secret", |s| {
            s.container_statuses.iter().flatten().any(|c| {
                let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
                waiting.is_some_and(|w| w.reason.as_deref() == Some("CreateContainerConfigError"))
            })
        })
        .await?;
    let status = waiting.status.as_ref().expect("status");
    assert_eq!(phase(status), "Pending");
    let state = status.container_statuses.as_ref().expect("statuses")[0].state.clone().expect("state");
    assert_eq!(state.waiting.and_then(|w| w.message).as_deref(), Some(r#"secret "creds" not found"#));
    env.create(secret("creds", &[("password", "hunter2")])).await?;

    assert_eq!(env.job_end("env").await?.0, "Complete");
    let pod = env.pods("env").await?.into_iter().next().expect("the pod");
    let name = pod.metadata.name.clone().expect("a name");
    let seen = std::fs::read_to_string(env.the_run("env").scratch.join("env"))?;
    let expected = [
        "hunter2",
        "blue",
        &name,
        "blue sky, $(COLOUR), $(UNDEFINED)",
        "blue",
        "3",
        "unset",
        &format!("blue-{name}"),
        "2",
    ];
    assert_eq!(seen.lines().collect::<Vec<_>>(), expected);
    Ok(())
}

#[tokio::test]
async fn an_init_container_runs_first_and_on_failure_restarts_the_container() -> anyhow::Result<()> {
    let env = Env::start("local-exec-init").await?;
    // Fails on its first attempt, succeeds on its second.
    let script = "#!/bin/sh\nn=$(cat \"$1\")\necho \"attempt $n\"\nprintf ' x' >> \"$1\"\n[ \"$n\" = \"seed x\" ]\n";
    env.create(config_map("script", json!({ "run.sh": script }))).await?;
    let pod = json!({
        "restartPolicy": "OnFailure",
        "volumes": [{"name": "work", "emptyDir": {}},
            {"name": "script", "configMap": {"name": "script", "defaultMode": 0o755}}],
        "initContainers": [{"name": "seed", "image": LOCAL_EXEC_IMAGE,
            "command": ["/bin/sh", "-c", "printf seed > \"$1\"", "sh", "/work/count"],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}]}],
        "containers": [{"command": ["/opt/bin/run.sh"], "args": ["/work/count"],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}, {"name": "script", "mountPath": "/opt/bin"}]}]});
    let mut object = job("restart", "unused", pod);
    object["spec"]["backoffLimit"] = json!(3);
    env.create(object).await?;

    assert_eq!(env.job_end("restart").await?.0, "Complete");
    let run = env.the_run("restart");
    assert_eq!(run.output("main"), "attempt seed\nattempt seed x\n");
    let pod = env.pods("restart").await?.into_iter().next().expect("the pod");
    let status = pod.status.clone().expect("status");
    assert_eq!(phase(&status), "Succeeded");
    let main = &status.container_statuses.expect("statuses")[0];
    assert_eq!(main.restart_count, 1);
    let last = main.last_state.as_ref().and_then(|s| s.terminated.as_ref()).expect("the failed attempt");
    assert_eq!(last.exit_code, 1);
    assert_eq!(terminated(&pod, "seed").map(|t| t.exit_code), Some(0));
    Ok(())
}

/// Whether the process `pid` still exists (a zombie counts as gone).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

async fn pid_of(run: &LocalRun, file: &str) -> anyhow::Result<String> {
    let path = run.scratch.join(file);
    wait::until(&format!("{file} to be written"), 30 * SECOND, POLL, || {
        let path = path.clone();
        async move { std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()) }
    })
    .await
}

async fn the_run_when_started(env: &Env, job: &str) -> anyhow::Result<LocalRun> {
    wait::until(&format!("a pod of {job} to start"), 60 * SECOND, POLL, || async {
        env.sim.local_runs_of_job(&env.ns, job).into_iter().next()
    })
    .await
}

#[tokio::test]
async fn processes_are_killed_at_the_pod_deadline_and_with_the_simulator() -> anyhow::Result<()> {
    let env = Env::start("local-exec-kill").await?;
    // The shell forks sleep, so killing only the shell would leave it behind.
    let script = r#"sleep 600 & echo $! > "$FERROMETAL_SCRATCH/pid"; wait"#;
    env.create(job("slow", script, json!({"activeDeadlineSeconds": 3}))).await?;
    let run = the_run_when_started(&env, "slow").await?;
    let pid = pid_of(&run, "pid").await?;
    assert_eq!(env.job_end("slow").await?.0, "Failed");
    let pod = env.pod_when("slow", "Failed", |s| phase(s) == "Failed").await?;
    assert_eq!(pod.status.as_ref().and_then(|s| s.reason.as_deref()), Some("DeadlineExceeded"));
    assert_eq!(terminated(&pod, "main").map(|t| t.exit_code), Some(137));
    assert!(!alive(&pid), "the forked sleep {pid} was killed with its pod");

    env.create(job("endless", script, json!({}))).await?;
    let run = the_run_when_started(&env, "endless").await?;
    let pid = pid_of(&run, "pid").await?;
    assert!(alive(&pid));
    let Env { cp, sim, .. } = env;
    drop(sim);
    wait::until(&format!("the simulator to kill {pid}"), 5 * SECOND, POLL, || async { (!alive(&pid)).then_some(()) })
        .await?;
    drop(cp);
    Ok(())
}

#[tokio::test]
async fn pods_that_are_not_run_keep_their_simulated_fates() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let sim = PodSimulator::start(cp.client()).await?;
    let ns = cp.namespace("local-exec-off").await?;
    let env = Env { cp, sim, ns };
    let failing = "echo ran > \"$FERROMETAL_SCRATCH/ran\"; exit 1";

    // Off by default: a local-exec Job completes as every Job does, unrun.
    env.create(job("off", failing, json!({}))).await?;
    assert_eq!(env.job_end("off").await?.0, "Complete");

    env.sim.run_local_exec(true);
    // Another image is never run.
    env.create(job("other", failing, json!({"containers": [{"image": "example.invalid/job:1"}]}))).await?;
    assert_eq!(env.job_end("other").await?.0, "Complete");
    // A fate the test sets wins over running.
    env.sim.set_job_fate(&env.ns, "fated", PodFate::Failed { exit_code: 7, message: "as the test decided".into() });
    env.create(job("fated", "exit 0", json!({}))).await?;
    assert_eq!(env.job_end("fated").await?.0, "Failed");
    let pod = env.pods("fated").await?.into_iter().next().expect("the pod");
    let exit = terminated(&pod, "main").expect("terminated");
    assert_eq!((exit.exit_code, exit.message.as_deref()), (7, Some("as the test decided")));
    // A fate that takes time: the pod runs (Running and ready) first, and ends as decided.
    let then = Box::new(PodFate::Failed { exit_code: 2, message: "after a while".into() });
    env.sim.set_job_fate(&env.ns, "slow", PodFate::RunsFor { running: 5 * SECOND, then });
    env.create(job("slow", "exit 0", json!({}))).await?;
    let running = env.pod_when("slow", "running", |s| s.phase.as_deref() == Some("Running")).await?;
    let started = running.status.as_ref().and_then(|s| s.start_time.clone());
    assert_eq!(env.job_end("slow").await?.0, "Failed");
    let pod = env.pods("slow").await?.into_iter().next().expect("the pod");
    let exit = terminated(&pod, "main").expect("terminated");
    assert_eq!((exit.exit_code, exit.message.as_deref()), (2, Some("after a while")));
    assert_eq!(pod.status.and_then(|s| s.start_time), started, "the pod keeps its start time");
    // A pod no Job owns becomes ready, although it uses the image.
    env.create(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": LOCAL_EXEC_IMAGE, "command": ["/bin/false"]}]}}}}))
        .await?;
    let deployments: Api<Deployment> = env.api();
    wait::until("the Deployment to be available", 60 * SECOND, POLL, || {
        let deployments = deployments.clone();
        async move { (deployments.get("web").await.ok()?.status?.available_replicas == Some(1)).then_some(()) }
    })
    .await?;
    assert!(env.sim.local_runs().is_empty(), "nothing ran: {:?}", env.sim.local_runs());
    Ok(())
}
