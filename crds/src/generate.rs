//! The CustomResourceDefinitions of every kind, and their deterministic YAML.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
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
/// NodeSet, NodeSetService.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        crate::ironic::Ironic::crd(),
        crate::baremetalhost::BareMetalHost::crd(),
        crate::hardwaredata::HardwareData::crd(),
        crate::nodeset::NodeSet::crd(),
        crate::nodesetservice::NodeSetService::crd(),
    ];
    for crd in &mut crds {
        for version in &mut crd.spec.versions {
            if let Some(schema) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut()) {
                accept_empty_map_values(schema);
            }
        }
    }
    crds
}

/// Marks the values of string maps (`nodeSelector`, labels, annotations …) nullable.
///
/// Kubernetes before 1.23 validates custom resources with go-openapi, which takes a zero value
/// inside a map for null, so `nodeSelector: {node-role.kubernetes.io/control-plane: ""}`, the
/// most common node selector, is refused with "must be of type string: null". Nullable values
/// let the empty string through on those versions; a real null still fails to parse in our
/// webhook, so it never reaches a controller.
fn accept_empty_map_values(schema: &mut JSONSchemaProps) {
    if let Some(values) = schema.additional_properties.as_mut().and_then(|a| match a {
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool::Schema(s) => Some(s),
        _ => None,
    }) {
        if values.type_.as_deref() == Some("string") {
            values.nullable = Some(true);
        }
        accept_empty_map_values(values);
    }
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        accept_empty_map_values(child);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(
        items,
    )) = schema.items.as_mut()
    {
        accept_empty_map_values(items);
    }
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
    let yaml = serde_saphyr::to_string(&Sorted(&value)).map_err(|source| CrdRenderError::Yaml { name, source })?;
    Ok(format!("---\n{yaml}"))
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
