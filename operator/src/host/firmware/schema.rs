//! The `FirmwareSchema` a host's settings follow, shared by every host with the same registry
//! (its name is a digest of it) and owned by every `HostFirmwareSettings` that uses it, as in
//! baremetal-operator: the garbage collector removes it with the last of them. Not through the
//! ledger, which gives each object one controlling owner.

use super::read::Reading;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crate::kit::ledger::apply_params;
use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL};
use crds::baremetalhost::BareMetalHost;
use crds::firmware::{FirmwareSchema, FirmwareSchemaSpec, HostFirmwareSettings, SchemaReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PostParams};
use kube::{Resource, ResourceExt};

crate::install::rbac::require_access!(crate::install::rbac::table::FIRMWARE, FirmwareSchema: Get, Create, Patch);

/// `settings` as an owner that does not control: others share the schema.
fn owner(settings: &HostFirmwareSettings) -> OwnerReference {
    OwnerReference {
        api_version: HostFirmwareSettings::api_version(&()).into_owned(),
        kind: HostFirmwareSettings::kind(&()).into_owned(),
        name: settings.name_any(),
        uid: settings.uid().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// What the schema says, with the host's make where inspection found it.
fn spec(reading: &Reading, host: &BareMetalHost) -> FirmwareSchemaSpec {
    let vendor = host.status.as_ref().and_then(|s| s.hardware.as_ref()).and_then(|h| h.system_vendor.as_ref());
    FirmwareSchemaSpec {
        hardware_vendor: vendor.and_then(|v| v.manufacturer.clone()),
        hardware_model: vendor.and_then(|v| v.product_name.clone()),
        schema: reading.schema.clone(),
    }
}

/// Makes sure the schema `name` exists in the settings' namespace, with `settings` among its
/// owners, and says where it is. A schema already owned by `settings` is not written again: its
/// name is its content.
pub(super) async fn publish(
    client: &kube::Client,
    settings: &HostFirmwareSettings,
    host: &BareMetalHost,
    reading: &Reading,
    name: &str,
) -> Result<SchemaReference, KubeError> {
    let namespace = settings.namespace().unwrap_or_default();
    let api: Api<FirmwareSchema> = Api::namespaced(client.clone(), &namespace);
    let existing = api.get_opt(name).await.map_err(KubeError::of::<FirmwareSchema>(Verb::Get, name))?;
    let me = owner(settings);
    let reference = SchemaReference { namespace: namespace.clone(), name: name.to_string() };
    let mut owners: Vec<OwnerReference> =
        existing.as_ref().and_then(|s| s.metadata.owner_references.clone()).unwrap_or_default();
    if owners.iter().any(|o| o.uid == me.uid) {
        return Ok(reference);
    }
    owners.push(me);
    let mut schema = FirmwareSchema::new(name, spec(reading, host));
    schema.metadata.namespace = Some(namespace);
    schema.metadata.owner_references = Some(owners);
    schema.metadata.labels = Some([(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string())].into());
    // Two hosts adding themselves at once must not drop each other: a new schema is created
    // (the second create is refused, and retried), an existing one applied at the version read
    // (the second apply is refused as a conflict, and retried).
    match existing.and_then(|s| s.metadata.resource_version) {
        None => {
            let params = PostParams { field_manager: Some(crate::FIELD_MANAGER.into()), ..Default::default() };
            api.create(&params, &schema).await.map_err(KubeError::of::<FirmwareSchema>(Verb::Create, name))?;
        }
        Some(version) => {
            schema.metadata.resource_version = Some(version);
            api.patch(name, &apply_params(), &Patch::Apply(&schema))
                .await
                .map_err(KubeError::of::<FirmwareSchema>(Verb::Apply, name))?;
        }
    }
    Ok(reference)
}
