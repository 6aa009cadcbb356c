//! The rules OLM's bundle validation enforces (operator-framework/api's CSV, bundle and
//! OperatorHub validators, and operator-registry's loading rules), one test per rule, named
//! after it: no validator binary can run here. The rule that needs an apiserver (every
//! `alm-examples` entry accepted by a server-side dry run) is in
//! `tests/tests/install_bundle.rs`.

use super::csv::{self, INSTALL_MODES};
use super::{Variant, annotations, files_of};
use crate::install::manifests::workload;
use crate::install::rbac::{Feature, render};
use crate::install::{Layout, WebhookCertificates};
use serde_json::Value;
use std::collections::BTreeSet;

const VERSION: &str = "0.1.0";

/// The CSV of each variant's bundle: every rule holds for both.
fn the_csvs() -> Vec<Value> {
    Variant::ALL.iter().map(|variant| csv::csv(VERSION, *variant).expect("csv")).collect()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn dns_1123_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The YAML documents of a file of `variant`'s bundle.
fn documents(variant: Variant, path_suffix: &str) -> Vec<Value> {
    let files = files_of(VERSION, variant).expect("bundle");
    let file = files.iter().find(|f| f.path.display().to_string().ends_with(path_suffix)).expect("file");
    serde_saphyr::from_multiple::<Value>(&file.content).expect("yaml").into_iter().filter(|v| !v.is_null()).collect()
}

#[test]
fn csv_rule_mandatory_fields_are_present() {
    for csv in the_csvs() {
        for pointer in
            ["/metadata/name", "/spec/displayName", "/spec/version", "/spec/install/strategy", "/spec/description"]
        {
            assert!(!text(&csv, pointer).is_empty(), "{pointer}");
        }
        assert_eq!(text(&csv, "/spec/install/strategy"), "deployment");
        let deployments = csv.pointer("/spec/install/spec/deployments").and_then(Value::as_array).expect("deployments");
        assert!(!deployments.is_empty() && deployments.iter().all(|d| d["name"].is_string() && d["spec"].is_object()));
        for owned in csv.pointer("/spec/customresourcedefinitions/owned").and_then(Value::as_array).expect("owned") {
            for field in ["name", "version", "kind", "displayName", "description"] {
                assert!(owned[field].as_str().is_some_and(|s| !s.is_empty()), "owned {field}: {owned}");
            }
        }
        for webhook in csv.pointer("/spec/webhookdefinitions").and_then(Value::as_array).expect("webhooks") {
            for field in ["generateName", "type", "sideEffects"] {
                assert!(webhook[field].as_str().is_some_and(|s| !s.is_empty()), "webhook {field}");
            }
            assert!(webhook["admissionReviewVersions"].as_array().is_some_and(|v| !v.is_empty()));
        }
    }
}

#[test]
fn csv_rule_name_is_package_dot_v_semver_and_a_dns_subdomain_and_matches_spec_version() {
    for (variant, csv) in Variant::ALL.into_iter().zip(the_csvs()) {
        let name = text(&csv, "/metadata/name");
        assert!(dns_1123_subdomain(name), "{name}");
        assert_eq!(name, format!("{}.v{}", variant.package(), text(&csv, "/spec/version")));
        assert_ne!(text(&csv, "/spec/version"), "0.0.0", "OperatorHub: version is not 0.0.0");
        assert!(csv.pointer("/spec/replaces").is_none(), "no earlier version to replace: the skipRange upgrades");
        assert_eq!(text(&csv, "/metadata/annotations/olm.skipRange"), "<0.1.0");
    }
}

#[test]
fn csv_rule_install_modes_are_unique_and_at_least_one_is_supported() {
    for csv in the_csvs() {
        let modes = csv.pointer("/spec/installModes").and_then(Value::as_array).expect("installModes");
        let types: BTreeSet<&str> = modes.iter().map(|m| m["type"].as_str().unwrap_or_default()).collect();
        assert_eq!(types.len(), modes.len(), "no duplicates");
        assert_eq!(types, BTreeSet::from(["AllNamespaces", "MultiNamespace", "OwnNamespace", "SingleNamespace"]));
        assert!(modes.iter().any(|m| m["supported"] == true));
    }
}

#[test]
fn install_modes_match_how_the_operator_reads_olms_target_namespaces() {
    use crate::cli::{Cli, Command};
    use clap::Parser;
    // olm.targetNamespaces per install mode, and the namespaces the operator then watches.
    let cases: [(&str, &str, &[&str]); 4] = [
        ("OwnNamespace", "operators", &["operators"]),
        ("SingleNamespace", "metal3", &["metal3"]),
        ("MultiNamespace", "metal3,edge", &["metal3", "edge"]),
        ("AllNamespaces", "", &[]),
    ];
    for (mode, annotation, watched) in cases {
        assert!(INSTALL_MODES.contains(&(mode, true)), "{mode} is supported");
        let cli = Cli::try_parse_from(["ferrometal", "run", &format!("--namespaces={annotation}")]).expect("parses");
        let Command::Run(args) = cli.command else { panic!("run") };
        assert_eq!(crate::OperatorConfig::try_from(*args).expect("valid flags").namespaces, watched, "{mode}");
    }
    let container = workload::container(&Layout::default(), WebhookCertificates::Olm);
    let watch = container.env.iter().flatten().find(|e| e.name == "WATCH_NAMESPACE").expect("WATCH_NAMESPACE");
    let field = watch.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
    assert_eq!(field, Some("metadata.annotations['olm.targetNamespaces']"), "read from OLM's annotation");
}

#[test]
fn csv_rule_alm_examples_parse_and_each_is_a_provided_api() {
    for csv in the_csvs() {
        let examples: Vec<Value> =
            serde_json::from_str(text(&csv, "/metadata/annotations/alm-examples")).expect("JSON list");
        let owned: BTreeSet<(String, String)> = csv
            .pointer("/spec/customresourcedefinitions/owned")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|o| {
                let group = o["name"].as_str().unwrap_or_default().split_once('.').map(|(_, g)| g).unwrap_or_default();
                (
                    format!("{group}/{}", o["version"].as_str().unwrap_or_default()),
                    o["kind"].as_str().unwrap_or_default().into(),
                )
            })
            .collect();
        assert!(!examples.is_empty());
        for example in &examples {
            let gvk = (text(example, "/apiVersion").to_string(), text(example, "/kind").to_string());
            assert!(owned.contains(&gvk), "{gvk:?} is not an owned API");
            assert!(example.pointer("/metadata/namespace").is_none(), "the console picks the namespace");
        }
        // Every owned API has an example, or is marked internal (the operator writes it).
        let internal: Vec<String> =
            serde_json::from_str(text(&csv, "/metadata/annotations/operators.operatorframework.io~1internal-objects"))
                .expect("internal objects");
        for owned in
            csv.pointer("/spec/customresourcedefinitions/owned").and_then(Value::as_array).into_iter().flatten()
        {
            let kind = owned["kind"].as_str().unwrap_or_default();
            let name = owned["name"].as_str().unwrap_or_default().to_string();
            assert!(examples.iter().any(|e| e["kind"] == kind) || internal.contains(&name), "{kind} has no example");
        }
    }
}

#[test]
fn bundle_rule_every_owned_crd_is_in_the_bundle_and_matches_its_file_and_every_crd_is_owned() {
    for (variant, csv) in Variant::ALL.into_iter().zip(the_csvs()) {
        let owned = csv.pointer("/spec/customresourcedefinitions/owned").and_then(Value::as_array).expect("owned");
        let mut seen = BTreeSet::new();
        for crd in crds::all_crds() {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let file = documents(variant, &format!("manifests/{}", crds::crd_file_name(&crd)));
            assert_eq!(file, [serde_json::to_value(&crd).expect("json")], "the file is the CRD");
            for version in crd.spec.versions.iter().filter(|v| v.served) {
                let entry = owned
                    .iter()
                    .find(|o| o["name"] == name.as_str() && o["version"] == version.name.as_str())
                    .unwrap_or_else(|| panic!("{name} {} is not owned", version.name));
                assert_eq!(entry["kind"], crd.spec.names.kind.as_str());
                assert_eq!(name, format!("{}.{}", crd.spec.names.plural, crd.spec.group));
                assert!(
                    seen.insert((crd.spec.group.clone(), version.name.clone(), crd.spec.names.kind.clone())),
                    "duplicate GVK"
                );
            }
        }
        assert_eq!(owned.len(), seen.len(), "every owned entry names a CRD of the bundle");
    }
}

#[test]
fn bundle_rule_exactly_one_csv_and_only_kinds_a_bundle_may_carry() {
    let supported = [
        "ClusterServiceVersion",
        "CustomResourceDefinition",
        "Service",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "PrometheusRule",
        "ServiceMonitor",
        "PodDisruptionBudget",
        "PriorityClass",
        "VerticalPodAutoscaler",
        "ConsoleYAMLSample",
        "NetworkPolicy",
    ];
    for variant in Variant::ALL {
        let files = files_of(VERSION, variant).expect("bundle");
        let mut csvs = 0;
        for file in files.iter().filter(|f| f.path.starts_with(format!("{}/manifests", variant.dir()))) {
            let objects = serde_saphyr::from_multiple::<Value>(&file.content).expect("yaml");
            for object in objects.iter().filter(|v| !v.is_null()) {
                let kind = object["kind"].as_str().unwrap_or_default();
                assert!(supported.contains(&kind), "{kind} in {}", file.path.display());
                csvs += usize::from(kind == "ClusterServiceVersion");
            }
        }
        assert_eq!(csvs, 1, "{variant:?}");
    }
}

#[test]
fn bundle_rule_annotations_have_the_registry_keys_and_equal_the_dockerfile_labels() {
    for variant in Variant::ALL {
        let files = files_of(VERSION, variant).expect("bundle");
        let metadata = documents(variant, "metadata/annotations.yaml");
        let on_disk = metadata[0]["annotations"].as_object().expect("annotations");
        let expected: serde_json::Map<String, Value> =
            annotations(variant).into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect();
        assert_eq!(on_disk, &expected);
        assert_eq!(on_disk["operators.operatorframework.io.bundle.mediatype.v1"], "registry+v1");
        assert_eq!(on_disk["operators.operatorframework.io.bundle.package.v1"], variant.package());
        assert!(on_disk["operators.operatorframework.io.bundle.channels.v1"].as_str().is_some_and(|c| !c.is_empty()));
        let name = format!("{}.Dockerfile", variant.dir());
        let dockerfile = &files.iter().find(|f| f.path.ends_with(&name)).expect("Dockerfile").content;
        let labels: serde_json::Map<String, Value> = dockerfile
            .lines()
            .filter_map(|l| l.strip_prefix("LABEL "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect();
        assert_eq!(&labels, on_disk, "the Dockerfile's labels are the annotations");
        let dir = variant.dir();
        assert!(
            dockerfile.contains(&format!("COPY {dir}/manifests /manifests/"))
                && dockerfile.contains(&format!("COPY {dir}/metadata /metadata/"))
        );
    }
}

#[test]
fn webhook_rule_definitions_name_the_deployment_and_intercept_only_owned_apis() {
    for csv in the_csvs() {
        let deployment = text(&csv, "/spec/install/spec/deployments/0/name").to_string();
        let groups: BTreeSet<String> = crds::all_crds().iter().map(|c| c.spec.group.clone()).collect();
        for webhook in csv.pointer("/spec/webhookdefinitions").and_then(Value::as_array).expect("webhooks") {
            assert_eq!(webhook["deploymentName"], deployment.as_str());
            assert_eq!(webhook["type"], "ValidatingAdmissionWebhook");
            for rule in webhook["rules"].as_array().expect("rules") {
                for group in rule["apiGroups"].as_array().expect("groups") {
                    let group = group.as_str().unwrap_or_default();
                    assert!(
                        groups.contains(group),
                        "intercepts {group}: not all groups, operators.coreos.com or webhook configurations"
                    );
                }
            }
        }
    }
}

#[test]
fn operatorhub_rule_listing_fields_are_valid() {
    for csv in the_csvs() {
        assert!(!text(&csv, "/spec/provider/name").is_empty());
        for maintainer in csv.pointer("/spec/maintainers").and_then(Value::as_array).expect("maintainers") {
            let email = maintainer["email"].as_str().unwrap_or_default();
            assert!(!maintainer["name"].as_str().unwrap_or_default().is_empty());
            assert!(
                email.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
                "{email}"
            );
        }
        for link in csv.pointer("/spec/links").and_then(Value::as_array).expect("links") {
            assert!(!link["name"].as_str().unwrap_or_default().is_empty());
            assert!(url::Url::parse(link["url"].as_str().unwrap_or_default()).is_ok(), "{link}");
        }
        let capabilities = ["Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"];
        assert!(capabilities.contains(&text(&csv, "/metadata/annotations/capabilities")));
        let categories = [
            "AI/Machine Learning",
            "Application Runtime",
            "Big Data",
            "Cloud Provider",
            "Developer Tools",
            "Database",
            "Integration & Delivery",
            "Logging & Tracing",
            "Monitoring",
            "Networking",
            "OpenShift Optional",
            "Security",
            "Storage",
            "Streaming & Messaging",
        ];
        for category in text(&csv, "/metadata/annotations/categories").split(',') {
            assert!(categories.contains(&category.trim()), "{category}");
        }
        let icons = csv.pointer("/spec/icon").and_then(Value::as_array).expect("icon");
        assert_eq!(icons.len(), 1);
        assert!(["image/gif", "image/jpeg", "image/png", "image/svg+xml"].contains(&text(&icons[0], "/mediatype")));
        assert!(!text(&icons[0], "/base64data").is_empty());
        assert!(csv.pointer("/spec/keywords").and_then(Value::as_array).is_some_and(|k| !k.is_empty()));
        assert_eq!(text(&csv, "/spec/minKubeVersion"), csv::MIN_KUBE_VERSION);
    }
}

#[test]
fn descriptors_name_fields_of_their_crds() {
    for csv in the_csvs() {
        for owned in csv.pointer("/spec/customresourcedefinitions/owned").and_then(Value::as_array).expect("owned") {
            let crd = crds::all_crds()
                .into_iter()
                .find(|c| c.metadata.name.as_deref() == owned["name"].as_str())
                .expect("crd");
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema");
            for (list, root) in [("specDescriptors", "spec"), ("statusDescriptors", "status")] {
                for descriptor in owned[list].as_array().into_iter().flatten() {
                    let mut node = &schema["openAPIV3Schema"]["properties"][root];
                    for part in descriptor["path"].as_str().unwrap_or_default().split('.') {
                        node = &node["properties"][part];
                    }
                    assert!(node.is_object(), "{} {root}.{} is not in the schema", owned["kind"], descriptor["path"]);
                }
            }
        }
    }
}

#[test]
fn the_csv_installs_the_deployment_and_rbac_of_config() {
    let csv = csv::csv(VERSION, Variant::Whole).expect("csv");
    let layout = Layout { image: crate::install::image(VERSION), ..Layout::default() };
    let olm = workload::deployment(&layout, WebhookCertificates::Olm);
    assert_eq!(
        csv.pointer("/spec/install/spec/deployments/0/spec"),
        Some(&serde_json::to_value(&olm.spec).expect("spec"))
    );
    // The same Deployment as config/ but for where the certificate and the namespaces come from.
    let mut config =
        serde_json::to_value(workload::deployment(&layout, WebhookCertificates::SelfManaged).spec).expect("spec");
    let mut olm = serde_json::to_value(olm.spec).expect("spec");
    for spec in [&mut config, &mut olm] {
        let container = &mut spec["template"]["spec"]["containers"][0];
        container["args"] = Value::Null;
        container["env"] = Value::Null;
    }
    assert_eq!(config, olm);
    let namespaced = render::namespaced_rules(Feature::Always);
    assert!(!namespaced.is_empty());
    assert_eq!(csv.pointer("/spec/install/spec/permissions/0/rules"), Some(&to_json(&namespaced)));
    assert_eq!(text(&csv, "/spec/install/spec/permissions/0/serviceAccountName"), crate::install::NAME);
    assert!(csv.pointer("/spec/install/spec/clusterPermissions").is_none(), "nothing cluster-wide by default");
}

#[test]
fn the_sharded_csv_installs_the_deployments_and_lease_role_of_config_shards() {
    use crate::install::manifests::shards;
    let csv = csv::csv(VERSION, Variant::Sharded).expect("csv");
    let layout = Layout { image: crate::install::image(VERSION), ..Layout::default() };
    let deployments = csv.pointer("/spec/install/spec/deployments").and_then(Value::as_array).expect("deployments");
    let names: Vec<&str> = deployments.iter().map(|d| d["name"].as_str().unwrap_or_default()).collect();
    assert_eq!(names, [crate::install::NAME, shards::HOSTS]);
    // The main Deployment: the whole one's, left the Ironic and NodeSet controllers, as
    // config/shards' patch leaves it.
    let main = &deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"];
    let mut expected = workload::args(&layout, WebhookCertificates::Olm);
    expected.push(shards::MAIN_CONTROLLERS.to_string());
    assert_eq!(main, &serde_json::to_value(expected).expect("args"));
    let hosts = shards::olm_hosts_deployment(&layout);
    assert_eq!(deployments[1]["spec"], serde_json::to_value(&hosts.spec).expect("spec"));
    // config/shards' host Deployment but for where the namespaces come from.
    let mut config = serde_json::to_value(shards::hosts_deployment(&layout).spec).expect("spec");
    let mut olm = serde_json::to_value(hosts.spec).expect("spec");
    for spec in [&mut config, &mut olm] {
        spec["template"]["spec"]["containers"][0]["env"] = Value::Null;
    }
    assert_eq!(config, olm);
    // Every rule of the whole CSV, and config/shards' Lease rule naming each shard's Lease.
    let mut rules = render::namespaced_rules(Feature::Always);
    rules.extend(shards::lease_roles(&layout).0.rules.unwrap_or_default());
    assert_eq!(csv.pointer("/spec/install/spec/permissions/0/rules"), Some(&to_json(&rules)));
    assert!(csv.pointer("/spec/install/spec/clusterPermissions").is_none(), "nothing cluster-wide by default");
    let webhooks = csv.pointer("/spec/webhookdefinitions").and_then(Value::as_array).expect("webhooks");
    assert!(webhooks.iter().all(|w| w["deploymentName"] == crate::install::NAME), "served by the main pods");
}

fn to_json(rules: &[k8s_openapi::api::rbac::v1::PolicyRule]) -> Value {
    serde_json::to_value(rules).expect("rules")
}
