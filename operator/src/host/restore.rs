//! Status restore (baremetal-operator's pivot and move support): a re-created host whose
//! status is still empty gets it back from its `baremetalhost.metal3.io/status` annotation,
//! which is then dropped.

use crate::host::error::ReconcileError;
use crate::host::metadata;
use crate::host::reconcile::{CONTROLLER, HostContext};
use crate::host::wake::HostKey;
use crate::kube::{Notice, Notices};
use crds::baremetalhost::annotations::STATUS;
use crds::baremetalhost::{BareMetalHost, BareMetalHostStatus, ProvisioningState};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;

/// The status a re-created host should get back from its status
/// annotation: only when it has none of its own yet.
fn restorable_status(host: &BareMetalHost) -> Option<BareMetalHostStatus> {
    let raw = host.annotations().get(STATUS)?;
    let empty = host
        .status
        .as_ref()
        .is_none_or(|s| s.last_updated.is_none() && s.provisioning.state == ProvisioningState::None);
    if !empty {
        return None;
    }
    match serde_json::from_str(raw) {
        Ok(status) => Some(status),
        Err(err) => {
            tracing::warn!(error = %err, "ignoring an unreadable status annotation");
            None
        }
    }
}

/// Restores the status of a re-created host, then drops the annotation; true when it did
/// (the reconcile then starts over from the restored status).
pub async fn restore(ctx: &HostContext, host: &BareMetalHost, key: &HostKey) -> Result<bool, ReconcileError> {
    let Some(mut restored) = restorable_status(host) else {
        return Ok(false);
    };
    let api: Api<BareMetalHost> = Api::namespaced(ctx.kube.clone(), &key.namespace);
    restored.last_updated = Some(Time(Timestamp::now()));
    let written = crate::kube::status::apply(&api, &host.name_any(), &restored).await?;
    ctx.runner.metrics.status_written(CONTROLLER);
    let mut notices = Notices::default();
    notices.push(Notice::normal(
        "StatusRestored",
        format!("status restored from the {STATUS} annotation (state {})", restored.provisioning.state.as_str()),
    ));
    ctx.publisher.publish(&written, notices).await;
    let patched = metadata::patch(&api, &written, metadata::remove_annotations_patch(&written, &[STATUS])).await?;
    ctx.memory.remember(key, patched);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHostSpec;

    fn host(annotations: &[(&str, &str)]) -> BareMetalHost {
        let mut host = BareMetalHost::new("h", BareMetalHostSpec::default());
        host.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        host
    }

    #[test]
    fn status_is_restored_only_onto_an_empty_status() {
        let saved = r#"{"errorCount":0,"errorMessage":"","operationalStatus":"OK","poweredOn":true,
            "provisioning":{"ID":"node-1","state":"provisioned"}}"#;
        let fresh = host(&[(STATUS, saved)]);
        let restored = restorable_status(&fresh).expect("a fresh host gets its status back");
        assert_eq!(restored.provisioning.state, ProvisioningState::Provisioned);
        assert_eq!(restored.provisioning.id, "node-1");
        let mut live = fresh.clone();
        let mut status = BareMetalHostStatus::default();
        status.provisioning.state = ProvisioningState::Available;
        live.status = Some(status);
        assert!(restorable_status(&live).is_none(), "a host with a status of its own keeps it");
        assert!(restorable_status(&host(&[(STATUS, "not json")])).is_none());
    }
}
