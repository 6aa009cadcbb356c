//! The server checked the way Ironic will reach it, once its pod runs the applied template.

use super::super::check::{self, Report, Target, Tls};
use super::super::connection::Connection;
use super::super::observe;
use super::super::run::Run;
use super::accounts::Accounts;
use super::apply::Applied;
use super::error::Error;
use super::found::Found;
use super::transport::Wire;
use crate::kit::Progress;
use crds::ironic::status::DatabaseStatus;
use k8s_openapi::api::core::v1::Pod;

pub(super) struct Checked {
    /// Whether the StatefulSet's pod runs what was applied.
    pub rollout: Progress,
    /// The check, once the rollout is done.
    pub report: Option<Result<Report, check::Error>>,
    /// The server as the operator's own account reaches it, for the version change.
    pub maintenance: Target,
}

pub(super) async fn run(
    run: &Run<'_>,
    connection: &Connection,
    found: &Found,
    accounts: &Accounts,
    wire: &Wire,
    applied: &Applied,
    status: &mut DatabaseStatus,
) -> Result<Checked, Error> {
    let pod = run.ledger.get::<Pod>(&found.names.pod()).await.map_err(Error::Check)?;
    let rollout = observe::rollout(Some(&applied.stateful_set), pod.as_ref(), &applied.image);
    let user = user_target(run, connection, accounts, wire);
    let maintenance = Target { database: None, credentials: accounts.maintenance.credentials.clone(), ..user.clone() };
    let report = if rollout.is_done() { Some(check::check(&user, true).await) } else { None };
    if let Some(Ok(report)) = &report {
        status.server_version = Some(report.version.raw.clone());
        status.schema_revision = report.schema.as_ref().and_then(|s| s.for_status());
    }
    Ok(Checked { rollout, report, maintenance })
}

/// Ironic's account, at the address Ironic uses (or the one the operator is told to use).
fn user_target(run: &Run<'_>, connection: &Connection, accounts: &Accounts, wire: &Wire) -> Target {
    let (host, port, verify_hostname) = match &run.config.address_override {
        Some(address) => (address.host.clone(), address.port, false),
        None => (connection.host.clone(), connection.port, true),
    };
    let tls = wire
        .serving()
        .map_or(Tls::Disabled, |m| Tls::Verify { ca_pem: m.ca_pem.clone().into_bytes(), verify_hostname });
    Target {
        host,
        port,
        database: Some(connection.name.clone()),
        credentials: accounts.user.credentials.clone(),
        tls,
        timeout: run.config.connect_timeout,
    }
}
