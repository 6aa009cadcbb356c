//! `PreprovisioningImage` (baremetal-operator's): the image a BareMetalHost of the same name
//! boots to be inspected, cleaned or deployed (the deploy ramdisk), with the network data built
//! into it. The host controller writes the spec when image building is on; an image builder
//! (ours serves the configured deploy images) writes the status. The spec and status are
//! baremetal-operator's, with `observedGeneration` added (`design/hosts.md`, "Preprovisioning
//! images").

use crate::FieldError;
use crate::validation::is_dns1123_subdomain;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The formats an image is built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// A bootable ISO (virtual media).
    Iso,
    /// An initramfs, booted with a kernel (network boot).
    Initrd,
}

impl ImageFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Iso => "iso",
            Self::Initrd => "initrd",
        }
    }
}

/// The condition type a ready image has (baremetal-operator's).
pub const CONDITION_READY: &str = "Ready";
/// The condition type of an image that could not be built (baremetal-operator's).
pub const CONDITION_ERROR: &str = "Error";

/// The longest architecture name accepted (`x86_64`, `aarch64`, ...).
pub const MAX_ARCHITECTURE_LENGTH: usize = 64;

/// The image a host boots before it is provisioned.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "PreprovisioningImage",
    plural = "preprovisioningimages",
    shortname = "ppimg",
    namespaced,
    status = "PreprovisioningImageStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The deploy image the BareMetalHost of the same name boots before it is provisioned.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].status",
        description = "Whether the image is ready"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].reason",
        description = "The reason for the image readiness status"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PreprovisioningImageSpec {
    /// A Secret, in this namespace, with the network data to build into the image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub network_data_name: String,
    /// The processor architecture to build the image for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 64))]
    pub architecture: String,
    /// The formats the host can boot, preferred first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 2))]
    pub accept_formats: Vec<ImageFormat>,
}

/// The version of a Secret an image was built from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its `resourceVersion`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// The image built.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreprovisioningImageStatus {
    /// Where the image is downloaded from.
    #[serde(default, rename = "imageUrl", skip_serializing_if = "String::is_empty")]
    pub image_url: String,
    /// Where the kernel is downloaded from (initrd images).
    #[serde(default, rename = "kernelUrl", skip_serializing_if = "String::is_empty")]
    pub kernel_url: String,
    /// Extra kernel parameters to boot an initrd image with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub extra_kernel_params: String,
    /// The format of the image at `imageUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ImageFormat>,
    /// The network data Secret, at the version the image was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_data: Option<SecretStatus>,
    /// The architecture the image was built for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub architecture: String,
    /// `Ready` (the image can be downloaded) and `Error` (it could not be built).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The generation of the spec the status describes (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What would make an image impossible to build: a network data name that is no Secret name,
/// an architecture that is no plain name, a format listed twice.
pub fn validate_preprovisioning_image(spec: &PreprovisioningImageSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = spec.network_data_name.as_str();
    if !name.is_empty() && !is_dns1123_subdomain(name) {
        errors.push(FieldError::new("spec.networkDataName", format!("{name:?} is not a valid Secret name")));
    }
    let arch = spec.architecture.as_str();
    let plain = arch.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if arch.len() > MAX_ARCHITECTURE_LENGTH || !plain {
        errors.push(FieldError::new(
            "spec.architecture",
            format!("an architecture is a name of at most {MAX_ARCHITECTURE_LENGTH} letters, digits, '_' or '-'"),
        ));
    }
    if spec.accept_formats.len() == 2 && spec.accept_formats[0] == spec.accept_formats[1] {
        errors.push(FieldError::new("spec.acceptFormats", "a format is listed twice"));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(spec: PreprovisioningImageSpec) -> Vec<String> {
        validate_preprovisioning_image(&spec).into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn what_baremetal_operator_writes_is_valid() {
        let spec = PreprovisioningImageSpec {
            network_data_name: "host-0-network".into(),
            architecture: "x86_64".into(),
            accept_formats: vec![ImageFormat::Iso, ImageFormat::Initrd],
        };
        assert_eq!(errors(spec), Vec::<String>::new());
        assert_eq!(errors(PreprovisioningImageSpec::default()), Vec::<String>::new(), "every field is optional");
    }

    #[test]
    fn what_no_image_can_be_built_for_is_refused() {
        let bad_name = PreprovisioningImageSpec { network_data_name: "Not_A_Secret".into(), ..Default::default() };
        let bad_arch = PreprovisioningImageSpec { architecture: "x86 64; rm".into(), ..Default::default() };
        let twice =
            PreprovisioningImageSpec { accept_formats: vec![ImageFormat::Iso, ImageFormat::Iso], ..Default::default() };
        for (spec, path) in
            [(bad_name, "spec.networkDataName"), (bad_arch, "spec.architecture"), (twice, "spec.acceptFormats")]
        {
            let found = errors(spec);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].starts_with(path), "{found:?}");
        }
    }
}
