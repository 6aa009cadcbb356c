//! Pods that really run: a control plane with a real node (containerd, kubelet, kube-proxy,
//! CoreDNS; `scripts/node.sh`), and the Kubernetes behaviours the operator's workloads rely on,
//! each shown by a container's own doing: a readiness probe that decides availability, an exit
//! code that decides a Job, a `preStop` hook that runs before the grace period ends, a Service
//! and its DNS name that reach a pod, an init container that keeps a pod from starting, and an
//! image built from Debian's packages and a PyPI wheel. No pod simulator runs here.
//!
//! The images: `ferrometal.local/probe:1` (a static helper: echo, exit, sleep, serve, get,
//! resolve; `scripts/node/probe.c`) and `ferrometal.local/debian-python:1`, both built by
//! `scripts/install-node.sh`; nothing is pulled.

use anyhow::Context;
use ferrometal_tests::node::{DEBIAN_PYTHON_IMAGE, PROBE_IMAGE, RealNode};
use ferrometal_tests::{ControlPlane, ControlPlaneConfig, wait};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A control plane with a real node, and a namespace of the test's own.
async fn cluster(prefix: &str) -> anyhow::Result<(ControlPlane, String)> {
    let mut cp = ControlPlane::start_with(ControlPlaneConfig { node: true, ..Default::default() }).await?;
    let ns = cp.namespace(prefix).await?;
    Ok((cp, ns))
}

async fn create<K>(cp: &ControlPlane, ns: &str, object: Value) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(cp.client(), ns);
    Ok(api.create(&PostParams::default(), &serde_json::from_value(object)?).await?)
}

/// A container of the probe image running `args`.
fn probe(name: &str, args: &[&str]) -> Value {
    json!({"name": name, "image": PROBE_IMAGE, "imagePullPolicy": "Never", "args": args})
}

/// Waits until `check` holds of the object `name`.
async fn until<K>(cp: &ControlPlane, ns: &str, name: &str, what: &str, check: impl Fn(&K) -> bool) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(cp.client(), ns);
    let check = &check;
    wait::until(what, Duration::from_secs(120), Duration::from_millis(250), || {
        let api = api.clone();
        async move { api.get_opt(name).await.ok().flatten().filter(|o| check(o)) }
    })
    .await
    .with_context(|| format!("waiting for {what}"))
}

/// The logs of the first pod of `job`, through the apiserver and the kubelet.
async fn job_log(cp: &ControlPlane, ns: &str, job: &str) -> anyhow::Result<String> {
    let pods: Api<Pod> = Api::namespaced(cp.client(), ns);
    let listed = pods.list(&ListParams::default().labels(&format!("job-name={job}"))).await?;
    let pod = listed.items.first().with_context(|| format!("a pod of Job {job}"))?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    Ok(pods.logs(&name, &LogParams::default()).await?)
}

fn job(name: &str, container: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}})
}

fn job_condition(job: &Job, type_: &str) -> bool {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == type_ && c.status == "True")
}

/// A Deployment of one pod serving `text` on 8080, ready when its readiness probe reaches
/// `probe_port`.
fn server(name: &str, text: &str, probe_port: u16) -> Value {
    let mut container = probe("server", &["serve", "8080", text]);
    container["readinessProbe"] = json!({"tcpSocket": {"port": probe_port}, "periodSeconds": 1});
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}})
}

fn available(deployment: &Deployment) -> bool {
    deployment
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Available" && c.status == "True")
}

#[tokio::test]
async fn a_deployment_becomes_available_only_through_its_real_readiness_probe() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-probe").await?;
    create::<Deployment>(&cp, &ns, server("answers", "ready", 8080)).await?;
    create::<Deployment>(&cp, &ns, server("silent", "never", 9090)).await?;

    let ready = until::<Deployment>(&cp, &ns, "answers", "the Deployment Available", available).await?;
    assert_eq!(ready.status.and_then(|s| s.ready_replicas), Some(1));
    // The other pod runs too, but nothing listens where its probe knocks: never ready.
    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    let silent = wait::until("the silent pod running", Duration::from_secs(60), Duration::from_millis(250), || {
        let pods = pods.clone();
        async move {
            let listed = pods.list(&ListParams::default().labels("app=silent")).await.ok()?;
            listed.items.into_iter().find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        }
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(5)).await; // five probe periods
    let silent = pods.get(&silent.metadata.name.clone().unwrap_or_default()).await?;
    let statuses = silent.status.and_then(|s| s.container_statuses).unwrap_or_default();
    assert!(statuses.iter().all(|c| !c.ready && c.state.as_ref().is_some_and(|s| s.running.is_some())), "{statuses:?}");
    let deployments: Api<Deployment> = Api::namespaced(cp.client(), &ns);
    let silent = deployments.get("silent").await?;
    assert!(!available(&silent), "a probe that fails keeps it unavailable: {:?}", silent.status);
    Ok(())
}

#[tokio::test]
async fn a_jobs_pod_really_runs_and_its_exit_code_decides_the_job() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-job").await?;
    create::<Job>(&cp, &ns, job("succeeds", probe("work", &["exit", "0", "all", "done"]))).await?;
    create::<Job>(&cp, &ns, job("fails", probe("work", &["exit", "3", "gave", "up"]))).await?;

    until::<Job>(&cp, &ns, "succeeds", "the Job Complete", |j| job_condition(j, "Complete")).await?;
    assert_eq!(job_log(&cp, &ns, "succeeds").await?.trim(), "all done");
    let failed = until::<Job>(&cp, &ns, "fails", "the Job Failed", |j| job_condition(j, "Failed")).await?;
    assert!(!job_condition(&failed, "Complete"));
    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    let pod = pods.list(&ListParams::default().labels("job-name=fails")).await?.items.into_iter().next();
    let terminated = pod
        .and_then(|p| p.status?.container_statuses?.into_iter().next()?.state?.terminated)
        .context("the container terminated")?;
    assert_eq!(terminated.exit_code, 3);
    assert_eq!(job_log(&cp, &ns, "fails").await?.trim(), "gave up");
    Ok(())
}

#[tokio::test]
async fn a_statefulset_pods_pre_stop_hook_runs_before_its_grace_period_ends() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-prestop").await?;
    let node = cp.node().context("a node")?;
    // The hook calls back to this test on the node's address (the pod bridge's gateway).
    let address = node.gateway()?.to_string();
    let listener = tokio::net::TcpListener::bind((address.as_str(), 0)).await?;
    let port = listener.local_addr()?.port().to_string();
    let grace = 30;
    let mut container = probe("db", &["sleep", "0"]);
    container["lifecycle"] = json!({"preStop": {"exec": {"command": ["/probe", "get", address, port]}}});
    create::<StatefulSet>(
        &cp,
        &ns,
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                    "spec": {"terminationGracePeriodSeconds": grace, "containers": [container]}}}}),
    )
    .await?;
    let running = until::<Pod>(&cp, &ns, "db-0", "the StatefulSet's pod Running", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await?;
    let uid = running.metadata.uid.clone();
    let pod_ip = running.status.and_then(|s| s.pod_ip).context("the pod's IP")?;

    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    let deleted = Instant::now();
    pods.delete("db-0", &DeleteParams::default()).await?;
    let (mut hook, peer) = tokio::time::timeout(Duration::from_secs(grace), listener.accept())
        .await
        .context("the preStop hook did not call within the grace period")??;
    assert!(deleted.elapsed() < Duration::from_secs(grace), "{:?}", deleted.elapsed());
    assert_eq!(peer.ip().to_string(), pod_ip, "the call came from the pod");
    // While the hook waits for this answer, its pod is still there, terminating: the kubelet
    // stops the container only after the hook.
    let terminating = pods.get("db-0").await?;
    assert_eq!(terminating.metadata.uid, uid, "the same pod");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let states = terminating.status.and_then(|s| s.container_statuses).unwrap_or_default();
    assert!(states.iter().all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some())), "{states:?}");
    tokio::io::AsyncWriteExt::write_all(&mut hook, b"stop acknowledged\n").await?;
    drop(hook);
    // Then the pod goes, and the StatefulSet makes a new one.
    until::<Pod>(&cp, &ns, "db-0", "a new pod", |p| p.metadata.uid != uid).await?;
    Ok(())
}

#[tokio::test]
async fn a_service_and_its_dns_name_reach_a_pod() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-service").await?;
    create::<Deployment>(&cp, &ns, server("web", "hello-from-web", 8080)).await?;
    create::<Service>(
        &cp,
        &ns,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
    )
    .await?;
    until::<Deployment>(&cp, &ns, "web", "the server Available", available).await?;

    let full = format!("web.{ns}.svc.cluster.local");
    for (name, host) in [("by-full-name", full.as_str()), ("by-short-name", "web")] {
        create::<Job>(&cp, &ns, job(name, probe("client", &["get", host, "80"]))).await?;
        until::<Job>(&cp, &ns, name, "the client Job Complete", |j| job_condition(j, "Complete")).await?;
        assert_eq!(job_log(&cp, &ns, name).await?.trim(), "hello-from-web", "{host}");
    }
    Ok(())
}

#[tokio::test]
async fn an_init_container_that_fails_keeps_the_pod_from_starting() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-init").await?;
    create::<Pod>(
        &cp,
        &ns,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "blocked"},
            "spec": {"restartPolicy": "Never",
                "initContainers": [probe("prepare", &["exit", "1", "cannot", "prepare"])],
                "containers": [probe("main", &["echo", "main", "ran"])]}}),
    )
    .await?;
    let failed = until::<Pod>(&cp, &ns, "blocked", "the pod Failed", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")
    })
    .await?;
    let status = failed.status.unwrap_or_default();
    let init = status.init_container_statuses.unwrap_or_default();
    let exit = init.first().and_then(|c| c.state.as_ref()?.terminated.as_ref()).map(|t| t.exit_code);
    assert_eq!(exit, Some(1), "{init:?}");
    for main in status.container_statuses.unwrap_or_default() {
        let state = main.state.unwrap_or_default();
        assert!(state.running.is_none() && state.terminated.is_none(), "the main container never started: {state:?}");
    }
    Ok(())
}

#[tokio::test]
async fn an_image_from_debian_packages_and_a_pypi_wheel_runs_on_the_node() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-debian").await?;
    let node = cp.node().context("a node")?;
    node.import(&RealNode::cached_image("debian-python.tar")?)?;
    let container = json!({"name": "python", "image": DEBIAN_PYTHON_IMAGE, "imagePullPolicy": "Never",
        "args": ["-c", "import six, sys; print('six', six.__version__, 'python', sys.version_info[0], sys.version_info[1])"]});
    create::<Job>(&cp, &ns, job("python", container)).await?;
    until::<Job>(&cp, &ns, "python", "the Job Complete", |j| job_condition(j, "Complete")).await?;
    assert_eq!(job_log(&cp, &ns, "python").await?.trim(), "six 1.16.0 python 3 11");
    Ok(())
}

#[tokio::test]
async fn the_pod_simulator_never_touches_a_pod_bound_to_the_real_node() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-and-simulator").await?;
    let simulator = ferrometal_tests::PodSimulator::start(cp.client()).await?;
    let real = cp.node().context("a node")?.name().to_string();
    for (name, node) in [("on-the-real-node", real.as_str()), ("on-the-simulated-node", simulator.node_name())] {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "nodeName": node, "containers": [probe("main", &["echo", "ran", "for", "real"])]}});
        pod["metadata"]["labels"] = json!({"test": "mixed"});
        create::<Pod>(&cp, &ns, pod).await?;
    }
    let done = until::<Pod>(&cp, &ns, "on-the-real-node", "the real pod Succeeded", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    assert_eq!(pods.logs("on-the-real-node", &LogParams::default()).await?.trim(), "ran for real");
    let terminated = done
        .status
        .and_then(|s| s.container_statuses?.into_iter().next()?.state?.terminated)
        .context("terminated by the kubelet")?;
    assert_eq!(terminated.exit_code, 0);
    assert!(terminated.container_id.is_some_and(|id| id.starts_with("containerd://")), "a containerd container");
    // The simulated node's pod got the simulator's fate: Running, with no container behind it.
    let simulated = until::<Pod>(&cp, &ns, "on-the-simulated-node", "the simulated pod Running", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await?;
    let id = simulated.status.and_then(|s| s.container_statuses?.into_iter().next()?.container_id);
    assert!(!id.is_some_and(|id| id.starts_with("containerd://")), "not a real container");
    Ok(())
}

#[tokio::test]
async fn kubectl_logs_and_exec_reach_a_running_container() -> anyhow::Result<()> {
    let (cp, ns) = cluster("node-kubectl").await?;
    create::<Pod>(
        &cp,
        &ns,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shell"},
            "spec": {"containers": [probe("main", &["serve", "8080", "hi"])]}}),
    )
    .await?;
    until::<Pod>(&cp, &ns, "shell", "the pod Running", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await?;
    let kubectl = |args: &[&str]| -> anyhow::Result<String> {
        let output = std::process::Command::new(ferrometal_tests::env::kube_bin("kubectl")?)
            .arg(format!("--kubeconfig={}", cp.kubeconfig().display()))
            .args(["--namespace", ns.as_str()])
            .args(args)
            .output()?;
        anyhow::ensure!(output.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    assert_eq!(kubectl(&["exec", "shell", "--", "/probe", "echo", "from", "exec"])?, "from exec");
    let logs = wait::until("the server's log line", Duration::from_secs(30), Duration::from_millis(250), || {
        let logs = kubectl(&["logs", "shell"]).ok().filter(|l| !l.is_empty());
        async move { logs }
    })
    .await?;
    assert!(logs.contains("8080"), "{logs}");
    Ok(())
}
