//! Version resolution: `spec.version` against the supported list, and the images that follow
//! from it, from `spec.images` and from the operator's defaults.

use super::config::ImageDefaults;
use crds::ironic::IronicSpec;
use crds::ironic::status::ResolvedImages;
use crds::ironic::versions::{self, DEFAULT_KEEPALIVED_IMAGE, DEFAULT_RAMDISK_DOWNLOADER_IMAGE, IronicVersion};

pub(crate) use crds::ironic::versions::UnsupportedVersion;

/// The version to deploy and its images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResolvedVersion {
    /// The version, from the supported list.
    pub version: IronicVersion,
    /// Ironic image (also runs httpd, dnsmasq, the log watcher and the upgrade Jobs).
    pub ironic_image: String,
    /// ramdisk-downloader image; `None` when the downloader is disabled.
    pub downloader_image: Option<String>,
    /// Keepalived image; `None` when keepalived does not run.
    pub keepalived_image: Option<String>,
    /// ironic-python-agent branch the downloader fetches, when the user picked one.
    pub agent_branch: Option<String>,
}

impl ResolvedVersion {
    /// For status.images.
    pub(crate) fn status_images(&self) -> ResolvedImages {
        ResolvedImages {
            deploy_ramdisk_downloader: self.downloader_image.clone(),
            ironic: Some(self.ironic_image.clone()),
            keepalived: self.keepalived_image.clone(),
            mariadb: None,
        }
    }
}

/// Resolves the version and images: `spec.images` wins, then the operator's defaults
/// (`--ironic-image` and friends), then the version's default image.
pub(crate) fn resolve(spec: &IronicSpec, defaults: &ImageDefaults) -> Result<ResolvedVersion, UnsupportedVersion> {
    let supported = versions::resolve(spec.version.as_deref())?;
    let images = spec.images.clone().unwrap_or_default();
    let pick = |spec: Option<String>, default: &Option<String>, fallback: String| {
        spec.filter(|s| !s.is_empty()).or_else(|| default.clone()).unwrap_or(fallback)
    };
    let downloader_enabled = !spec.deploy_ramdisk.as_ref().and_then(|d| d.disable_downloader).unwrap_or(false);
    let keepalived = spec.networking.as_ref().is_some_and(|n| n.keepalived_enabled());
    Ok(ResolvedVersion {
        version: supported.version,
        ironic_image: pick(images.ironic, &defaults.ironic, supported.ironic_image()),
        downloader_image: downloader_enabled.then(|| {
            pick(
                images.deploy_ramdisk_downloader.clone(),
                &defaults.ramdisk_downloader,
                DEFAULT_RAMDISK_DOWNLOADER_IMAGE.to_string(),
            )
        }),
        keepalived_image: keepalived
            .then(|| pick(images.keepalived.clone(), &defaults.keepalived, DEFAULT_KEEPALIVED_IMAGE.to_string())),
        agent_branch: images.deploy_ramdisk_branch.filter(|b| !b.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{DeployRamdisk, Images};

    #[test]
    fn unset_version_and_images_take_the_defaults_of_the_default_version() {
        let resolved = resolve(&IronicSpec::default(), &ImageDefaults::default()).expect("resolves");
        assert_eq!(resolved.version, IronicVersion::release(38, 0));
        assert_eq!(resolved.ironic_image, "quay.io/metal3-io/ironic:release-38.0");
        assert_eq!(resolved.downloader_image.as_deref(), Some(DEFAULT_RAMDISK_DOWNLOADER_IMAGE));
        assert_eq!(resolved.keepalived_image, None);
    }

    #[test]
    fn spec_images_beat_operator_defaults_which_beat_version_defaults() {
        let defaults = ImageDefaults { ironic: Some("registry/ironic:pinned".into()), ..Default::default() };
        let spec = IronicSpec { version: Some("37.0".into()), ..Default::default() };
        assert_eq!(resolve(&spec, &defaults).expect("resolves").ironic_image, "registry/ironic:pinned");
        let spec = IronicSpec {
            version: Some("37.0".into()),
            images: Some(Images { ironic: Some("mine:1".into()), ..Default::default() }),
            deploy_ramdisk: Some(DeployRamdisk { disable_downloader: Some(true), ..Default::default() }),
            ..Default::default()
        };
        let resolved = resolve(&spec, &defaults).expect("resolves");
        assert_eq!(resolved.ironic_image, "mine:1");
        assert_eq!(resolved.downloader_image, None);
        let latest = IronicSpec { version: Some("latest".into()), ..Default::default() };
        assert_eq!(
            resolve(&latest, &ImageDefaults::default()).expect("resolves").ironic_image,
            "quay.io/metal3-io/ironic:latest"
        );
    }

    #[test]
    fn unsupported_versions_are_refused_with_the_supported_list() {
        let spec = IronicSpec { version: Some("30.0".into()), ..Default::default() };
        let err = resolve(&spec, &ImageDefaults::default()).expect_err("30.0 is gone");
        assert!(err.0.contains("latest, 38.0, 37.0, 35.0"), "{err}");
    }
}
