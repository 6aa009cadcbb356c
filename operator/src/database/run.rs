//! What one reconcile of the database carries from step to step: the Ironic, the ledger view
//! every write goes through, the Events it collects, `status.database` as last written, the
//! condition builder, and the time it started (read once).

use super::config::Config;
use super::connection::Connection;
use super::outcome::{self, DatabaseOutcome};
use super::status;
use crate::kit::condition::Conditions;
use crate::kit::{KubeError, Ledger, Notices, Progress};
use crds::ironic::Ironic;
use crds::ironic::status::DatabaseStatus;
use kube::api::Api;

/// Writes `status.database` whenever it changes, as a merge patch of the difference.
pub(super) struct Persist {
    api: Api<Ironic>,
    name: String,
    persisted: Option<DatabaseStatus>,
}

impl Persist {
    pub(super) fn new(api: Api<Ironic>, name: String, persisted: Option<DatabaseStatus>) -> Self {
        Self { api, name, persisted }
    }

    pub(super) async fn save(&mut self, next: Option<&DatabaseStatus>) -> Result<(), KubeError> {
        let Some(body) = status::database_patch(self.persisted.as_ref(), next) else {
            return Ok(());
        };
        crate::kit::status::merge(&self.api, &self.name, &body).await?;
        self.persisted = next.cloned();
        Ok(())
    }
}

/// Everything a reconcile of the database needs.
pub(super) struct Run<'a> {
    pub ironic: &'a Ironic,
    pub config: &'a Config,
    /// The database's view of the reconcile's ledger: its writes, in its own label scope.
    pub ledger: &'a Ledger,
    /// Events, published by the caller after its status write.
    pub notices: Notices,
    pub persist: Persist,
    pub conditions: Conditions,
    /// When this reconcile started, Unix seconds.
    pub now: i64,
}

impl Run<'_> {
    /// The namespace of the Ironic and its database.
    pub(super) fn namespace(&self) -> &str {
        self.ledger.namespace()
    }

    /// The outcome for `progress`, with DatabaseReady made from it (`available` is its message
    /// once done) and the requeue that goes with it.
    pub(super) fn settle(
        &self,
        connection: Option<Connection>,
        status: Option<DatabaseStatus>,
        progress: Progress,
        available: &str,
    ) -> DatabaseOutcome {
        DatabaseOutcome {
            connection,
            status,
            condition: Some(outcome::ready(&self.conditions, &progress, available)),
            schema: None,
            requeue_after: outcome::requeue_for(self.config, &progress),
            progress,
            mounted: Vec::new(),
        }
    }
}
