//! Job pods of one test image, run as local processes.
//!
//! When a test switches it on ([`super::PodSimulator::run_local_exec`]), a
//! pod owned by a Job whose every container (init containers included) uses
//! the image [`LOCAL_EXEC_IMAGE`] is not given a fate: its containers run on
//! this machine, as a kubelet would run them, only without a container:
//!
//! - the program is the container's `command` followed by its `args` (no
//!   shell unless the command is one), with `$(VAR)` references expanded as
//!   Kubernetes does; there is no image, so a container without a `command`
//!   fails to start;
//! - the environment is the container's `env` and `envFrom`, with Secret,
//!   ConfigMap and pod-field references resolved (a missing non-optional
//!   source holds the pod Pending, as a kubelet waits for it), plus `PATH`,
//!   `HOME`, `HOSTNAME` and `FERROMETAL_SCRATCH`, a directory of the pod's own;
//! - every Secret and ConfigMap volume is written to
//!   `<scratch>/<volume name>/` (with its `items`, modes and `optional`), an
//!   emptyDir volume is an empty directory there, and every environment
//!   value, command word and argument that starts with a volume mount's
//!   `mountPath` is rewritten to the matching scratch path;
//! - init containers run one after the other, then the containers together;
//!   exit code 0 makes the pod `Succeeded`, anything else `Failed` with the
//!   tail of the output as the terminated container's message (what
//!   `FallbackToLogsOnError` shows); `restartPolicy: OnFailure` restarts a
//!   failed container after a back-off of 1 s, doubling up to 10 s;
//! - `activeDeadlineSeconds` (or [`DEFAULT_DEADLINE`]) bounds the run: past
//!   it, the processes are killed and the pod fails with `DeadlineExceeded`;
//!   deleting the pod or dropping the simulator kills them at once;
//! - each container's output goes to `<ns>.<pod>.<container>.log` in the
//!   simulator's log directory, kept (and its tail printed) like every other
//!   server's log of the test.

mod expand;
mod mounts;
mod prepare;
mod process;
mod run;
mod sources;
mod volumes;

use super::owner_of_kind;
use crate::workdir::WorkDir;
use k8s_openapi::api::core::v1::Pod;
use kube::{Client, ResourceExt};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::AbortHandle;

/// The one image the simulator runs, in Job pods, when told to.
pub const LOCAL_EXEC_IMAGE: &str = "ferrometal.io/local-exec";

/// How long a pod without `activeDeadlineSeconds` may run.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);

/// One pod run as local processes.
#[derive(Clone, Debug)]
pub struct LocalRun {
    pub namespace: String,
    pub pod: String,
    /// The Job that owns the pod.
    pub job: String,
    /// The pod's scratch directory (`FERROMETAL_SCRATCH`), holding its
    /// volumes; it lives as long as the simulator.
    pub scratch: PathBuf,
    log_dir: PathBuf,
}

impl LocalRun {
    /// Where the output of `container` goes.
    pub fn log_path(&self, container: &str) -> PathBuf {
        self.log_dir.join(format!("{}.{}.{container}.log", self.namespace, self.pod))
    }

    /// The output of `container` so far (empty when it has not run).
    pub fn output(&self, container: &str) -> String {
        std::fs::read_to_string(self.log_path(container)).unwrap_or_default()
    }
}

/// Whether `image` is [`LOCAL_EXEC_IMAGE`], with or without a tag or digest.
pub fn is_local_exec_image(image: &str) -> bool {
    image.strip_prefix(LOCAL_EXEC_IMAGE).is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '@']))
}

/// The simulator's side of local execution: the switch, the log directory,
/// and the runs in flight, so that they can be killed from outside.
#[derive(Default)]
pub(super) struct LocalExec {
    on: AtomicBool,
    /// Made on the first run, so that tests which run nothing get no directory.
    dir: Mutex<Option<WorkDir>>,
    runs: Mutex<Vec<LocalRun>>,
    live: Mutex<HashMap<String, Live>>,
}

/// A pod's run in flight.
struct Live {
    task: AbortHandle,
    groups: Groups,
}

/// The process groups of one pod's running containers. Killing them must
/// not wait for the task that runs them: a simulator being dropped cannot.
#[derive(Clone, Debug, Default)]
pub(super) struct Groups(Arc<Mutex<HashSet<i32>>>);

impl Groups {
    fn add(&self, group: i32) {
        lock(&self.0).insert(group);
    }

    fn remove(&self, group: i32) {
        lock(&self.0).remove(&group);
    }

    fn kill_all(&self) {
        for group in lock(&self.0).drain() {
            process::kill_group(group);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl LocalExec {
    pub(super) fn switch(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
    }

    /// Whether the pod is one to run: local execution is on, a Job owns the
    /// pod, every container uses the image, and the pod has not finished
    /// (a simulator that starts late must not rerun what another ran).
    pub(super) fn takes(&self, pod: &Pod) -> bool {
        let Some(spec) = pod.spec.as_ref() else { return false };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let mut containers = spec.containers.iter().chain(spec.init_containers.iter().flatten());
        self.on.load(Ordering::SeqCst)
            && owner_of_kind(pod, "Job").is_some()
            && !matches!(phase, Some("Succeeded" | "Failed"))
            && !spec.containers.is_empty()
            && containers.all(|c| c.image.as_deref().is_some_and(is_local_exec_image))
    }

    /// Starts running the pod, which is bound to the simulated node and has
    /// the pod IP `ip`.
    pub(super) fn start(self: &Arc<Self>, client: Client, pod: Pod, ip: String) {
        let uid = pod.uid().unwrap_or_default();
        let groups = Groups::default();
        let record = self.record(&pod).map_err(|e| format!("the pod simulator cannot prepare the pod: {e:#}"));
        let pod_run = run::PodRun { client, pod, ip, record, groups: groups.clone() };
        let this = self.clone();
        let key = uid.clone();
        // Held while spawning, so that a run that ends at once removes its
        // entry only after it was added.
        let mut live = lock(&self.live);
        let task = tokio::spawn(async move {
            pod_run.run().await;
            lock(&this.live).remove(&key);
        });
        live.insert(uid, Live { task: task.abort_handle(), groups });
    }

    /// Kills the pod's processes and ends its run (a kubelet kills the
    /// containers of a deleted pod).
    pub(super) fn stop(&self, uid: &str) {
        let live = lock(&self.live).remove(uid);
        if let Some(live) = live {
            live.groups.kill_all();
            live.task.abort();
        }
    }

    /// Kills every process and ends every run.
    pub(super) fn shutdown(&self) {
        let live: Vec<Live> = lock(&self.live).drain().map(|(_, live)| live).collect();
        for live in live {
            live.groups.kill_all();
            live.task.abort();
        }
    }

    pub(super) fn runs(&self) -> Vec<LocalRun> {
        lock(&self.runs).clone()
    }

    /// Makes the pod's fresh scratch directory and records the run.
    fn record(&self, pod: &Pod) -> crate::Result<LocalRun> {
        let mut dir = lock(&self.dir);
        if dir.is_none() {
            *dir = Some(WorkDir::new("pod-simulator")?);
        }
        let log_dir = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let namespace = pod.namespace().unwrap_or_default();
        let scratch = log_dir.join(format!("{namespace}.{}", pod.name_any()));
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        std::fs::create_dir_all(&scratch)?;
        let run = LocalRun {
            namespace,
            pod: pod.name_any(),
            job: owner_of_kind(pod, "Job").unwrap_or_default().to_string(),
            scratch,
            log_dir,
        };
        lock(&self.runs).push(run.clone());
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_matches_with_or_without_a_tag_or_digest() {
        assert!(is_local_exec_image("ferrometal.io/local-exec"));
        assert!(is_local_exec_image("ferrometal.io/local-exec:1"));
        assert!(is_local_exec_image("ferrometal.io/local-exec@sha256:00"));
        assert!(!is_local_exec_image("ferrometal.io/local-executor"));
        assert!(!is_local_exec_image("quay.io/ferrometal.io/local-exec"));
    }
}
