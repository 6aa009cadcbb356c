//! An external database (ironic-standalone-operator's `spec.database`): before Ironic relies
//! on it, the operator connects the way Ironic will, with the same credentials and CA, and
//! reports what it found.

use super::check::{self, Target, Tls};
use super::connection::Connection;
use super::credentials;
use super::error::Error;
use super::outcome::DatabaseOutcome;
use super::run::Run;
use super::status::reasons;
use crate::kit::Progress;
use crate::kit::content::Source;
use crds::ironic::status::{DatabaseMode, DatabaseStatus};
use k8s_openapi::api::core::v1::Secret;

/// What the check connects with, and the Secrets it read: Ironic's pods mount the same ones.
struct Found {
    target: Target,
    mounted: Vec<Source>,
}

/// Reads the credentials and the CA; a Secret missing or incomplete stops the check before it
/// starts, as a failed progress.
async fn target(run: &Run<'_>, connection: &Connection) -> Result<Result<Found, Progress>, Error> {
    let refused = |reason: &'static str, message: String| Ok(Err(Progress::failed(reason, message)));
    let Some(secret) = run.ledger.get::<Secret>(&connection.credentials_secret).await? else {
        let message =
            format!("Secret {} (spec.database.credentialsName) does not exist", connection.credentials_secret);
        return refused(reasons::CREDENTIALS_INVALID, message);
    };
    let credentials = match credentials::from_secret(&secret) {
        Ok(credentials) => credentials,
        Err(e) => return refused(reasons::CREDENTIALS_INVALID, format!("{e} (spec.database.credentialsName)")),
    };
    let mut mounted = vec![Source::from_secret(&secret)];
    let tls = match &connection.tls_ca {
        None => Tls::Disabled,
        Some(ca) => {
            let secret = run.ledger.get::<Secret>(&ca.name).await?;
            let source = secret.as_ref().map(Source::from_secret);
            let pem = source.as_ref().and_then(|s| s.text(&ca.key).map(str::to_string));
            match (pem.filter(|p| !p.trim().is_empty()), source) {
                (Some(pem), Some(source)) => {
                    mounted.push(source);
                    Tls::Verify { ca_pem: pem.into_bytes(), verify_hostname: true }
                }
                _ => {
                    let problem = if secret.is_none() {
                        "does not exist".to_string()
                    } else {
                        format!("has no key {:?}", ca.key)
                    };
                    let message = format!(
                        "Secret {} (spec.database.tlsCertificateName) {problem}; Ironic reads the database's CA from \
                         its key {:?}",
                        ca.name, ca.key
                    );
                    return refused(reasons::TLS_INVALID, message);
                }
            }
        }
    };
    let target = Target {
        host: connection.host.clone(),
        port: connection.port,
        database: Some(connection.name.clone()),
        credentials,
        tls,
        timeout: run.config.connect_timeout,
    };
    Ok(Ok(Found { target, mounted }))
}

pub(super) async fn reconcile(run: &mut Run<'_>, connection: Connection) -> Result<DatabaseOutcome, Error> {
    let previous = run.ironic.status.as_ref().and_then(|s| s.database.clone()).unwrap_or_default();
    let mut db = DatabaseStatus {
        credentials_secret_name: Some(connection.credentials_secret.clone()),
        host: Some(connection.address()),
        mode: Some(DatabaseMode::External),
        // The last values read stay until a check reads new ones.
        server_version: previous.server_version,
        schema_revision: previous.schema_revision,
        ..Default::default()
    };
    let found = match target(run, &connection).await? {
        Ok(found) => found,
        Err(refused) => return Ok(run.settle(Some(connection), Some(db), refused, "")),
    };
    match check::check(&found.target, true).await {
        Ok(report) => {
            db.server_version = Some(report.version.raw.clone());
            db.schema_revision = report.schema.as_ref().and_then(|s| s.for_status());
            let tls = match found.target.tls {
                Tls::Disabled => "without TLS",
                Tls::Verify { .. } => "over verified TLS",
            };
            let schema = report.schema.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
            let available = format!("{} at {}, {tls}{schema}", report.version, connection.address());
            let outcome = run.settle(Some(connection), Some(db), Progress::Done, &available);
            Ok(DatabaseOutcome { schema: report.schema, mounted: found.mounted, ..outcome })
        }
        Err(e) => {
            tracing::warn!(reason = e.reason(), error = %e, "external database check failed");
            let progress = if e.is_transient() {
                Progress::waiting(e.reason(), e.to_string())
            } else {
                Progress::failed(e.reason(), e.to_string())
            };
            Ok(DatabaseOutcome { mounted: found.mounted, ..run.settle(Some(connection), Some(db), progress, "") })
        }
    }
}
