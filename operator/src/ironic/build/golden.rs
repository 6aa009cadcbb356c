//! Golden tests of the builders: each case renders every object of one Ironic and compares
//! them with `operator/src/ironic/testdata/<case>.yaml`. After an intended change, regenerate
//! with `FERROMETAL_UPDATE_GOLDEN=1 cargo test -p operator --lib ironic::build` and review
//! the diff.

use super::{Desired, Inputs, UpgradeVersions, Workload, build};
use crate::ironic::Config;
use crate::ironic::credentials::{ApiCredentials, generated_source};
use crate::ironic::database;
use crate::ironic::linked::{self, Source, SourceKind};
use crate::ironic::names::Names;
use crate::ironic::tls::{
    AutoSecrets, CertificateRequest, CertifiedPem, SubjectAltNames, TlsMaterial, TlsPlan, auto_serving_source,
};
use crate::ironic::version;
use crds::ironic::{Ironic, TlsMode};
use serde_json::Value;
use std::path::PathBuf;

const FAKE_CA: &str = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

fn ironic(yaml: &str) -> Ironic {
    let mut ironic: Ironic = serde_saphyr::from_str(yaml).expect("fixture parses");
    ironic.metadata.uid = Some("6f1e3c1a-0000-4000-8000-000000000001".to_string());
    ironic.metadata.namespace.get_or_insert_with(|| "metal3".to_string());
    ironic
}

fn credentials(ironic: &Ironic) -> ApiCredentials {
    let names = Names::of(ironic);
    let (secret_name, generated) = match ironic.spec.api_credentials_name.clone() {
        Some(name) => (name, false),
        None => (names.generated_credentials(), true),
    };
    ApiCredentials {
        source: generated_source(&secret_name, "ironic", "password"),
        secret_name,
        username: "ironic".into(),
        password: "password".into(),
        generated,
        newly_generated: false,
        htpasswd: "ironic:$2y$10$0123456789012345678901uFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE".into(),
        digest: "digest".into(),
    }
}

fn material(name: &str) -> TlsMaterial {
    let data = [("tls.crt", "CERT"), ("tls.key", "KEY"), ("ca.crt", FAKE_CA)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
    TlsMaterial {
        secret_name: name.to_string(),
        source: Source { kind: SourceKind::Secret, name: name.to_string(), data },
        ca_pem: Some(FAKE_CA.to_string()),
        not_after: None,
        renewal_at: None,
    }
}

fn tls_plan(ironic: &Ironic) -> TlsPlan {
    let names = Names::of(ironic);
    let tls = ironic.spec.tls.clone().unwrap_or_default();
    let mode = tls.effective_mode();
    let mut plan = TlsPlan { mode, ..Default::default() };
    match mode {
        None => {}
        Some(TlsMode::Secret) => plan.material = Some(material(tls.certificate_name.as_deref().unwrap_or_default())),
        Some(TlsMode::Auto) => {
            let secrets = AutoSecrets {
                ca: CertifiedPem { cert: FAKE_CA.into(), key: "CA KEY".into() },
                serving: CertifiedPem { cert: "CERT".into(), key: "KEY".into() },
            };
            let source = auto_serving_source(&names.auto_serving(), &secrets);
            plan.material = Some(TlsMaterial { source, ..material(&names.auto_serving()) });
            plan.auto = Some(secrets);
        }
        Some(TlsMode::CertManager) => {
            let sans = SubjectAltNames { dns: vec!["ironic-ha.metal3.svc".into()], ips: Vec::new() };
            let request = CertificateRequest::new(
                names.cert_manager_certificate(),
                tls.cert_manager.as_ref().expect("cert-manager settings"),
                &sans,
            );
            plan.material = Some(material(&request.secret_name));
            plan.certificate = Some(request);
        }
    }
    plan
}

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
    let ironic = ironic(yaml);
    let config = Config::default();
    let version = version::resolve(&ironic.spec, &config.images).expect("supported version");
    let credentials = credentials(&ironic);
    let tls = tls_plan(&ironic);
    let db = match &ironic.spec.database {
        Some(db) => database::resolve_external(db).ok(),
        None => None,
    };
    let trusted_ca = linked::trusted_ca(&ironic.spec).map(|ca| {
        let key = ca.key.clone().unwrap_or_else(|| "ca-bundle.crt".to_string());
        (ca, key)
    });
    let inputs = Inputs {
        names: Names::of(&ironic),
        namespace: ironic.metadata.namespace.clone().unwrap_or_default(),
        config: &config,
        version: &version,
        credentials: &credentials,
        tls: &tls,
        database: db.as_ref(),
        bmc_ca: linked::bmc_ca(&ironic.spec),
        trusted_ca,
        content_hash: "0123456789abcdef0123456789abcdef".into(),
        upgrade: db
            .as_ref()
            .map(|_| UpgradeVersions { from: upgrade_from.map(str::to_string), to: version.version.to_string() }),
        ironic: &ironic,
    };
    let docs = documents(&build(&inputs));
    assert_eq!(docs, documents(&build(&inputs)), "building is deterministic");
    docs.iter().map(|d| serde_saphyr::to_string(d).expect("yaml")).collect::<Vec<_>>().join("---\n")
}

fn check(case: &str, rendered: String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/ironic/testdata").join(format!("{case}.yaml"));
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
