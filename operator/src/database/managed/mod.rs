//! A managed MariaDB, as its list of steps: what exists ([`found`]), the three accounts
//! ([`accounts`]), how the server and Ironic's pods talk ([`transport`]), every object written
//! ([`apply`]), the server checked the way Ironic reaches it ([`checked`]), a pending version
//! change one step further ([`version_change`]), and where it all stands ([`outcome`]). Each
//! step fails with its own [`Error`] variant; what a person must fix is a
//! [`Progress`](crate::kit::Progress) instead.

mod accounts;
mod apply;
mod checked;
mod error;
mod found;
mod outcome;
mod transport;
mod version_change;
mod volumes;

pub(super) use error::Error;

use super::connection::Connection;
use super::outcome::DatabaseOutcome;
use super::run::Run;

pub(super) async fn reconcile(run: &mut Run<'_>, connection: Connection) -> Result<DatabaseOutcome, Error> {
    let (found, mut status) = found::run(run, &connection).await.map_err(Error::Observe)?;
    let accounts = match accounts::run(run, &found).await.map_err(Error::Credentials)? {
        Ok(accounts) => accounts,
        Err(refused) => return Ok(run.settle(Some(connection), Some(status), refused, "")),
    };
    let wire = match transport::run(run, &found).await? {
        Ok(wire) => wire,
        Err(refused) => return Ok(run.settle(Some(connection), Some(status), refused, "")),
    };
    let image = found.image_to_apply(&status);
    let inputs = apply::inputs(run, &found, &accounts, &wire, &image);
    let applied = apply::run(run, &connection, &found, &inputs, &accounts, &wire, &mut status).await?;
    let checked = checked::run(run, &connection, &found, &accounts, &wire, &applied, &mut status).await?;
    let sequenced = version_change::run(run, &found, &inputs, &accounts, &checked, &mut status).await?;
    Ok(outcome::of(run, connection, status, &wire, applied, checked, sequenced))
}
