//! One reconcile of an Ironic, as its list of steps: dereference → validate → the database →
//! resolve → build → apply → the upgrade sequence → status, then the Events.
//!
//! Every step is idempotent and every name is deterministic, so a reconcile interrupted
//! anywhere converges when the next one runs: generated credentials and certificates are
//! read back before new ones are made, Jobs are created only when absent, and the upgrade
//! sequence reads its progress from the Jobs themselves (and from status once a Job is gone).

use super::controller::IronicController;
use super::error::Error;
use super::names::{database_scope, ironic_scope};
use super::status::{self, DatabaseFacts, Facts, Published};
use super::{apply, build, dereference, resolve, sequence, validate};
use crate::kit::progress::soonest;
use crate::kit::status::Commit;
use crate::kit::{Ledger, Notice, Notices, Outcome, Progress};
use crds::ironic::Ironic;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;

impl IronicController {
    /// The steps; each fills its part of `facts` for the status, and notes its Events.
    async fn steps(
        &self,
        ironic: &Ironic,
        ledger: &Ledger,
        now: Timestamp,
        facts: &mut Facts,
        notices: &mut Notices,
    ) -> Result<Outcome, Error> {
        let config = &self.config;
        validate::namespace(ironic, &self.ctx.ironic_namespaces)?;
        let found = dereference::run(ledger, ironic).await?;
        let valid = validate::run(ironic, &found, config, notices)?;
        facts.version = Some(valid.version.clone());
        // Boxed: the database's reconcile is a large future of its own.
        let database_ledger = ledger.scoped(database_scope());
        let database =
            Box::pin(crate::database::reconcile(&database_ledger, ironic, &config.database, notices)).await?;
        facts.database = Some(DatabaseFacts { status: database.status.clone(), condition: database.condition.clone() });
        if database.progress.is_failed() {
            // Nothing of Ironic's is applied: the Ironic that runs keeps running.
            return Ok(Outcome::new(database.progress.clone().context("the database: ")).within(database.requeue_after));
        }
        let resolved = resolve::run(ironic, &found, &valid, &database, config, now.as_second()).await?;
        facts.published = Some(Published::of(&resolved));
        let desired = build::build(&resolved);
        let own = ledger.scoped(ironic_scope());
        let applied = apply::run(&own, &resolved, &desired, &self.discovery, notices).await?;
        facts.certificate_renewal = applied.certificate_renewal;
        let monitor_requeue = applied.monitoring.requeue_after;
        facts.service_monitor = Some(applied.monitoring);
        let previous = ironic.status.clone().unwrap_or_default();
        let sequenced =
            sequence::run(&own, &resolved, &desired, &previous, &database.progress, Time(now), notices).await?;
        facts.upgrade = sequenced.upgrade;
        let renewal = resolved.renewal_after(now.as_second());
        let unwatched = resolved.awaits_unwatched().then_some(config.progress_interval);
        Ok(Outcome::new(sequenced.progress)
            .within(renewal)
            .within(unwatched)
            .within(database.requeue_after)
            .within(monitor_requeue))
    }

    /// Reconciles an Ironic that is not being deleted: the steps, then the status (written only
    /// when it changed), then every Event of the reconcile.
    pub(super) async fn apply(&self, cached: &Ironic) -> Result<Action, Error> {
        let Some((ironic, ledger)) = dereference::owner(&self.ctx.client, cached).await? else {
            return Ok(Action::await_change());
        };
        let now = Timestamp::now();
        let (mut facts, mut notices) = (Facts::default(), Notices::default());
        // Boxed: the pipeline's future is large, and a reconcile runs on a runtime worker's stack.
        let outcome = match Box::pin(self.steps(&ironic, &ledger, now, &mut facts, &mut notices)).await {
            Ok(outcome) => outcome,
            Err(err) => match err.failure() {
                Some(failed) => Outcome::new(failed),
                None => {
                    // What was done was done: its Events go out although the reconcile is retried.
                    self.publisher.publish(&ironic, notices).await;
                    return Err(err);
                }
            },
        };
        let old = ironic.status.clone().unwrap_or_default();
        let status = status::compute(&old, &facts, &outcome.progress, ironic.metadata.generation, Time(now));
        let commit = Commit { controller: "ironic", metrics: &self.ctx.metrics, publisher: &self.publisher };
        notices.extend(status::transitions(&old, &status));
        let changed = (status != old).then_some(&status);
        commit.write(&ledger.api::<Ironic>(), &ironic, changed, notices).await.map_err(Error::Status)?;
        Ok(self.requeue(&outcome))
    }

    /// When to reconcile again without a watch event.
    fn requeue(&self, outcome: &Outcome) -> Action {
        let base = match outcome.progress {
            Progress::Waiting { .. } => self.config.progress_interval,
            Progress::Done | Progress::Failed { .. } => self.config.resync_interval,
        };
        Action::requeue(soonest(Some(base), outcome.requeue_after).unwrap_or(base))
    }

    /// Deletion: everything the controller created carries an owner reference to the Ironic,
    /// so the garbage collector removes it. Nothing else is touched: no BareMetalHost and no
    /// node registered in Ironic.
    pub(super) async fn cleanup(&self, ironic: &Ironic) -> Result<Action, Error> {
        let notice = Notice::normal(
            "Deleting",
            "the garbage collector removes the objects this Ironic owns; BareMetalHosts and Ironic nodes are left alone",
        );
        // At once: there is no status write to wait for, the Ironic is going away.
        self.publisher.one(ironic, &notice).await;
        Ok(Action::await_change())
    }
}
