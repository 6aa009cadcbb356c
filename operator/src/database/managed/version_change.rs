//! A pending MariaDB version change, driven one step further (see `sequence` and `upgrade`).

use super::super::build::Inputs;
use super::super::run::Run;
use super::super::sequence::RETRY_ANNOTATION;
use super::super::upgrade::{self, Driver, Request};
use super::accounts::Accounts;
use super::apply;
use super::checked::Checked;
use super::error::Error;
use super::found::Found;
use crate::kit::Progress;
use crds::ironic::database::DEFAULT_MARIADB_VERSION;
use crds::ironic::status::DatabaseStatus;

pub(super) async fn run(
    run: &mut Run<'_>,
    found: &Found,
    inputs: &Inputs<'_>,
    accounts: &Accounts,
    checked: &Checked,
    status: &mut DatabaseStatus,
) -> Result<Progress, Error> {
    let managed = &found.managed;
    let desired_image = managed.image();
    let desired_version =
        managed.version.clone().or_else(|| managed.image.is_none().then(|| DEFAULT_MARIADB_VERSION.to_string()));
    let annotations = run.ironic.metadata.annotations.as_ref();
    let request = Request {
        names: &found.names,
        desired_image: &desired_image,
        desired_version: desired_version.as_deref(),
        backup_keep: managed.backups().map(|b| b.keep()),
        retry_token: annotations.and_then(|a| a.get(RETRY_ANNOTATION)).map(String::as_str),
        step_timeout_seconds: i64::try_from(run.config.step_timeout.as_secs()).unwrap_or(i64::MAX),
    };
    let mut driver = Driver {
        inputs: inputs.clone(),
        maintenance: &checked.maintenance,
        account_hash: &accounts.maintenance_hash,
        live_image: found.stateful_set.as_ref().map(|_| inputs.image.to_string()),
    };
    // Boxed: the version change is a large state machine, and unboxed its future would
    // swell every reconcile future that awaits it (and the stack of the thread polling it).
    let sequenced = Box::pin(upgrade::run(run, &mut driver, &request, status)).await.map_err(Error::VersionChange)?;
    // The upgrade account follows the change as it now stands.
    apply::init_file(run, inputs, accounts, status.upgrade.as_ref()).await.map_err(Error::VersionChange)?;
    Ok(sequenced)
}
