//! The pod status a kubelet reports, rendered from what the simulator knows
//! of a pod: one model for the pods whose fate a test decides and for the
//! pods it really runs.

use super::PodFate;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value, json};

/// The state of one container, as in `ContainerStatus.state`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum State {
    Waiting { reason: String, message: Option<String> },
    Running { started: Time },
    Terminated { exit_code: i32, reason: String, message: Option<String>, started: Time, finished: Time },
}

impl State {
    fn json(&self) -> Value {
        let mut fields = Map::new();
        let key = match self {
            State::Waiting { reason, message } => {
                fields.insert("reason".into(), json!(reason));
                insert_some(&mut fields, "message", message);
                "waiting"
            }
            State::Running { started } => {
                fields.insert("startedAt".into(), json!(started));
                "running"
            }
            State::Terminated { exit_code, reason, message, started, finished } => {
                fields.insert("exitCode".into(), json!(exit_code));
                fields.insert("reason".into(), json!(reason));
                insert_some(&mut fields, "message", message);
                fields.insert("startedAt".into(), json!(started));
                fields.insert("finishedAt".into(), json!(finished));
                "terminated"
            }
        };
        json!({ key: fields })
    }

    pub(super) fn exited(&self) -> Option<i32> {
        match self {
            State::Terminated { exit_code, .. } => Some(*exit_code),
            _ => None,
        }
    }
}

/// One entry of `containerStatuses` or `initContainerStatuses`.
#[derive(Clone, Debug)]
pub(super) struct ContainerView {
    pub name: String,
    pub image: String,
    pub ready: bool,
    pub restarts: i32,
    pub state: State,
    pub last: Option<State>,
}

impl ContainerView {
    pub(super) fn new(container: &Container, state: State, ready: bool) -> Self {
        Self {
            name: container.name.clone(),
            image: container.image.clone().unwrap_or_default(),
            ready,
            restarts: 0,
            state,
            last: None,
        }
    }

    fn json(&self, init: bool) -> Value {
        let mut status = json!({"name": self.name, "image": self.image, "imageID": "simulated://",
            "containerID": format!("simulated://{}", self.name), "ready": self.ready,
            "restartCount": self.restarts, "state": self.state.json()});
        if !init {
            status["started"] = json!(matches!(self.state, State::Running { .. }));
        }
        if let Some(last) = &self.last {
            status["lastState"] = last.json();
        }
        status
    }
}

/// A pod's whole status.
#[derive(Clone, Debug)]
pub(super) struct PodView {
    pub phase: &'static str,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub ip: String,
    pub started: Time,
    pub init: Vec<ContainerView>,
    pub containers: Vec<ContainerView>,
}

impl PodView {
    /// The status of a pod whose fate the test (or the default) decided.
    pub(super) fn for_fate(pod: &Pod, fate: &PodFate, ip: &str) -> Self {
        let now = Time(jiff::Timestamp::now());
        let spec = pod.spec.clone().unwrap_or_default();
        let ready = matches!(fate, PodFate::Ready | PodFate::RunsFor { .. });
        let completed = || State::Terminated {
            exit_code: 0,
            reason: "Completed".into(),
            message: None,
            started: now.clone(),
            finished: now.clone(),
        };
        let state = |index: usize| match fate {
            PodFate::Ready | PodFate::Unready | PodFate::Pending | PodFate::RunsFor { .. } => {
                State::Running { started: now.clone() }
            }
            PodFate::Succeeded => completed(),
            PodFate::Failed { exit_code, message } if index == 0 => State::Terminated {
                exit_code: *exit_code,
                reason: "Error".into(),
                message: Some(message.clone()),
                started: now.clone(),
                finished: now.clone(),
            },
            PodFate::Failed { .. } => completed(),
        };
        let phase = match fate {
            PodFate::Ready | PodFate::Unready | PodFate::Pending | PodFate::RunsFor { .. } => "Running",
            PodFate::Succeeded => "Succeeded",
            PodFate::Failed { .. } => "Failed",
        };
        Self {
            phase,
            reason: None,
            message: None,
            ip: ip.to_string(),
            started: now.clone(),
            init: spec.init_containers.iter().flatten().map(|c| ContainerView::new(c, completed(), true)).collect(),
            containers: spec
                .containers
                .iter()
                .enumerate()
                .map(|(i, c)| ContainerView::new(c, state(i), ready))
                .collect(),
        }
    }

    /// Every container waits to start, as a kubelet reports it: init
    /// containers and, behind them, the containers for `PodInitializing`, or
    /// the containers for `ContainerCreating` when there is no init container.
    pub(super) fn reset_waiting(&mut self) {
        let reason = if self.init.is_empty() { "ContainerCreating" } else { "PodInitializing" };
        for container in self.init.iter_mut().chain(self.containers.iter_mut()) {
            container.state = State::Waiting { reason: reason.into(), message: None };
        }
    }

    pub(super) fn json(&self) -> Value {
        let now = Time(jiff::Timestamp::now());
        let initialized = self.init.iter().all(|c| c.state.exited() == Some(0));
        let ready = self.containers.iter().all(|c| c.ready);
        let flag = |b: bool| if b { "True" } else { "False" };
        let mut status = json!({
            "phase": self.phase,
            "hostIP": "127.0.0.1",
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": self.started,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                {"type": "Initialized", "status": flag(initialized), "lastTransitionTime": now},
                {"type": "ContainersReady", "status": flag(ready), "lastTransitionTime": now},
                {"type": "Ready", "status": flag(ready), "lastTransitionTime": now},
            ],
            "containerStatuses": self.containers.iter().map(|c| c.json(false)).collect::<Vec<_>>(),
            "initContainerStatuses": self.init.iter().map(|c| c.json(true)).collect::<Vec<_>>(),
        });
        if let Some(reason) = &self.reason {
            status["reason"] = json!(reason);
        }
        if let Some(message) = &self.message {
            status["message"] = json!(message);
        }
        status
    }
}

fn insert_some(fields: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        fields.insert(key.into(), json!(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_pod() -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "init", "image": "i"}],
            "containers": [{"name": "main", "image": "m"}, {"name": "side", "image": "s"}]}}))
        .expect("a pod")
    }

    #[test]
    fn a_failed_fate_fails_the_first_container_with_its_code_and_message() {
        let fate = PodFate::Failed { exit_code: 3, message: "boom".into() };
        let status = PodView::for_fate(&job_pod(), &fate, "10.244.0.2").json();
        assert_eq!(status["phase"], "Failed");
        let main = &status["containerStatuses"][0];
        assert_eq!(main["state"]["terminated"]["exitCode"], 3);
        assert_eq!(main["state"]["terminated"]["message"], "boom");
        assert_eq!((main["ready"].clone(), main["started"].clone()), (json!(false), json!(false)));
        assert_eq!(status["containerStatuses"][1]["state"]["terminated"]["reason"], "Completed");
        assert!(status["containerStatuses"][1]["state"]["terminated"].get("message").is_none());
        let init = &status["initContainerStatuses"][0];
        assert_eq!((init["ready"].clone(), init.get("started")), (json!(true), None));
        assert_eq!(status["podIP"], "10.244.0.2");
        assert!(status.get("reason").is_none());
    }

    #[test]
    fn a_job_pod_that_runs_for_a_while_is_running_and_ready_until_its_end() {
        let fate = PodFate::RunsFor { running: std::time::Duration::from_secs(2), then: Box::new(PodFate::Succeeded) };
        let status = PodView::for_fate(&job_pod(), &fate, "10.244.0.4").json();
        assert_eq!(status["phase"], "Running");
        let main = &status["containerStatuses"][0];
        assert!(main["state"]["running"]["startedAt"].is_string());
        assert_eq!(main["ready"], json!(true));
    }

    #[test]
    fn a_ready_fate_runs_every_container_and_sets_the_conditions() {
        let status = PodView::for_fate(&job_pod(), &PodFate::Ready, "10.244.0.3").json();
        assert_eq!(status["phase"], "Running");
        for container in status["containerStatuses"].as_array().expect("statuses") {
            assert!(container["state"]["running"]["startedAt"].is_string());
            assert_eq!((container["ready"].clone(), container["started"].clone()), (json!(true), json!(true)));
        }
        let conditions: Vec<(String, String)> = status["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| (c["type"].as_str().unwrap_or_default().into(), c["status"].as_str().unwrap_or_default().into()))
            .collect();
        let expected =
            [("PodScheduled", "True"), ("Initialized", "True"), ("ContainersReady", "True"), ("Ready", "True")];
        assert_eq!(conditions, expected.map(|(t, s)| (t.to_string(), s.to_string())));
    }
}
