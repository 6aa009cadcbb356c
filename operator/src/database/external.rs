//! An external database (ironic-standalone-operator's `spec.database`): before Ironic relies
//! on it, the operator connects the way Ironic will, with the same credentials and CA, and
//! reports what it found.

use super::check::{self, Target, Tls};
use super::connection::Connection;
use super::credentials;
use super::reconcile::{DatabaseOutcome, Error, Run};
use super::status::{self, Gate, reasons};
use crate::ironic::linked::Source;
use crds::ironic::status::{DatabaseMode, DatabaseStatus};
use k8s_openapi::api::core::v1::Secret;

/// What stops a check before it starts: a Secret missing or incomplete.
struct Refusal {
    reason: &'static str,
    message: String,
}

async fn target(run: &Run<'_>, connection: &Connection) -> Result<Result<Target, Refusal>, Error> {
    let credentials = match run.kube.get::<Secret>(&connection.credentials_secret).await? {
        None => {
            return Ok(Err(Refusal {
                reason: reasons::CREDENTIALS_INVALID,
                message: format!(
                    "Secret {} (spec.database.credentialsName) does not exist",
                    connection.credentials_secret
                ),
            }));
        }
        Some(secret) => match credentials::from_secret(&secret) {
            Ok(credentials) => credentials,
            Err(e) => {
                let message = format!("{e} (spec.database.credentialsName)");
                return Ok(Err(Refusal { reason: reasons::CREDENTIALS_INVALID, message }));
            }
        },
    };
    let tls = match &connection.tls_ca {
        None => Tls::Disabled,
        Some(ca) => {
            let secret = run.kube.get::<Secret>(&ca.name).await?;
            let pem = secret.as_ref().map(Source::from_secret).and_then(|s| s.text(&ca.key).map(str::to_string));
            match pem.filter(|p| !p.trim().is_empty()) {
                Some(pem) => Tls::Verify { ca_pem: pem.into_bytes(), verify_hostname: true },
                None => {
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
                    return Ok(Err(Refusal { reason: reasons::TLS_INVALID, message }));
                }
            }
        }
    };
    Ok(Ok(Target {
        host: connection.host.clone(),
        port: connection.port,
        database: Some(connection.name.clone()),
        credentials,
        tls,
        timeout: run.config.connect_timeout,
    }))
}

pub(super) async fn reconcile(run: &mut Run<'_>, connection: Connection) -> Result<DatabaseOutcome, Error> {
    let generation = run.ironic.metadata.generation;
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
    let (gate, condition, schema) = match target(run, &connection).await? {
        Err(refusal) => (
            Gate::halted(refusal.reason, refusal.message.clone()),
            status::ready(false, refusal.reason, refusal.message, generation),
            None,
        ),
        Ok(target) => match check::check(&target, true).await {
            Ok(report) => {
                db.server_version = Some(report.version.raw.clone());
                db.schema_revision = report.schema.as_ref().and_then(|s| s.for_status());
                let tls = match target.tls {
                    Tls::Disabled => "without TLS",
                    Tls::Verify { .. } => "over verified TLS",
                };
                let schema = report.schema.as_ref().map(|s| format!(", {s}")).unwrap_or_default();
                let message = format!("{} at {}, {tls}{schema}", report.version, connection.address());
                (Gate::Open, status::ready(true, reasons::AVAILABLE, message, generation), report.schema)
            }
            Err(e) => {
                tracing::warn!(reason = e.reason(), error = %e, "external database check failed");
                let gate = if e.is_transient() {
                    Gate::wait(e.reason(), e.to_string())
                } else {
                    Gate::halted(e.reason(), e.to_string())
                };
                (gate, status::ready(false, e.reason(), e.to_string(), generation), None)
            }
        },
    };
    Ok(DatabaseOutcome {
        connection: Some(connection),
        status: Some(db),
        condition: Some(condition),
        schema,
        requeue_after: run.requeue_for(&gate),
        gate,
        applied: Vec::new(),
    })
}
