//! The Secrets and ConfigMaps a NodeSet reads: those its `variablesFrom` lists name, and those
//! the Jobs of the services it lists read (`env[].valueFrom`, `envFrom`). Always of the
//! NodeSet's own namespace (a reference has no namespace to name another).
//!
//! They are watched by metadata only (`controller`): a change wakes the NodeSets that
//! reference the object, and only those read its content, by GET, here. The content goes into
//! the inventory Secret (variables) and, as a digest, into the hashes that decide what reruns;
//! never into status, Events or logs.

use crate::kit::error::{KubeError, Verb};
use crds::FieldError;
use crds::nodeset::sources::{self as source, SourceData, SourceKind, SourceRef, Sources};
use crds::nodeset::{NodeSet, NodeSetSpec};
use crds::nodesetservice::{NodeSetService, references};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};

/// Every source the NodeSet's `variablesFrom` lists name, template and hosts.
pub(super) fn of_variables(spec: &NodeSetSpec) -> BTreeSet<SourceRef> {
    let template = spec.node_template.as_ref().and_then(|t| t.variables_from.as_ref());
    let hosts = spec.nodes.iter().flatten().map(|(_, h)| h.variables_from.as_ref());
    std::iter::once(template).chain(hosts).flat_map(source::listed).collect()
}

/// Every source the NodeSet reads: its variables', and those of the services it lists that
/// `services` (its namespace's, by name) holds.
pub(super) fn referenced<'a>(
    spec: &NodeSetSpec,
    services: impl Fn(&str) -> Option<&'a NodeSetService>,
) -> BTreeSet<SourceRef> {
    let mut out = of_variables(spec);
    for name in spec.services.iter().flatten() {
        if let Some(service) = services(name) {
            out.extend(references(&service.spec).into_iter().map(|r| r.source));
        }
    }
    out
}

/// What a `variablesFrom` list finds wrong with what was read: a non-optional source missing,
/// keys that cannot be variables. They block the NodeSet, like any invalid input.
pub(super) fn check(spec: &NodeSetSpec, sources: &Sources) -> Vec<FieldError> {
    let template = spec.node_template.as_ref().and_then(|t| t.variables_from.as_ref());
    let mut errors = source::check_sources("spec.nodeTemplate.variablesFrom", template, sources);
    for (hostname, host) in spec.nodes.iter().flatten() {
        let path = format!("spec.nodes[{hostname}].variablesFrom");
        errors.extend(source::check_sources(&path, host.variables_from.as_ref(), sources));
    }
    errors
}

/// Reads `wanted` in the NodeSet's namespace; one that does not exist is left out.
pub(super) async fn read(
    client: &Client,
    nodeset: &NodeSet,
    wanted: &BTreeSet<SourceRef>,
) -> Result<Sources, KubeError> {
    let namespace = nodeset.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let mut out = BTreeMap::new();
    for wanted in wanted {
        let name = wanted.name.as_str();
        let data = match wanted.kind {
            SourceKind::Secret => {
                secrets.get_opt(name).await.map_err(KubeError::of::<Secret>(Verb::Get, name))?.map(|s| of_secret(&s))
            }
            SourceKind::ConfigMap => {
                maps.get_opt(name).await.map_err(KubeError::of::<ConfigMap>(Verb::Get, name))?.map(|c| of_map(&c))
            }
        };
        if let Some(data) = data {
            out.insert(wanted.clone(), data);
        }
    }
    Ok(Sources(out))
}

/// A Secret's content: each value as text, or its key among the binary ones.
pub(super) fn of_secret(secret: &Secret) -> SourceData {
    let mut out = SourceData::default();
    for (key, value) in secret.data.iter().flatten() {
        match String::from_utf8(value.0.clone()) {
            Ok(text) => {
                out.data.insert(key.clone(), text);
            }
            Err(_) => out.binary.push(key.clone()),
        }
    }
    out
}

/// A ConfigMap's content: its data, and the keys of its binaryData.
pub(super) fn of_map(map: &ConfigMap) -> SourceData {
    SourceData {
        data: map.data.clone().unwrap_or_default(),
        binary: map.binary_data.iter().flatten().map(|(k, _)| k.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use serde_json::json;

    #[test]
    fn a_nodeset_reads_what_its_variables_and_its_services_name() {
        let spec: NodeSetSpec = serde_json::from_value(json!({
            "nodeTemplate": {"variablesFrom": [{"secretRef": {"name": "t"}}]},
            "nodes": {"c-0": {"variablesFrom": [{"configMapRef": {"name": "h"}}]}},
            "services": ["a", "unknown"]}))
        .expect("spec");
        let service: NodeSetService = serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1",
            "kind": "NodeSetService", "metadata": {"name": "a"},
            "spec": {"job": {"image": "x", "envFrom": [{"secretRef": {"name": "s"}}]}}}))
        .expect("service");
        let read = referenced(&spec, |name| (name == "a").then_some(&service));
        let names: Vec<String> = read.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["Secret s", "Secret t", "ConfigMap h"]);
    }

    #[test]
    fn binary_values_are_named_never_taken() {
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("text".to_string(), ByteString(b"v".to_vec())),
                ("blob".to_string(), ByteString(vec![0xff, 0xfe])),
            ])),
            ..Default::default()
        };
        let data = of_secret(&secret);
        assert_eq!((data.data.len(), data.binary.as_slice()), (1, ["blob".to_string()].as_slice()));
        let map = ConfigMap {
            data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
            binary_data: Some(BTreeMap::from([("b".to_string(), ByteString(vec![1]))])),
            ..Default::default()
        };
        assert_eq!(of_map(&map).binary, ["b"]);
    }
}
