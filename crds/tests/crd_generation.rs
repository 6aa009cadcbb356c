//! The generated CRDs: checked-in YAML is current, schemas are structural for Kubernetes 1.20,
//! names and printer columns are those users know from metal3.

mod common;

use common::{crd_of as crd, openapi_schema as schema};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use std::path::PathBuf;

fn generated_dir() -> PathBuf {
    // Read at run time first: clones on one machine share a target directory, and a binary
    // reused from another clone has that clone's path compiled in.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("generated")
}

#[test]
fn checked_in_yaml_matches_the_types() {
    let update = std::env::var("FERROMETAL_UPDATE_CRDS").is_ok_and(|v| v == "1");
    let mut expected = vec![("all.yaml".to_string(), crds::render_yaml().expect("render"))];
    for crd in crds::all_crds() {
        expected.push((crds::crd_file_name(&crd), crds::render_crd_yaml(&crd).expect("render")));
    }
    let mut stale = Vec::new();
    for (file, content) in expected {
        let path = generated_dir().join(&file);
        if update {
            std::fs::write(&path, &content).expect("write generated CRD");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            stale.push(file);
        }
    }
    assert!(
        stale.is_empty(),
        "crds/generated is stale ({}); regenerate with: FERROMETAL_UPDATE_CRDS=1 cargo test -p crds --test crd_generation",
        stale.join(", ")
    );
}

#[test]
fn all_yaml_is_every_crd_in_order_and_parses_back() {
    let all = crds::render_yaml().expect("render");
    assert_eq!(all, crds::render_yaml().expect("render twice"), "deterministic");
    let docs: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&all).expect("parse");
    let names: Vec<_> = docs.iter().filter_map(|d| d.metadata.name.clone()).collect();
    assert_eq!(
        names,
        [
            "ironics.ironic.metal3.io",
            "baremetalhosts.metal3.io",
            "hardwaredata.metal3.io",
            "nodesets.ferrometal.io",
            "nodesetservices.ferrometal.io",
            "firmwareschemas.metal3.io",
            "hostfirmwaresettings.metal3.io",
            "hostfirmwarecomponents.metal3.io",
            "hostupdatepolicies.metal3.io",
            "dataimages.metal3.io",
            "bmceventsubscriptions.metal3.io",
            "preprovisioningimages.metal3.io"
        ]
    );
    assert_eq!(docs, crds::all_crds(), "the YAML loses nothing");
}

/// Kubernetes' structural schema rules, as checked by the 1.20 apiserver.
fn check_structural(node: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(obj) = node.as_object() else {
        problems.push(format!("{path}: not an object"));
        return;
    };
    for forbidden in ["$ref", "definitions", "$schema", "oneOf", "anyOf", "allOf", "not"] {
        if obj.contains_key(forbidden) {
            problems.push(format!("{path}: has {forbidden}"));
        }
    }
    let open = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if !obj.contains_key("type") && !open && !int_or_string {
        problems.push(format!("{path}: no type"));
    }
    if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
        problems.push(format!("{path}: both properties and additionalProperties"));
    }
    if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
        problems.push(format!("{path}: uniqueItems"));
    }
    if let Some(Value::String(format)) = obj.get("format") {
        let known = ["int32", "int64", "double", "float", "date-time", "date", "byte", "uri", "int-or-string"];
        if !known.contains(&format.as_str()) {
            problems.push(format!("{path}: unusual format {format}"));
        }
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (k, v) in props {
            check_structural(v, &format!("{path}.{k}"), problems);
        }
    }
    match obj.get("items") {
        Some(items @ Value::Object(_)) => check_structural(items, &format!("{path}[]"), problems),
        Some(_) => problems.push(format!("{path}: items is not a single schema")),
        None if obj.get("type") == Some(&Value::String("array".into())) => {
            problems.push(format!("{path}: array without items"))
        }
        None => {}
    }
    match obj.get("additionalProperties") {
        Some(inner @ Value::Object(_)) => check_structural(inner, &format!("{path}{{}}"), problems),
        Some(other) => problems.push(format!("{path}: additionalProperties is {other}")),
        None => {}
    }
}

#[test]
fn every_schema_is_structural() {
    for crd in crds::all_crds() {
        let mut problems = Vec::new();
        check_structural(&schema(&crd), &crd.spec.names.kind, &mut problems);
        assert!(problems.is_empty(), "{problems:#?}");
    }
}

#[test]
fn every_crd_is_namespaced_v1alpha1_with_status_and_fits_etcd() {
    for crd in crds::all_crds() {
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.versions.len(), 1);
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(version.served && version.storage);
        let size = serde_json::to_vec(&crd).expect("json").len();
        assert!(size < 1_000_000, "{} is {size} bytes", crd.spec.names.kind);
        // The kinds that are data the operator writes whole, and a policy it only reads, as in
        // baremetal-operator: no status to report.
        if !["HardwareData", "FirmwareSchema", "HostUpdatePolicy"].contains(&crd.spec.names.kind.as_str()) {
            assert!(
                version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(),
                "{} has a status subresource",
                crd.spec.names.kind
            );
        }
    }
}

#[test]
fn groups_and_short_names_are_metal3_compatible() {
    let names = |kind: &str| {
        let c = crd(kind);
        (c.spec.group.clone(), c.spec.names.plural.clone(), c.spec.names.short_names.clone())
    };
    assert_eq!(names("Ironic"), ("ironic.metal3.io".into(), "ironics".into(), None));
    assert_eq!(
        names("BareMetalHost"),
        ("metal3.io".into(), "baremetalhosts".into(), Some(vec!["bmh".into(), "bmhost".into()]))
    );
    assert_eq!(names("HardwareData"), ("metal3.io".into(), "hardwaredata".into(), Some(vec!["hd".into()])));
    assert_eq!(names("NodeSet"), ("ferrometal.io".into(), "nodesets".into(), Some(vec!["nset".into()])));
    assert_eq!(names("NodeSetService"), ("ferrometal.io".into(), "nodesetservices".into(), Some(vec!["nss".into()])));
}

fn columns(kind: &str) -> Vec<(String, String, i32)> {
    crd(kind).spec.versions[0]
        .additional_printer_columns
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.name, c.json_path, c.priority.unwrap_or(0)))
        .collect()
}

#[test]
fn printer_columns_match_the_metal3_operators() {
    let ironic: Vec<_> = columns("Ironic").into_iter().map(|c| (c.0, c.2)).collect();
    assert_eq!(
        ironic,
        [("Requested Version".to_string(), 1), ("Installed Version".to_string(), 0), ("Ready".to_string(), 0)]
    );
    let bmh: Vec<_> = columns("BareMetalHost").into_iter().map(|c| (c.0, c.1, c.2)).collect();
    let expected = [
        ("Status", ".status.operationalStatus", 1),
        ("State", ".status.provisioning.state", 0),
        ("Consumer", ".spec.consumerRef.name", 0),
        ("BMC", ".spec.bmc.address", 1),
        ("Online", ".spec.online", 0),
        ("Error", ".status.errorType", 0),
        ("Age", ".metadata.creationTimestamp", 0),
    ];
    let expected: Vec<_> = expected.iter().map(|(n, p, pr)| (n.to_string(), p.to_string(), *pr)).collect();
    assert_eq!(bmh, expected);
}

#[test]
fn provisioning_states_use_metal3_strings_in_the_schema() {
    let s = schema(&crd("BareMetalHost"));
    let states = &s["properties"]["status"]["properties"]["provisioning"]["properties"]["state"]["enum"];
    for state in ["externally provisioned", "powering off before delete", "match profile", ""] {
        assert!(states.as_array().is_some_and(|a| a.contains(&Value::String(state.into()))), "{state:?} in {states}");
    }
    let errors = &s["properties"]["status"]["properties"]["errorType"]["enum"];
    assert!(errors.as_array().is_some_and(|a| a.contains(&Value::String("power management error".into()))));
}

#[test]
fn ironic_defaults_are_schema_defaults() {
    let s = schema(&crd("Ironic"));
    let networking = &s["properties"]["spec"]["properties"]["networking"]["properties"];
    assert_eq!(networking["apiPort"]["default"], 6385);
    assert_eq!(networking["imageServerPort"]["default"], 6180);
    assert_eq!(networking["imageServerTLSPort"]["default"], 6183);
    assert_eq!(networking["rpcPort"]["default"], 6189);
    assert_eq!(networking["prometheusExporterPort"]["default"], 9608);
    assert_eq!(networking["ipAddressManager"]["enum"], serde_json::json!(["", "keepalived"]));
    let exporter = &s["properties"]["spec"]["properties"]["prometheusExporter"]["properties"];
    assert_eq!(exporter["bindAddress"]["default"], "0.0.0.0");
    assert_eq!(exporter["sensorCollectionInterval"]["default"], 60);
    let description = networking["ipAddressManager"]["description"].as_str().unwrap_or_default();
    assert!(description.starts_with("Deprecated"), "field docs survive: {description}");
}

#[test]
fn conditions_are_list_maps_keyed_by_type() {
    for kind in ["Ironic", "BareMetalHost", "NodeSet", "NodeSetService"] {
        let conditions = &schema(&crd(kind))["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{kind}");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], serde_json::json!(["type"]), "{kind}");
    }
}

/// The selectors the NodeSet's CEL locks compare are bounded everywhere: a CEL-evaluating
/// apiserver estimates a rule's cost from these bounds (an unbounded list counts as a whole
/// request) and refuses a CRD whose rules could cost too much.
#[test]
fn the_selectors_the_cel_locks_compare_are_bounded() {
    let spec = &schema(&crd("NodeSet"))["properties"]["spec"]["properties"];
    let selectors = [
        &spec["baremetalSetTemplate"]["properties"]["bmhLabelSelector"],
        &spec["nodes"]["additionalProperties"]["properties"]["bmhLabelSelector"],
    ];
    for selector in selectors {
        let properties = &selector["properties"];
        assert_eq!(properties["matchLabels"]["maxProperties"], 32, "{selector}");
        assert_eq!(properties["matchLabels"]["additionalProperties"]["maxLength"], 63);
        let expressions = &properties["matchExpressions"];
        assert_eq!(expressions["maxItems"], 16);
        let requirement = &expressions["items"]["properties"];
        assert_eq!(requirement["key"]["maxLength"], 317);
        assert_eq!(requirement["values"]["maxItems"], 64);
        assert_eq!(requirement["values"]["items"]["maxLength"], 63);
        assert_eq!(requirement["operator"]["enum"], serde_json::json!(["In", "NotIn", "Exists", "DoesNotExist"]));
    }
    assert_eq!(spec["baremetalSetTemplate"]["properties"]["bmhNamespace"]["maxLength"], 63);
    assert_eq!(spec["nodes"]["maxProperties"], 1000, "hosts per NodeSet are bounded too");
}
