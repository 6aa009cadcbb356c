use super::*;
use crate::database::connection::{Connection, SecretKeyRef};
use crate::database::schema::SchemaRevision;
use crate::ironic::credentials::{HTPASSWD_KEY, Stored};
use crate::ironic::fixtures;
use crate::ironic::validate;
use crate::kit::Notices;
use crds::ironic::status::IronicStatus;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

fn secret_source(name: &str, pairs: &[(&str, &str)]) -> Source {
    Source {
        kind: SourceKind::Secret,
        name: name.to_string(),
        data: pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect(),
    }
}

/// The htpasswd line of `username`/`password` at bcrypt's lowest cost (the cost travels in the
/// hash, so verifying it is quick).
fn htpasswd_line(username: &str, password: &str) -> String {
    let hash = bcrypt::hash_with_result(password, 4).expect("hash").format_for_version(bcrypt::Version::TwoY);
    format!("{username}:{hash}")
}

/// The htpasswd of `username`/`password` as stored: reused, so no hash is made in these tests.
fn stored_htpasswd(username: &str, password: &str) -> Secret {
    let data = [(HTPASSWD_KEY.to_string(), ByteString(htpasswd_line(username, password).into_bytes()))];
    Secret { data: Some(data.into()), ..Default::default() }
}

/// What dereference and validate would give for `ironic`, whose user credentials are
/// `admin`/`pw`.
fn found_and_valid(ironic: &Ironic) -> (Found, Valid) {
    let found = found(ironic);
    let valid = validate::run(ironic, &found, &Config::default(), &mut Notices::default()).expect("valid");
    (found, valid)
}

/// What dereference would give for `ironic`: every linked Secret holds `admin`/`pw`.
fn found(ironic: &Ironic) -> Found {
    Found {
        linked: crate::ironic::linked::references(&ironic.spec)
            .into_iter()
            .map(|r| {
                let source = secret_source(&r.name, &[("username", "admin"), ("password", "pw")]);
                (r, Some(source))
            })
            .collect(),
        credentials: Stored { generated: None, htpasswd: Some(stored_htpasswd("admin", "pw")) },
        tls: Default::default(),
        node_ips: Vec::new(),
        node_ips_forbidden: false,
    }
}

fn database(schema: Option<SchemaRevision>, password: &str) -> DatabaseOutcome {
    let connection = Connection {
        host: "mariadb.metal3.svc".into(),
        port: 3306,
        name: "ironic".into(),
        credentials_secret: "ironic-db".into(),
        tls_ca: None::<SecretKeyRef>,
        managed: false,
    };
    DatabaseOutcome {
        connection: Some(connection),
        schema,
        mounted: vec![secret_source("ironic-db", &[("username", "ironic"), ("password", password)])],
        ..DatabaseOutcome::sqlite()
    }
}

fn installed(mut ironic: Ironic, version: &str) -> Ironic {
    ironic.status = Some(IronicStatus { installed_version: Some(version.into()), ..Default::default() });
    ironic
}

/// `yaml` with the explicit opt-out of the default TLS mode.
fn without_tls(yaml: &str) -> String {
    yaml.replace("  version:", "  tls:\n    disabled: true\n  version:")
}

async fn resolve(ironic: &Ironic, database: &DatabaseOutcome) -> Resolved {
    let (found, valid) = found_and_valid(ironic);
    run(ironic, &found, &valid, database, &Config::default(), 1_000_000).await.expect("resolves")
}

#[tokio::test]
async fn the_users_credentials_are_used_and_none_are_generated() {
    let ironic = fixtures::ironic(fixtures::WITH_DATABASE);
    let resolved = resolve(&ironic, &database(None, "one")).await;
    let credentials = &resolved.credentials;
    assert_eq!((credentials.secret_name.as_str(), credentials.username.as_str()), ("api-credentials", "admin"));
    assert!(!credentials.generated && !credentials.newly_generated);
    assert!(credentials.htpasswd.starts_with("admin:$2y$04$"), "the stored htpasswd is kept: {}", credentials.htpasswd);
}

#[tokio::test]
async fn the_content_hash_follows_the_databases_secrets_as_the_database_reported_them() {
    // Without TLS: with none stored, the default Auto mode would mint a new CA each time.
    let ironic = fixtures::ironic(&without_tls(fixtures::WITH_DATABASE));
    let one = resolve(&ironic, &database(None, "one")).await;
    let again = resolve(&ironic, &database(None, "one")).await;
    let rotated = resolve(&ironic, &database(None, "two")).await;
    assert_eq!(one.content_hash, again.content_hash, "the same content, the same hash");
    assert_ne!(one.content_hash, rotated.content_hash, "a new database password rolls the pods");
}

#[tokio::test]
async fn a_first_installation_with_a_database_runs_the_upgrade_jobs_from_nothing() {
    let resolved = resolve(&fixtures::ironic(fixtures::WITH_DATABASE), &database(None, "one")).await;
    assert_eq!(resolved.upgrade, Some(UpgradeVersions { from: None, to: "38.0".into() }));
    assert!(!resolved.schema_missing);
    assert_eq!(resolved.database.as_ref().map(|c| c.host_with_port()).as_deref(), Some("mariadb.metal3.svc"));
}

#[tokio::test]
async fn a_database_without_an_ironic_schema_gets_the_schema_job_although_the_version_did_not_change() {
    let ironic = installed(fixtures::ironic(fixtures::WITH_DATABASE), "38.0");
    let up_to_date = resolve(&ironic, &database(Some(SchemaRevision::At("4dbec778866e".into())), "one")).await;
    assert_eq!(up_to_date.upgrade, None);
    let emptied = resolve(&ironic, &database(Some(SchemaRevision::Missing), "one")).await;
    assert_eq!(emptied.upgrade, Some(UpgradeVersions { from: Some("38.0".into()), to: "38.0".into() }));
    assert!(emptied.schema_missing);
}

#[tokio::test]
async fn going_back_with_a_database_is_planned_as_a_refused_downgrade_without_jobs() {
    let ironic = installed(fixtures::ironic(&fixtures::WITH_DATABASE.replace("\"38.0\"", "\"37.0\"")), "38.0");
    let resolved = resolve(&ironic, &database(None, "one")).await;
    assert_eq!(resolved.plan, VersionPlan::DowngradeRefused { installed: "38.0".into(), requested: "37.0".into() });
    assert_eq!(resolved.upgrade, None);
}

#[tokio::test]
async fn networking_and_the_spec_settings_are_resolved_once_for_the_builders() {
    let yaml = fixtures::WITH_DATABASE
        .replace("  version:", "  highAvailability: true\n  networking:\n    apiPort: 7385\n  version:");
    let resolved = resolve(&fixtures::ironic(&yaml), &database(None, "one")).await;
    assert_eq!(resolved.network.api_port, 7385);
    assert!(resolved.settings.high_availability);
    assert!(resolved.network.serves_tls, "without TLS settings the API is served with the Auto CA");
    assert_eq!((resolved.names.ironic.as_str(), resolved.namespace.as_str()), ("ironic", "metal3"));
    assert!(resolved.owner.as_ref().is_some_and(|o| o.kind == "Ironic" && o.controller == Some(true)));
}

#[tokio::test]
async fn only_an_auto_certificate_asks_to_be_looked_at_again_for_its_renewal() {
    let mut resolved = resolve(&fixtures::ironic(&without_tls(fixtures::WITH_DATABASE)), &database(None, "one")).await;
    assert!(!resolved.network.serves_tls);
    assert_eq!(resolved.renewal_after(1_000), None, "no TLS");
    resolved.tls = fixtures::resolved(&fixtures::ironic(AUTO), None).tls;
    if let Some(material) = resolved.tls.material.as_mut() {
        material.renewal_at = Some(1_600);
    }
    assert_eq!(resolved.renewal_after(1_000), Some(Duration::from_secs(600)));
    // A time already past is a step of the CA's renewal waiting for the pods' rollout, which
    // is watched: no look of its own.
    assert_eq!(resolved.renewal_after(5_000), None, "past");
}

const AUTO: &str = r#"
apiVersion: ironic.metal3.io/v1alpha1
kind: Ironic
metadata:
  name: ironic
spec:
  tls:
    mode: Auto
"#;

/// The content hash of `yaml`'s pod template when the user's certificate Secret holds `cert`.
async fn hash_with_certificate(yaml: &str, cert: &str) -> String {
    let ironic = fixtures::ironic(yaml);
    let mut found = found(&ironic);
    for (reference, source) in &mut found.linked {
        if reference.name == "ironic-cert" {
            *source = Some(secret_source("ironic-cert", &[("tls.crt", cert), ("tls.key", "key")]));
        }
    }
    let valid = validate::run(&ironic, &found, &Config::default(), &mut Notices::default()).expect("valid");
    let resolved = run(&ironic, &found, &valid, &database(None, "one"), &Config::default(), 1_000_000).await;
    resolved.expect("resolves").content_hash
}

#[tokio::test]
async fn a_renewed_certificate_is_reloaded_by_the_one_pod_and_rolls_a_daemonsets_pods() {
    let with_certificate = fixtures::WITH_DATABASE
        .replace("  version:", "  tls:\n    mode: Secret\n    certificateName: ironic-cert\n  version:");
    let one = hash_with_certificate(&with_certificate, "first").await;
    let renewed = hash_with_certificate(&with_certificate, "renewed").await;
    assert_eq!(one, renewed, "the Deployment's pod reloads the certificate: its template stays");

    let high_availability = with_certificate.replace("  version:", "  highAvailability: true\n  version:");
    let one = hash_with_certificate(&high_availability, "first").await;
    let renewed = hash_with_certificate(&high_availability, "renewed").await;
    assert_ne!(one, renewed, "a DaemonSet's Ironic reads its certificate at start: its pods roll");
}
