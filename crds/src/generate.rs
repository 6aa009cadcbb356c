//! The CustomResourceDefinitions of every kind, and their deterministic YAML.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use thiserror::Error;

/// Why the CRDs could not be rendered.
#[derive(Debug, Error)]
pub enum CrdRenderError {
    /// A CRD did not convert to JSON.
    #[error("cannot convert CRD {name} to JSON: {source}")]
    Json {
        /// CRD name.
        name: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The YAML emitter failed.
    #[error("cannot write CRD {name} as YAML: {source}")]
    Yaml {
        /// CRD name.
        name: String,
        /// The cause.
        #[source]
        source: serde_saphyr::SerializeError,
    },
}

/// Every CRD ferrometal serves, in a fixed order: Ironic, BareMetalHost, HardwareData,
/// NodeSet, NodeSetService, FirmwareSchema, HostFirmwareSettings, HostFirmwareComponents,
/// HostUpdatePolicy, DataImage, BMCEventSubscription, PreprovisioningImage. Install these, not the derived `Kind::crd()`s: the Ironic CRD is
/// adjusted ([`crate::ironic::crd`]).
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    vec![
        crate::ironic::crd(),
        crate::baremetalhost::BareMetalHost::crd(),
        crate::hardwaredata::HardwareData::crd(),
        crate::nodeset::NodeSet::crd(),
        crate::nodesetservice::NodeSetService::crd(),
        crate::firmware::FirmwareSchema::crd(),
        crate::firmware::HostFirmwareSettings::crd(),
        crate::firmware::HostFirmwareComponents::crd(),
        crate::firmware::HostUpdatePolicy::crd(),
        crate::dataimage::DataImage::crd(),
        crate::bmceventsubscription::BMCEventSubscription::crd(),
        crate::preprovisioningimage::PreprovisioningImage::crd(),
    ]
}

/// File name of a CRD under `crds/generated/`: `<plural>.<group>.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// One CRD as a YAML document (starting with `---`), keys sorted at every level so the output
/// never depends on serde_json's map ordering.
pub fn render_crd_yaml(crd: &CustomResourceDefinition) -> Result<String, CrdRenderError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let value = serde_json::to_value(crd).map_err(|source| CrdRenderError::Json { name: name.clone(), source })?;
    let yaml = render_value_yaml(&value).map_err(|source| CrdRenderError::Yaml { name, source })?;
    Ok(format!("---\n{yaml}"))
}

/// Any JSON value as YAML with object keys sorted at every level: the deterministic form every
/// generated manifest of the project uses (the CRDs here, the operator's install manifests).
pub fn render_value_yaml(value: &Value) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(&Sorted(value))
}

/// Every CRD as one multi-document YAML stream, in [`all_crds`] order.
pub fn render_yaml() -> Result<String, CrdRenderError> {
    all_crds().iter().map(render_crd_yaml).collect::<Result<Vec<_>, _>>().map(|docs| docs.concat())
}

/// Serializes a JSON value with object keys in sorted order.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    out.serialize_entry(k, &Sorted(v))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Sorted(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}
