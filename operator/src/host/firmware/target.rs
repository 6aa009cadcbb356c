//! The host a firmware object belongs to (the `BareMetalHost` of its name, in its namespace:
//! never another's) and a client for its Ironic node, or why there is none to read now.

use super::wanted::{ReadMark, status_digest};
use crate::host::context::HostContext;
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crate::kit::scrub::scrubbed;
use crds::baremetalhost::annotations::DETACHED;
use crds::baremetalhost::{BareMetalHost, ProvisioningState};
use ironic_client::IronicClient;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::Api;
use std::time::Duration;

/// A host not ready to be read is tried again in 30 s, as baremetal-operator does.
pub(crate) const NOT_READY: Duration = Duration::from_secs(30);
/// Objects whose hosts are read are read again every five minutes (sooner when changes wait).
pub(crate) const STEADY: Duration = Duration::from_secs(300);

/// Whether Ironic has managed the host's node (verified it), which is when it reads the BIOS:
/// any state past inspection.
pub(crate) fn managed(host: &BareMetalHost) -> bool {
    managed_state(host.status.as_ref().map(|s| s.provisioning.state).unwrap_or_default())
}

/// Whether a host in `state` has a node Ironic manages: any state past inspection.
pub(crate) fn managed_state(state: ProvisioningState) -> bool {
    use ProvisioningState as S;
    !matches!(state, S::None | S::Unmanaged | S::Registering | S::Inspecting)
}

/// What was found of the host.
pub(crate) enum Target {
    /// Nothing to read now.
    Unread(Unread),
    /// The host, its node's UUID, and a client to read it with.
    Node { host: Box<BareMetalHost>, node: String, client: IronicClient },
}

/// Why nothing was read, and when to look again.
pub(crate) struct Unread {
    pub reason: &'static str,
    pub message: String,
    pub again: Duration,
}

/// An Ironic call failed: unavailable for now. Ironic's answers may quote what they were sent:
/// scrubbed before any status sees them.
pub(crate) fn unavailable(message: String) -> Unread {
    Unread { reason: "IronicUnavailable", message: scrubbed(&message, &[]), again: NOT_READY }
}

/// What a read of a host's firmware object now would be made from, when a read may be
/// skipped while it stands: only for an object that wants nothing of its host (`wants_nothing`;
/// one that does shows what its host may do next, read at each look), and a node the poller has
/// seen as the host's.
pub(crate) fn read_mark<S: serde::Serialize>(
    hosts: &HostContext,
    key: &HostKey,
    node: &str,
    object: (&ObjectMeta, Option<&S>),
    wants_nothing: bool,
) -> Option<ReadMark> {
    if !wants_nothing {
        return None;
    }
    let (seen, refreshed) = hosts.poller.firmware_refreshed(key)?;
    let (meta, status) = object;
    let identity = (meta.uid.clone().unwrap_or_default(), meta.generation);
    let status = status_digest(status);
    (seen == node).then_some(ReadMark { node: seen, moved: refreshed, object: identity, status })
}

/// The node of the host `key`: the one named for it (`<namespace>~<name>`), as the poller saw
/// it (`seen`, its UUID) or else by that name, which Ironic takes wherever it takes a UUID.
/// Never the status's ID: anyone who may annotate a host can set it (the status annotation
/// restores it), and it could name another namespace's node.
fn node_of(key: &HostKey, seen: Option<String>) -> String {
    seen.unwrap_or_else(|| key.node_name())
}

/// The host named `name` in `namespace`, when it is registered and not detached.
pub(crate) async fn target(hosts: &HostContext, namespace: &str, name: &str) -> Result<Target, KubeError> {
    let api: Api<BareMetalHost> = Api::namespaced(hosts.kube.clone(), namespace);
    let unread = |reason, message: String, again| Ok(Target::Unread(Unread { reason, message, again }));
    let Some(host) = api.get_opt(name).await.map_err(KubeError::of::<BareMetalHost>(Verb::Get, name))? else {
        return unread("NoHost", format!("no BareMetalHost named {name} in this namespace"), NOT_READY);
    };
    if host.annotations().contains_key(DETACHED) {
        return unread("Detached", "the host is detached from Ironic".into(), STEADY);
    }
    let registered = host.status.as_ref().is_some_and(|s| !s.provisioning.id.is_empty());
    if !registered {
        return unread("NotRegistered", "the host has no Ironic node yet".into(), NOT_READY);
    }
    let key = HostKey::new(namespace, name);
    let node = node_of(&key, hosts.poller.firmware_refreshed(&key).map(|(uuid, _)| uuid));
    match hosts.provisioner.client().await {
        Ok(client) => Ok(Target::Node { host: Box::new(host), node, client }),
        Err(err) => Ok(Target::Unread(unavailable(err.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_read_is_the_one_named_for_the_host_never_one_a_status_names() {
        let key = HostKey::new("tenant-a", "h");
        assert_eq!(node_of(&key, None), "tenant-a~h", "by name until the poller has seen it");
        assert_eq!(node_of(&key, Some("uuid-of-tenant-a~h".into())), "uuid-of-tenant-a~h");
    }
}
