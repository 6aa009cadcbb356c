//! One reconcile of a NodeSet: dereference → validate → plan → apply → status, and, for a
//! NodeSet being deleted, the deletion policy behind the finalizer.

use super::apply::{self, Applied};
use super::claims::Owner;
use super::config::Config;
use super::dereference::{self, Caches};
use super::facts::Facts;
use super::memory::Memory;
use super::plan::{self, Plan};
use super::record;
use super::status;
use super::validate;
use crate::kit::error::{KubeError, Verb};
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{Notice, Publisher, finalizer};
use crds::nodeset::{DeletionPolicy, FINALIZER, NodeSet};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: metrics, spans, Events.
pub(crate) const CONTROLLER: &str = "nodeset";

/// Why a reconcile failed; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("cannot read what the NodeSet depends on")]
    Dereference(#[from] dereference::Error),
    #[error("cannot apply the NodeSet's plan")]
    Apply(#[from] apply::Error),
    #[error("cannot write the NodeSet's status or finalizer")]
    Write(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Dereference, Apply, Write);

/// The reconciler of one scope.
pub(super) struct NodeSetReconciler {
    pub runner: Runner,
    pub client: Client,
    pub caches: Caches,
    pub memory: Arc<Memory>,
    pub publisher: Publisher,
    /// Where the operator may act: the namespaces it watches, the host pools opened.
    pub watched: validate::Reach,
    pub config: Config,
}

impl Reconcile for NodeSetReconciler {
    type Object = NodeSet;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<NodeSet>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move { self.run(object).await })
    }
}

impl NodeSetReconciler {
    async fn run(&self, object: Arc<NodeSet>) -> Result<Action, Error> {
        self.caches.ready().await?;
        let nodeset = self.memory.nodesets.freshest(object);
        let now = Time(Timestamp::now());
        if nodeset.metadata.deletion_timestamp.is_some() {
            return self.delete(&nodeset).await;
        }
        let nodeset = self.ensure_finalizer(nodeset).await?;
        let existing = self.caches.services_of(&nodeset.namespace().unwrap_or_default());
        let mut findings = validate::run(&nodeset, &existing, &self.watched);
        // A blocked NodeSet reads nothing more: its hosts may be in a namespace out of its reach.
        let facts = match findings.blocks() {
            true => Facts::default(),
            false => {
                let mut facts = dereference::run(&self.caches, &self.memory, &self.client, &nodeset, &now).await?;
                facts.sources = dereference::sources(&self.caches, &self.client, &nodeset).await?;
                findings.sources(&nodeset, &facts.sources, &facts.services);
                facts
            }
        };
        let plan = plan::plan(&nodeset, &facts, &findings, self.config.job_history, &now);
        let applied = apply::run(&self.client, &nodeset, &plan, &self.memory).await?;
        let (status, notices) = status::compute(&nodeset, &plan, &applied, &findings, &now);
        let changed = (nodeset.status.as_ref() != Some(&status)).then_some(&status);
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        if let Some(stored) = commit.write(&self.api_of(&nodeset), nodeset.as_ref(), changed, notices).await? {
            self.memory.nodesets.remember(stored);
        }
        Ok(self.next(&plan, &applied))
    }

    /// When to look again regardless of watches.
    fn next(&self, plan: &Plan, applied: &Applied) -> Action {
        if applied.conflicts {
            // A race was lost: the winner's write is on its way through the watch.
            return Action::requeue(Duration::from_secs(1));
        }
        if !plan.jobs.is_empty() || !plan.writes.is_empty() {
            return Action::requeue(Duration::from_secs(30));
        }
        Action::requeue(crate::kit::backoff::spread(self.config.resync_interval))
    }

    /// Adds the finalizer that runs the deletion policy.
    async fn ensure_finalizer(&self, nodeset: Arc<NodeSet>) -> Result<Arc<NodeSet>, Error> {
        if finalizer::has(nodeset.as_ref(), FINALIZER) {
            return Ok(nodeset);
        }
        let stored = finalizer::add(&self.api_of(&nodeset), nodeset.as_ref(), FINALIZER).await?;
        Ok(self.memory.nodesets.remember(stored))
    }

    fn api_of(&self, nodeset: &NodeSet) -> Api<NodeSet> {
        Api::namespaced(self.client.clone(), &nodeset.namespace().unwrap_or_default())
    }

    /// A deleted NodeSet's record of what ran goes with it, unless the policy retains its
    /// hosts: then a NodeSet recreated under its name reads it back.
    async fn forget_record(&self, nodeset: &NodeSet) -> Result<(), Error> {
        if plan::release_policy(nodeset) == DeletionPolicy::Retain {
            return Ok(());
        }
        let namespace = nodeset.namespace().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &namespace);
        // Every name, not only those the cache shows: one written just before may not be there.
        for name in record::names(&Owner::of(nodeset)) {
            self.memory.records.forget(&namespace, &name);
            match api.delete(&name, &Default::default()).await.map_err(KubeError::of::<ConfigMap>(Verb::Delete, &name))
            {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }

    /// The NodeSet is being deleted: every host it claimed leaves per the deletion policy,
    /// then the finalizer goes. Retain writes nothing: the machines keep running, claimed.
    async fn delete(&self, nodeset: &NodeSet) -> Result<Action, Error> {
        if !nodeset.finalizers().iter().any(|f| f == FINALIZER) {
            return Ok(Action::await_change());
        }
        // Hosts in a namespace out of the NodeSet's reach (a pool no admin opened, or no longer)
        // are not its to release: they stay as they are, claimed.
        let out_of_reach = validate::run(nodeset, &Default::default(), &self.watched).refused;
        if let Some((reason, message)) = &out_of_reach {
            self.publisher.one(nodeset, &Notice::warning(*reason, format!("no host released: {message}"))).await;
        }
        let facts = Facts {
            bmh_namespace: validate::bmh_namespace(nodeset),
            hosts: if nodeset.spec.pre_provisioned() || out_of_reach.is_some() {
                Vec::new()
            } else {
                dereference::hosts(&self.caches, &self.memory, &validate::bmh_namespace(nodeset))
            },
            ..Facts::default()
        };
        let plan = plan::plan_deletion(nodeset, &facts);
        let mut applied = Applied::default();
        apply::apply_host_writes(&self.client, &plan, &self.memory, &mut applied).await?;
        for release in &plan.releases {
            if applied.released.contains(&release.hostname) {
                self.publisher.one(nodeset, &Notice::normal("HostReleased", release.note())).await;
            }
        }
        let held = plan.held();
        if !held.is_empty() {
            // The finalizer stays until the hosts are confirmed (an annotation edit wakes this).
            let message = super::guard::message(&held);
            self.publisher.one(nodeset, &Notice::warning(super::status::DEPROVISION_UNCONFIRMED, message)).await;
            return Ok(Action::await_change());
        }
        if applied.conflicts || !applied.refused.is_empty() {
            for (host, message) in &applied.refused {
                self.publisher.one(nodeset, &Notice::warning("ReleaseRefused", format!("{host}: {message}"))).await;
            }
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
        self.forget_record(nodeset).await?;
        match finalizer::remove(&self.api_of(nodeset), nodeset, FINALIZER).await {
            Ok(_) => Ok(Action::await_change()),
            Err(err) if err.is_not_found() => Ok(Action::await_change()),
            Err(err) => Err(err.into()),
        }
    }
}
