//! Golden tests of the builders: each case renders every object of one Ironic and compares
//! them with `operator/src/ironic/testdata/<case>.yaml`. After an intended change, regenerate
//! with `FERROMETAL_UPDATE_GOLDEN=1 cargo test -p operator --lib ironic::build` and review
//! the diff.

use super::{Desired, Workload, build};
use crate::ironic::fixtures;
use serde_json::Value;

/// An object as JSON, with its apiVersion and kind.
fn typed<K: k8s_openapi::Resource + serde::Serialize>(object: &K) -> Value {
    let mut value = serde_json::to_value(object).expect("serializes");
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), Value::String(K::API_VERSION.into()));
        map.insert("kind".into(), Value::String(K::KIND.into()));
    }
    value
}

/// Every object, in apply order, as JSON.
fn documents(desired: &Desired) -> Vec<Value> {
    let mut docs: Vec<Value> = desired.secrets.iter().map(typed).collect();
    docs.extend(desired.config_maps.iter().map(typed));
    docs.extend(desired.certificate.iter().map(|c| serde_json::to_value(c).expect("serializes")));
    docs.extend(desired.pre_upgrade_job.iter().map(typed));
    docs.push(match &desired.workload {
        Workload::Deployment(d) => typed(d.as_ref()),
        Workload::DaemonSet(d) => typed(d.as_ref()),
    });
    docs.push(typed(&desired.service));
    docs.extend(desired.ingress.iter().map(typed));
    docs.extend(desired.post_upgrade_job.iter().map(typed));
    docs
}

fn render_case(yaml: &str, upgrade_from: Option<&str>) -> String {
    let resolved = fixtures::resolved(&fixtures::ironic(yaml), upgrade_from);
    let docs = documents(&build(&resolved));
    assert_eq!(docs, documents(&build(&resolved)), "building is deterministic");
    docs.iter().map(|d| serde_saphyr::to_string(d).expect("yaml")).collect::<Vec<_>>().join("---\n")
}

fn check(case: &str, rendered: String) {
    let path = crate::source_tree::manifest_dir().join("src/ironic/testdata").join(format!("{case}.yaml"));
    if std::env::var("FERROMETAL_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &rendered).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        expected,
        rendered,
        "{} is stale; regenerate with FERROMETAL_UPDATE_GOLDEN=1 cargo test -p operator --lib ironic::build",
        path.display()
    );
}

fn sample(file: &str) -> &'static str {
    crds::samples::ALL.iter().find(|s| s.file == file).map(|s| s.yaml).expect("sample exists")
}

#[test]
fn golden_minimal() {
    check("minimal", render_case(sample("ironic-minimal.yaml"), None));
}

#[test]
fn golden_full_with_an_upgrade_from_37() {
    check("full", render_case(sample("ironic-full.yaml"), Some("37.0")));
}

#[test]
fn golden_auto_tls_with_keepalived_and_dhcp() {
    check("auto-tls", render_case(sample("ironic-full-auto-tls.yaml"), None));
}

const HA: &str = r#"
apiVersion: ironic.metal3.io/v1alpha1
kind: Ironic
metadata:
  name: ironic-ha
  namespace: metal3
spec:
  highAvailability: true
  database:
    credentialsName: ironic-db
    host: mariadb.metal3.svc:3307
    name: ironic
  nodeSelector:
    node-role.kubernetes.io/control-plane: ""
  networking:
    interface: eno1
  prometheusExporter:
    enabled: true
    disableServiceMonitor: true
  tls:
    mode: CertManager
    certManager:
      issuerRef:
        name: metal3-ca
        kind: ClusterIssuer
    insecureRPC: true
  overrides:
    tolerations:
    - key: node-role.kubernetes.io/control-plane
      operator: Exists
      effect: NoSchedule
  version: latest
"#;

#[test]
fn golden_high_availability_with_cert_manager() {
    check("ha-cert-manager", render_case(HA, Some("38.0")));
}

/// The pod template of a rendered Ironic.
fn pod_spec(desired: &Desired) -> k8s_openapi::api::core::v1::PodSpec {
    let template = match &desired.workload {
        Workload::Deployment(d) => d.spec.as_ref().map(|s| s.template.clone()),
        Workload::DaemonSet(d) => d.spec.as_ref().map(|s| s.template.clone()),
    };
    template.and_then(|t| t.spec).expect("a pod spec")
}

#[test]
fn an_ironic_without_tls_settings_serves_https_with_the_managed_ca_unless_it_opts_out() {
    let minimal = fixtures::resolved(&fixtures::ironic(sample("ironic-minimal.yaml")), None);
    assert_eq!(minimal.tls.mode, Some(crds::ironic::TlsMode::Auto));
    let names: Vec<String> = build(&minimal).config_maps.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert!(names.contains(&"ironic-ca-bundle".to_string()), "the CA is published: {names:?}");
    let plain = sample("ironic-minimal.yaml").replace("spec: {}", "spec: {tls: {disabled: true}}");
    assert!(plain.contains("disabled"), "the sample changed: {plain}");
    assert_eq!(fixtures::resolved(&fixtures::ironic(&plain), None).tls.mode, None, "the explicit opt-out");
}

#[test]
fn containers_are_non_root_under_runtime_default_seccomp_and_only_dnsmasq_and_keepalived_have_capabilities() {
    let resolved = fixtures::resolved(&fixtures::ironic(sample("ironic-full-auto-tls.yaml")), None);
    let pod = pod_spec(&build(&resolved));
    let containers: Vec<_> = pod.init_containers.iter().flatten().chain(&pod.containers).collect();
    assert!(containers.iter().any(|c| c.name == "dnsmasq") && containers.iter().any(|c| c.name == "keepalived"));
    for container in containers {
        let security = container.security_context.clone().unwrap_or_default();
        assert_eq!(security.run_as_non_root, Some(true), "{}", container.name);
        assert_eq!(security.seccomp_profile.map(|p| p.type_).as_deref(), Some("RuntimeDefault"), "{}", container.name);
        let capabilities = security.capabilities.unwrap_or_default();
        assert_eq!(capabilities.drop, Some(vec!["ALL".to_string()]), "{}", container.name);
        let privileged = matches!(container.name.as_str(), "dnsmasq" | "keepalived");
        assert_eq!(capabilities.add.is_some(), privileged, "{}", container.name);
        assert_eq!(security.allow_privilege_escalation, Some(privileged), "{}", container.name);
    }
}
