//! The host's side of its `PreprovisioningImage`, pure: the spec the host asks for, whether
//! the image built is one it can boot now, and the `driver_info` that boots it. As
//! baremetal-operator's host controller judges the image (`preprovImageAvailable`,
//! `setDeployImage`).

use crate::host::driver::{DriverSpec, boots_iso};
use crds::baremetalhost::BareMetalHost;
use crds::condition::{find, is_true};
use crds::preprovisioningimage::{
    CONDITION_ERROR, CONDITION_READY, ImageFormat, PreprovisioningImage, PreprovisioningImageSpec,
};
use ironic_client::{DriverInfo, PatchOperation};

/// The reason a builder gives an image whose network data Secret does not exist
/// (baremetal-operator's).
const MISSING_NETWORK_DATA: &str = "MissingNetworkData";

/// The `driver_info` keys of the deploy image.
const KEYS: [&str; 4] = ["deploy_iso", "deploy_kernel", "deploy_ramdisk", "kernel_append_params"];

/// What a step that boots the deploy image finds of the host's image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeployImage {
    /// The image to boot.
    Ready(Boot),
    /// Not built yet, or built from an older spec or network data: why, for the user.
    Waiting(String),
    /// It cannot be built, or the host cannot boot what was built: for the user.
    Refused(String),
}

/// A deploy image as `driver_info` names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Boot {
    pub iso: Option<String>,
    pub kernel: Option<String>,
    pub initrd: Option<String>,
    /// `kernel_append_params`: Ironic's defaults, then the image's own.
    pub kernel_params: Option<String>,
}

/// The spec the host asks for: its preprovisioning network data, its architecture (the
/// spec's, else the one inspection found, else the operator's own), and the formats its
/// driver boots (an ISO through virtual media, an initramfs with every driver).
pub(crate) fn wanted(host: &BareMetalHost, driver: &DriverSpec) -> PreprovisioningImageSpec {
    let found = host.status.as_ref().and_then(|s| s.hardware.as_ref()).and_then(|h| h.cpu.as_ref());
    let architecture = [host.spec.architecture.clone(), found.and_then(|c| c.arch.clone())]
        .into_iter()
        .flatten()
        .find(|a| !a.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let mut accept_formats = Vec::new();
    if boots_iso(driver) {
        accept_formats.push(ImageFormat::Iso);
    }
    accept_formats.push(ImageFormat::Initrd);
    PreprovisioningImageSpec {
        network_data_name: host.spec.preprovisioning_network_data_name.clone().unwrap_or_default(),
        architecture,
        accept_formats,
    }
}

/// Whether `image`, asked for with `wanted`, can be booted now. `secret_version` is the
/// network data Secret's current `resourceVersion` (none without a Secret); `default_kernel`
/// the operator's kernel, for an initramfs built without one.
pub(crate) fn judge(
    image: &PreprovisioningImage,
    wanted: &PreprovisioningImageSpec,
    secret_version: Option<&str>,
    iso_bootable: bool,
    default_kernel: Option<&str>,
) -> DeployImage {
    let waiting = |why: &str| DeployImage::Waiting(format!("waiting for its PreprovisioningImage: {why}"));
    let status = image.status.clone().unwrap_or_default();
    if &image.spec != wanted {
        return waiting("its spec is being updated");
    }
    // A builder's failure for this very spec: a failed build records no architecture or format.
    let failed = find(&status.conditions, CONDITION_ERROR)
        .filter(|c| c.status == "True" && c.observed_generation == image.metadata.generation);
    if let Some(error) = failed {
        // The Secret it missed exists now: the builder, woken, builds it again.
        if error.reason == MISSING_NETWORK_DATA && secret_version.is_some() {
            return waiting("its network data Secret exists now; the image is being built again");
        }
        return DeployImage::Refused(format!("its PreprovisioningImage could not be built: {}", error.message));
    }
    if status.architecture != image.spec.architecture {
        return waiting(&format!("no image built for architecture {} yet", image.spec.architecture));
    }
    let Some(format) = status.format.filter(|f| image.spec.accept_formats.contains(f)) else {
        return waiting("no image built in a format the host accepts yet");
    };
    let data = status.network_data.clone().unwrap_or_default();
    if data.name != image.spec.network_data_name {
        return waiting("the image was built with other network data");
    }
    if !data.name.is_empty() && Some(data.version.as_str()) != secret_version {
        return waiting(&format!("the image was built from an older version of Secret {}", data.name));
    }
    let ready =
        find(&status.conditions, CONDITION_READY).is_some_and(|c| c.observed_generation == image.metadata.generation);
    if !ready || !is_true(&status.conditions, CONDITION_READY) || status.image_url.is_empty() {
        return waiting("the image is not ready yet");
    }
    let refused = || DeployImage::Refused("its PreprovisioningImage is not one the host can boot".to_string());
    match format {
        ImageFormat::Iso if iso_bootable => DeployImage::Ready(Boot { iso: Some(status.image_url), ..Boot::default() }),
        ImageFormat::Iso => refused(),
        ImageFormat::Initrd => {
            let Some(kernel) = Some(status.kernel_url).filter(|k| !k.is_empty()).or(default_kernel.map(str::to_string))
            else {
                return refused();
            };
            // %default% keeps the parameters Ironic is configured with.
            let params = Some(status.extra_kernel_params).filter(|p| !p.is_empty()).map(|p| format!("%default% {p}"));
            DeployImage::Ready(Boot {
                kernel: Some(kernel),
                initrd: Some(status.image_url),
                iso: None,
                kernel_params: params,
            })
        }
    }
}

/// The patch that makes `current` boot `boot`: its keys set, the other deploy image keys
/// removed; empty when it does already.
pub(crate) fn driver_info_ops(boot: &Boot, current: &DriverInfo) -> Vec<PatchOperation> {
    let values = [&boot.iso, &boot.kernel, &boot.initrd, &boot.kernel_params];
    KEYS.iter()
        .zip(values)
        .filter_map(|(key, value)| {
            let path = format!("/driver_info/{key}");
            match (value, current.get(key)) {
                (Some(v), Some(now)) if now.as_str() == Some(v.as_str()) => None,
                (Some(v), _) => Some(PatchOperation::add(path, v.clone())),
                (None, _) if current.contains_key(key) => Some(PatchOperation::remove(path)),
                (None, _) => None,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
