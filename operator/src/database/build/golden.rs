//! Golden tests of the builders: each case renders every object of one managed database and
//! compares them with `operator/src/database/testdata/<case>.yaml`. After an intended change,
//! regenerate with `FERROMETAL_UPDATE_GOLDEN=1 cargo test -p operator --lib database::build`
//! and review the diff.

use super::{ClaimSettings, Inputs, jobs, service, stateful_set, storage};
use crate::database::account::{self, UpgradeAccount};
use crate::database::credentials::{self, Credentials, Password};
use crate::database::names::Names;
use crate::database::tls::{self, Generated, Material};
use crate::pki::CertifiedPem;
use crds::ironic::{Ironic, ManagedDatabase};
use serde_json::Value;

fn ironic(yaml: &str) -> Ironic {
    let mut ironic: Ironic = serde_saphyr::from_str(yaml).expect("fixture parses");
    ironic.metadata.uid = Some("6f1e3c1a-0000-4000-8000-000000000001".to_string());
    ironic
}

fn typed<K: serde::Serialize>(object: &K) -> Value {
    // k8s-openapi writes apiVersion and kind itself.
    serde_json::to_value(object).expect("serializes")
}

fn fake_material(names: &Names) -> Material {
    Material {
        serving_secret: names.tls_serving(),
        ca_pem: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n".into(),
        digest: "0123456789abcdef0123456789abcdef".into(),
        generated: Some(Generated {
            ca: CertifiedPem { cert: "CA-CERT".into(), key: "CA-KEY".into() },
            serving: CertifiedPem { cert: "SERVING-CERT".into(), key: "SERVING-KEY".into() },
            issued: None,
            renew_at: None,
        }),
    }
}

fn inputs<'a>(
    ironic: &'a Ironic,
    names: &'a Names,
    managed: &'a ManagedDatabase,
    image: &'a str,
    tls: Option<&'a Material>,
) -> Inputs<'a> {
    let storage = managed.storage.clone().unwrap_or_default();
    Inputs {
        ironic,
        names,
        namespace: "metal3",
        managed,
        host: names.host("metal3", "cluster.local"),
        image,
        claim: ClaimSettings { size: storage.size(), storage_class: storage.storage_class_name },
        tls,
        require_tls: tls.is_some(),
        account_digest: account::digest(&account::password_hash(&maintenance().password)),
        job_backoff_limit: 2,
        job_deadline_seconds: 3600,
    }
}

fn maintenance() -> Credentials {
    Credentials { username: account::MAINTENANCE_USER.into(), password: Password::new("maintenance-password") }
}

fn render_case(yaml: &str) -> String {
    let ironic = ironic(yaml);
    let managed = ironic.spec.database.clone().and_then(|d| d.managed).expect("a managed database");
    let names = Names::of(&ironic);
    let material = tls::enabled(&managed).then(|| fake_material(&names));
    let image = managed.image();
    let inputs = inputs(&ironic, &names, &managed, &image, material.as_ref());
    let meta = inputs.secret_meta();
    let admin = Credentials { username: "root".into(), password: Password::new("admin-password") };
    let user = Credentials { username: "ironic".into(), password: Password::new("ironic-password") };
    let hash = account::password_hash(&maintenance().password);
    let mut docs = vec![
        typed(&stateful_set::render(&inputs)),
        typed(&service::render(&inputs)),
        typed(&credentials::render(&names.admin(), meta.clone(), &admin)),
        typed(&credentials::render(&names.credentials(), meta.clone(), &user)),
        typed(&credentials::render(&names.maintenance(), meta.clone(), &maintenance())),
        typed(&account::render_init(&names, meta.clone(), &account::init_sql(&hash, UpgradeAccount::Absent))),
    ];
    if let Some(material) = &material {
        if let Some(generated) = &material.generated {
            docs.push(typed(&tls::render_ca(&names, meta.clone(), generated)));
            docs.push(typed(&tls::render_serving(&names, meta.clone(), generated)));
        }
        docs.push(typed(&tls::render_client_ca(&names, meta.clone(), material)));
    }
    let to = "docker.io/library/mariadb:11.8";
    if let Some(backup) = &managed.backup {
        let settings = backup.storage.clone().unwrap_or_default();
        let claim = ClaimSettings { size: settings.size(), storage_class: settings.storage_class_name.clone() };
        docs.push(typed(&storage::backup_claim(&inputs, &claim)));
        let file = jobs::backup_file(&names.stateful_set(), 1_785_571_200, Some("11.4.5-MariaDB"));
        docs.push(typed(&jobs::backup(&inputs, &names.backup_job(&image, to, 1), &image, &file, backup.keep())));
    }
    docs.push(typed(&jobs::upgrade(&inputs, &names.upgrade_job(&image, to, 1), to)));
    docs.iter().map(|d| serde_saphyr::to_string(d).expect("yaml")).collect::<Vec<_>>().join("---\n")
}

fn check(case: &str, rendered: String) {
    let path = crate::source_tree::manifest_dir().join("src/database/testdata").join(format!("{case}.yaml"));
    if std::env::var("FERROMETAL_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("testdata dir");
        std::fs::write(&path, &rendered).expect("write golden");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        expected,
        rendered,
        "{} is stale; regenerate with FERROMETAL_UPDATE_GOLDEN=1 cargo test -p operator --lib database::build",
        path.display()
    );
}

/// An Ironic whose `spec.database.managed` is `managed` (YAML, indented for its place).
fn with_managed(managed: &str) -> String {
    format!(
        "apiVersion: ironic.metal3.io/v1alpha1\nkind: Ironic\nmetadata: {{name: ironic, namespace: metal3}}\n\
         spec:\n  database:\n    managed:{managed}\n"
    )
}

/// An Ironic whose `spec.database.managed` is `managed`, its managed database and its names.
fn case(managed: &str) -> (Ironic, ManagedDatabase, Names) {
    let ironic = ironic(&with_managed(managed));
    let database = ironic.spec.database.clone().and_then(|d| d.managed).expect("a managed database");
    let names = Names::of(&ironic);
    (ironic, database, names)
}

#[test]
fn golden_minimal_managed_database() {
    check("minimal", render_case(&with_managed(" {}")));
}

#[test]
fn golden_managed_database_opted_out_of_tls() {
    check("no-tls", render_case(&with_managed(" {tls: {enabled: false}}")));
}

#[test]
fn golden_full_managed_database_with_tls_and_backups() {
    let managed = r#"
      version: "11.4"
      terminationGracePeriodSeconds: 600
      resources:
        requests: {cpu: 250m, memory: 512Mi}
        limits: {memory: 1Gi}
      storage: {size: 20Gi, storageClassName: fast}
      backup:
        enabled: true
        keep: 5
        storage: {size: 50Gi, storageClassName: slow}"#;
    check("full", render_case(&with_managed(managed)));
}

#[test]
fn the_statefulset_has_the_slow_shutdown_hook_and_its_grace_period() {
    let (ironic, managed, names) = case(" {}");
    let inputs = inputs(&ironic, &names, &managed, "docker.io/library/mariadb:11.4", None);
    let sts = stateful_set::render(&inputs);
    let spec = sts.spec.expect("spec");
    assert_eq!(spec.replicas, Some(1));
    let pod = spec.template.spec.expect("pod");
    assert_eq!(pod.termination_grace_period_seconds, Some(300));
    let hook = pod.containers[0].lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()).and_then(|p| p.exec.as_ref());
    let script = hook.and_then(|e| e.command.as_ref()).map(|c| c.join(" ")).unwrap_or_default();
    assert!(script.contains("SET GLOBAL innodb_fast_shutdown = 0"), "{script}");
    // Asks and returns: a hook still waiting when the server (the container's first process)
    // exits is killed with it and reported failed.
    assert!(script.contains("exec mariadb --protocol=socket --user=root --execute='SHUTDOWN'"), "{script}");
    assert!(!script.contains("mariadb-admin"), "{script}");
    assert!(!script.contains("admin-password"));
    let claim = &spec.volume_claim_templates.expect("claims")[0];
    assert_eq!(claim.metadata.name.as_deref(), Some("data"));
    // Job pods never carry the selector label, so the Service never routes to them.
    let job = jobs::upgrade(&inputs, "j", "img");
    let labels = job.spec.and_then(|s| s.template.metadata).and_then(|m| m.labels).unwrap_or_default();
    assert!(!labels.contains_key(crate::database::names::DATABASE_LABEL));
}

#[test]
fn root_stays_on_the_socket_and_the_jobs_run_as_their_own_accounts() {
    let (ironic, managed, names) = case(" {}");
    let inputs = inputs(&ironic, &names, &managed, "docker.io/library/mariadb:11.4", None);
    let sts = stateful_set::render(&inputs);
    let template = sts.spec.expect("spec").template;
    let pod = template.spec.expect("pod");
    let container = &pod.containers[0];
    let env = |name: &str| container.env.iter().flatten().find(|e| e.name == name).cloned().expect(name);
    assert_eq!(env("MARIADB_ROOT_HOST").value.as_deref(), Some("localhost"), "no root over the network");
    let args = container.args.clone().unwrap_or_default();
    assert!(args.contains(&"--init-file=/etc/mysql/ferrometal/init.sql".to_string()), "{args:?}");
    assert!(args.contains(&"--innodb-fast-shutdown=0".to_string()), "every stop is the slow one: {args:?}");
    let init = pod.volumes.iter().flatten().find(|v| v.name == "init").and_then(|v| v.secret.clone());
    assert_eq!(init.and_then(|s| s.secret_name), Some(names.init()));
    let annotations = template.metadata.and_then(|m| m.annotations).unwrap_or_default();
    assert_eq!(
        annotations.get(crate::database::names::ACCOUNT_HASH_ANNOTATION),
        Some(&inputs.account_digest),
        "a new maintenance password restarts the server"
    );

    let job_env = |job: &k8s_openapi::api::batch::v1::Job| {
        let container = job.spec.as_ref().and_then(|s| s.template.spec.as_ref()).map(|p| p.containers[0].clone());
        container.and_then(|c| c.env).unwrap_or_default()
    };
    let secret_of = |env: &[k8s_openapi::api::core::v1::EnvVar], name: &str| {
        let var = env.iter().find(|e| e.name == name)?;
        var.value.clone().or_else(|| {
            let key = var.value_from.as_ref()?.secret_key_ref.as_ref()?;
            Some(format!("{}/{}", key.name, key.key))
        })
    };
    let backup = jobs::backup(&inputs, "b", "img", "f.sql.gz", 3);
    let upgrade = jobs::upgrade(&inputs, "u", "img");
    let (backup_env, upgrade_env) = (job_env(&backup), job_env(&upgrade));
    assert_eq!(secret_of(&backup_env, "DB_USER"), Some(format!("{}/username", names.maintenance())));
    assert_eq!(secret_of(&upgrade_env, "DB_USER").as_deref(), Some(account::UPGRADE_USER));
    for env in [&backup_env, &upgrade_env] {
        assert_eq!(secret_of(env, "MYSQL_PWD"), Some(format!("{}/password", names.maintenance())));
        let text = serde_json::to_string(env).expect("json");
        assert!(!text.contains(&names.admin()), "root's Secret stays in the MariaDB pod: {text}");
    }
    let script = jobs::backup_script(&inputs);
    assert!(script.contains("--databases ironic") && !script.contains("--all-databases"), "{script}");
}

#[test]
fn tls_is_served_by_default_and_not_after_the_opt_out() {
    let args_of = |yaml: &str| {
        let (ironic, managed, names) = case(yaml);
        let material = tls::enabled(&managed).then(|| fake_material(&names));
        let inputs = inputs(&ironic, &names, &managed, "img", material.as_ref());
        let sts = stateful_set::render(&inputs);
        sts.spec.and_then(|s| s.template.spec).map(|p| p.containers[0].args.clone().unwrap_or_default())
    };
    let default = args_of(" {}").unwrap_or_default();
    assert!(default.contains(&"--require-secure-transport=ON".to_string()), "{default:?}");
    assert!(default.iter().any(|a| a.starts_with("--ssl-cert=")), "{default:?}");
    let opted_out = args_of(" {tls: {enabled: false}}").unwrap_or_default();
    assert!(!opted_out.iter().any(|a| a.contains("ssl") || a.contains("secure-transport")), "{opted_out:?}");
}
