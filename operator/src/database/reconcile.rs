//! The entry point the Ironic controller calls: resolve the database, make sure a managed one
//! exists and runs the image the spec asks for (through the version change sequence), check
//! it with sqlx, and say whether Ironic may go ahead.

use super::connection::{self, Connection};
use super::schema::{self, SchemaPlan, SchemaRevision};
use super::status::{self, Gate, reasons};
use super::{Config, external, managed};
use crate::FIELD_MANAGER;
use crate::events::Events;
use crate::kube::Context;
use crds::condition::{Condition, TRUE};
use crds::ironic::Ironic;
use crds::ironic::status::{DATABASE_READY, DatabaseStatus};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Mutex;
use std::time::Duration;
use tracing::Instrument;

/// Why a reconcile of the database could not finish. Problems the user fixes (a missing
/// Secret, a refused password, a failed step) are not errors: they are conditions and a
/// closed [`Gate`]. These are the Kubernetes API failing; the caller retries.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Ironic {0} has no namespace")]
    NoNamespace(String),
    #[error("cannot read {kind} {name}")]
    Read {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot apply {kind} {name}")]
    Apply {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot resize PersistentVolumeClaim {name}")]
    Resize {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write status.database of Ironic {name}")]
    Status {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot make the managed database's certificates")]
    Certificates(#[source] crate::pki::certificate::Error),
}

/// An object the reconcile applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub kind: &'static str,
    pub name: String,
}

/// What the Ironic controller gets back.
#[derive(Clone, Debug)]
pub struct DatabaseOutcome {
    /// Where Ironic's pods connect; `None` without a database (SQLite) or when spec.database
    /// is incomplete. Give it to the builders only while the gate is open.
    pub connection: Option<Connection>,
    /// `status.database`, already written to the Ironic's status; put it into the status the
    /// controller writes unchanged.
    pub status: Option<DatabaseStatus>,
    /// The DatabaseReady condition; `None` without a database.
    pub condition: Option<Condition>,
    /// Ironic's schema as last read, when the database was checked.
    pub schema: Option<SchemaRevision>,
    /// Whether Ironic may roll out and run its schema Job.
    pub gate: Gate,
    /// What was applied.
    pub applied: Vec<Applied>,
    /// When to look again, at the latest.
    pub requeue_after: Option<Duration>,
}

impl DatabaseOutcome {
    fn sqlite() -> Self {
        Self {
            connection: None,
            status: None,
            condition: None,
            schema: None,
            gate: Gate::Open,
            applied: Vec::new(),
            requeue_after: None,
        }
    }

    /// The Ironic builders' seam.
    pub fn ironic_connection(&self) -> Option<crate::ironic::database::DatabaseConnection> {
        self.connection.as_ref().map(Connection::for_ironic)
    }

    /// Whether Ironic's schema Job must run, from the installed and requested Ironic versions.
    /// `None` when the schema was not read (no database, or it could not be checked).
    pub fn schema_plan(&self, installed: Option<&str>, requested: &str) -> Option<SchemaPlan> {
        self.schema.as_ref().map(|revision| schema::plan(revision, installed, requested))
    }
}

/// Kubernetes access for one Ironic's namespace, recording what it applies.
pub(super) struct Kube {
    pub client: kube::Client,
    pub namespace: String,
    applied: Mutex<Vec<Applied>>,
}

impl Kube {
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub async fn get<K>(&self, name: &str) -> Result<Option<K>, Error>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + k8s_openapi::Resource
            + Clone
            + DeserializeOwned
            + Debug,
    {
        self.api::<K>().get_opt(name).await.map_err(|source| Error::Read {
            kind: kind::<K>(),
            name: name.to_string(),
            source,
        })
    }

    pub async fn apply<K>(&self, object: &K) -> Result<K, Error>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + k8s_openapi::Resource
            + Clone
            + Serialize
            + DeserializeOwned
            + Debug,
    {
        let name = object.name_any();
        let stored = crate::apply::apply(&self.api::<K>(), object).await.map_err(|source| Error::Apply {
            kind: kind::<K>(),
            name: name.clone(),
            source,
        })?;
        if let Ok(mut applied) = self.applied.lock() {
            applied.push(Applied { kind: kind::<K>(), name });
        }
        Ok(stored)
    }

    fn take_applied(&self) -> Vec<Applied> {
        self.applied.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default()
    }
}

fn kind<K: k8s_openapi::Resource>() -> &'static str {
    K::KIND
}

/// Writes `status.database` whenever it changes, as a merge patch of the difference.
pub(super) struct Persist {
    api: Api<Ironic>,
    name: String,
    persisted: Option<DatabaseStatus>,
}

impl Persist {
    pub async fn save(&mut self, next: Option<&DatabaseStatus>) -> Result<(), Error> {
        let Some(body) = status::database_patch(self.persisted.as_ref(), next) else {
            return Ok(());
        };
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
        self.api
            .patch_status(&self.name, &params, &Patch::Merge(&body))
            .await
            .map_err(|source| Error::Status { name: self.name.clone(), source })?;
        self.persisted = next.cloned();
        Ok(())
    }
}

/// Everything a reconcile of the database needs.
pub(super) struct Run<'a> {
    pub ironic: &'a Ironic,
    pub config: &'a Config,
    pub kube: Kube,
    pub events: Events,
    pub persist: Persist,
}

impl Run<'_> {
    pub async fn publish(&self, reason: &str, message: String, warning: bool) {
        if warning {
            self.events.warning(self.ironic, reason, "Reconcile", message).await;
        } else {
            self.events.normal(self.ironic, reason, "Reconcile", message).await;
        }
    }

    /// The outcome's requeue for a gate.
    pub fn requeue_for(&self, gate: &Gate) -> Option<Duration> {
        match gate {
            Gate::Open => None,
            Gate::Wait { .. } => Some(self.config.progress_interval),
            Gate::Halted { .. } => Some(self.config.retry_interval),
        }
    }
}

/// Resolves, builds, applies and checks the database of `ironic`, runs a pending MariaDB
/// version change as far as it can go now, writes `status.database`, and says whether Ironic
/// may proceed.
pub async fn reconcile(ctx: &Context, ironic: &Ironic, config: &Config) -> Result<DatabaseOutcome, Error> {
    let name = ironic.name_any();
    let namespace = ironic.namespace().ok_or_else(|| Error::NoNamespace(name.clone()))?;
    let span = tracing::info_span!("database", ironic = %name, namespace = %namespace);
    async {
        let persisted = ironic.status.as_ref().and_then(|s| s.database.clone());
        let mut run = Run {
            ironic,
            config,
            kube: Kube { client: ctx.client.clone(), namespace: namespace.clone(), applied: Mutex::default() },
            events: ctx.events("database"),
            persist: Persist { api: Api::namespaced(ctx.client.clone(), &namespace), name: name.clone(), persisted },
        };
        let mut outcome = match connection::resolve(ironic, &config.cluster_domain) {
            Ok(None) => DatabaseOutcome::sqlite(),
            // Boxed, as large futures: see `upgrade::run` in `managed`.
            Ok(Some(connection)) if connection.managed => Box::pin(managed::reconcile(&mut run, connection)).await?,
            Ok(Some(connection)) => Box::pin(external::reconcile(&mut run, connection)).await?,
            Err(incomplete) => {
                let gate = Gate::halted(reasons::INVALID_SPEC, incomplete.to_string());
                DatabaseOutcome {
                    connection: None,
                    status: ironic.status.as_ref().and_then(|s| s.database.clone()),
                    condition: Some(status::ready(
                        false,
                        reasons::INVALID_SPEC,
                        incomplete.to_string(),
                        ironic.metadata.generation,
                    )),
                    schema: None,
                    requeue_after: run.requeue_for(&gate),
                    gate,
                    applied: Vec::new(),
                }
            }
        };
        run.persist.save(outcome.status.as_ref()).await?;
        outcome.applied = run.kube.take_applied();
        announce(&run, outcome.condition.as_ref()).await;
        Ok(outcome)
    }
    .instrument(span)
    .await
}

/// An Event when DatabaseReady changes status or reason.
async fn announce(run: &Run<'_>, condition: Option<&Condition>) {
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
    run.publish(&condition.reason, condition.message.clone(), !ready).await;
}
