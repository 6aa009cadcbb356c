//! Test fixtures of the Ironic controller: an Ironic from YAML, and the `Resolved` value the
//! builders take for it, with fake credentials and TLS material (no bcrypt, no keys made).

use crate::database::resolve_external;
use crate::ironic::build::{Resolved, UpgradeVersions};
use crate::ironic::config::Config;
use crate::ironic::credentials::{ApiCredentials, generated_source};
use crate::ironic::linked::{self, Source, SourceKind};
use crate::ironic::names::Names;
use crate::ironic::resolve::{Network, Settings};
use crate::ironic::tls::{
    AutoSecrets, CertificateRequest, CertifiedPem, SubjectAltNames, TlsMaterial, TlsPlan, auto_serving_source,
};
use crate::ironic::upgrade::VersionPlan;
use crate::ironic::version;
use crds::ironic::{Ironic, TlsMode};
use kube::Resource;

/// An Ironic with an external database and credentials of the user's.
pub(super) const WITH_DATABASE: &str = r#"
apiVersion: ironic.metal3.io/v1alpha1
kind: Ironic
metadata:
  name: ironic
spec:
  version: "38.0"
  apiCredentialsName: api-credentials
  database:
    credentialsName: ironic-db
    host: mariadb.metal3.svc
    name: ironic
"#;

const FAKE_CA: &str = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

pub(super) fn ironic(yaml: &str) -> Ironic {
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
                next: None,
                retired: None,
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
        Some(TlsMode::CertificateSigningRequest) => plan.material = Some(material(&names.csr_serving())),
    }
    plan
}

/// Everything the builders need for `ironic`, with fake credentials and certificates, and
/// upgrade Jobs (from `upgrade_from`) when it has a database.
pub(super) fn resolved(ironic: &Ironic, upgrade_from: Option<&str>) -> Resolved {
    let ironic = ironic.clone();
    let config = Config::default();
    let version = version::resolve(&ironic.spec, &config.images).expect("supported version");
    let credentials = credentials(&ironic);
    let tls = tls_plan(&ironic);
    let db = match &ironic.spec.database {
        Some(db) => resolve_external(db).ok(),
        None => None,
    };
    let trusted_ca = linked::trusted_ca(&ironic.spec).map(|ca| {
        let key = ca.key.clone().unwrap_or_else(|| "ca-bundle.crt".to_string());
        (ca, key)
    });
    let upgrade = db
        .as_ref()
        .map(|_| UpgradeVersions { from: upgrade_from.map(str::to_string), to: version.version.to_string() });
    Resolved {
        names: Names::of(&ironic),
        namespace: ironic.metadata.namespace.clone().unwrap_or_default(),
        owner: ironic.controller_owner_ref(&()),
        plan: VersionPlan::Deploy { jobs: upgrade.clone() },
        upgrade,
        schema_missing: false,
        network: Network::of(&ironic.spec, tls.material.is_some()),
        settings: Settings::of(&ironic.spec),
        version,
        credentials,
        tls,
        database: db,
        bmc_ca: linked::bmc_ca(&ironic.spec),
        trusted_ca,
        content_hash: "0123456789abcdef0123456789abcdef".into(),
        downloader: config.downloader.clone(),
        upgrade_job_backoff_limit: config.upgrade_job_backoff_limit,
        upgrade_job_deadline_seconds: config.upgrade_job_deadline_seconds,
    }
}
