//! One reconcile of a `HostFirmwareSettings`: dereference its host → read the BIOS from Ironic
//! → publish the schema → write the status. What cannot be read (no host, not registered,
//! detached, Ironic unavailable or not done reading) is a value, reported in `Ready`, and read
//! again later; only failed Kubernetes writes are errors, retried with backoff.

use super::read::{Reading, reading, schema_name};
use super::schema;
use super::status::{Observed, compute};
use super::target::{NOT_READY, STEADY, Target, Unread, managed, read_mark, target, unavailable};
use super::wanted::{Look, ReadMark, status_digest};
use crate::host::context::HostContext;
use crate::host::wake::HostKey;
use crate::kit::backoff::spread;
use crate::kit::runner::{Reconcile, Runner};
use crate::kit::status::Commit;
use crate::kit::{KubeError, Publisher};
use crds::baremetalhost::{BareMetalHost, ProvisioningState};
use crds::firmware::HostFirmwareSettings;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// The controller's name: in metrics, logs and as the Events' reporter.
pub(super) const CONTROLLER: &str = "hostfirmwaresettings";

/// baremetal-operator's delays: settings that differ from the host's are read again every
/// minute (they change when the host is prepared or serviced), the others as
/// [`super::target`] says.
const CHANGE_DETECTED: Duration = Duration::from_secs(60);

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, BareMetalHost: Get);
crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareSettings, status: Patch);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error(transparent)]
    Kube(#[from] KubeError),
}

crate::kit::label::metric_labels!(Error: Kube);

/// What the reconciles share.
pub(super) struct FirmwareReconciler {
    pub(super) runner: Runner,
    pub(super) publisher: Publisher,
    /// The host controller's: its Ironic connection and configuration.
    pub(super) hosts: Arc<HostContext>,
}

impl Reconcile for FirmwareReconciler {
    type Object = HostFirmwareSettings;
    type Error = Error;

    fn runner(&self) -> &Runner {
        &self.runner
    }

    fn reconcile(self: Arc<Self>, settings: Arc<HostFirmwareSettings>) -> BoxFuture<'static, Result<Action, Error>> {
        Box::pin(async move {
            let settings = self.hosts.firmware.freshest(settings);
            self.run(&settings).await
        })
    }
}

/// `Ready`'s reason when the host's driver gives no settings at all.
pub(super) const NO_SETTINGS: &str = "NoSettings";

/// What dereferencing and reading found.
enum Found {
    Unread(Unread),
    Read {
        host: Box<BareMetalHost>,
        reading: Reading,
    },
    /// Nothing is wanted and the node has not moved since the last read: Ironic holds the same.
    Unchanged,
}

impl FirmwareReconciler {
    async fn run(&self, settings: &HostFirmwareSettings) -> Result<Action, Error> {
        let (found, mark) = self.read(settings).await?;
        let now = Time(Timestamp::now());
        let (outcome, again) = match &found {
            // Nothing to write: the status shows this very reading.
            Found::Unchanged => return Ok(Action::requeue(spread(STEADY))),
            Found::Unread(Unread { reason, message, again }) => {
                (compute(settings, &Observed::Unread { reason, message: message.clone() }, &now), *again)
            }
            Found::Read { host, reading } => {
                let name = schema_name(&reading.schema);
                let kube = &self.hosts.kube;
                let schema = schema::publish(kube, settings, host, reading, &name).await?;
                let serviced = self.serviced(settings, host).await?;
                (compute(settings, &Observed::Read { reading, schema, serviced }, &now), STEADY)
            }
        };
        let again = if outcome.change_detected { again.min(CHANGE_DETECTED) } else { again };
        let key = HostKey::new(settings.namespace().unwrap_or_default(), settings.name_any());
        let written = outcome.status.is_some();
        let generation = settings.metadata.generation;
        match &found {
            Found::Read { .. } => self.hosts.firmware.set(&key, outcome.waiting.clone(), generation),
            Found::Unread(_) | Found::Unchanged => self.hosts.firmware.unread(&key, generation),
        }
        let api: Api<HostFirmwareSettings> =
            Api::namespaced(self.hosts.kube.clone(), &settings.namespace().unwrap_or_default());
        let commit = Commit { controller: CONTROLLER, metrics: &self.runner.metrics, publisher: &self.publisher };
        if let Some(written) = commit.write(&api, settings, outcome.status.as_ref(), outcome.notices).await? {
            self.hosts.firmware.wrote(written);
        }
        // Only once the status shows this reading may the next look skip the read, and only
        // while the status stays as written.
        if let Some(mark) = mark {
            let status = status_digest(outcome.status.as_ref().or(settings.status.as_ref()));
            self.hosts.firmware.marked(&key, ReadMark { status, ..mark });
        }
        if written {
            // A host waiting in preparing for this read looks at it now.
            self.hosts.firmware.wake(&key);
        }
        Ok(Action::requeue(spread(again)))
    }

    /// For a provisioned host with wanted settings, whether its policy lets servicing apply
    /// them (for `Ready`'s message; the host controller reads the policy itself when it acts).
    async fn serviced(&self, settings: &HostFirmwareSettings, host: &BareMetalHost) -> Result<Option<bool>, Error> {
        let state = host.status.as_ref().map(|s| s.provisioning.state);
        let provisioned =
            matches!(state, Some(ProvisioningState::Provisioned | ProvisioningState::ExternallyProvisioned));
        if !provisioned || settings.spec.settings.is_empty() {
            return Ok(None);
        }
        Ok(Some(super::gate::settings_on_reboot(&self.hosts.kube, host).await?))
    }

    /// The host of the same name in the same namespace, and its BIOS as Ironic read it; with
    /// what the read was made from, to record once its status is written.
    async fn read(&self, settings: &HostFirmwareSettings) -> Result<(Found, Option<ReadMark>), Error> {
        let (namespace, name) = (settings.namespace().unwrap_or_default(), settings.name_any());
        let (host, node, client) = match target(&self.hosts, &namespace, &name).await? {
            Target::Unread(unread) => return Ok((Found::Unread(unread), None)),
            Target::Node { host, node, client } => (host, node, client),
        };
        let not_read = || {
            let message = "Ironic has not read the host's BIOS settings yet (it does once the host is managed)";
            Ok((Found::Unread(Unread { reason: "NotRead", message: message.into(), again: NOT_READY }), None))
        };
        let read_before = settings.status.as_ref().is_some_and(|s| !s.settings.is_empty());
        if !managed(&host) && !read_before {
            // Ironic reads the BIOS when it manages the node; the host controller asks for a read
            // then (`Waiting::read_now`), so nothing is asked of Ironic before. A host inspected
            // again after that is read as usual: Ironic still holds its BIOS.
            return not_read();
        }
        let key = HostKey::new(&namespace, &name);
        let seen = (&settings.metadata, settings.status.as_ref());
        let mark = read_mark(&self.hosts, &key, &node, seen, settings.spec.settings.is_empty());
        let Look::Read(mark) = self.hosts.firmware.look(&key, mark) else {
            return Ok((Found::Unchanged, None));
        };
        let bios = match client.list_bios_settings(&node).await {
            Ok(bios) => bios,
            Err(err) => return Ok((Found::Unread(unavailable(format!("cannot read the BIOS settings: {err}"))), None)),
        };
        let reading = reading(&bios);
        if reading.is_empty() && !managed(&host) {
            return not_read();
        }
        if reading.is_empty() {
            // Managed, Ironic has read what the driver gives: nothing.
            let message = "the host's driver reports no BIOS settings (no BIOS interface, or fake hardware): \
                           none can be applied";
            return Ok((Found::Unread(Unread { reason: NO_SETTINGS, message: message.into(), again: STEADY }), mark));
        }
        Ok((Found::Read { host, reading }, mark))
    }
}
