//! Small constructors of pod parts that every controller's Jobs and workloads use.

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, SecretVolumeSource, Volume, VolumeMount};

/// A mount of `volume` at `path`.
pub(crate) fn mount(volume: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: volume.to_string(),
        mount_path: path.to_string(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

/// An `emptyDir` volume.
pub(crate) fn empty_dir(name: &str) -> Volume {
    Volume { name: name.to_string(), empty_dir: Some(EmptyDirVolumeSource::default()), ..Default::default() }
}

/// A volume of the Secret `secret`.
pub(crate) fn secret_volume(name: &str, secret: &str) -> Volume {
    Volume {
        name: name.to_string(),
        secret: Some(SecretVolumeSource { secret_name: Some(secret.to_string()), ..Default::default() }),
        ..Default::default()
    }
}

/// A container as the `restricted` Pod Security Standard requires: no privilege escalation,
/// not root, no capabilities, the runtime's default seccomp profile. A namespace enforcing that
/// standard admits its pods; one that does not loses nothing a well-built image needs.
pub(crate) fn restricted_container() -> k8s_openapi::api::core::v1::SecurityContext {
    use k8s_openapi::api::core::v1::{Capabilities, SeccompProfile, SecurityContext};
    SecurityContext {
        allow_privilege_escalation: Some(false),
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".to_string(), localhost_profile: None }),
        capabilities: Some(Capabilities { drop: Some(vec!["ALL".to_string()]), ..Default::default() }),
        ..Default::default()
    }
}
