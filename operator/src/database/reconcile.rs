//! The entry point the Ironic controller calls: resolve the database, make sure a managed one
//! exists and runs the image the spec asks for (through the version change sequence), check
//! it with sqlx, and say whether Ironic may go ahead.

use super::config::Config;
use super::connection;
use super::error::Error;
use super::outcome::DatabaseOutcome;
use super::run::{Persist, Run};
use super::status::reasons;
use super::{external, managed};
use crate::kit::condition::Conditions;
use crate::kit::{Ledger, Notices, Progress};
use crds::condition::{Condition, TRUE};
use crds::ironic::Ironic;
use crds::ironic::status::DATABASE_READY;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tracing::Instrument;

/// Resolves, builds, applies and checks the database of `ironic`, runs a pending MariaDB
/// version change as far as it can go now, writes `status.database`, and says whether Ironic
/// may proceed. Every write goes through `ledger` (the caller gives the database a view of its
/// own label scope); the Events go to `notices`, for the caller to publish after its status
/// write.
pub async fn reconcile(
    ledger: &Ledger,
    ironic: &Ironic,
    config: &Config,
    notices: &mut Notices,
) -> Result<DatabaseOutcome, Error> {
    let span = tracing::info_span!("database", ironic = %ironic.name_any(), namespace = %ledger.namespace());
    async {
        let now = Timestamp::now();
        let persisted = ironic.status.as_ref().and_then(|s| s.database.clone());
        let mut run = Run {
            ironic,
            config,
            ledger,
            notices: Notices::default(),
            persist: Persist::new(ledger.api(), ironic.name_any(), persisted),
            conditions: Conditions::new(ironic.metadata.generation, Time(now)),
            now: now.as_second(),
        };
        let outcome = steps(&mut run).await;
        // What happened happened, even when a later request failed.
        notices.extend(run.notices);
        outcome
    }
    .instrument(span)
    .await
}

async fn steps(run: &mut Run<'_>) -> Result<DatabaseOutcome, Error> {
    let outcome = match connection::resolve(run.ironic, &run.config.cluster_domain) {
        Ok(None) => DatabaseOutcome::sqlite(),
        // Boxed, as large futures: see `upgrade::run` in `managed`.
        Ok(Some(connection)) if connection.managed => Box::pin(managed::reconcile(run, connection)).await?,
        Ok(Some(connection)) => Box::pin(external::reconcile(run, connection)).await?,
        Err(incomplete) => {
            let status = run.ironic.status.as_ref().and_then(|s| s.database.clone());
            run.settle(None, status, Progress::failed(reasons::INVALID_SPEC, incomplete.to_string()), "")
        }
    };
    run.persist.save(outcome.status.as_ref()).await?;
    announce(run, outcome.condition.as_ref());
    Ok(outcome)
}

/// An Event when DatabaseReady changes status or reason.
fn announce(run: &mut Run<'_>, condition: Option<&Condition>) {
    let Some(condition) = condition else {
        return;
    };
    let old = run
        .ironic
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| crds::condition::find(c, DATABASE_READY));
    if old.is_some_and(|o| o.status == condition.status && o.reason == condition.reason) {
        return;
    }
    let ready = condition.status == TRUE;
    tracing::info!(ready, reason = %condition.reason, "DatabaseReady changed");
    if ready {
        run.notices.normal(&condition.reason, &condition.message);
    } else {
        run.notices.warning(&condition.reason, &condition.message);
    }
}
