//! The volumes: the data claim's template (immutable once the StatefulSet exists), claims
//! grown when the spec asks for more, and the backup claim.

use super::super::build::{ClaimSettings, Inputs, storage};
use super::super::names::DATA_VOLUME;
use super::super::run::Run;
use super::found::Found;
use crate::kit::KubeError;
use crds::ironic::database::DatabaseStorage;
use crds::validation::parse_quantity_bytes;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::json;

/// The claim template of an existing StatefulSet (immutable there), else the spec's.
pub(super) fn claim_settings(sts: Option<&StatefulSet>, storage: Option<&DatabaseStorage>) -> ClaimSettings {
    let existing = sts
        .and_then(|s| {
            s.spec
                .as_ref()?
                .volume_claim_templates
                .as_ref()?
                .iter()
                .find(|t| t.metadata.name.as_deref() == Some(DATA_VOLUME))
                .cloned()
        })
        .and_then(|template| {
            let spec = template.spec?;
            let size = spec.resources?.requests?.get("storage")?.clone();
            Some(ClaimSettings { size, storage_class: spec.storage_class_name })
        });
    existing.unwrap_or_else(|| spec_claim(storage))
}

pub(super) fn spec_claim(storage: Option<&DatabaseStorage>) -> ClaimSettings {
    let storage = storage.cloned().unwrap_or_default();
    ClaimSettings { size: storage.size(), storage_class: storage.storage_class_name }
}

/// The size to grow `claim` to, when the spec asks for more than it has.
fn growth(claim: &PersistentVolumeClaim, wanted: &Quantity) -> Option<Quantity> {
    let current = claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?.get("storage")?;
    let (current_bytes, wanted_bytes) = (parse_quantity_bytes(&current.0).ok()?, parse_quantity_bytes(&wanted.0).ok()?);
    (wanted_bytes > current_bytes).then(|| wanted.clone())
}

/// Asks for a bigger volume. Whether it grows depends on the storage class; a refusal is
/// reported and leaves everything else alone.
async fn grow(run: &mut Run<'_>, claim: Option<&PersistentVolumeClaim>, wanted: &Quantity) {
    let Some((claim, size)) = claim.and_then(|c| Some((c, growth(c, wanted)?))) else {
        return;
    };
    let name = claim.metadata.name.clone().unwrap_or_default();
    let body = json!({ "spec": { "resources": { "requests": { "storage": size.0 } } } });
    match run.ledger.merge_patch::<PersistentVolumeClaim>(&name, &body).await {
        Ok(_) => run.notices.normal("VolumeResized", format!("asked for {} on PersistentVolumeClaim {name}", size.0)),
        Err(e) => {
            let message = format!("cannot grow PersistentVolumeClaim {name} to {}: {}", size.0, e.source);
            tracing::warn!("{message}");
            run.notices.warning("VolumeResizeFailed", message);
        }
    }
}

/// The data claim grown to the spec's size, and the backup claim made or grown when backups
/// are on.
pub(super) async fn apply(run: &mut Run<'_>, found: &Found, inputs: &Inputs<'_>) -> Result<(), KubeError> {
    let managed = &found.managed;
    grow(run, found.data_claim.as_ref(), &spec_claim(managed.storage.as_ref()).size).await;
    let Some(backup) = managed.backups() else { return Ok(()) };
    let wanted = spec_claim(backup.storage.as_ref());
    match run.ledger.get::<PersistentVolumeClaim>(&found.names.backup_claim()).await? {
        Some(existing) => grow(run, Some(&existing), &wanted.size).await,
        // No owner reference: the backups outlive the Ironic, like the data claim.
        None => {
            run.ledger.apply_unowned(storage::backup_claim(inputs, &wanted)).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(size: &str) -> PersistentVolumeClaim {
        let mut c = storage_claim();
        if let Some(spec) = c.spec.as_mut() {
            spec.resources = Some(k8s_openapi::api::core::v1::VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Quantity(size.into()))].into()),
                ..Default::default()
            });
        }
        c
    }

    fn storage_claim() -> PersistentVolumeClaim {
        PersistentVolumeClaim { spec: Some(Default::default()), ..Default::default() }
    }

    #[test]
    fn volumes_only_grow() {
        assert_eq!(growth(&claim("10Gi"), &Quantity("20Gi".into())), Some(Quantity("20Gi".into())));
        assert_eq!(growth(&claim("10Gi"), &Quantity("10240Mi".into())), None);
        assert_eq!(growth(&claim("20Gi"), &Quantity("10Gi".into())), None);
        assert_eq!(growth(&storage_claim(), &Quantity("10Gi".into())), None);
    }

    #[test]
    fn an_existing_claim_template_is_kept() {
        let spec = DatabaseStorage { size: Some(Quantity("50Gi".into())), storage_class_name: Some("fast".into()) };
        assert_eq!(
            claim_settings(None, Some(&spec)),
            ClaimSettings { size: Quantity("50Gi".into()), storage_class: Some("fast".into()) }
        );
        assert_eq!(claim_settings(None, None).size, Quantity("10Gi".into()));
    }
}
