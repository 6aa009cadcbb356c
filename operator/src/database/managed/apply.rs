//! Every object of the managed database, built from one [`Inputs`] and written through the
//! ledger: the accounts' Secrets and the server's init file, the TLS Secrets, the Service, the
//! StatefulSet and the volumes.

use super::super::account::{self, UpgradeAccount};
use super::super::build::{Inputs, service, stateful_set};
use super::super::connection::Connection;
use super::super::credentials;
use super::super::run::Run;
use super::super::tls;
use super::super::tls_switch;
use super::accounts::Accounts;
use super::error::Error;
use super::found::Found;
use super::transport::Wire;
use super::volumes;
use crate::kit::KubeError;
use crate::kit::content::Source;
use crds::ironic::status::{DatabaseStatus, DatabaseUpgradeStatus};
use k8s_openapi::api::apps::v1::StatefulSet;

/// What was written that later steps read.
pub(super) struct Applied {
    /// The StatefulSet as the apiserver answered.
    pub stateful_set: StatefulSet,
    /// The image it runs.
    pub image: String,
    /// What Ironic's pods mount, as stored: part of their content hash.
    pub mounted: Vec<Source>,
}

/// The one value every object of the database is rendered from.
pub(super) fn inputs<'f>(
    run: &Run<'f>,
    found: &'f Found,
    accounts: &Accounts,
    wire: &'f Wire,
    image: &'f str,
) -> Inputs<'f> {
    let config = run.config;
    Inputs {
        ironic: run.ironic,
        names: &found.names,
        namespace: &found.namespace,
        managed: &found.managed,
        host: found.names.host(&found.namespace, &config.cluster_domain),
        image,
        claim: volumes::claim_settings(found.stateful_set.as_ref(), found.managed.storage.as_ref()),
        tls: wire.serving(),
        require_tls: wire.transport == tls_switch::Transport::Required,
        account_digest: account::digest(&accounts.maintenance_hash),
        job_backoff_limit: config.job_backoff_limit,
        job_deadline_seconds: i64::try_from(config.job_deadline.as_secs()).unwrap_or(i64::MAX),
    }
}

pub(super) async fn run(
    run: &mut Run<'_>,
    connection: &Connection,
    found: &Found,
    inputs: &Inputs<'_>,
    accounts: &Accounts,
    wire: &Wire,
    status: &mut DatabaseStatus,
) -> Result<Applied, Error> {
    let stored = secrets(run, inputs, accounts, status.upgrade.as_ref()).await.map_err(Error::Apply)?;
    let mut mounted = vec![Source::from_secret(&stored)];
    mounted.extend(tls_secrets(run, connection, inputs, wire).await.map_err(Error::Apply)?);
    let server = async {
        run.ledger.apply(service::render(inputs)).await?;
        run.ledger.apply(stateful_set::render(inputs)).await
    };
    let stateful_set = server.await.map_err(Error::Apply)?;
    if wire.live.is_some_and(|live| live != wire.transport) {
        let (reason, note) = tls_switch::notice(wire.wanted, wire.transport);
        run.notices.normal(reason, note);
    }
    status.image = Some(inputs.image.to_string());
    volumes::apply(run, found, inputs).await.map_err(Error::Apply)?;
    Ok(Applied { stateful_set, image: inputs.image.to_string(), mounted })
}

/// The accounts' Secrets and the server's init file; Ironic's Secret as stored.
async fn secrets(
    run: &mut Run<'_>,
    inputs: &Inputs<'_>,
    accounts: &Accounts,
    upgrade: Option<&DatabaseUpgradeStatus>,
) -> Result<k8s_openapi::api::core::v1::Secret, KubeError> {
    let (names, meta) = (inputs.names, inputs.secret_meta());
    // Adopted, not only applied: a person restores lost credentials by creating the Secret.
    run.ledger.adopt(credentials::render(&names.admin(), meta.clone(), &accounts.admin.credentials)).await?;
    let stored =
        run.ledger.adopt(credentials::render(&names.credentials(), meta.clone(), &accounts.user.credentials)).await?;
    run.ledger.apply(credentials::render(&names.maintenance(), meta, &accounts.maintenance.credentials)).await?;
    init_file(run, inputs, accounts, upgrade).await?;
    let made = [
        (&accounts.admin, names.admin()),
        (&accounts.user, names.credentials()),
        (&accounts.maintenance, names.maintenance()),
    ];
    for (_, name) in made.iter().filter(|(resolved, _)| resolved.generated) {
        run.notices.normal("DatabaseCredentialsGenerated", format!("generated database credentials in Secret {name}"));
    }
    Ok(stored)
}

/// The server's init file, with the upgrade account as the version change now stands (the
/// file is read at the server's next start).
pub(super) async fn init_file(
    run: &Run<'_>,
    inputs: &Inputs<'_>,
    accounts: &Accounts,
    upgrade: Option<&DatabaseUpgradeStatus>,
) -> Result<(), KubeError> {
    let sql = account::init_sql(&accounts.maintenance_hash, UpgradeAccount::during(upgrade));
    run.ledger.apply(account::render_init(inputs.names, inputs.secret_meta(), &sql)).await.map(drop)
}

/// The CA and serving Secrets the operator made, and the CA Ironic's pods trust; the latter as
/// stored when Ironic's pods mount it.
async fn tls_secrets(
    run: &mut Run<'_>,
    connection: &Connection,
    inputs: &Inputs<'_>,
    wire: &Wire,
) -> Result<Option<Source>, KubeError> {
    let Some(material) = &wire.material else { return Ok(None) };
    let (names, meta) = (inputs.names, inputs.secret_meta());
    if let Some(generated) = &material.generated {
        run.ledger.apply(tls::render_ca(names, meta.clone(), generated)).await?;
        run.ledger.apply(tls::render_serving(names, meta.clone(), generated)).await?;
        if let Some(reason) = generated.issued {
            let note = format!("issued MariaDB's serving certificate in Secret {}: {reason}", names.tls_serving());
            run.notices.normal("DatabaseCertificateIssued", note);
        }
    }
    // Kept while a server serves it: Ironic's pods that still mount it must find it.
    let client_ca = run.ledger.apply(tls::render_client_ca(names, meta, material)).await?;
    Ok(connection.tls_ca.is_some().then(|| Source::from_secret(&client_ca)))
}
