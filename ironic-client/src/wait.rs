//! Waiting for a node to finish a transition.
//!
//! A transition is done when the node is in the wanted state with no target
//! left; waiting for a transient state (`service wait`, `clean hold`…)
//! ends as soon as the node is in it, target or not. It failed when the node lands in a failure state (`* failed`,
//! `error`), or when nothing is in progress any more, the node is elsewhere
//! and `last_error` is set: a failed `manage` falls back to `enroll` that
//! way, not to a failure state.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::IronicClient;
use crate::error::{Error, Result};
use crate::types::{Node, PowerState, ProvisionState, STATUS_FIELDS};

/// How long and how often to poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    /// Give up after this long.
    pub timeout: Duration,
    /// Time between two polls. Each poll is one `GET` costing Ironic about
    /// 13 ms of its single API worker, so keep this at a second or more in
    /// production.
    pub poll_interval: Duration,
}

impl Default for WaitOptions {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(600), poll_interval: Duration::from_secs(2) }
    }
}

impl WaitOptions {
    /// Options with this timeout and poll interval.
    pub fn new(timeout: Duration, poll_interval: Duration) -> Self {
        Self { timeout, poll_interval }
    }
}

/// Where a node stands relative to what is waited for.
#[derive(Debug)]
pub(crate) enum Progress {
    Reached,
    Failed(Error),
    Pending,
}

/// The progress of `node` towards provision state `wanted`.
pub(crate) fn provision_progress(ident: &str, node: &Node, wanted: &ProvisionState) -> Progress {
    let Some(state) = &node.provision_state else {
        return Progress::Pending;
    };
    let idle = node.target_provision_state.is_none();
    if state == wanted && (idle || !wanted.is_stable()) {
        return Progress::Reached;
    }
    if state != wanted && (state.is_failure() || (idle && node.last_error.is_some())) {
        return Progress::Failed(Error::ProvisionFailed {
            node: ident.to_owned(),
            state: state.clone(),
            last_error: node.last_error.clone(),
        });
    }
    Progress::Pending
}

/// The progress of `node` towards power state `wanted`.
pub(crate) fn power_progress(ident: &str, node: &Node, wanted: &PowerState) -> Progress {
    let idle = node.target_power_state.is_none();
    let here = node.power_state.as_ref() == Some(wanted);
    if here && idle {
        Progress::Reached
    } else if idle && !here && (node.last_error.is_some() || node.power_state == Some(PowerState::Error)) {
        Progress::Failed(Error::PowerFailed {
            node: ident.to_owned(),
            state: node.power_state.clone(),
            last_error: node.last_error.clone(),
        })
    } else {
        Progress::Pending
    }
}

impl IronicClient {
    /// Polls until the node is in provision state `wanted` with no
    /// transition pending; returns the node as last seen.
    pub async fn wait_for_provision_state(
        &self,
        ident: &str,
        wanted: ProvisionState,
        options: WaitOptions,
    ) -> Result<Node> {
        self.poll_until(ident, wanted.as_str(), options, |node| provision_progress(ident, node, &wanted)).await
    }

    /// Polls until the node is in power state `wanted` with no power change
    /// pending; returns the node as last seen.
    pub async fn wait_for_power_state(&self, ident: &str, wanted: PowerState, options: WaitOptions) -> Result<Node> {
        self.poll_until(ident, wanted.as_str(), options, |node| power_progress(ident, node, &wanted)).await
    }

    async fn poll_until(
        &self,
        ident: &str,
        wanted: &str,
        options: WaitOptions,
        check: impl Fn(&Node) -> Progress,
    ) -> Result<Node> {
        let started = Instant::now();
        loop {
            // The bulk status fields: what a poller needs, and no more.
            let node = self.get_node_fields(ident, STATUS_FIELDS).await?;
            match check(&node) {
                Progress::Reached => return Ok(node),
                Progress::Failed(err) => return Err(err),
                Progress::Pending => {}
            }
            if started.elapsed() + options.poll_interval > options.timeout {
                return Err(Error::WaitTimeout {
                    node: ident.to_owned(),
                    wanted: wanted.to_owned(),
                    current: describe(&node),
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(options.poll_interval).await;
        }
    }
}

/// "provision state X (target Y), power state Z" for timeout messages.
fn describe(node: &Node) -> String {
    let show = |s: Option<&str>| s.unwrap_or("none").to_owned();
    format!(
        "provision state {} (target {}), power state {} (target {})",
        show(node.provision_state.as_ref().map(|s| s.as_str())),
        show(node.target_provision_state.as_ref().map(|s| s.as_str())),
        show(node.power_state.as_ref().map(|s| s.as_str())),
        show(node.target_power_state.as_ref().map(|s| s.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(state: &str, target: Option<&str>, last_error: Option<&str>) -> Node {
        Node {
            provision_state: Some(state.into()),
            target_provision_state: target.map(Into::into),
            last_error: last_error.map(Into::into),
            ..Node::default()
        }
    }

    fn progress(n: &Node, wanted: ProvisionState) -> &'static str {
        match provision_progress("n", n, &wanted) {
            Progress::Reached => "reached",
            Progress::Failed(_) => "failed",
            Progress::Pending => "pending",
        }
    }

    #[test]
    fn provision_outcomes() {
        use ProvisionState::*;
        assert_eq!(progress(&node("manageable", None, None), Manageable), "reached");
        assert_eq!(progress(&node("verifying", Some("manageable"), None), Manageable), "pending");
        assert_eq!(progress(&node("manageable", Some("available"), None), Manageable), "pending");
        assert_eq!(progress(&node("service wait", Some("active"), None), ServiceWait), "reached");
        assert_eq!(progress(&node("deploy failed", None, Some("boom")), Active), "failed");
        assert_eq!(progress(&node("error", None, None), Available), "failed");
        assert_eq!(progress(&node("clean failed", Some("available"), None), Available), "failed");
        // Pitfall: a failed `manage` goes back to enroll with last_error.
        assert_eq!(progress(&node("enroll", None, Some("401 from BMC")), Manageable), "failed");
        assert_eq!(progress(&node("enroll", None, None), Manageable), "pending");
        // Still moving despite an error from an earlier step: keep waiting.
        assert_eq!(progress(&node("cleaning", Some("available"), Some("old")), Available), "pending");
    }

    #[test]
    fn power_outcomes() {
        let mut n =
            Node { power_state: Some(PowerState::Off), target_power_state: Some(PowerState::On), ..Node::default() };
        assert!(matches!(power_progress("n", &n, &PowerState::On), Progress::Pending));
        n.target_power_state = None;
        assert!(matches!(power_progress("n", &n, &PowerState::On), Progress::Pending));
        n.last_error = Some("BMC said no".into());
        assert!(matches!(power_progress("n", &n, &PowerState::On), Progress::Failed(Error::PowerFailed { .. })));
        n.power_state = Some(PowerState::On);
        assert!(matches!(power_progress("n", &n, &PowerState::On), Progress::Reached));
    }
}
