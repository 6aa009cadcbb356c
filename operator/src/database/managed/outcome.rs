//! Where the managed database stands: the version change first, then the server.

use super::super::check::{self, Report};
use super::super::connection::Connection;
use super::super::outcome::DatabaseOutcome;
use super::super::run::Run;
use super::super::status::reasons;
use super::apply::Applied;
use super::checked::Checked;
use super::transport::Wire;
use crate::kit::Progress;
use crate::kit::progress::soonest;
use crds::ironic::status::DatabaseStatus;

pub(super) fn of(
    run: &Run<'_>,
    connection: Connection,
    status: DatabaseStatus,
    wire: &Wire,
    applied: Applied,
    checked: Checked,
    sequenced: Progress,
) -> DatabaseOutcome {
    let (progress, available) = match sequenced {
        Progress::Done => settled(checked.rollout, checked.report.as_ref(), |report| {
            let schema = report.schema.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
            let stateful_set = applied.stateful_set.metadata.name.as_deref().unwrap_or_default();
            let (version, tls) = (&report.version, wire.describe());
            format!("managed {version} in StatefulSet {stateful_set}, {tls}{schema}")
        }),
        changing => (changing, String::new()),
    };
    let outcome = run.settle(Some(connection), Some(status), progress, &available);
    DatabaseOutcome {
        requeue_after: soonest(outcome.requeue_after, wire.renewal(run.now)),
        schema: checked.report.and_then(Result::ok).and_then(|r| r.schema),
        mounted: applied.mounted,
        ..outcome
    }
}

/// DatabaseReady and the progress once the sequence has nothing to do: what the rollout and
/// the check say, and the condition's message when the server is available.
fn settled(
    rollout: Progress,
    checked: Option<&Result<Report, check::Error>>,
    available: impl FnOnce(&Report) -> String,
) -> (Progress, String) {
    match (rollout, checked) {
        (Progress::Done, Some(Ok(report))) => (Progress::Done, available(report)),
        (Progress::Done, Some(Err(e))) => {
            tracing::warn!(reason = e.reason(), error = %e, "managed database check failed");
            let progress = if e.is_transient() {
                Progress::waiting(e.reason(), e.to_string())
            } else {
                Progress::failed(e.reason(), e.to_string())
            };
            (progress, String::new())
        }
        (Progress::Done, None) => (Progress::waiting(reasons::STARTING, "MariaDB is starting"), String::new()),
        (failing @ Progress::Failed { .. }, _) => (failing, String::new()),
        (Progress::Waiting { message, .. }, _) => {
            (Progress::waiting(reasons::STARTING, format!("MariaDB is starting: {message}")), String::new())
        }
    }
}
