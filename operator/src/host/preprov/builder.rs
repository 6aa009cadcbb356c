//! Our image builder, pure: baremetal-operator's built-in ("fixed") provider, which builds
//! nothing and serves the operator's own deploy images, an ISO (`--deploy-iso-url`) and an
//! initramfs with its kernel (`--deploy-ramdisk-url`, `--deploy-kernel-url`), for any
//! architecture. The status an image gets from it, with `Ready`, `Error` and an Event when
//! `Ready` changes.

use crate::host::config::Config;
use crate::kit::Notices;
use crate::kit::condition::{Conditions, set_all};
use crds::condition::find;
use crds::preprovisioningimage::{
    CONDITION_ERROR, CONDITION_READY, ImageFormat, PreprovisioningImage, PreprovisioningImageStatus, SecretStatus,
    validate_preprovisioning_image,
};
use crds::validation::summarize;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// baremetal-operator's reasons.
const SUCCESS: &str = "ImageSuccess";
const CONFIGURATION_ERROR: &str = "ConfigurationError";
pub(super) const MISSING_NETWORK_DATA: &str = "MissingNetworkData";

/// The deploy images the builder serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Provider {
    iso: Option<String>,
    kernel: Option<String>,
    initrd: Option<String>,
}

impl Provider {
    pub(crate) fn of(config: &Config) -> Self {
        let set = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
        Self {
            iso: set(&config.deploy_iso_url),
            kernel: set(&config.deploy_kernel_url),
            initrd: set(&config.deploy_ramdisk_url),
        }
    }

    /// Whether it serves any image: without one, it leaves the images to another builder.
    pub(crate) fn can_start(&self) -> bool {
        self.supports(ImageFormat::Iso) || self.supports(ImageFormat::Initrd)
    }

    fn supports(&self, format: ImageFormat) -> bool {
        match format {
            ImageFormat::Iso => self.iso.is_some(),
            // An initramfs is no use without a kernel to boot it with.
            ImageFormat::Initrd => self.kernel.is_some() && self.initrd.is_some(),
        }
    }
}

/// The network data Secret the image names, as found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NetworkData {
    /// It names none.
    None,
    /// It does not exist.
    Missing,
    /// Its `resourceVersion`.
    Found(String),
}

/// The new status, when it differs, and the Events of its transitions.
#[derive(Debug)]
pub(super) struct Outcome {
    pub status: Option<PreprovisioningImageStatus>,
    pub notices: Notices,
}

/// The status of `image` built by `provider`, with `data` found, at `now`.
pub(super) fn build(image: &PreprovisioningImage, provider: &Provider, data: &NetworkData, now: &Time) -> Outcome {
    let old = image.status.clone().unwrap_or_default();
    let make = Conditions::new(image.metadata.generation, now.clone());
    let spec = &image.spec;
    let invalid = validate_preprovisioning_image(spec);
    let format = spec.accept_formats.iter().copied().find(|f| provider.supports(*f));
    let failure = match (format, data) {
        _ if !invalid.is_empty() => Some((CONFIGURATION_ERROR, summarize(&invalid))),
        (None, _) => Some((CONFIGURATION_ERROR, "No acceptable image format supported".to_string())),
        (_, NetworkData::Missing) => Some((MISSING_NETWORK_DATA, "NetworkData secret not found".to_string())),
        _ => None,
    };
    let mut new = old.clone();
    match (failure, format) {
        (Some((reason, message)), _) => {
            new.image_url = String::new();
            new.kernel_url = String::new();
            let error = make.make(CONDITION_ERROR, true, reason, message.clone());
            set_all(&mut new.conditions, [make.make(CONDITION_READY, false, reason, message), error]);
        }
        (None, Some(format)) => {
            let (url, kernel) = match format {
                ImageFormat::Iso => (provider.iso.clone(), None),
                ImageFormat::Initrd => (provider.initrd.clone(), provider.kernel.clone()),
            };
            new.image_url = url.unwrap_or_default();
            new.kernel_url = kernel.unwrap_or_default();
            new.extra_kernel_params = String::new();
            new.format = Some(format);
            new.architecture.clone_from(&spec.architecture);
            new.network_data = match data {
                NetworkData::Found(version) => {
                    Some(SecretStatus { name: spec.network_data_name.clone(), version: version.clone() })
                }
                _ => None,
            };
            let ready = make.make(CONDITION_READY, true, SUCCESS, "Generated image");
            set_all(&mut new.conditions, [ready, make.make(CONDITION_ERROR, false, SUCCESS, "no error")]);
        }
        (None, None) => {}
    }
    new.observed_generation = image.metadata.generation;
    let notices = transition(&old, &new);
    Outcome { status: (new != old).then_some(new), notices }
}

/// An Event when `Ready` changes reason or status.
fn transition(old: &PreprovisioningImageStatus, new: &PreprovisioningImageStatus) -> Notices {
    let mut notices = Notices::default();
    let key = |s: &PreprovisioningImageStatus| {
        find(&s.conditions, CONDITION_READY).map(|c| (c.status.clone(), c.reason.clone()))
    };
    if let Some(ready) = find(&new.conditions, CONDITION_READY).filter(|_| key(old) != key(new)) {
        if ready.status == "True" {
            notices.normal("ImageReady", format!("the image is ready at {}", new.image_url));
        } else {
            notices.warning("ImageBuildFailed", ready.message.clone());
        }
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::condition::is_true;
    use crds::preprovisioningimage::PreprovisioningImageSpec;

    fn provider(iso: bool, initrd: bool) -> Provider {
        let url = |on: bool, u: &str| on.then(|| u.to_string());
        Provider { iso: url(iso, "http://i.iso"), kernel: url(initrd, "http://k"), initrd: url(initrd, "http://r") }
    }

    fn image(formats: Vec<ImageFormat>, network: &str) -> PreprovisioningImage {
        let spec = PreprovisioningImageSpec {
            network_data_name: network.into(),
            architecture: "x86_64".into(),
            accept_formats: formats,
        };
        let mut image = PreprovisioningImage::new("h", spec);
        image.metadata.generation = Some(4);
        image
    }

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn the_first_accepted_format_served_is_built_and_ready() {
        let both = image(vec![ImageFormat::Iso, ImageFormat::Initrd], "");
        let status = build(&both, &provider(true, true), &NetworkData::None, &now()).status.expect("written");
        assert_eq!((status.format, status.image_url.as_str()), (Some(ImageFormat::Iso), "http://i.iso"));
        assert!(is_true(&status.conditions, CONDITION_READY) && !is_true(&status.conditions, CONDITION_ERROR));
        assert_eq!(status.observed_generation, Some(4));
        let status = build(&both, &provider(false, true), &NetworkData::None, &now()).status.expect("written");
        assert_eq!(
            (status.format, status.image_url.as_str(), status.kernel_url.as_str()),
            (Some(ImageFormat::Initrd), "http://r", "http://k")
        );
    }

    #[test]
    fn no_format_served_or_no_network_data_is_an_error() {
        let iso = image(vec![ImageFormat::Iso], "net");
        let outcome = build(&iso, &provider(false, true), &NetworkData::Found("1".into()), &now());
        let status = outcome.status.expect("written");
        assert!(is_true(&status.conditions, CONDITION_ERROR));
        assert_eq!(find(&status.conditions, CONDITION_ERROR).map(|c| c.reason.as_str()), Some(CONFIGURATION_ERROR));
        assert!(!outcome.notices.is_empty(), "an Event");
        let status = build(&iso, &provider(true, false), &NetworkData::Missing, &now()).status.expect("written");
        assert_eq!(find(&status.conditions, CONDITION_READY).map(|c| c.reason.as_str()), Some(MISSING_NETWORK_DATA));
        assert!(status.image_url.is_empty());
    }

    #[test]
    fn the_network_data_version_is_recorded_and_nothing_is_written_twice() {
        let iso = image(vec![ImageFormat::Iso], "net");
        let first = build(&iso, &provider(true, false), &NetworkData::Found("7".into()), &now());
        let status = first.status.expect("written");
        assert_eq!(status.network_data, Some(SecretStatus { name: "net".into(), version: "7".into() }));
        let mut again = iso.clone();
        again.status = Some(status);
        let second = build(&again, &provider(true, false), &NetworkData::Found("7".into()), &now());
        assert!(second.status.is_none() && second.notices.is_empty(), "no write, no Event");
    }
}
