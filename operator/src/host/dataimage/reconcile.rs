//! One reconcile of a `DataImage`: dereference its host (the `BareMetalHost` of its name, in its
//! namespace) → its metadata (our finalizer, the host as owner) → read the node's record →
//! status; a `DataImage` being deleted keeps its finalizer until nothing of it is attached.

use super::record::Record;
use super::status::{Observed, compute};
use crate::host::context::HostContext;
use crate::host::firmware::target::{NOT_READY, STEADY, Target, Unread, target, unavailable};
use crate::host::owned;
use crate::kit::backoff::spread;
use crate::kit::error::Verb;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::baremetalhost::BareMetalHost;
use crds::dataimage::{DATA_IMAGE_FINALIZER, DataImage};
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "dataimage";

/// While the image waits for the host's power on (or its deletion for an eject), the record is
/// read again this often.
const WAITING: Duration = Duration::from_secs(60);

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, DataImage: Patch);
crate::install::rbac::require_access!(crate::install::rbac::table::HOST, DataImage, status: Patch);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Kube);

/// What the reconciles share.
pub(super) struct DataImageReconciler {
    pub(super) runner: Runner,
    pub(super) publisher: Publisher,
    /// The host controller's: its Ironic connection.
    pub(super) hosts: Arc<HostContext>,
}

impl Reconcile for DataImageReconciler {
    type Object = DataImage;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<DataImage>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move { self.run(&object).await })
    }
}

impl DataImageReconciler {
    async fn run(&self, image: &DataImage) -> Result<Action, Error> {
        let namespace = image.namespace().unwrap_or_default();
        let api: Api<DataImage> = Api::namespaced(self.hosts.kube.clone(), &namespace);
        let (observed, host) = self.read(&namespace, &image.name_any()).await?;
        let deleting = image.meta().deletion_timestamp.is_some();
        if deleting {
            // Nothing of it attached (or no node to hold it): it may go.
            let released = match &observed {
                Observed::Read(record) => record.attached.is_none(),
                Observed::NoNode { .. } => true,
                Observed::Unread { .. } => false,
            };
            if released {
                owned::release(&api, image, DATA_IMAGE_FINALIZER).await?;
                return Ok(Action::await_change());
            }
        } else {
            owned::adopt(&api, image, DATA_IMAGE_FINALIZER, host.as_deref()).await?;
        }
        let outcome = compute(image, &observed, &Time(Timestamp::now()));
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        commit.write(&api, image, outcome.status.as_ref(), outcome.notices).await?;
        let again = match &observed {
            Observed::Unread { .. } | Observed::NoNode { .. } => NOT_READY,
            _ if deleting || !outcome.settled => WAITING,
            _ => STEADY,
        };
        Ok(Action::requeue(spread(again)))
    }

    /// The node's record of the host of `name`, or why there is none; and the host.
    async fn read(&self, namespace: &str, name: &str) -> Result<(Observed, Option<Box<BareMetalHost>>), Error> {
        let (host, node, client) = match target(&self.hosts, namespace, name).await? {
            Target::Unread(Unread { reason: reason @ ("NoHost" | "NotRegistered"), message, .. }) => {
                let host = self.host(namespace, name, reason).await?;
                return Ok((Observed::NoNode { reason, message }, host));
            }
            Target::Unread(Unread { reason, message, .. }) => return Ok((Observed::Unread { reason, message }, None)),
            Target::Node { host, node, client } => (host, node, client),
        };
        match client.get_node_fields(&node, &["extra"]).await {
            Ok(node) => Ok((Observed::Read(Record::of(&node.extra)), Some(host))),
            // The host's node is gone from Ironic (deleted with the host): nothing is attached.
            Err(err) if err.is_not_found() => Ok((
                Observed::NoNode { reason: "NotRegistered", message: "the host's node is gone".into() },
                Some(host),
            )),
            Err(err) => {
                let Unread { reason, message, .. } = unavailable(format!("cannot read the host's node: {err}"));
                Ok((Observed::Unread { reason, message }, Some(host)))
            }
        }
    }

    /// The host of a data image without a node: none when there is none.
    async fn host(&self, namespace: &str, name: &str, reason: &str) -> Result<Option<Box<BareMetalHost>>, Error> {
        if reason == "NoHost" {
            return Ok(None);
        }
        let api: Api<BareMetalHost> = Api::namespaced(self.hosts.kube.clone(), namespace);
        Ok(api.get_opt(name).await.map_err(KubeError::of::<BareMetalHost>(Verb::Get, name))?.map(Box::new))
    }
}
