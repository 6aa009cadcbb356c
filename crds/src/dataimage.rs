//! `DataImage` (baremetal-operator's): a non-bootable ISO attached to the BareMetalHost of the
//! same name as a virtual CD, at the host's next power on. The spec is baremetal-operator's
//! (`url`), the status too (`lastReconciled`, `attachedImage`, `error`), with
//! `observedGeneration` and conditions added (`design/hosts.md`, "Data images").

use crate::FieldError;
use crate::validation::valid_url;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer baremetal-operator puts on a data image: it stays until nothing is attached.
pub const DATA_IMAGE_FINALIZER: &str = "dataimage.metal3.io";

/// The schemes Ironic's virtual media attach downloads from that baremetal-operator accepts:
/// Ironic refuses `oci` (which baremetal-operator lets in), baremetal-operator `nfs` and `cifs`.
const SCHEMES: [&str; 2] = ["http", "https"];

/// The longest URL accepted: it is copied into Ironic's node.
pub const MAX_URL_LENGTH: usize = 2048;

/// The image attached to the host of the same name.
// printcolumn(...) repeats type_ and priority by design; clippy reads them as duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "metal3.io",
    version = "v1alpha1",
    kind = "DataImage",
    plural = "dataimages",
    shortname = "dimg",
    namespaced,
    status = "DataImageStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "An ISO attached as a virtual CD to the BareMetalHost of the same name, at its next power on.",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url", description = "The image wanted"),
    printcolumn(
        name = "Attached",
        type_ = "string",
        json_path = ".status.attachedImage.url",
        description = "The image attached"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    )
)]
pub struct DataImageSpec {
    /// Where Ironic downloads the image from (`http` or `https`).
    #[schemars(length(max = 2048))]
    pub url: String,
}

/// The attached image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachedImageReference {
    /// The URL it was attached from.
    pub url: String,
}

/// The last attach or detach that failed, and how many failed in a row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DataImageError {
    pub count: i64,
    pub message: String,
}

/// What is attached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataImageStatus {
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconciled: Option<Time>,
    /// The image attached to the host's virtual CD, as Ironic's node records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_image: Option<AttachedImageReference>,
    /// The last failure to attach or detach the wanted image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DataImageError>,
    /// `Ready`: the wanted image is attached (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The generation of the spec the status describes (not in baremetal-operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What baremetal-operator's webhook checks (a URL), and what Ironic would refuse later: a
/// scheme other than `http` or `https`, no host, credentials (they would be copied into the
/// node and the status), an overlong URL.
pub fn validate_data_image(spec: &DataImageSpec) -> Vec<FieldError> {
    let url = spec.url.as_str();
    let problem = if url.len() > MAX_URL_LENGTH {
        Some(format!("the URL is {} bytes long; at most {MAX_URL_LENGTH} are accepted", url.len()))
    } else {
        match valid_url(url, &SCHEMES) {
            Err(problem) => Some(problem),
            Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
                Some("the URL must not hold credentials".to_string())
            }
            Ok(_) => None,
        }
    };
    problem.map(|p| FieldError::new("spec.url", format!("invalid data image URL: {p}"))).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(url: &str) -> Vec<String> {
        validate_data_image(&DataImageSpec { url: url.into() }).into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn web_urls_with_a_host_are_valid_as_baremetal_operator_finds_them() {
        for url in ["http://localhost/abc/abc.php", "https://images.example:8443/data.iso?x=1"] {
            assert_eq!(errors(url), Vec::<String>::new(), "{url}");
        }
    }

    #[test]
    fn what_baremetal_operator_refuses_is_refused() {
        // Its own table: no URL, no scheme, a scheme it does not allow.
        for url in ["", "abc", "unix://localhost/abc/abc.php"] {
            let found = errors(url);
            assert_eq!(found.len(), 1, "{url:?}: {found:?}");
            assert!(found[0].starts_with("spec.url"), "{found:?}");
        }
    }

    #[test]
    fn what_ironic_cannot_attach_is_refused_too() {
        let long = format!("http://h/{}", "a".repeat(MAX_URL_LENGTH));
        for url in ["oci://registry.example/data:1", "nfs://h/x.iso", "http:///x.iso", "http://u:p@h/x.iso", &long] {
            assert_eq!(errors(url).len(), 1, "{url:?}");
        }
    }
}
