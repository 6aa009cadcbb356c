//! The `HostFirmwareSettings` of a host, made when the host controller registers its node, as
//! baremetal-operator makes it: named for the host, owned by it (the garbage collector removes
//! it with the host), and with an empty spec, which belongs to the user from then on.

use crate::kit::KubeError;
use crate::kit::error::Verb;
use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL};
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{HostFirmwareSettings, HostFirmwareSettingsSpec};
use kube::api::{Api, PostParams};
use kube::{Resource, ResourceExt};

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, HostFirmwareSettings: Create);

/// Creates the host's settings object unless one exists (the user may have written it first,
/// to have settings applied before provisioning: it is then left as it is).
pub(crate) async fn ensure_settings(client: &kube::Client, host: &BareMetalHost) -> Result<(), KubeError> {
    create_for_host(client, host, HostFirmwareSettings::new(&host.name_any(), HostFirmwareSettingsSpec::default()))
        .await
}

/// Creates `object`, named for `host`, in its namespace, owned by it and labelled as ours (with
/// the labels it has already), unless one of that name exists (which is then left as it is).
pub(crate) async fn create_for_host<K>(
    client: &kube::Client,
    host: &BareMetalHost,
    mut object: K,
) -> Result<(), KubeError>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let (Some(namespace), Some(owner)) = (host.namespace(), host.controller_owner_ref(&())) else { return Ok(()) };
    let name = host.name_any();
    object.meta_mut().namespace = Some(namespace.clone());
    object.meta_mut().owner_references = Some(vec![owner]);
    object.meta_mut().labels.get_or_insert_default().insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    match api
        .create(&PostParams { field_manager: Some(crate::FIELD_MANAGER.into()), ..Default::default() }, &object)
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if crate::kit::error::code(&err) == Some(409) => Ok(()),
        Err(err) => Err(KubeError::of::<K>(Verb::Create, &name)(err)),
    }
}
