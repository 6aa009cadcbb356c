//! One reconcile of a `HostFirmwareComponents`: dereference its host → read its components and
//! the updates handed over from Ironic → write the status. What cannot be read is a value,
//! reported in `Ready` and read again later; only failed Kubernetes writes are errors. An
//! object that wants no update is not read again while its node has not moved since the last
//! read (`host::refresh`): Ironic holds the same components.

use super::handover::{NodeMoment, mark_of, resolve};
use super::status::{Moment, Observed, compute};
use crate::host::context::HostContext;
use crate::host::firmware::target::{NOT_READY, STEADY, Target, Unread, managed, read_mark, target, unavailable};
use crate::host::firmware::{Look, ReadMark, status_digest};
use crate::host::wake::HostKey;
use crate::kit::backoff::spread;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::baremetalhost::{BareMetalHost, ProvisioningState};
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents};
use futures::future::BoxFuture;
use ironic_client::{FirmwareComponent, ProvisionState};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "hostfirmwarecomponents";

/// baremetal-operator reads components whose updates wait every minute.
const CHANGE_DETECTED: Duration = Duration::from_secs(60);
/// A host being serviced is read again soon: its versions change when it ends.
const SERVICING: Duration = Duration::from_secs(15);

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareComponents, status: Patch);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Kube);

/// What the reconciles share.
pub(super) struct ComponentsReconciler {
    pub(super) runner: Runner,
    pub(super) publisher: Publisher,
    /// The host controller's: its Ironic connection and configuration.
    pub(super) hosts: Arc<HostContext>,
}

impl Reconcile for ComponentsReconciler {
    type Object = HostFirmwareComponents;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, object: Arc<HostFirmwareComponents>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move {
            let object = self.hosts.components.freshest(object);
            self.run(&object).await
        })
    }
}

/// What Ironic showed.
struct Reading {
    components: Vec<FirmwareComponent>,
    handed: Vec<FirmwareUpdate>,
    moment: Moment,
}

/// Ironic has read nothing of the host yet.
fn not_read() -> Unread {
    let message = "Ironic has not read the host's firmware components yet (it does once the host is managed)";
    Unread { reason: "NotRead", message: message.into(), again: NOT_READY }
}

/// What dereferencing and reading found.
enum Found {
    Unread(Unread),
    Read(Reading),
    /// No update is wanted and the node has not moved since the last read: Ironic holds the
    /// same.
    Unchanged,
}

impl ComponentsReconciler {
    async fn run(&self, object: &HostFirmwareComponents) -> Result<Action, Error> {
        let (found, mark) = self.read(object).await?;
        let now = Time(Timestamp::now());
        let (outcome, again) = match &found {
            // Nothing to write: the status shows this very reading.
            Found::Unchanged => return Ok(Action::requeue(spread(STEADY))),
            Found::Unread(Unread { reason, message, again }) => {
                (compute(object, &Observed::Unread { reason, message: message.clone() }, &now), *again)
            }
            Found::Read(Reading { components, handed, moment }) => {
                let observed = Observed::Read { components, handed: handed.clone(), moment: *moment };
                let again = if *moment == Moment::Servicing { SERVICING } else { STEADY };
                (compute(object, &observed, &now), again)
            }
        };
        let again = if outcome.change_detected { again.min(CHANGE_DETECTED) } else { again };
        let key = HostKey::new(object.namespace().unwrap_or_default(), object.name_any());
        let generation = object.metadata.generation;
        match &found {
            Found::Read(_) => self.hosts.components.set(&key, outcome.waiting.clone(), generation),
            Found::Unread(_) | Found::Unchanged => self.hosts.components.unread(&key, generation),
        }
        let api: Api<HostFirmwareComponents> =
            Api::namespaced(self.hosts.kube.clone(), &object.namespace().unwrap_or_default());
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        if let Some(written) = commit.write(&api, object, outcome.status.as_ref(), outcome.notices).await? {
            self.hosts.components.wrote(written);
        }
        // Only once the status shows this reading may the next look skip the read, and only
        // while the status stays as written.
        if let Some(mark) = mark {
            let status = status_digest(outcome.status.as_ref().or(object.status.as_ref()));
            self.hosts.components.marked(&key, ReadMark { status, ..mark });
        }
        Ok(Action::requeue(spread(again)))
    }

    /// The host of the same name in the same namespace, its components and the updates its
    /// node was handed, as Ironic shows them; with what the read was made from, to record once
    /// its status is written.
    async fn read(&self, object: &HostFirmwareComponents) -> Result<(Found, Option<ReadMark>), Error> {
        let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
        let (host, node, client) = match target(&self.hosts, &namespace, &name).await? {
            Target::Unread(unread) => return Ok((Found::Unread(unread), None)),
            Target::Node { host, node, client } => (host, node, client),
        };
        let read_before = object.status.as_ref().is_some_and(|s| !s.components.is_empty());
        if !managed(&host) && !read_before {
            // Ironic reads them when it manages the node; the host controller asks for a read
            // then (`Waiting::read_now`), so nothing is asked of Ironic before. A host inspected
            // again after that is read as usual: Ironic still holds its components.
            return Ok((Found::Unread(not_read()), None));
        }
        let key = HostKey::new(&namespace, &name);
        let seen = (&object.metadata, object.status.as_ref());
        let mark = read_mark(&self.hosts, &key, &node, seen, object.spec.updates.is_empty());
        let Look::Read(mark) = self.hosts.components.look(&key, mark) else {
            return Ok((Found::Unchanged, None));
        };
        match self.read_node(object, &host, &node, &client).await? {
            // A host being serviced is read every 15 s until its servicing ends: a mark would
            // let the next look skip the read and wait five minutes.
            Ok(reading) if reading.moment == Moment::Servicing => Ok((Found::Read(reading), None)),
            Ok(reading) => Ok((Found::Read(reading), mark)),
            Err(unread) => Ok((Found::Unread(unread), None)),
        }
    }

    /// The node's components and the updates it was handed, and where the host is.
    async fn read_node(
        &self,
        object: &HostFirmwareComponents,
        host: &BareMetalHost,
        node: &str,
        client: &ironic_client::IronicClient,
    ) -> Result<Result<Reading, Unread>, Error> {
        let components = match client.list_firmware_components(node).await {
            Ok(components) => components,
            Err(err) => return Ok(Err(unavailable(format!("cannot read the firmware components: {err}")))),
        };
        if components.is_empty() && !managed(host) {
            // A status that said otherwise was not this node's.
            return Ok(Err(not_read()));
        }
        let fields = ["extra", "provision_state", "provision_updated_at"];
        let node = match client.get_node_fields(node, &fields).await {
            Ok(node) => node,
            Err(err) => return Ok(Err(unavailable(format!("cannot read the host's node: {err}")))),
        };
        let at = NodeMoment {
            provision_state: node.provision_state.as_ref(),
            provision_updated_at: node.provision_updated_at.as_deref(),
        };
        let recorded = object.status.as_ref().map(|s| s.updates.clone()).unwrap_or_default();
        let handed = resolve(mark_of(&node.extra).as_ref(), &recorded, at).handed(&object.spec.updates);
        let moment = self.moment(host, node.provision_state.as_ref()).await?;
        Ok(Ok(Reading { components, handed, moment }))
    }

    /// Where the host is for its updates; its policy is read only when it is provisioned.
    async fn moment(&self, host: &BareMetalHost, node: Option<&ProvisionState>) -> Result<Moment, Error> {
        use ProvisionState as P;
        match node {
            Some(P::Servicing | P::ServiceWait | P::ServiceHold) => return Ok(Moment::Servicing),
            Some(P::ServiceFailed) => return Ok(Moment::ServicingFailed),
            _ => {}
        }
        let state = host.status.as_ref().map(|s| s.provisioning.state);
        if !matches!(state, Some(ProvisioningState::Provisioned | ProvisioningState::ExternallyProvisioned)) {
            return Ok(Moment::NotProvisioned);
        }
        let on_reboot = crate::host::firmware::updates_on_reboot(&self.hosts.kube, host).await?;
        Ok(Moment::Provisioned { on_reboot })
    }
}
