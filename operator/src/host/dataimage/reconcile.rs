//! One reconcile of a `DataImage`: dereference its host (the `BareMetalHost` of its name, in its
//! namespace) → its metadata (our finalizer, the host as owner) → read the node's record →
//! status; a `DataImage` being deleted keeps its finalizer until nothing of it is attached.

use super::record::Record;
use super::status::{Observed, compute};
use crate::host::context::HostContext;
use crate::host::firmware::target::{NOT_READY, STEADY, Target, Unread, target, unavailable};
use crate::kit::backoff::spread;
use crate::kit::error::Verb;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::baremetalhost::BareMetalHost;
use crds::dataimage::{DATA_IMAGE_FINALIZER, DataImage};
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "dataimage";

/// While the image waits for the host's power on (or its deletion for an eject), the record is
/// read again this often.
const WAITING: Duration = Duration::from_secs(15);

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
                release(&api, image).await?;
                return Ok(Action::await_change());
            }
        } else {
            adopt(&api, image, host.as_deref()).await?;
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

/// Our finalizer, and the host as the owner (the garbage collector deletes the data image with
/// its host, as baremetal-operator's does): written together, at the version read.
async fn adopt(api: &Api<DataImage>, image: &DataImage, host: Option<&BareMetalHost>) -> Result<(), KubeError> {
    let mut finalizers = image.finalizers().to_vec();
    let mut owners = image.owner_references().to_vec();
    let owner = host.and_then(|h| h.controller_owner_ref(&())).filter(|o| !owners.iter().any(|r| r.uid == o.uid));
    let has_finalizer = finalizers.iter().any(|f| f == DATA_IMAGE_FINALIZER);
    if has_finalizer && owner.is_none() {
        return Ok(());
    }
    if !has_finalizer {
        finalizers.push(DATA_IMAGE_FINALIZER.to_string());
    }
    // Another controller (of another host kind) may own it already: ours is then a plain owner.
    let controlled = owners.iter().any(|r| r.controller == Some(true));
    owners.extend(owner.map(|o| OwnerReference { controller: Some(!controlled), ..o }));
    patch_metadata(api, image, json!({ "finalizers": finalizers, "ownerReferences": owners })).await
}

/// Removes our finalizer.
async fn release(api: &Api<DataImage>, image: &DataImage) -> Result<(), KubeError> {
    let finalizers: Vec<&String> = image.finalizers().iter().filter(|f| *f != DATA_IMAGE_FINALIZER).collect();
    if finalizers.len() == image.finalizers().len() {
        return Ok(());
    }
    patch_metadata(api, image, json!({ "finalizers": finalizers })).await
}

/// A merge patch of `metadata`, refused if the object changed since it was read (the lists it
/// writes are written whole).
async fn patch_metadata(
    api: &Api<DataImage>,
    image: &DataImage,
    mut metadata: serde_json::Value,
) -> Result<(), KubeError> {
    let name = image.name_any();
    metadata["resourceVersion"] = json!(image.resource_version());
    let params = PatchParams { field_manager: Some(crate::FIELD_MANAGER.into()), ..Default::default() };
    api.patch(&name, &params, &Patch::Merge(json!({ "metadata": metadata }))).await.map_err(KubeError::of::<
        DataImage,
    >(
        Verb::Patch, &name
    ))?;
    Ok(())
}
