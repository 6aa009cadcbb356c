//! The host controller's side of a host's `PreprovisioningImage`, with image building on
//! (`--build-preprov-image`): before a step that boots the deploy image, the image named for
//! the host is made (owned by it) or brought to the spec the host asks for, and judged
//! (`judge`). Read by name only then: a few times in a host's life, never per poll.

use super::builder::NetworkData;
use super::judge::{DeployImage, judge, wanted};
use super::reconcile::network_data;
use crate::host::config::Config;
use crate::host::driver::{DriverSpec, boots_iso};
use crate::host::firmware::ReadAgain;
use crate::host::firmware::create_for_host;
use crate::host::machine::Act;
use crate::host::request::Request;
use crate::host::wake::HostKey;
use crate::kit::KubeError;
use crate::kit::error::Verb;
use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL};
use crds::baremetalhost::BareMetalHost;
use crds::preprovisioningimage::{PreprovisioningImage, PreprovisioningImageSpec, validate_preprovisioning_image};
use crds::validation::summarize;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;

crate::install::rbac::require_access!(crate::install::rbac::table::HOST, PreprovisioningImage: Get, Create, Patch);

/// Whether `act` boots the deploy image: agent inspection, cleaning (when the host asks for
/// it), and deploying anything but a live ISO. Registration does not (baremetal-operator makes
/// the image only once a host is registered), nor do the out-of-band BIOS and servicing steps.
pub(crate) fn boots_deploy_image(act: Act, request: &Request) -> bool {
    let uses_ramdisk = request.bmc.as_ref().is_ok_and(|b| b.driver.uses_deploy_ramdisk);
    uses_ramdisk
        && match act {
            Act::Inspect => !request.fast_inspection,
            Act::Provide | Act::Undeploy => request.automated_clean,
            Act::Deploy => !request.boots_live_iso(),
            _ => false,
        }
}

/// The host's deploy image now: its `PreprovisioningImage` made or updated first when it is
/// not what the host asks for (then waited for).
pub(crate) async fn deploy_image(
    client: &kube::Client,
    host: &BareMetalHost,
    key: &HostKey,
    driver: &DriverSpec,
    config: &Config,
    reads: &ReadAgain<PreprovisioningImage>,
) -> Result<DeployImage, KubeError> {
    let wanted = wanted(host, driver);
    // What the host names (or inspection found) may be no image's spec: said, never retried.
    let invalid = validate_preprovisioning_image(&wanted);
    if !invalid.is_empty() {
        return Ok(DeployImage::Refused(format!(
            "no PreprovisioningImage can be made for it: {}",
            summarize(&invalid)
        )));
    }
    let api: Api<PreprovisioningImage> = Api::namespaced(client.clone(), &key.namespace);
    let Some(image) =
        api.get_opt(&key.name).await.map_err(KubeError::of::<PreprovisioningImage>(Verb::Get, &key.name))?
    else {
        create(client, host, &wanted).await?;
        return Ok(DeployImage::Waiting("waiting for its PreprovisioningImage: made it; not built yet".into()));
    };
    if image.spec != wanted || !labelled(&image, host) {
        return match update(&api, &image, host, &wanted).await {
            Ok(()) => Ok(DeployImage::Waiting("waiting for its PreprovisioningImage: updated its spec".into())),
            // Written meanwhile (a builder's status): its watch event wakes the host to look again.
            Err(err) if err.is_conflict() => {
                Ok(DeployImage::Waiting("waiting for its PreprovisioningImage: it changed while read".into()))
            }
            Err(err) => Err(err),
        };
    }
    let version = match network_data(client, &key.namespace, &wanted.network_data_name).await? {
        NetworkData::Found(version) => Some(version),
        NetworkData::None => None,
        NetworkData::Missing => {
            let name = &wanted.network_data_name;
            return Ok(DeployImage::Waiting(format!("its preprovisioning network data Secret {name} does not exist")));
        }
    };
    let built = image.status.as_ref().and_then(|s| s.network_data.as_ref()).map(|d| d.version.as_str());
    if version.is_some() && built != version.as_deref() {
        // Built from an older Secret (or not yet): our builder looks again.
        reads.read(key);
    }
    let kernel = config.deploy_kernel_url.as_deref().filter(|k| !k.trim().is_empty());
    Ok(judge(&image, &wanted, version.as_deref(), boots_iso(driver), kernel))
}

/// The labels the image carries: the host's, and ours.
fn labels(host: &BareMetalHost) -> BTreeMap<String, String> {
    let mut labels = host.labels().clone();
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    labels
}

fn labelled(image: &PreprovisioningImage, host: &BareMetalHost) -> bool {
    labels(host).iter().all(|(k, v)| image.labels().get(k) == Some(v))
}

/// Makes the host's image, owned by the host (the garbage collector deletes it with the
/// host). One made meanwhile is updated at the next step.
async fn create(
    client: &kube::Client,
    host: &BareMetalHost,
    wanted: &PreprovisioningImageSpec,
) -> Result<(), KubeError> {
    let mut image = PreprovisioningImage::new(&host.name_any(), wanted.clone());
    image.metadata.labels = Some(labels(host));
    create_for_host(client, host, image).await
}

/// Brings the image's spec and labels to the host's, at the version read. The spec is the
/// host's request to the builder, as baremetal-operator writes it; an image the user made
/// first gets no owner.
async fn update(
    api: &Api<PreprovisioningImage>,
    image: &PreprovisioningImage,
    host: &BareMetalHost,
    wanted: &PreprovisioningImageSpec,
) -> Result<(), KubeError> {
    let name = image.name_any();
    let or_null = |s: &str| if s.is_empty() { Value::Null } else { json!(s) };
    let patch = json!({
        "metadata": {"labels": labels(host), "resourceVersion": image.resource_version()},
        "spec": {
            "networkDataName": or_null(&wanted.network_data_name),
            "architecture": or_null(&wanted.architecture),
            "acceptFormats": wanted.accept_formats,
        },
    });
    let params = PatchParams { field_manager: Some(crate::FIELD_MANAGER.into()), ..Default::default() };
    api.patch(&name, &params, &Patch::Merge(patch))
        .await
        .map_err(KubeError::of::<PreprovisioningImage>(Verb::Patch, &name))?;
    Ok(())
}
