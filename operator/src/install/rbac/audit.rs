//! The table agrees with the controllers' code: every Kubernetes kind a controller's module
//! names in an API call is in that controller's part of the table. A kind added to a
//! controller without its permission fails here; the verbs are checked where the code says
//! [`require_access!`](crate::install::rbac::require_access), and by the end-to-end tests that run the
//! operator with exactly the rendered roles.

use super::kinds::{ALL, short_name};
use super::table::{DATABASE, FIRMWARE, HOST, IRONIC, NODESET};
use super::{Component, Resource};
use std::path::{Path, PathBuf};

/// Which directory of `operator/src` belongs to which part of the table; a directory listed
/// inside another is that part's alone.
const MODULES: [(&str, &Component); 6] = [
    ("ironic", &IRONIC),
    ("database", &DATABASE),
    ("host", &HOST),
    ("host/firmware", &FIRMWARE),
    ("host/components", &FIRMWARE),
    ("nodeset", &NODESET),
];

/// Patterns that name the kind an API call is about, each followed by the kind's name.
const PATTERNS: [&str; 8] =
    ["Api<PartialObjectMeta<", "Api<", "api::<", "get::<", "prune::<", "create_once::<", "apply::<", "watch::<"];

fn rust_files(src: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let listed = MODULES.iter().any(|(module, _)| path == src.join(module));
        if path.is_dir() && !listed {
            rust_files(src, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The kinds named after the patterns in `source`, by their short Rust name.
fn named_kinds(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for pattern in PATTERNS {
        for (index, _) in source.match_indices(pattern) {
            let rest = &source[index + pattern.len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let name = short_name(&name).to_string();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn resources_named(kind: &str) -> Vec<Resource> {
    ALL.iter().filter(|(path, _)| short_name(path) == kind).map(|(_, resource)| *resource).collect()
}

#[test]
fn every_kind_a_controller_names_in_an_api_call_is_in_its_part_of_the_table() {
    let src = crate::source_tree::manifest_dir().join("src");
    let mut missing = Vec::new();
    let mut seen = 0;
    for (module, component) in MODULES {
        let mut files = Vec::new();
        rust_files(&src, &src.join(module), &mut files);
        for file in files {
            let source = std::fs::read_to_string(&file).unwrap_or_default();
            for kind in named_kinds(&source) {
                let resources = resources_named(&kind);
                if resources.is_empty() {
                    continue; // a type parameter, DynamicObject, or a kind of no API call
                }
                seen += 1;
                // Any access to the kind counts, its subresources' too (`Api<Ironic>` writes status).
                let granted = resources.iter().any(|r| {
                    component.access.iter().any(|a| a.resource.group == r.group && a.resource.plural == r.plural)
                });
                if !granted {
                    missing.push(format!("{}: {kind} (in {})", component.name, file.display()));
                }
            }
        }
    }
    assert!(seen > 10, "the scan found the controllers' API calls ({seen})");
    assert!(missing.is_empty(), "kinds used without a permission in the table:\n{}", missing.join("\n"));
}

#[test]
fn the_scan_finds_the_kinds_of_api_calls() {
    let source = "let a: Api<Secret> = x; let b: Api<PartialObjectMeta<k8s::ConfigMap>>; ledger.prune::<Job>(); \
                  run.kube.get::<StatefulSet>(n); fn api<K>() {}";
    assert_eq!(named_kinds(source), ["ConfigMap", "Job", "PartialObjectMeta", "Secret", "StatefulSet"]);
    assert_eq!(resources_named("Secret"), [Resource::new("", "secrets")]);
    assert_eq!(resources_named("Event").len(), 2, "core and events.k8s.io");
}

/// One grant: API group (`core` for the core group), resource, names it is limited to, verbs.
type Grant = (String, String, Vec<String>, Vec<String>);

/// The rows of `design/install.md`'s table "Every cluster-wide grant".
fn documented_grants() -> Vec<Grant> {
    let path = crate::source_tree::manifest_dir().join("../design/install.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some((_, section)) = text.split_once("### Every cluster-wide grant") else { return Vec::new() };
    let cells = |line: &str| line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    let list = |cell: &str| cell.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|line| {
            let row = cells(line);
            let cell = |i: usize| row.get(i).cloned().unwrap_or_default();
            let resource = cell(1);
            let (plural, names) = match resource.split_once(" (") {
                Some((plural, rest)) => {
                    (plural.to_string(), rest.split('`').skip(1).step_by(2).map(String::from).collect())
                }
                None => (resource, Vec::new()),
            };
            (cell(0), plural, names, list(&cell(2)))
        })
        .collect()
}

/// Every rule of every ClusterRole the cluster-wide install renders, optional features' too.
fn rendered_cluster_grants() -> Vec<Grant> {
    let grantee = crate::install::Layout::default().grantee();
    let mut out = Vec::new();
    for feature in std::iter::once(super::Feature::Always).chain(super::Feature::OPTIONAL) {
        for role in super::render::objects(&grantee, feature).iter().filter(|o| o["kind"] == "ClusterRole") {
            let rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule> =
                serde_json::from_value(role["rules"].clone()).unwrap_or_default();
            for rule in rules {
                let group = rule.api_groups.unwrap_or_default().concat();
                let group = if group.is_empty() { "core".to_string() } else { group };
                let resource = rule.resources.unwrap_or_default().concat();
                out.push((group, resource, rule.resource_names.unwrap_or_default(), rule.verbs));
            }
        }
    }
    out
}

#[test]
fn every_cluster_wide_grant_is_in_the_design_table_with_its_reason_and_nothing_else_is() {
    let mut documented = documented_grants();
    let mut rendered = rendered_cluster_grants();
    assert!(rendered.len() > 10, "the cluster-wide install renders its ClusterRoles ({})", rendered.len());
    documented.sort();
    rendered.sort();
    let missing: Vec<_> = rendered.iter().filter(|g| !documented.contains(g)).collect();
    let stale: Vec<_> = documented.iter().filter(|g| !rendered.contains(g)).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "design/install.md, \"Every cluster-wide grant\", must list exactly the rendered ClusterRoles' rules\n\
         granted but not justified there: {missing:?}\nlisted but not granted: {stale:?}"
    );
}

#[test]
fn no_cluster_wide_grant_creates_a_workload_other_than_a_service_job() {
    // Deployments, DaemonSets, StatefulSets and volumes are written only where an Ironic may
    // run; a Job is the one workload created in every namespace (a NodeSetService's run).
    for (group, resource, _, verbs) in rendered_cluster_grants() {
        let workload = matches!(
            resource.as_str(),
            "deployments" | "daemonsets" | "statefulsets" | "persistentvolumeclaims" | "pods" | "services"
        );
        if workload {
            assert!(
                verbs.iter().all(|v| ["get", "list", "watch"].contains(&v.as_str())),
                "{group}/{resource}: {verbs:?} cluster-wide"
            );
        }
    }
}
