//! What one step hands to the next: [`Decoded`], from gathering to planning and execution,
//! and [`Next`], from execution to the write step. Kept apart from the steps so that no step
//! imports another: each only reads what the one before it produced.

use crate::host::machine::Facts;
use crate::host::request::Request;
use crds::baremetalhost::BareMetalHost;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// What a reconcile decides from, and acts with.
#[derive(Debug)]
pub(super) struct Decoded {
    pub(super) facts: Facts,
    pub(super) request: Request,
    /// When a recorded error may be retried, while its backoff runs.
    pub(super) retry_in: Option<Duration>,
    /// The time the reconcile decides at.
    pub(super) now: Timestamp,
}

/// What is left after execution.
#[derive(Debug)]
pub(super) enum Next {
    /// Write the status (when it changed), then look again as `Action` says.
    Requeue(Action),
    /// Write the status (when it changed), then decide again at once, in the same reconcile:
    /// the step changed something the next one decides on.
    Again,
    /// Nothing is left in Ironic: remove the finalizer and let the host go.
    Release,
}

impl Next {
    /// Look again at once: the step changed something the next one decides on.
    pub(super) fn now() -> Self {
        Self::Again
    }
}

/// What the write step leaves the reconcile with.
#[derive(Debug)]
pub(super) enum Written {
    /// The reconcile ends; the controller looks again as `Action` says.
    Done(Action),
    /// Decide again at once, from the host as it now is (as our write returned it).
    Again(Arc<BareMetalHost>),
}
