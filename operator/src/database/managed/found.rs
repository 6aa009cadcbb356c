//! What exists already: the StatefulSet and the data claim, and the status this reconcile
//! starts from (names filled in, the rest as last written).

use super::super::connection::Connection;
use super::super::names::Names;
use super::super::observe;
use super::super::run::Run;
use super::super::sequence;
use crate::kit::KubeError;
use crds::ironic::Ironic;
use crds::ironic::database::ManagedDatabase;
use crds::ironic::status::{DatabaseMode, DatabaseStatus};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

pub(super) struct Found {
    pub managed: ManagedDatabase,
    pub names: Names,
    pub namespace: String,
    pub stateful_set: Option<StatefulSet>,
    pub data_claim: Option<PersistentVolumeClaim>,
}

impl Found {
    /// Data may exist: credentials made for it are never made again.
    pub(super) fn data_exists(&self) -> bool {
        self.stateful_set.is_some() || self.data_claim.is_some()
    }

    /// The image the StatefulSet gets: the one it runs, until the version change rolls it.
    pub(super) fn image_to_apply(&self, status: &DatabaseStatus) -> String {
        let live = self.stateful_set.as_ref().and_then(observe::template_image);
        sequence::image_to_apply(status.upgrade.as_ref(), live.as_deref(), &self.managed.image())
    }
}

pub(super) async fn run(run: &Run<'_>, connection: &Connection) -> Result<(Found, DatabaseStatus), KubeError> {
    let ironic = run.ironic;
    let names = Names::of(ironic);
    let status = starting_status(ironic, &names, connection);
    let found = Found {
        managed: ironic.spec.database.as_ref().and_then(|d| d.managed.clone()).unwrap_or_default(),
        stateful_set: run.ledger.get::<StatefulSet>(&names.stateful_set()).await?,
        data_claim: run.ledger.get::<PersistentVolumeClaim>(&names.data_claim()).await?,
        namespace: run.namespace().to_string(),
        names,
    };
    Ok((found, status))
}

/// `status.database` as last written, with the names and address of this spec.
fn starting_status(ironic: &Ironic, names: &Names, connection: &Connection) -> DatabaseStatus {
    let previous = ironic.status.as_ref().and_then(|s| s.database.clone()).unwrap_or_default();
    DatabaseStatus {
        admin_secret_name: Some(names.admin()),
        ca_secret_name: connection.tls_ca.as_ref().map(|ca| ca.name.clone()),
        credentials_secret_name: Some(connection.credentials_secret.clone()),
        host: Some(connection.address()),
        maintenance_secret_name: Some(names.maintenance()),
        mode: Some(DatabaseMode::Managed),
        stateful_set_name: Some(names.stateful_set()),
        ..previous
    }
}
