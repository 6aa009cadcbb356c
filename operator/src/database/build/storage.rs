//! The backup volume. It carries no owner reference on purpose: like the data volume the
//! StatefulSet claims, it outlives the Ironic, so deleting an Ironic never deletes its
//! backups.

use super::{ClaimSettings, Inputs};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements};
use kube::api::ObjectMeta;

pub(crate) fn backup_claim(inputs: &Inputs<'_>, settings: &ClaimSettings) -> PersistentVolumeClaim {
    let names = inputs.names;
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(names.backup_claim()),
            namespace: Some(inputs.namespace.to_string()),
            labels: Some(names.owner_labels()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), settings.size.clone())].into()),
                ..Default::default()
            }),
            storage_class_name: settings.storage_class.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}
