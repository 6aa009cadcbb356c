//! A managed MariaDB: credentials and TLS resolved, every object applied, the server checked
//! with sqlx once its pod is ready, and a pending version change driven one step further.

use super::account::{self, UpgradeAccount};
use super::build::{ClaimSettings, Inputs, service, stateful_set, storage};
use super::check::{self, Target, Tls};
use super::connection::Connection;
use super::credentials::{self, ADMIN_USER, CredentialsError, IRONIC_USER, Resolved};
use super::error::Error;
use super::names::{DATA_VOLUME, Names};
use super::observe;
use super::outcome::DatabaseOutcome;
use super::run::Run;
use super::sequence::{self, RETRY_ANNOTATION};
use super::status::reasons;
use super::tls::{self, Material, TlsError};
use super::tls_switch::{self, Clients, Transport};
use super::upgrade::{self, Driver, Request};
use crate::kit::Progress;
use crate::kit::content::Source;
use crate::kit::progress::soonest;
use crds::ironic::database::{DEFAULT_MARIADB_VERSION, DatabaseStorage, ManagedDatabase};
use crds::ironic::status::{DatabaseMode, DatabaseStatus, DatabaseUpgradeStatus};
use crds::validation::parse_quantity_bytes;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::json;
use std::time::Duration;

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
async fn grow(run: &mut Run<'_>, claim: Option<&PersistentVolumeClaim>, wanted: &Quantity) {
    let Some((claim, size)) = claim.and_then(|c| Some((c, growth(c, wanted)?))) else {
        return;
    };
    let name = claim.metadata.name.clone().unwrap_or_default();
    let body = json!({ "spec": { "resources": { "requests": { "storage": size.0 } } } });
    match run.ledger.merge_patch::<PersistentVolumeClaim>(&name, &body).await {
        Ok(_) => run.notices.normal("VolumeResized", format!("asked for {} on PersistentVolumeClaim {name}", size.0)),
        Err(e) => {
            let message = format!("cannot grow PersistentVolumeClaim {name} to {}: {}", size.0, e.source);
            tracing::warn!("{message}");
            run.notices.warning("VolumeResizeFailed", message);
        }
    }
}

/// The TLS material, or why the user's Secret cannot serve.
async fn tls_material(
    run: &Run<'_>,
    names: &Names,
    managed: &ManagedDatabase,
) -> Result<Result<Material, String>, Error> {
    if let Some(name) = tls::user_secret(managed) {
        let secret = run.ledger.get::<Secret>(name).await?;
        return Ok(tls::from_user_secret(name, secret.as_ref()).map_err(|e| e.to_string()));
    }
    let ca = run.ledger.get::<Secret>(&names.tls_ca()).await?;
    let serving = run.ledger.get::<Secret>(&names.tls_serving()).await?;
    let sans = tls::subject_alt_names(names, run.namespace(), &run.config.cluster_domain);
    match tls::generated(names, run.namespace(), ca.as_ref(), serving.as_ref(), &sans, run.now) {
        Ok(material) => Ok(Ok(material)),
        Err(TlsError::Generate(e)) => Err(Error::Certificates(e)),
        Err(other) => Ok(Err(other.to_string())),
    }
}

/// DatabaseReady and the progress once the sequence has nothing to do: what the rollout and
/// the check say, and the condition's message when the server is available.
fn settled(
    rollout: Progress,
    checked: Option<&Result<check::Report, check::CheckError>>,
    available: impl FnOnce(&check::Report) -> String,
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

/// The three accounts' credentials, or why they cannot be used. Ironic's and root's are made
/// once and never again while data exists; the maintenance account's are made whenever missing.
async fn credentials_of(
    run: &Run<'_>,
    names: &Names,
    data_exists: bool,
) -> Result<Result<[Resolved; 3], Progress>, Error> {
    let admin_secret = run.ledger.get::<Secret>(&names.admin()).await?;
    let user_secret = run.ledger.get::<Secret>(&names.credentials()).await?;
    let maintenance_secret = run.ledger.get::<Secret>(&names.maintenance()).await?;
    let claim = names.data_claim();
    let admin = credentials::resolve(&names.admin(), admin_secret.as_ref(), ADMIN_USER, data_exists, &claim);
    let user = credentials::resolve(&names.credentials(), user_secret.as_ref(), IRONIC_USER, data_exists, &claim);
    let maintenance = credentials::resolve_maintenance(maintenance_secret.as_ref());
    Ok(match (admin, user, maintenance) {
        (Ok(admin), Ok(user), Ok(maintenance)) => Ok([admin, user, maintenance]),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            let reason = if matches!(e, CredentialsError::Lost { .. }) {
                reasons::CREDENTIALS_LOST
            } else {
                reasons::CREDENTIALS_INVALID
            };
            Err(Progress::failed(reason, e.to_string()))
        }
    })
}

pub(super) async fn reconcile(run: &mut Run<'_>, connection: Connection) -> Result<DatabaseOutcome, Error> {
    let ironic = run.ironic;
    let managed = ironic.spec.database.as_ref().and_then(|d| d.managed.clone()).unwrap_or_default();
    let names = Names::of(ironic);
    let previous = ironic.status.as_ref().and_then(|s| s.database.clone()).unwrap_or_default();
    let mut db = DatabaseStatus {
        admin_secret_name: Some(names.admin()),
        ca_secret_name: connection.tls_ca.as_ref().map(|ca| ca.name.clone()),
        credentials_secret_name: Some(connection.credentials_secret.clone()),
        host: Some(connection.address()),
        maintenance_secret_name: Some(names.maintenance()),
        mode: Some(DatabaseMode::Managed),
        stateful_set_name: Some(names.stateful_set()),
        ..previous
    };

    // What exists already.
    let sts = run.ledger.get::<StatefulSet>(&names.stateful_set()).await?;
    let data_claim = run.ledger.get::<PersistentVolumeClaim>(&names.data_claim()).await?;
    let data_exists = sts.is_some() || data_claim.is_some();

    let [admin, user, maintenance] = match credentials_of(run, &names, data_exists).await? {
        Ok(resolved) => resolved,
        Err(refused) => return Ok(run.settle(Some(connection), Some(db), refused, "")),
    };
    // TLS: what the spec asks, what the running server does, and Ironic's pods in between.
    let wanted = tls::enabled(&managed);
    let live = sts.as_ref().map(tls_switch::live_transport);
    let material = if wanted || live.is_some_and(Transport::serves) {
        match tls_material(run, &names, &managed).await? {
            // Turning TLS off, a server keeps offering what Ironic's pods trust, never a new CA.
            Ok(material) if !wanted && material.generated.as_ref().is_some_and(|g| g.issued.is_some()) => None,
            Ok(material) => Some(material),
            Err(message) if wanted => {
                let refused = Progress::failed(reasons::TLS_INVALID, message);
                return Ok(run.settle(Some(connection), Some(db), refused, ""));
            }
            Err(_) => None,
        }
    } else {
        None
    };
    let clients = tls_switch::clients_of(run, &names, wanted, live).await?;
    let transport = if material.is_some() { tls_switch::transport(wanted, live, &clients) } else { Transport::Plain };
    let serving = material.as_ref().filter(|_| transport.serves());

    // Build and apply. The StatefulSet keeps the image it runs until the sequence rolls it.
    let desired_image = managed.image();
    let live_image = sts.as_ref().and_then(observe::template_image);
    let image = sequence::image_to_apply(db.upgrade.as_ref(), live_image.as_deref(), &desired_image);
    let namespace = run.namespace().to_string();
    let host = names.host(&namespace, &run.config.cluster_domain);
    let account_hash = account::password_hash(&maintenance.credentials.password);
    let inputs = Inputs {
        ironic,
        names: &names,
        namespace: &namespace,
        managed: &managed,
        host,
        image: &image,
        claim: claim_settings(sts.as_ref(), managed.storage.as_ref()),
        tls: serving,
        require_tls: transport == Transport::Required,
        account_digest: account::digest(&account_hash),
        job_backoff_limit: run.config.job_backoff_limit,
        job_deadline_seconds: i64::try_from(run.config.job_deadline.as_secs()).unwrap_or(i64::MAX),
    };
    let meta = inputs.secret_meta();
    // Adopted, not only applied: a person restores lost credentials by creating the Secret.
    run.ledger.adopt(credentials::render(&names.admin(), meta.clone(), &admin.credentials)).await?;
    let stored = run.ledger.adopt(credentials::render(&names.credentials(), meta.clone(), &user.credentials)).await?;
    run.ledger.apply(credentials::render(&names.maintenance(), meta.clone(), &maintenance.credentials)).await?;
    let init = |upgrade: Option<&DatabaseUpgradeStatus>| {
        account::render_init(&names, meta.clone(), &account::init_sql(&account_hash, UpgradeAccount::during(upgrade)))
    };
    run.ledger.apply(init(db.upgrade.as_ref())).await?;
    // What Ironic's pods mount, as stored: part of their content hash.
    let mut mounted = vec![Source::from_secret(&stored)];
    for (resolved, name) in [(&admin, names.admin()), (&user, names.credentials()), (&maintenance, names.maintenance())]
    {
        if resolved.generated {
            run.notices
                .normal("DatabaseCredentialsGenerated", format!("generated database credentials in Secret {name}"));
        }
    }
    if let Some(material) = &material {
        if let Some(generated) = &material.generated {
            run.ledger.apply(tls::render_ca(&names, meta.clone(), generated)).await?;
            run.ledger.apply(tls::render_serving(&names, meta.clone(), generated)).await?;
            if let Some(reason) = generated.issued {
                let note = format!("issued MariaDB's serving certificate in Secret {}: {reason}", names.tls_serving());
                run.notices.normal("DatabaseCertificateIssued", note);
            }
        }
        // Kept while a server serves it: Ironic's pods that still mount it must find it.
        let client_ca = run.ledger.apply(tls::render_client_ca(&names, meta.clone(), material)).await?;
        if connection.tls_ca.is_some() {
            mounted.push(Source::from_secret(&client_ca));
        }
    }
    run.ledger.apply(service::render(&inputs)).await?;
    let applied = run.ledger.apply(stateful_set::render(&inputs)).await?;
    if live.is_some_and(|live| live != transport) {
        let (reason, note) = tls_switch::notice(wanted, transport);
        run.notices.normal(reason, note);
    }
    db.image = Some(image.clone());
    grow(run, data_claim.as_ref(), &spec_claim(managed.storage.as_ref()).size).await;
    let backup_keep = managed.backup.as_ref().filter(|b| b.enabled != Some(false)).map(|b| b.keep());
    if let Some(backup) = managed.backup.as_ref().filter(|_| backup_keep.is_some()) {
        let wanted = spec_claim(backup.storage.as_ref());
        match run.ledger.get::<PersistentVolumeClaim>(&names.backup_claim()).await? {
            Some(existing) => grow(run, Some(&existing), &wanted.size).await,
            // No owner reference: the backups outlive the Ironic, like the data claim.
            None => {
                run.ledger.apply_unowned(storage::backup_claim(&inputs, &wanted)).await?;
            }
        }
    }

    // Check the server the way Ironic will reach it, once it is up.
    let pod = run.ledger.get::<Pod>(&names.pod()).await?;
    let rollout = observe::rollout(Some(&applied), pod.as_ref(), &image);
    let (host, port, verify_hostname) = match &run.config.address_override {
        Some(address) => (address.host.clone(), address.port, false),
        None => (connection.host.clone(), connection.port, true),
    };
    let tls_mode =
        serving.map_or(Tls::Disabled, |m| Tls::Verify { ca_pem: m.ca_pem.clone().into_bytes(), verify_hostname });
    let user_target = Target {
        host,
        port,
        database: Some(connection.name.clone()),
        credentials: user.credentials,
        tls: tls_mode,
        timeout: run.config.connect_timeout,
    };
    let maintenance_target = Target { database: None, credentials: maintenance.credentials, ..user_target.clone() };
    let checked = if rollout.is_done() { Some(check::check(&user_target, true).await) } else { None };
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
    let mut driver = Driver {
        inputs: inputs.clone(),
        maintenance: &maintenance_target,
        account_hash: &account_hash,
        live_image: sts.as_ref().map(|_| image.clone()),
    };
    // Boxed: the version change is a large state machine, and unboxed its future would
    // swell every reconcile future that awaits it (and the stack of the thread polling it).
    let sequenced = Box::pin(upgrade::run(run, &mut driver, &request, &mut db)).await?;
    // The upgrade account follows the change as it now stands (the file is read at the next start).
    run.ledger.apply(init(db.upgrade.as_ref())).await?;

    // Where it stands: the version change first, then the server.
    let (progress, available) = match sequenced {
        Progress::Done => settled(rollout, checked.as_ref(), |report| {
            let tls = match (transport, &clients) {
                (Transport::Offered, Clients::Pending(waiting)) if wanted => {
                    format!("over verified TLS, not yet required ({waiting})")
                }
                (Transport::Offered, Clients::Pending(waiting)) => {
                    format!("over verified TLS, clear text accepted too, until TLS is off ({waiting})")
                }
                (Transport::Plain, _) => "without TLS".to_string(),
                _ => "over verified TLS".to_string(),
            };
            let schema = report.schema.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
            format!("managed {} in StatefulSet {}, {tls}{schema}", report.version, names.stateful_set())
        }),
        changing => (changing, String::new()),
    };
    let renewal = material
        .as_ref()
        .and_then(|m| m.generated.as_ref()?.renew_at)
        .map(|at| Duration::from_secs(u64::try_from(at.saturating_sub(run.now).max(1)).unwrap_or(1)));
    let outcome = run.settle(Some(connection), Some(db), progress, &available);
    Ok(DatabaseOutcome {
        requeue_after: soonest(outcome.requeue_after, renewal),
        schema: checked.and_then(|c| c.ok()).and_then(|r| r.schema),
        mounted,
        ..outcome
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
