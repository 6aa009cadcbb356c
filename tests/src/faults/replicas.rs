//! The operator as `ferrometal run` processes that a scenario SIGKILLs and starts again: one
//! replica, or several electing a leader. How a replica is started (kubeconfig, arguments,
//! environment) is the caller's: the fault tests use the install tests' Deployment arguments
//! and ServiceAccount, so the process under fault is the one a cluster runs.

use crate::operator_process::OperatorProcess;
use std::path::PathBuf;
use std::time::Duration;

/// How to start one replica.
#[derive(Clone, Debug)]
pub struct Launch {
    pub kubeconfig: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Replicas by index; `None` while killed.
pub struct Replicas {
    launches: Vec<Launch>,
    running: Vec<Option<OperatorProcess>>,
    /// SIGKILLs sent so far.
    pub kills: usize,
    /// Panics in the logs of replicas already killed.
    panics_before: usize,
}

/// Panics a log reports (Rust's panic message).
fn panics_in(log: &str) -> usize {
    log.matches("panicked at").count()
}

impl Replicas {
    /// Starts one process per launch (replica `i` is named `ferrometal-<i>`).
    pub fn start(launches: Vec<Launch>) -> crate::Result<Self> {
        let mut replicas =
            Self { running: launches.iter().map(|_| None).collect(), launches, kills: 0, panics_before: 0 };
        for i in 0..replicas.launches.len() {
            replicas.restart(i)?;
        }
        Ok(replicas)
    }

    /// Adds a replica started from `launch`; its index is the next one.
    pub fn with(mut self, launch: Launch) -> crate::Result<Self> {
        self.launches.push(launch);
        self.running.push(None);
        self.restart(self.launches.len() - 1)?;
        Ok(self)
    }

    /// Starts replica `i` (again), if it is not running.
    pub fn restart(&mut self, i: usize) -> crate::Result<()> {
        let launch = self.launches.get(i).ok_or_else(|| anyhow::anyhow!("no replica {i}"))?;
        if self.running[i].is_none() {
            let process =
                OperatorProcess::start(&format!("ferrometal-{i}"), &launch.kubeconfig, &launch.args, &launch.env)?;
            self.running[i] = Some(process);
        }
        Ok(())
    }

    /// SIGKILLs replica `i`: no shutdown, no lease released, reconciles cut anywhere.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut process) = self.running.get_mut(i).and_then(Option::take) {
            process.kill();
            self.kills += 1;
            self.panics_before += panics_in(&process.log());
        }
    }

    pub fn get(&self, i: usize) -> Option<&OperatorProcess> {
        self.running.get(i).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut OperatorProcess> {
        self.running.get_mut(i).and_then(Option::as_mut)
    }

    /// The index of the replica whose `/readyz` says it leads, if one does.
    pub async fn leader(&self) -> Option<usize> {
        for (i, process) in self.running.iter().enumerate() {
            if let Some(process) = process
                && let Some((200, body)) = process.readyz().await
                && body.contains("leader election: leading")
            {
                return Some(i);
            }
        }
        None
    }

    /// Waits until some replica leads; its index.
    pub async fn wait_leader(&mut self, timeout: Duration) -> crate::Result<usize> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            for process in self.running.iter_mut().flatten() {
                process.ensure_running()?;
            }
            if let Some(i) = self.leader().await {
                return Ok(i);
            }
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "no replica leads after {timeout:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts again every replica that exited by itself, as the kubelet restarts a container
    /// that stopped (the operator exits when it loses its lease); how many it restarted.
    pub fn revive(&mut self) -> crate::Result<usize> {
        let mut revived = 0;
        for i in 0..self.running.len() {
            if let Some(process) = self.running[i].as_mut()
                && process.ensure_running().is_err()
            {
                if let Some(process) = self.running[i].take() {
                    self.panics_before += panics_in(&process.log());
                }
                self.restart(i)?;
                revived += 1;
            }
        }
        Ok(revived)
    }

    /// Fails if a running replica exited by itself (a panic, an error exit), with its log.
    pub fn ensure_running(&mut self) -> crate::Result<()> {
        for process in self.running.iter_mut().flatten() {
            process.ensure_running()?;
        }
        Ok(())
    }

    /// Panics logged by every replica, killed ones included.
    pub fn panics(&self) -> usize {
        self.panics_before + self.running.iter().flatten().map(|p| panics_in(&p.log())).sum::<usize>()
    }
}
