//! One pod's run: prepare it, run its init containers one by one and its
//! containers together, and report every step in the pod's status.

use super::prepare::{self, Blocker, ContainerPlan};
use super::process::{self, Exit};
use super::{DEFAULT_DEADLINE, Groups, LocalRun, lock};
use crate::pod_simulator::status::{ContainerView, PodView, State};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How often a pod waiting for a missing Secret or ConfigMap looks again.
const RETRY: Duration = Duration::from_secs(1);
/// The first and the longest back-off before a failed container restarts.
const BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

pub(super) struct PodRun {
    pub client: Client,
    pub pod: Pod,
    pub ip: String,
    pub record: Result<LocalRun, String>,
    pub groups: Groups,
}

/// A container's place in the pod.
#[derive(Clone, Copy)]
enum Slot {
    Init(usize),
    Main(usize),
}

impl PodRun {
    pub(super) async fn run(self) {
        let report = Reporter::new(&self.client, &self.pod, &self.ip);
        let seconds = self.pod.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        let limit = seconds.map_or(DEFAULT_DEADLINE, |s| Duration::from_secs(u64::try_from(s).unwrap_or(0)));
        let deadline = Instant::now() + limit;
        let record = match &self.record {
            Ok(record) => record,
            Err(message) => return report.fail_to_start(message).await,
        };
        let plan = loop {
            match prepare::prepare(&self.client, &self.pod, &self.ip, record).await {
                Ok(plan) => break plan,
                Err(Blocker::Fail(message)) => return report.fail_to_start(&message).await,
                Err(Blocker::Wait { reason, message }) => {
                    if Instant::now() >= deadline {
                        return report.finish(false, true).await;
                    }
                    report.waiting(reason, &message).await;
                    tokio::time::sleep_until((Instant::now() + RETRY).min(deadline)).await;
                }
            }
        };
        report.update(PodView::reset_waiting);
        for (index, container) in plan.init.iter().enumerate() {
            let (ok, late) = self.container(&report, Slot::Init(index), container, deadline).await;
            if !ok {
                return report.finish(false, late).await;
            }
        }
        report.update(|view| view.phase = "Running");
        let ends = futures::future::join_all(
            plan.containers.iter().enumerate().map(|(i, c)| self.container(&report, Slot::Main(i), c, deadline)),
        )
        .await;
        report.finish(ends.iter().all(|(ok, _)| *ok), ends.iter().any(|(_, late)| *late)).await;
    }

    /// Runs one container to its end, restarting it on failure when the
    /// pod's restart policy says so. Returns whether it exited 0, and
    /// whether the deadline ended it.
    async fn container(&self, report: &Reporter, slot: Slot, plan: &ContainerPlan, deadline: Instant) -> (bool, bool) {
        let restart = self.pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("OnFailure");
        let mut backoff = BACKOFF;
        loop {
            let started = now();
            report.container(slot, |c| {
                c.state = State::Running { started: started.clone() };
                c.ready = matches!(slot, Slot::Main(_));
            });
            report.write().await;
            let Exit { code, reason, message, deadline: late } = process::run(plan, &self.groups, deadline).await;
            let ended = State::Terminated { exit_code: code, reason: reason.into(), message, started, finished: now() };
            report.container(slot, |c| {
                c.state = ended.clone();
                // A completed init container counts as ready.
                c.ready = matches!(slot, Slot::Init(_)) && code == 0;
            });
            if code == 0 || late || !restart {
                report.write().await;
                return (code == 0, late);
            }
            report.container(slot, |c| {
                c.last = Some(ended);
                c.restarts = c.restarts.saturating_add(1);
                c.state = State::Waiting {
                    reason: "CrashLoopBackOff".into(),
                    message: Some(format!("back-off {}s restarting failed container={}", backoff.as_secs(), plan.name)),
                };
            });
            report.write().await;
            if Instant::now() + backoff >= deadline {
                tokio::time::sleep_until(deadline).await;
                return (false, true);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

/// The pod's status as the run sees it, written to the apiserver one write
/// at a time, so that a later state never loses to an earlier one.
struct Reporter {
    api: Api<Pod>,
    name: String,
    view: Mutex<PodView>,
    writing: tokio::sync::Mutex<()>,
}

impl Reporter {
    fn new(client: &Client, pod: &Pod, ip: &str) -> Self {
        let spec = pod.spec.clone().unwrap_or_default();
        let waiting = State::Waiting { reason: String::new(), message: None };
        let mut view = PodView {
            phase: "Pending",
            reason: None,
            message: None,
            ip: ip.to_string(),
            started: now(),
            init: spec
                .init_containers
                .iter()
                .flatten()
                .map(|c| ContainerView::new(c, waiting.clone(), false))
                .collect(),
            containers: spec.containers.iter().map(|c| ContainerView::new(c, waiting.clone(), false)).collect(),
        };
        view.reset_waiting();
        Self {
            api: Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default()),
            name: pod.name_any(),
            view: Mutex::new(view),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    fn update(&self, change: impl FnOnce(&mut PodView)) {
        change(&mut lock(&self.view));
    }

    fn container(&self, slot: Slot, change: impl FnOnce(&mut ContainerView)) {
        self.update(|view| {
            let container = match slot {
                Slot::Init(i) => view.init.get_mut(i),
                Slot::Main(i) => view.containers.get_mut(i),
            };
            if let Some(container) = container {
                change(container);
            }
        });
    }

    /// Every container waits with `reason`; written when it changes.
    async fn waiting(&self, reason: &str, message: &str) {
        let state = State::Waiting { reason: reason.into(), message: Some(message.into()) };
        let changed = {
            let mut guard = lock(&self.view);
            let view = &mut *guard;
            let changed = view.containers.first().is_none_or(|c| c.state != state);
            for container in view.init.iter_mut().chain(view.containers.iter_mut()) {
                container.state = state.clone();
            }
            changed
        };
        if changed {
            self.write().await;
        }
    }

    /// The pod fails before any process ran: every container ends as a
    /// runtime reports a container it could not start.
    async fn fail_to_start(&self, message: &str) {
        tracing::warn!(pod = %self.name, message, "the pod simulator cannot run a local-exec pod");
        let (started, finished) = (now(), now());
        self.update(|view| {
            for container in view.init.iter_mut().chain(view.containers.iter_mut()) {
                container.state = State::Terminated {
                    exit_code: 128,
                    reason: "StartError".into(),
                    message: Some(message.to_string()),
                    started: started.clone(),
                    finished: finished.clone(),
                };
            }
        });
        self.finish(false, false).await;
    }

    /// The pod ends: Succeeded, or Failed (with `DeadlineExceeded` when its
    /// deadline passed).
    async fn finish(&self, succeeded: bool, late: bool) {
        self.update(|view| {
            view.phase = if succeeded { "Succeeded" } else { "Failed" };
            for container in &mut view.containers {
                container.ready = false;
            }
            if late {
                view.reason = Some("DeadlineExceeded".into());
                view.message = Some("Pod was active on the node longer than the specified deadline".into());
            }
        });
        self.write().await;
    }

    /// Writes the current view, retrying briefly; a pod that is gone needs
    /// no status.
    async fn write(&self) {
        let _turn = self.writing.lock().await;
        let status = lock(&self.view).json();
        for attempt in 1..=5 {
            let patch = Patch::Merge(json!({ "status": status }));
            match self.api.patch_status(&self.name, &PatchParams::default(), &patch).await {
                Ok(_) => return,
                Err(kube::Error::Api(e)) if e.code == 404 => return,
                Err(err) if attempt == 5 => {
                    tracing::warn!(pod = %self.name, %err, "the pod simulator could not write a pod's status");
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}
