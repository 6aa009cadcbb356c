//! One reconcile of a `PreprovisioningImage` by our builder: the network data Secret's version
//! → the image it serves (`builder`, pure) → status, with an Event when `Ready` changes. A
//! missing Secret is looked for again, sooner after the error first showed, then less often,
//! as baremetal-operator does.

use super::builder::{MISSING_NETWORK_DATA, NetworkData, Provider, build};
use crate::host::context::HostContext;
use crate::kit::error::Verb;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::condition::find;
use crds::preprovisioningimage::{CONDITION_ERROR, PreprovisioningImage};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "preprovisioningimage";

/// The first and the longest wait before a missing network data Secret is looked for again.
const MIN_RETRY: Duration = Duration::from_secs(10);
const MAX_RETRY: Duration = Duration::from_secs(600);

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, PreprovisioningImage, status: Patch);
crate::install::rbac::require_access!(crate::install::rbac::table::HOST, Secret: Get);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Kube);

/// What the reconciles share.
pub(super) struct ImageReconciler {
    pub(super) runner: Runner,
    pub(super) publisher: Publisher,
    pub(super) provider: Provider,
    pub(super) hosts: Arc<HostContext>,
}

impl Reconcile for ImageReconciler {
    type Object = PreprovisioningImage;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<PreprovisioningImage>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move { self.run(&object).await })
    }
}

impl ImageReconciler {
    async fn run(&self, image: &PreprovisioningImage) -> Result<Action, Error> {
        let namespace = image.namespace().unwrap_or_default();
        let data = network_data(&self.hosts.kube, &namespace, &image.spec.network_data_name).await?;
        let now = Timestamp::now();
        let outcome = build(image, &self.provider, &data, &Time(now));
        let api: Api<PreprovisioningImage> = Api::namespaced(self.hosts.kube.clone(), &namespace);
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        commit.write(&api, image, outcome.status.as_ref(), outcome.notices).await?;
        if data != NetworkData::Missing {
            return Ok(Action::await_change());
        }
        // Sooner while the error is fresh: a Secret created right after its image.
        let since = image
            .status
            .as_ref()
            .and_then(|s| find(&s.conditions, CONDITION_ERROR))
            .filter(|c| c.status == "True" && c.reason == MISSING_NETWORK_DATA)
            .and_then(|c| Duration::try_from(c.last_transition_time.0.duration_until(now)).ok())
            .unwrap_or_default();
        Ok(Action::requeue(since.saturating_add(MIN_RETRY).min(MAX_RETRY)))
    }
}

/// The network data Secret named `name` in `namespace`, as the image's status records it (its
/// metadata only: our builder builds nothing into the image).
pub(super) async fn network_data(client: &kube::Client, namespace: &str, name: &str) -> Result<NetworkData, KubeError> {
    if name.is_empty() {
        return Ok(NetworkData::None);
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let found = api.get_metadata_opt(name).await.map_err(KubeError::of::<Secret>(Verb::Get, name))?;
    Ok(match found {
        Some(secret) => NetworkData::Found(secret.resource_version().unwrap_or_default()),
        None => NetworkData::Missing,
    })
}
