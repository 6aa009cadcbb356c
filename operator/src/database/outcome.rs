//! What the database tells the Ironic controller after a reconcile: where Ironic's pods
//! connect, `status.database`, DatabaseReady, whether Ironic may go ahead (a [`Progress`]),
//! the content of the Secrets the pods mount, and when to look again.

use super::config::Config;
use super::connection::Connection;
use super::schema::{self, SchemaPlan, SchemaRevision};
use super::status::reasons;
use crate::kit::Progress;
use crate::kit::condition::Conditions;
use crate::kit::content::Source;
use crds::condition::Condition;
use crds::ironic::status::{DATABASE_READY, DatabaseStatus};
use std::time::Duration;

/// What the Ironic controller gets back.
#[derive(Clone, Debug)]
pub struct DatabaseOutcome {
    /// Where Ironic's pods connect; `None` without a database (SQLite) or when spec.database
    /// is incomplete. Give it to the builders only once `progress` is not failed.
    pub connection: Option<Connection>,
    /// `status.database`, already written to the Ironic's status; put it into the status the
    /// controller writes unchanged.
    pub status: Option<DatabaseStatus>,
    /// The DatabaseReady condition; `None` without a database.
    pub condition: Option<Condition>,
    /// Ironic's schema as last read, when the database was checked.
    pub schema: Option<SchemaRevision>,
    /// Whether Ironic may go ahead. `Done`: it may roll out and run its schema Job (always,
    /// with SQLite). `Waiting`: not yet (Progressing). `Failed`: a failed step or a refused
    /// check (Degraded), until a person acts.
    pub progress: Progress,
    /// The content of the Secrets Ironic's pods mount (the credentials, the CA), as this
    /// reconcile read or wrote them: part of Ironic's content hash, so nothing reads them twice.
    pub mounted: Vec<Source>,
    /// When to look again, at the latest.
    pub requeue_after: Option<Duration>,
}

impl DatabaseOutcome {
    /// No database: Ironic keeps its state in SQLite.
    pub fn sqlite() -> Self {
        Self {
            connection: None,
            status: None,
            condition: None,
            schema: None,
            progress: Progress::Done,
            mounted: Vec::new(),
            requeue_after: None,
        }
    }

    /// Whether Ironic's schema Job must run, from the installed and requested Ironic versions.
    /// `None` when the schema was not read (no database, or it could not be checked).
    pub fn schema_plan(&self, installed: Option<&str>, requested: &str) -> Option<SchemaPlan> {
        self.schema.as_ref().map(|revision| schema::plan(revision, installed, requested))
    }
}

/// DatabaseReady for `progress`: True with `available` once done, else False with the
/// progress's reason and message. One source for both, so they never disagree.
pub(crate) fn ready(conditions: &Conditions, progress: &Progress, available: &str) -> Condition {
    match progress.reason_and_message() {
        None => conditions.make(DATABASE_READY, true, reasons::AVAILABLE, available),
        Some((reason, message)) => conditions.make(DATABASE_READY, false, reason, message),
    }
}

/// How soon to look again for `progress`: soon while waiting, later while failed.
pub(crate) fn requeue_for(config: &Config, progress: &Progress) -> Option<Duration> {
    match progress {
        Progress::Done => None,
        Progress::Waiting { .. } => Some(config.progress_interval),
        Progress::Failed { .. } => Some(config.retry_interval),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::condition::{FALSE, TRUE};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn conditions() -> Conditions {
        Conditions::new(Some(3), Time(Timestamp::from_second(10).expect("time")))
    }

    #[test]
    fn database_ready_is_true_once_done_and_carries_the_generation() {
        let c = ready(&conditions(), &Progress::Done, "MariaDB 11.4 at db:3306");
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("DatabaseReady", TRUE, reasons::AVAILABLE)
        );
        assert_eq!((c.message.as_str(), c.observed_generation), ("MariaDB 11.4 at db:3306", Some(3)));
    }

    #[test]
    fn database_ready_is_false_with_the_reason_of_what_waits_or_failed() {
        let starting = ready(&conditions(), &Progress::waiting(reasons::STARTING, "starting"), "unused");
        assert_eq!((starting.status.as_str(), starting.reason.as_str()), (FALSE, reasons::STARTING));
        let failed = ready(&conditions(), &Progress::failed(reasons::UPGRADE_FAILED, "boom"), "unused");
        assert_eq!((failed.status.as_str(), failed.message.as_str()), (FALSE, "boom"));
    }

    #[test]
    fn sqlite_lets_ironic_go_ahead_without_a_condition() {
        let outcome = DatabaseOutcome::sqlite();
        assert!(outcome.progress.is_done() && outcome.condition.is_none() && outcome.connection.is_none());
        assert_eq!(outcome.schema_plan(None, "38.0"), None);
    }

    #[test]
    fn waiting_looks_again_sooner_than_failed() {
        let config = Config::default();
        assert_eq!(requeue_for(&config, &Progress::Done), None);
        assert_eq!(requeue_for(&config, &Progress::waiting("A", "b")), Some(config.progress_interval));
        assert_eq!(requeue_for(&config, &Progress::failed("A", "b")), Some(config.retry_interval));
    }
}
