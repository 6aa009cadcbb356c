//! Samples: each parses into its kind without loss and passes validation; together with the
//! status fixtures, the samples of each kind use every field of its schema.

mod common;

use common::{assert_lossless, merge, schema_of, yaml};
use crds::baremetalhost::{BareMetalHost, validate_baremetalhost};
use crds::bmceventsubscription::{BMCEventSubscription, validate_bmc_event_subscription};
use crds::dataimage::{DataImage, validate_data_image};
use crds::firmware::{
    FirmwareSchema, HostFirmwareComponents, HostFirmwareSettings, HostUpdatePolicy, validate_host_firmware_components,
    validate_settings,
};
use crds::hardwaredata::HardwareData;
use crds::ironic::{Ironic, IronicValidationOptions, validate_ironic};
use crds::nodeset::{NodeSet, validate_nodeset};
use crds::nodesetservice::{NodeSetService, validate_nodeset_service};
use crds::preprovisioningimage::{PreprovisioningImage, validate_preprovisioning_image};
use crds::samples::{ALL, Sample, of_kind};
use serde_json::Value;

/// `crds/`, read at run time first: clones on one machine share a target directory, and a test
/// binary reused from another clone has that clone's path compiled in.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn validate(sample: &Sample) -> Vec<crds::FieldError> {
    let value = yaml(sample.yaml);
    match sample.kind {
        "Ironic" => {
            let ironic: Ironic = assert_lossless(&value, sample.file);
            validate_ironic(&ironic.spec, None, &IronicValidationOptions::default())
        }
        "BareMetalHost" => {
            let host: BareMetalHost = assert_lossless(&value, sample.file);
            validate_baremetalhost(&host, None)
        }
        "HardwareData" => {
            let _: HardwareData = assert_lossless(&value, sample.file);
            Vec::new()
        }
        "NodeSet" => {
            let nodeset: NodeSet = assert_lossless(&value, sample.file);
            validate_nodeset(&nodeset, None)
        }
        "NodeSetService" => {
            let service: NodeSetService = assert_lossless(&value, sample.file);
            validate_nodeset_service(&service.spec)
        }
        "FirmwareSchema" => {
            let _: FirmwareSchema = assert_lossless(&value, sample.file);
            Vec::new()
        }
        "HostUpdatePolicy" => {
            let _: HostUpdatePolicy = assert_lossless(&value, sample.file);
            Vec::new()
        }
        "HostFirmwareSettings" => {
            let settings: HostFirmwareSettings = assert_lossless(&value, sample.file);
            validate_settings(&settings.spec, None, None)
        }
        "HostFirmwareComponents" => {
            let components: HostFirmwareComponents = assert_lossless(&value, sample.file);
            validate_host_firmware_components(&components.spec)
        }
        "DataImage" => {
            let image: DataImage = assert_lossless(&value, sample.file);
            validate_data_image(&image.spec)
        }
        "BMCEventSubscription" => {
            let subscription: BMCEventSubscription = assert_lossless(&value, sample.file);
            validate_bmc_event_subscription(&subscription.spec, subscription.metadata.namespace.as_deref())
        }
        "PreprovisioningImage" => {
            let image: PreprovisioningImage = assert_lossless(&value, sample.file);
            validate_preprovisioning_image(&image.spec)
        }
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn every_sample_round_trips_without_loss_and_is_valid() {
    for sample in ALL {
        let errors = validate(sample);
        assert!(errors.is_empty(), "{}: {errors:#?}", sample.file);
        let value = yaml(sample.yaml);
        assert_eq!(value["kind"], sample.kind, "{}", sample.file);
    }
}

#[test]
fn every_sample_file_is_listed() {
    let dir = manifest_dir().join("samples");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .expect("samples dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = ALL.iter().map(|s| s.file.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn ironic_with_every_status_field_round_trips() {
    let mut object = yaml(include_str!("../samples/ironic-full.yaml"));
    merge(&mut object, &yaml(include_str!("fixtures/ironic-status.yaml")));
    let _: Ironic = assert_lossless(&object, "ironic with status");
}

#[test]
fn baremetalhost_with_every_status_and_deprecated_field_round_trips() {
    let mut object = yaml(include_str!("../samples/baremetalhost-full.yaml"));
    merge(&mut object, &yaml(include_str!("fixtures/baremetalhost-status.yaml")));
    let _: BareMetalHost = assert_lossless(&object, "baremetalhost with status");
    let mut deprecated = yaml(include_str!("../samples/baremetalhost-bmo.yaml"));
    merge(&mut deprecated, &yaml(include_str!("fixtures/baremetalhost-deprecated.yaml")));
    let _: BareMetalHost = assert_lossless(&deprecated, "baremetalhost with deprecated fields");
}

#[test]
fn nodeset_with_every_status_field_round_trips() {
    let mut object = yaml(include_str!("../samples/nodeset-full.yaml"));
    merge(&mut object, &yaml(include_str!("fixtures/nodeset-status.yaml")));
    let _: NodeSet = assert_lossless(&object, "nodeset with status");
}

/// Fields whose types come from Kubernetes itself: the samples set them, but their inner
/// fields are Kubernetes' business.
const EMBEDDED: &[&str] = &[
    ".spec.overrides.containers",
    ".spec.overrides.initContainers",
    ".spec.overrides.httpdLivenessProbe",
    ".spec.overrides.httpdReadinessProbe",
    ".spec.overrides.volumes",
    ".spec.overrides.tolerations",
    ".spec.database.managed.resources",
    ".status.conditions",
    ".spec.consumerRef",
    ".spec.taints",
    ".spec.baremetalSetTemplate.bmhLabelSelector",
    ".spec.nodes{}.bmhLabelSelector",
    ".spec.nodeTemplate.variables",
    ".spec.nodes{}.variables",
    ".spec.job.env",
    ".spec.job.envFrom",
    ".spec.job.resources",
];

/// A schema without descriptions and nullability, to recognise the same type at two places.
fn shape(schema: &Value) -> String {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| !["description", "nullable", "default"].contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    strip(schema).to_string()
}

/// Walks `schema` over every value given for it. Returns the property paths none of them sets,
/// except under an object whose type is fully used somewhere else (in `covered`), and adds the
/// shapes of fully used objects to `found`.
fn uncovered(
    schema: &Value,
    values: &[&Value],
    path: &str,
    covered: &std::collections::BTreeSet<String>,
    found: &mut std::collections::BTreeSet<String>,
) -> Vec<String> {
    if EMBEDDED.contains(&path) {
        return Vec::new();
    }
    let mut missing = Vec::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, sub) in props {
            let children: Vec<&Value> = values.iter().filter_map(|v| v.get(name)).collect();
            let child = format!("{path}.{name}");
            if children.is_empty() {
                if !["apiVersion", "kind", "metadata"].contains(&name.as_str()) {
                    missing.push(child);
                }
            } else {
                missing.extend(uncovered(sub, &children, &child, covered, found));
            }
        }
    }
    if let Some(items) = schema.get("items") {
        let elements: Vec<&Value> = values.iter().filter_map(|v| v.as_array()).flatten().collect();
        if !elements.is_empty() {
            missing.extend(uncovered(items, &elements, path, covered, found));
        }
    }
    if let Some(inner @ Value::Object(_)) = schema.get("additionalProperties") {
        let entries: Vec<&Value> = values.iter().filter_map(|v| v.as_object()).flat_map(|m| m.values()).collect();
        missing.extend(uncovered(inner, &entries, &format!("{path}{{}}"), covered, found));
    }
    let is_object = schema.get("properties").is_some();
    if is_object && missing.is_empty() {
        found.insert(shape(schema));
    }
    if is_object && covered.contains(&shape(schema)) {
        missing.clear();
    }
    missing
}

/// Every kind's samples and fixtures.
fn all_values() -> Vec<(&'static str, Value, Vec<Value>)> {
    let fixtures: &[(&str, &str)] = &[
        ("Ironic", include_str!("fixtures/ironic-status.yaml")),
        ("BareMetalHost", include_str!("fixtures/baremetalhost-status.yaml")),
        ("BareMetalHost", include_str!("fixtures/baremetalhost-deprecated.yaml")),
        ("NodeSet", include_str!("fixtures/nodeset-status.yaml")),
        ("NodeSetService", include_str!("fixtures/nodesetservice-status.yaml")),
        ("HostFirmwareSettings", include_str!("fixtures/hostfirmwaresettings-status.yaml")),
        ("HostFirmwareComponents", include_str!("fixtures/hostfirmwarecomponents-status.yaml")),
        ("DataImage", include_str!("fixtures/dataimage-status.yaml")),
        ("BMCEventSubscription", include_str!("fixtures/bmceventsubscription-status.yaml")),
        ("PreprovisioningImage", include_str!("fixtures/preprovisioningimage-status.yaml")),
    ];
    [
        "Ironic",
        "BareMetalHost",
        "HardwareData",
        "NodeSet",
        "NodeSetService",
        "FirmwareSchema",
        "HostFirmwareSettings",
        "HostFirmwareComponents",
        "HostUpdatePolicy",
        "DataImage",
        "BMCEventSubscription",
        "PreprovisioningImage",
    ]
    .into_iter()
    .map(|kind| {
        let mut values: Vec<Value> = of_kind(kind).map(|s| yaml(s.yaml)).collect();
        values.extend(fixtures.iter().filter(|f| f.0 == kind).map(|f| yaml(f.1)));
        (kind, schema_of(kind), values)
    })
    .collect()
}

/// Missing fields of `kind`. A type used fully anywhere (in any kind) counts as used wherever
/// it appears, so shared types (Image, RootDeviceHints, HardwareDetails...) need one full
/// example.
fn missing_fields(kind: &str) -> Vec<String> {
    let everything = all_values();
    let mut covered = std::collections::BTreeSet::new();
    loop {
        let mut found = std::collections::BTreeSet::new();
        for (_, schema, values) in &everything {
            let refs: Vec<&Value> = values.iter().collect();
            uncovered(schema, &refs, "", &covered, &mut found);
        }
        if found.is_subset(&covered) {
            break;
        }
        covered.extend(found);
    }
    let (_, schema, values) = everything.iter().find(|(k, _, _)| *k == kind).expect("kind");
    let refs: Vec<&Value> = values.iter().collect();
    uncovered(schema, &refs, "", &covered, &mut Default::default())
}

fn assert_every_field_used(kind: &str) {
    let missing = missing_fields(kind);
    assert!(missing.is_empty(), "{kind} fields no sample uses: {missing:#?}");
}

#[test]
fn ironic_samples_use_every_field() {
    assert_every_field_used("Ironic");
}

#[test]
fn baremetalhost_samples_use_every_field() {
    assert_every_field_used("BareMetalHost");
}

#[test]
fn hardwaredata_nodeset_and_service_samples_use_every_field() {
    assert_every_field_used("HardwareData");
    assert_every_field_used("NodeSet");
    assert_every_field_used("NodeSetService");
}

#[test]
fn firmware_samples_use_every_field() {
    assert_every_field_used("FirmwareSchema");
    assert_every_field_used("HostFirmwareSettings");
    assert_every_field_used("HostFirmwareComponents");
    assert_every_field_used("HostUpdatePolicy");
}

#[test]
fn dataimage_and_bmceventsubscription_samples_use_every_field() {
    assert_every_field_used("DataImage");
    assert_every_field_used("BMCEventSubscription");
}

#[test]
fn preprovisioningimage_samples_use_every_field() {
    assert_every_field_used("PreprovisioningImage");
}
