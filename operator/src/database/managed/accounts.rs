//! The three accounts' credentials: Ironic's and root's are made once and never again while
//! data exists; the maintenance account's are made whenever missing.

use super::super::account;
use super::super::credentials::{self, ADMIN_USER, IRONIC_USER, Resolved};
use super::super::run::Run;
use super::super::status::reasons;
use super::found::Found;
use crate::kit::{KubeError, Progress};
use k8s_openapi::api::core::v1::Secret;

pub(super) struct Accounts {
    /// root's.
    pub admin: Resolved,
    /// Ironic's.
    pub user: Resolved,
    /// The operator's own, for checks and version changes.
    pub maintenance: Resolved,
    /// The maintenance password's hash, as the server's init file sets it.
    pub maintenance_hash: String,
}

/// The accounts, or why they cannot be used.
pub(super) async fn run(run: &Run<'_>, found: &Found) -> Result<Result<Accounts, Progress>, KubeError> {
    let names = &found.names;
    let admin_secret = run.ledger.get::<Secret>(&names.admin()).await?;
    let user_secret = run.ledger.get::<Secret>(&names.credentials()).await?;
    let maintenance_secret = run.ledger.get::<Secret>(&names.maintenance()).await?;
    let (claim, data_exists) = (names.data_claim(), found.data_exists());
    let admin = credentials::resolve(&names.admin(), admin_secret.as_ref(), ADMIN_USER, data_exists, &claim);
    let user = credentials::resolve(&names.credentials(), user_secret.as_ref(), IRONIC_USER, data_exists, &claim);
    let maintenance = credentials::resolve_maintenance(maintenance_secret.as_ref());
    Ok(match (admin, user, maintenance) {
        (Ok(admin), Ok(user), Ok(maintenance)) => {
            let maintenance_hash = account::password_hash(&maintenance.credentials.password);
            Ok(Accounts { admin, user, maintenance, maintenance_hash })
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            let reason = if matches!(e, credentials::Error::Lost { .. }) {
                reasons::CREDENTIALS_LOST
            } else {
                reasons::CREDENTIALS_INVALID
            };
            Err(Progress::failed(reason, e.to_string()))
        }
    })
}
