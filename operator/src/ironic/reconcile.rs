//! One reconcile of an Ironic: validate → resolve inputs → build → apply → status.
//!
//! Every step is idempotent and every name is deterministic, so a reconcile interrupted
//! anywhere converges when the next one runs: generated credentials and certificates are
//! read back before new ones are made, Jobs are created only when absent, and the upgrade
//! sequence reads its progress from the Jobs themselves (and from status once a Job is gone).

use super::apply as write;
use super::build::{self, Desired, Inputs, Phase, UpgradeVersions, Workload};
use super::error::ReconcileError;
use super::linked::{self, fields};
use super::names::{IRONIC_LABEL, Names, UPGRADE_PHASE_LABEL};
use super::status::{self, Notice, Severity, Verdict, reasons};
use super::tls::{self, TlsPlan, sans};
use super::upgrade::{self, Gate, VersionPlan};
use super::{Config, credentials, hash, nodes, validate};
use crate::database::Gate as DatabaseGate;
use crate::events::Events;
use crate::kube::Context;
use crate::kube::Progress;
use crate::kube::observe;
use crds::condition::{self, Condition};
use crds::ironic::status::{DATABASE_READY, IronicStatus, UpgradePhase, WorkloadStatus};
use crds::ironic::{Ironic, ReferenceKind, ResourceReferenceWithKey, TlsMode};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// What the controller shares between reconciles.
pub struct Ctx {
    pub shared: Arc<Context>,
    pub config: Config,
    pub events: Events,
}

impl Ctx {
    pub fn new(shared: Arc<Context>, config: Config) -> Self {
        let events = shared.events("ironic");
        Self { shared, config, events }
    }

    async fn publish(&self, ironic: &Ironic, notice: &Notice) {
        tracing::info!(reason = %notice.reason, note = %notice.note, "event");
        match notice.severity {
            Severity::Normal => self.events.normal(ironic, &notice.reason, "Reconcile", notice.note.clone()).await,
            Severity::Warning => self.events.warning(ironic, &notice.reason, "Reconcile", notice.note.clone()).await,
        }
    }
}

/// How the pipeline ended when nothing failed outright.
struct Outcome {
    verdict: Verdict,
    /// When to look again regardless of watches (a certificate renewal).
    renew_at: Option<i64>,
    /// Look again this soon at the latest (the database asks while it starts or is halted).
    requeue_after: Option<Duration>,
}

impl From<Verdict> for Outcome {
    fn from(verdict: Verdict) -> Self {
        Self { verdict, renew_at: None, requeue_after: None }
    }
}

/// Reconciles an Ironic that is not being deleted.
pub async fn apply(cached: &Ironic, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let namespace = cached.namespace().ok_or(ReconcileError::NoNamespace)?;
    let api: Api<Ironic> = Api::namespaced(ctx.shared.client.clone(), &namespace);
    // The watch cache can trail this controller's own last status write, and the version
    // sequences (the database's and Ironic's) decide their next step from status: a stale
    // status would repeat a step. So every reconcile reads the Ironic afresh.
    let name = cached.name_any();
    let Some(fresh) = api
        .get_opt(&name)
        .await
        .map_err(|source| ReconcileError::Observe { what: format!("Ironic {name}"), source })?
    else {
        return Ok(Action::await_change());
    };
    let ironic = &fresh;
    let old = ironic.status.clone().unwrap_or_default();
    let mut next = old.clone();
    // Boxed: the pipeline's future is large, and a reconcile runs on a runtime worker's stack.
    let outcome = match Box::pin(pipeline(ironic, ctx, &namespace, &old, &mut next)).await {
        Ok(outcome) => outcome,
        Err(err) => match err.verdict() {
            Some(verdict) => verdict.into(),
            None => return Err(err),
        },
    };
    let now = Time(Timestamp::now());
    let status = status::finish(next, &outcome.verdict, ironic.metadata.generation, now);
    if status != old {
        crate::apply::apply_status(&api, &ironic.name_any(), &status).await.map_err(ReconcileError::Status)?;
        ctx.shared.metrics.status_written("ironic");
    }
    for notice in status::transitions(&old, &status) {
        ctx.publish(ironic, &notice).await;
    }
    Ok(requeue(&outcome, &ctx.config))
}

/// When to reconcile again without a watch event.
fn requeue(outcome: &Outcome, config: &Config) -> Action {
    let base = match outcome.verdict {
        Verdict::Available => config.resync_interval,
        Verdict::InProgress { .. } => config.progress_interval,
        Verdict::Failed { .. } => config.resync_interval,
    };
    let renewal = outcome.renew_at.map(|at| {
        let seconds = (at - Timestamp::now().as_second()).max(1);
        Duration::from_secs(u64::try_from(seconds).unwrap_or(1))
    });
    let after = [Some(base), renewal, outcome.requeue_after].into_iter().flatten().min().unwrap_or(base);
    Action::requeue(after)
}

/// Deletion: everything the controller created carries an owner reference to the Ironic,
/// so the garbage collector removes it. Nothing else is touched: no BareMetalHost and no
/// node registered in Ironic.
pub async fn cleanup(ironic: &Ironic, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let notice = Notice::normal(
        "Deleting",
        "the garbage collector removes the objects this Ironic owns; BareMetalHosts and Ironic nodes are left alone",
    );
    ctx.publish(ironic, &notice).await;
    Ok(Action::await_change())
}

async fn pipeline(
    ironic: &Ironic,
    ctx: &Ctx,
    namespace: &str,
    old: &IronicStatus,
    next: &mut IronicStatus,
) -> Result<Outcome, ReconcileError> {
    let spec = &ironic.spec;
    let config = &ctx.config;
    let client = ctx.shared.client.clone();
    let names = Names::of(ironic);
    let uid = ironic.uid().unwrap_or_default();
    let now = Timestamp::now();

    // Validate.
    let version = validate::spec(spec, &config.validation, &config.images)?;
    next.requested_version = Some(version.version.to_string());
    next.images = Some(version.status_images());
    if old.observed_generation != ironic.metadata.generation {
        for note in super::unsupported::notices(spec) {
            ctx.publish(ironic, &Notice::warning("NotSupported", note)).await;
        }
    }

    // The database, before anything of Ironic's relies on it: a managed MariaDB is applied
    // (and a version change of it sequenced), an external one is checked with sqlx. Its gate
    // says whether Ironic may run its schema Job and roll out now.
    // Boxed: the database's reconcile is a large future of its own.
    let database = Box::pin(crate::database::reconcile(&ctx.shared, ironic, &config.database)).await?;
    next.database = database.status.clone();
    record_database_condition(next, database.condition.clone());
    let database_wait = match &database.gate {
        DatabaseGate::Open => None,
        DatabaseGate::Wait { reason, message } => Some((reason.clone(), message.clone())),
        DatabaseGate::Halted { reason, message } => {
            return Ok(Outcome {
                verdict: Verdict::failed(reason.clone(), format!("the database: {message}")),
                renew_at: None,
                requeue_after: database.requeue_after,
            });
        }
    };
    let connection = database.ironic_connection();
    let linked = validate::linked(&client, namespace, linked::references(spec, connection.as_ref())).await?;

    // Resolve the inputs.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let user_credentials = spec.api_credentials_name.as_deref().is_some_and(|n| !n.is_empty());
    let credentials = credentials::resolve(&secrets, &names, &uid, user_credentials, &linked).await?;
    next.api_credentials_secret_name = credentials.generated.then(|| credentials.secret_name.clone());
    let mode = spec.tls.as_ref().and_then(|t| t.effective_mode());
    let node_ips = if matches!(mode, Some(TlsMode::Auto | TlsMode::CertManager)) && sans::uses_node_addresses(spec) {
        nodes::addresses(&client, spec.node_selector.as_ref()).await
    } else {
        Vec::new()
    };
    let names_to_cover = sans::compute(&names.service(), namespace, &config.cluster_domain, spec, &node_ips);
    let tls = tls::resolve(&secrets, &names, &uid, spec, &linked, &names_to_cover, now.as_second()).await?;
    record_tls(next, &tls, &names, namespace, spec);
    let plan = upgrade::plan(old.installed_version.as_deref(), version.version, spec.database.is_some());
    let schema = database.schema_plan(old.installed_version.as_deref(), &version.version.to_string());
    let versions = match &plan {
        VersionPlan::Deploy { jobs } => {
            upgrade::with_schema(jobs.clone(), schema.as_ref(), old.installed_version.as_deref(), version.version)
        }
        VersionPlan::DowngradeRefused { .. } => None,
    };
    let mut sources: Vec<&linked::Source> = linked.sources.iter().map(|(_, s)| s).collect();
    sources.push(&credentials.source);
    if let Some(material) = &tls.material {
        sources.push(&material.source);
    }
    let trusted_ca = linked::trusted_ca(spec).and_then(|ca| {
        let key = ca.key.clone().or_else(|| linked.get(fields::TRUSTED_CA)?.first_key().map(str::to_string))?;
        Some((ca, key))
    });

    // Build.
    let inputs = Inputs {
        ironic,
        names: names.clone(),
        namespace: namespace.to_string(),
        config,
        version: &version,
        credentials: &credentials,
        tls: &tls,
        database: connection.as_ref(),
        bmc_ca: linked::bmc_ca(spec),
        trusted_ca,
        content_hash: hash::content_hash(sources),
        upgrade: versions.clone(),
    };
    let desired = build::build(&inputs);
    next.workload =
        Some(WorkloadStatus { kind: Some(desired.workload.kind().to_string()), name: Some(names.workload()) });

    // Apply what does not depend on the sequence.
    apply_supporting(ctx, ironic, &desired, &tls, next).await?;
    if credentials.newly_generated {
        let note = format!("generated API credentials in Secret {}", credentials.secret_name);
        ctx.publish(ironic, &Notice::normal("CredentialsGenerated", note)).await;
    }
    if let Some(reason) = tls.issued {
        let note = format!("issued a serving certificate in Secret {}: {reason}", names.auto_serving());
        ctx.publish(ironic, &Notice::normal("CertificateIssued", note)).await;
    }
    if let Some(pending) = &tls.pending {
        return Ok(Verdict::in_progress(reasons::WAITING_FOR_CERTIFICATE, pending.clone()).into());
    }
    if let Some((reason, message)) = database_wait {
        return Ok(Outcome {
            verdict: Verdict::in_progress(
                reasons::WAITING_FOR_DATABASE,
                format!("waiting for the database ({reason}): {message}"),
            ),
            renew_at: None,
            requeue_after: database.requeue_after,
        });
    }
    if let VersionPlan::DowngradeRefused { installed, requested } = &plan {
        return Ok(Verdict::failed(
            reasons::DOWNGRADE_REJECTED,
            format!(
                "Ironic {installed} is installed with a database and cannot go back to {requested}: its database migrations only go forward; set spec.version to {installed} or newer"
            ),
        )
        .into());
    }

    // The sequence: pre-upgrade Job, rollout, post-upgrade Job.
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let schema_missing = schema == Some(crate::database::SchemaPlan::Create);
    let sequence = Sequence { ctx, ironic, jobs: &jobs, pods: &pods, old, versions: versions.as_ref(), schema_missing };
    if let Some(stop) = sequence.job(Phase::Pre, desired.pre_upgrade_job.as_ref(), next).await? {
        return Ok(stop.into());
    }
    match roll_out(ctx, ironic, &desired.workload).await? {
        Progress::Done => {}
        Progress::Waiting { message, .. } => {
            let reason = match &versions {
                Some(v) => {
                    next.upgrade = Some(sequence.status(v, UpgradePhase::RollingOut, None));
                    reasons::ROLLING_OUT
                }
                None if old.installed_version.is_some() && old.installed_version != next.requested_version => {
                    reasons::ROLLING_OUT
                }
                None => reasons::DEPLOYING,
            };
            return Ok(
                Verdict::in_progress(reason, format!("waiting for the {}: {message}", desired.workload.kind())).into()
            );
        }
        Progress::Failed { reason, message } => return Ok(Verdict::failed(reason, message).into()),
    }
    if let Some(stop) = sequence.job(Phase::Post, desired.post_upgrade_job.as_ref(), next).await? {
        return Ok(stop.into());
    }
    if let Some(v) = &versions {
        next.upgrade = Some(sequence.status(v, UpgradePhase::Completed, None));
        delete_earlier_jobs(&jobs, &names, &uid, &desired).await?;
    }
    let renew_at = match tls.mode {
        Some(TlsMode::Auto) => tls.material.as_ref().and_then(|m| m.renewal_at),
        _ => None,
    };
    Ok(Outcome { verdict: Verdict::Available, renew_at, requeue_after: database.requeue_after })
}

/// DatabaseReady as the database module reported it; without a database there is none.
fn record_database_condition(next: &mut IronicStatus, ready: Option<Condition>) {
    let conditions = next.conditions.get_or_insert_with(Vec::new);
    match ready {
        Some(ready) => {
            condition::set_condition(conditions, ready);
        }
        None => conditions.retain(|c| c.type_ != DATABASE_READY),
    }
}

/// The Ironic's namespace, names and uid.
fn identity(ironic: &Ironic) -> Result<(String, Names, String), ReconcileError> {
    let namespace = ironic.namespace().ok_or(ReconcileError::NoNamespace)?;
    Ok((namespace, Names::of(ironic), ironic.uid().unwrap_or_default()))
}

/// status fields that follow from TLS.
fn record_tls(next: &mut IronicStatus, tls: &TlsPlan, names: &Names, namespace: &str, spec: &crds::ironic::IronicSpec) {
    next.tls = tls.status(names);
    let (api, images) = status::endpoints(names, namespace, spec, tls.mode.is_some());
    next.api_endpoint = Some(api);
    next.image_server_endpoint = images;
    next.ca_ref = tls.material.as_ref().and_then(|m| m.ca_pem.as_ref()).map(|_| ResourceReferenceWithKey {
        key: Some(tls::CA_CERT_KEY.to_string()),
        kind: Some(ReferenceKind::ConfigMap),
        name: Some(names.ca_bundle()),
    });
}

/// Secrets, the CA bundle, the Certificate, the Service and the Ingress, and the removal of
/// those the spec stopped asking for.
async fn apply_supporting(
    ctx: &Ctx,
    ironic: &Ironic,
    desired: &Desired,
    tls: &TlsPlan,
    next: &mut IronicStatus,
) -> Result<(), ReconcileError> {
    let (namespace, names, uid) = identity(ironic)?;
    let (namespace, names, uid) = (namespace.as_str(), &names, uid.as_str());
    let client = ctx.shared.client.clone();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for secret in &desired.secrets {
        write::object(&secrets, secret).await?;
    }
    if ironic.spec.api_credentials_name.as_deref().is_some_and(|n| !n.is_empty()) {
        write::delete_owned(&secrets, &names.generated_credentials(), uid).await?;
    }
    if tls.mode != Some(TlsMode::Auto) {
        for name in [names.auto_serving(), names.auto_ca()] {
            write::delete_owned(&secrets, &name, uid).await?;
        }
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    for config_map in &desired.config_maps {
        write::object(&config_maps, config_map).await?;
    }
    if desired.config_maps.is_empty() {
        write::delete_owned(&config_maps, &names.ca_bundle(), uid).await?;
    }
    let certificates: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &tls::cert_manager::api_resource());
    match &desired.certificate {
        Some(certificate) => {
            let stored = write::dynamic(&certificates, certificate).await?;
            if let Some(status) = next.tls.as_mut() {
                status.renewal_time = certificate_time(&stored, "renewalTime").or(status.renewal_time.take());
            }
        }
        None => {
            write::delete_owned_dynamic(&certificates, &names.cert_manager_certificate(), uid).await?;
        }
    }
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    write::object(&services, &desired.service).await?;
    let ingresses: Api<Ingress> = Api::namespaced(client, namespace);
    match &desired.ingress {
        Some(ingress) => {
            write::object(&ingresses, ingress).await?;
        }
        None => {
            write::delete_owned(&ingresses, &names.ingress(), uid).await?;
        }
    }
    Ok(())
}

/// A time from a Certificate's status.
fn certificate_time(certificate: &DynamicObject, field: &str) -> Option<Time> {
    certificate.data.get("status")?.get(field)?.as_str()?.parse::<Timestamp>().ok().map(Time)
}

/// Applies the workload, removes the other kind (highAvailability flipped) and reads how the
/// rollout goes.
async fn roll_out(ctx: &Ctx, ironic: &Ironic, workload: &Workload) -> Result<Progress, ReconcileError> {
    let (namespace, names, uid) = identity(ironic)?;
    let (namespace, names, uid) = (namespace.as_str(), &names, uid.as_str());
    let client = &ctx.shared.client;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    let (rollout, replaced) = match workload {
        Workload::Deployment(deployment) => {
            let replaced = write::delete_owned(&daemonsets, &names.workload(), uid).await?;
            (
                observe::deployment_rollout(&write::object(&deployments, deployment).await?),
                replaced.then_some("DaemonSet"),
            )
        }
        Workload::DaemonSet(daemonset) => {
            let replaced = write::delete_owned(&deployments, &names.workload(), uid).await?;
            (
                observe::daemonset_rollout(&write::object(&daemonsets, daemonset).await?),
                replaced.then_some("Deployment"),
            )
        }
    };
    if let Some(old_kind) = replaced {
        let note = format!("replaced the {old_kind} {} with a {}", names.workload(), workload.kind());
        ctx.publish(ironic, &Notice::normal("WorkloadReplaced", note)).await;
    }
    Ok(rollout)
}

/// The upgrade Jobs around the rollout.
struct Sequence<'a> {
    ctx: &'a Ctx,
    ironic: &'a Ironic,
    jobs: &'a Api<Job>,
    pods: &'a Api<Pod>,
    old: &'a IronicStatus,
    versions: Option<&'a UpgradeVersions>,
    /// The database has no Ironic schema (read just now): the schema Job must run whatever
    /// status remembers of earlier runs.
    schema_missing: bool,
}

impl Sequence<'_> {
    fn status(
        &self,
        versions: &UpgradeVersions,
        phase: UpgradePhase,
        message: Option<String>,
    ) -> crds::ironic::UpgradeStatus {
        let names = Names::of(self.ironic);
        let job_names = (
            names.upgrade_job(Phase::Pre.label(), versions.from.as_deref(), &versions.to),
            names.upgrade_job(Phase::Post.label(), versions.from.as_deref(), &versions.to),
        );
        upgrade::status(self.old.upgrade.as_ref(), versions, phase, message, job_names, Time(Timestamp::now()))
    }

    /// Runs one Job of the sequence; `Some(verdict)` stops the reconcile there.
    async fn job(
        &self,
        phase: Phase,
        job: Option<&Job>,
        next: &mut IronicStatus,
    ) -> Result<Option<Verdict>, ReconcileError> {
        let (Some(versions), Some(job)) = (self.versions, job) else {
            return Ok(None);
        };
        let name = job.name_any();
        let (_, state) = observe::job(self.jobs, self.pods, &name)
            .await
            .map_err(|err| ReconcileError::Observe { what: format!("Job {name}"), source: err.source })?;
        let done_before = match phase {
            Phase::Pre if self.schema_missing => false,
            Phase::Pre => upgrade::pre_done(self.old.upgrade.as_ref(), versions),
            Phase::Post => upgrade::post_done(self.old.upgrade.as_ref(), versions),
        };
        let from = versions.from.as_deref().unwrap_or("nothing");
        let (running, reason, serving) = match phase {
            Phase::Pre => (UpgradePhase::PreUpgrade, reasons::UPGRADING_DATABASE_SCHEMA, from.to_string()),
            Phase::Post => (UpgradePhase::PostUpgrade, reasons::MIGRATING_DATA, versions.to.clone()),
        };
        match upgrade::gate(&state, done_before) {
            Gate::Proceed if phase == Phase::Pre && self.schema_missing => {
                // The Job says it succeeded, yet the database has no schema: it worked on
                // another database, or the schema was lost since. Rolling out would start
                // pods on empty tables; stop and say so.
                let message = format!(
                    "the {} {name} succeeded, but the database still has no Ironic schema (alembic_version is empty); check that the Job and Ironic use the same database, then delete the Job to run it again",
                    phase.describe()
                );
                next.upgrade = Some(self.status(versions, UpgradePhase::Failed, Some(message.clone())));
                Ok(Some(Verdict::failed(reasons::UPGRADE_JOB_FAILED, message)))
            }
            Gate::Proceed => Ok(None),
            gate @ (Gate::Start | Gate::Wait) => {
                if gate == Gate::Start && write::job(self.jobs, job).await? {
                    let note = format!("created the {} {name} ({from} to {})", phase.describe(), versions.to);
                    self.ctx.publish(self.ironic, &Notice::normal("UpgradeJobCreated", note)).await;
                }
                next.upgrade = Some(self.status(versions, running, None));
                Ok(Some(Verdict::in_progress(
                    reason,
                    format!("the {} {name} runs; Ironic {serving} serves meanwhile", phase.describe()),
                )))
            }
            Gate::Failed(cause) => {
                let message = format!(
                    "the {} {name} failed: {cause}. Nothing was deleted and Ironic {serving} keeps running; fix the cause, then delete the Job to run it again",
                    phase.describe()
                );
                next.upgrade = Some(self.status(versions, UpgradePhase::Failed, Some(message.clone())));
                Ok(Some(Verdict::failed(reasons::UPGRADE_JOB_FAILED, message)))
            }
        }
    }
}

/// Once an upgrade completed, the Jobs of earlier upgrades have served their purpose.
async fn delete_earlier_jobs(
    jobs: &Api<Job>,
    names: &Names,
    uid: &str,
    desired: &Desired,
) -> Result<(), ReconcileError> {
    let current: Vec<String> =
        [&desired.pre_upgrade_job, &desired.post_upgrade_job].into_iter().flatten().map(|j| j.name_any()).collect();
    let selector = format!("{IRONIC_LABEL}={},{UPGRADE_PHASE_LABEL}", names.ironic);
    let listed = jobs
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| ReconcileError::Observe { what: "upgrade Jobs".into(), source })?;
    for job in listed.items.iter().filter(|j| !current.contains(&j.name_any())) {
        write::delete_owned(jobs, &job.name_any(), uid).await?;
    }
    Ok(())
}
