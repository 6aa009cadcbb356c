//! A managed MariaDB: credentials and TLS resolved, every object applied, the server checked
//! with sqlx once its pod is ready, and a pending version change driven one step further.

use super::build::{ClaimSettings, Inputs, service, stateful_set, storage};
use super::check::{self, Target, Tls};
use super::connection::Connection;
use super::credentials::{self, ADMIN_USER, CredentialsError, IRONIC_USER};
use super::names::{DATA_VOLUME, Names};
use super::observe::{self, Rollout};
use super::reconcile::{DatabaseOutcome, Error, Run};
use super::sequence::{self, RETRY_ANNOTATION};
use super::status::{self, Gate, reasons};
use super::tls::{self, Material, TlsError};
use super::upgrade::{self, Driver, Progress, Request};
use crds::ironic::database::{DEFAULT_MARIADB_VERSION, DatabaseStorage, ManagedDatabase};
use crds::ironic::status::{DatabaseMode, DatabaseStatus};
use crds::validation::parse_quantity_bytes;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use std::time::Duration;

/// Why the database is DatabasePodFailing: the container cannot start.
const POD_FAILING: &str = "DatabasePodFailing";

/// The claim template of an existing StatefulSet (immutable there), else the spec's.
fn claim_settings(sts: Option<&StatefulSet>, storage: Option<&DatabaseStorage>) -> ClaimSettings {
    let existing = sts
        .and_then(|s| {
            s.spec
                .as_ref()?
                .volume_claim_templates
                .as_ref()?
                .iter()
                .find(|t| t.metadata.name.as_deref() == Some(DATA_VOLUME))
                .cloned()
        })
        .and_then(|template| {
            let spec = template.spec?;
            let size = spec.resources?.requests?.get("storage")?.clone();
            Some(ClaimSettings { size, storage_class: spec.storage_class_name })
        });
    existing.unwrap_or_else(|| spec_claim(storage))
}

fn spec_claim(storage: Option<&DatabaseStorage>) -> ClaimSettings {
    let storage = storage.cloned().unwrap_or_default();
    ClaimSettings { size: storage.size(), storage_class: storage.storage_class_name }
}

/// The size to grow `claim` to, when the spec asks for more than it has.
pub fn growth(claim: &PersistentVolumeClaim, wanted: &Quantity) -> Option<Quantity> {
    let current = claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?.get("storage")?;
    let (current_bytes, wanted_bytes) = (parse_quantity_bytes(&current.0).ok()?, parse_quantity_bytes(&wanted.0).ok()?);
    (wanted_bytes > current_bytes).then(|| wanted.clone())
}

/// Asks for a bigger volume. Whether it grows depends on the storage class; a refusal is
/// reported and leaves everything else alone.
async fn grow(run: &Run<'_>, claim: Option<&PersistentVolumeClaim>, wanted: &Quantity) {
    let Some((claim, size)) = claim.and_then(|c| Some((c, growth(c, wanted)?))) else {
        return;
    };
    let name = claim.metadata.name.clone().unwrap_or_default();
    let body = json!({ "spec": { "resources": { "requests": { "storage": size.0 } } } });
    let params = PatchParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() };
    match run.kube.api::<PersistentVolumeClaim>().patch(&name, &params, &Patch::Merge(&body)).await {
        Ok(_) => {
            run.publish("VolumeResized", format!("asked for {} on PersistentVolumeClaim {name}", size.0), false).await
        }
        Err(e) => {
            let message = format!("cannot grow PersistentVolumeClaim {name} to {}: {e}", size.0);
            tracing::warn!("{message}");
            run.publish("VolumeResizeFailed", message, true).await;
        }
    }
}

/// The TLS material, or why the user's Secret cannot serve.
async fn tls_material(
    run: &Run<'_>,
    names: &Names,
    managed: &ManagedDatabase,
    now: i64,
) -> Result<Result<Material, String>, Error> {
    if let Some(name) = tls::user_secret(managed) {
        let secret = run.kube.get::<Secret>(name).await?;
        return Ok(tls::from_user_secret(name, secret.as_ref()).map_err(|e| e.to_string()));
    }
    let ca = run.kube.get::<Secret>(&names.tls_ca()).await?;
    let serving = run.kube.get::<Secret>(&names.tls_serving()).await?;
    let sans = tls::subject_alt_names(names, &run.kube.namespace, &run.config.cluster_domain);
    match tls::generated(names, &run.kube.namespace, ca.as_ref(), serving.as_ref(), &sans, now) {
        Ok(material) => Ok(Ok(material)),
        Err(TlsError::Generate(e)) => Err(Error::Certificates(e)),
        Err(other) => Ok(Err(other.to_string())),
    }
}

fn refused(
    run: &Run<'_>,
    connection: Connection,
    db: DatabaseStatus,
    reason: &str,
    message: String,
) -> DatabaseOutcome {
    let gate = Gate::halted(reason, message.clone());
    DatabaseOutcome {
        connection: Some(connection),
        status: Some(db),
        condition: Some(status::ready(false, reason, message, run.ironic.metadata.generation)),
        schema: None,
        requeue_after: run.requeue_for(&gate),
        gate,
        applied: Vec::new(),
    }
}

pub(super) async fn reconcile(run: &mut Run<'_>, connection: Connection) -> Result<DatabaseOutcome, Error> {
    let ironic = run.ironic;
    let managed = ironic.spec.database.as_ref().and_then(|d| d.managed.clone()).unwrap_or_default();
    let names = Names::of(ironic);
    let generation = ironic.metadata.generation;
    let now = Timestamp::now().as_second();
    let previous = ironic.status.as_ref().and_then(|s| s.database.clone()).unwrap_or_default();
    let mut db = DatabaseStatus {
        admin_secret_name: Some(names.admin()),
        ca_secret_name: connection.tls_ca.as_ref().map(|ca| ca.name.clone()),
        credentials_secret_name: Some(connection.credentials_secret.clone()),
        host: Some(connection.address()),
        mode: Some(DatabaseMode::Managed),
        stateful_set_name: Some(names.stateful_set()),
        ..previous
    };

    // What exists already.
    let sts = run.kube.get::<StatefulSet>(&names.stateful_set()).await?;
    let data_claim = run.kube.get::<PersistentVolumeClaim>(&names.data_claim()).await?;
    let data_exists = sts.is_some() || data_claim.is_some();

    // Credentials: generated once, never replaced while data exists.
    let admin_secret = run.kube.get::<Secret>(&names.admin()).await?;
    let user_secret = run.kube.get::<Secret>(&names.credentials()).await?;
    let claim_name = names.data_claim();
    let admin = credentials::resolve(&names.admin(), admin_secret.as_ref(), ADMIN_USER, data_exists, &claim_name);
    let user = credentials::resolve(&names.credentials(), user_secret.as_ref(), IRONIC_USER, data_exists, &claim_name);
    let (admin, user) = match (admin, user) {
        (Ok(admin), Ok(user)) => (admin, user),
        (Err(e), _) | (_, Err(e)) => {
            let reason = if matches!(e, CredentialsError::Lost { .. }) {
                reasons::CREDENTIALS_LOST
            } else {
                reasons::CREDENTIALS_INVALID
            };
            return Ok(refused(run, connection, db, reason, e.to_string()));
        }
    };
    let material = if tls::enabled(&managed) {
        match tls_material(run, &names, &managed, now).await? {
            Ok(material) => Some(material),
            Err(message) => return Ok(refused(run, connection, db, reasons::TLS_INVALID, message)),
        }
    } else {
        None
    };

    // Build and apply. The StatefulSet keeps the image it runs until the sequence rolls it.
    let desired_image = managed.image();
    let live_image = sts.as_ref().and_then(observe::template_image);
    let image = sequence::image_to_apply(db.upgrade.as_ref(), live_image.as_deref(), &desired_image);
    let namespace = run.kube.namespace.clone();
    let host = names.host(&namespace, &run.config.cluster_domain);
    let inputs = Inputs {
        ironic,
        names: &names,
        namespace: &namespace,
        managed: &managed,
        host,
        image: &image,
        claim: claim_settings(sts.as_ref(), managed.storage.as_ref()),
        tls: material.as_ref(),
        job_backoff_limit: run.config.job_backoff_limit,
        job_deadline_seconds: i64::try_from(run.config.job_deadline.as_secs()).unwrap_or(i64::MAX),
    };
    let meta = inputs.secret_meta();
    run.kube.apply(&credentials::render(&names.admin(), meta.clone(), &admin.credentials)).await?;
    run.kube.apply(&credentials::render(&names.credentials(), meta.clone(), &user.credentials)).await?;
    for (resolved, name) in [(&admin, names.admin()), (&user, names.credentials())] {
        if resolved.generated {
            run.publish(
                "DatabaseCredentialsGenerated",
                format!("generated database credentials in Secret {name}"),
                false,
            )
            .await;
        }
    }
    if let Some(material) = &material {
        if let Some(generated) = &material.generated {
            run.kube.apply(&tls::render_ca(&names, meta.clone(), generated)).await?;
            run.kube.apply(&tls::render_serving(&names, meta.clone(), generated)).await?;
            if let Some(reason) = generated.issued {
                let note = format!("issued MariaDB's serving certificate in Secret {}: {reason}", names.tls_serving());
                run.publish("DatabaseCertificateIssued", note, false).await;
            }
        }
        run.kube.apply(&tls::render_client_ca(&names, meta.clone(), material)).await?;
    }
    run.kube.apply(&service::render(&inputs)).await?;
    let applied = run.kube.apply(&stateful_set::render(&inputs)).await?;
    db.image = Some(image.clone());
    grow(run, data_claim.as_ref(), &spec_claim(managed.storage.as_ref()).size).await;
    let backup_keep = managed.backup.as_ref().filter(|b| b.enabled != Some(false)).map(|b| b.keep());
    if let Some(backup) = managed.backup.as_ref().filter(|_| backup_keep.is_some()) {
        let wanted = spec_claim(backup.storage.as_ref());
        match run.kube.get::<PersistentVolumeClaim>(&names.backup_claim()).await? {
            Some(existing) => grow(run, Some(&existing), &wanted.size).await,
            None => {
                run.kube.apply(&storage::backup_claim(&inputs, &wanted)).await?;
            }
        }
    }

    // Check the server the way Ironic will reach it, once it is up.
    let pod = run.kube.get::<Pod>(&names.pod()).await?;
    let rollout = observe::rollout(Some(&applied), pod.as_ref(), &image);
    let (host, port, verify_hostname) = match &run.config.address_override {
        Some(address) => (address.host.clone(), address.port, false),
        None => (connection.host.clone(), connection.port, true),
    };
    let tls_mode = material
        .as_ref()
        .map_or(Tls::Disabled, |m| Tls::Verify { ca_pem: m.ca_pem.clone().into_bytes(), verify_hostname });
    let user_target = Target {
        host,
        port,
        database: Some(connection.name.clone()),
        credentials: user.credentials,
        tls: tls_mode,
        timeout: run.config.connect_timeout,
    };
    let admin_target = Target { database: None, credentials: admin.credentials, ..user_target.clone() };
    let checked = if rollout == Rollout::Complete { Some(check::check(&user_target, true).await) } else { None };
    if let Some(Ok(report)) = &checked {
        db.server_version = Some(report.version.raw.clone());
        db.schema_revision = report.schema.as_ref().and_then(|s| s.for_status());
    }

    // A pending version change, one step further.
    let desired_version =
        managed.version.clone().or_else(|| managed.image.is_none().then(|| DEFAULT_MARIADB_VERSION.to_string()));
    let retry_token = ironic.metadata.annotations.as_ref().and_then(|a| a.get(RETRY_ANNOTATION)).map(String::as_str);
    let request = Request {
        names: &names,
        desired_image: &desired_image,
        desired_version: desired_version.as_deref(),
        backup_keep,
        retry_token,
        step_timeout_seconds: i64::try_from(run.config.step_timeout.as_secs()).unwrap_or(i64::MAX),
    };
    let mut driver =
        Driver { inputs: inputs.clone(), admin: &admin_target, live_image: sts.as_ref().map(|_| image.clone()) };
    // Boxed: the version change is a large state machine, and unboxed its future would
    // swell every reconcile future that awaits it (and the stack of the thread polling it).
    let progress = Box::pin(upgrade::run(run, &mut driver, &request, &mut db)).await?;

    // Condition and gate.
    let (gate, condition) = match progress {
        Progress::Halted(message) => (
            Gate::halted(reasons::UPGRADE_FAILED, message.clone()),
            status::ready(false, reasons::UPGRADE_FAILED, message, generation),
        ),
        Progress::Waiting(message) => (
            Gate::wait(reasons::UPGRADING, message.clone()),
            status::ready(false, reasons::UPGRADING, message, generation),
        ),
        Progress::Idle => match (&rollout, &checked) {
            (Rollout::Complete, Some(Ok(report))) => {
                let tls = if material.is_some() { "over verified TLS" } else { "without TLS" };
                let schema = report.schema.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
                let message =
                    format!("managed {} in StatefulSet {}, {tls}{schema}", report.version, names.stateful_set());
                (Gate::Open, status::ready(true, reasons::AVAILABLE, message, generation))
            }
            (Rollout::Complete, Some(Err(e))) => {
                tracing::warn!(reason = e.reason(), error = %e, "managed database check failed");
                let gate = if e.is_transient() {
                    Gate::wait(e.reason(), e.to_string())
                } else {
                    Gate::halted(e.reason(), e.to_string())
                };
                (gate, status::ready(false, e.reason(), e.to_string(), generation))
            }
            (Rollout::Failing(message), _) => (
                Gate::halted(POD_FAILING, message.clone()),
                status::ready(false, POD_FAILING, message.clone(), generation),
            ),
            (Rollout::InProgress(message), _) => {
                let message = format!("MariaDB is starting: {message}");
                (
                    Gate::wait(reasons::STARTING, message.clone()),
                    status::ready(false, reasons::STARTING, message, generation),
                )
            }
            (Rollout::Complete, None) => {
                let message = "MariaDB is starting".to_string();
                (
                    Gate::wait(reasons::STARTING, message.clone()),
                    status::ready(false, reasons::STARTING, message, generation),
                )
            }
        },
    };
    let renewal = material
        .as_ref()
        .and_then(|m| m.generated.as_ref()?.renew_at)
        .map(|at| Duration::from_secs(u64::try_from((at - now).max(1)).unwrap_or(1)));
    let requeue_after = match (run.requeue_for(&gate), renewal) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(DatabaseOutcome {
        connection: Some(connection),
        status: Some(db),
        condition: Some(condition),
        schema: checked.and_then(|c| c.ok()).and_then(|r| r.schema),
        gate,
        applied: Vec::new(),
        requeue_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(size: &str) -> PersistentVolumeClaim {
        let mut c = storage_claim();
        if let Some(spec) = c.spec.as_mut() {
            spec.resources = Some(k8s_openapi::api::core::v1::VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Quantity(size.into()))].into()),
                ..Default::default()
            });
        }
        c
    }

    fn storage_claim() -> PersistentVolumeClaim {
        PersistentVolumeClaim { spec: Some(Default::default()), ..Default::default() }
    }

    #[test]
    fn volumes_only_grow() {
        assert_eq!(growth(&claim("10Gi"), &Quantity("20Gi".into())), Some(Quantity("20Gi".into())));
        assert_eq!(growth(&claim("10Gi"), &Quantity("10240Mi".into())), None);
        assert_eq!(growth(&claim("20Gi"), &Quantity("10Gi".into())), None);
        assert_eq!(growth(&storage_claim(), &Quantity("10Gi".into())), None);
    }

    #[test]
    fn an_existing_claim_template_is_kept() {
        let spec = DatabaseStorage { size: Some(Quantity("50Gi".into())), storage_class_name: Some("fast".into()) };
        assert_eq!(
            claim_settings(None, Some(&spec)),
            ClaimSettings { size: Quantity("50Gi".into()), storage_class: Some("fast".into()) }
        );
        assert_eq!(claim_settings(None, None).size, Quantity("10Gi".into()));
    }
}
