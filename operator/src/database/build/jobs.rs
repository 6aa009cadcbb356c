//! The Jobs of a MariaDB version change: the logical backup before it (`mariadb-dump` of
//! Ironic's database to the backup volume, keeping the newest N) as the maintenance account,
//! and `mariadb-upgrade` after the new server started, as the upgrade account that exists
//! only for it ([`crate::database::account`]). Both connect to the Service over the network,
//! with TLS when the database serves it; the password comes from the maintenance Secret as
//! `MYSQL_PWD`, which the MariaDB clients read, so it never appears on a command line.

use super::{CLIENT_CA_DIR, Inputs, container_security, env, mount, pod_security, secret_env, secret_volume};
use crate::database::account::UPGRADE_USER;
use crate::database::connection::{CA_KEY, MANAGED_DATABASE_NAME, MARIADB_PORT, PASSWORD_KEY, USERNAME_KEY};
use crate::database::names::JOB_LABEL;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Volume};
use kube::api::ObjectMeta;

/// Where the backup volume is mounted in the backup Job.
pub const BACKUP_DIR: &str = "/backup";
const BACKUP_VOLUME: &str = "backup";
const CA_VOLUME: &str = "mariadb-ca";

/// Which Job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Backup,
    Upgrade,
}

impl Kind {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Backup => "backup",
            Self::Upgrade => "mariadb-upgrade",
        }
    }
}

/// Client options every Job passes: where to connect, and how to verify the server.
fn connect_options(inputs: &Inputs<'_>) -> String {
    let mut options = String::from(r#"--host="$DB_HOST" --port="$DB_PORT" --user="$DB_USER""#);
    if inputs.tls.is_some() {
        options.push_str(&format!(" --ssl --ssl-ca={CLIENT_CA_DIR}/{CA_KEY} --ssl-verify-server-cert"));
    }
    options
}

/// `mariadb-upgrade` against the new server: it upgrades the system tables to the new
/// version and checks the user tables, and is a no-op when there is nothing to do.
pub fn upgrade_script(inputs: &Inputs<'_>) -> String {
    format!("set -eu\nexec mariadb-upgrade {} --verbose\n", connect_options(inputs))
}

/// A consistent dump of Ironic's database (one transaction, InnoDB), compressed, written under
/// a temporary name and renamed when complete, then all but the newest `$BACKUP_KEEP` dumps
/// of this database removed. File names start with the StatefulSet's name and sort by time.
/// Ironic's database alone: the system database (accounts and their password hashes) is not
/// the maintenance account's to read, and a fresh managed server makes its accounts from the
/// Secrets anyway, so a restore needs only Ironic's data.
pub fn backup_script(inputs: &Inputs<'_>) -> String {
    format!(
        r#"set -euo pipefail
umask 077
target="{BACKUP_DIR}/$BACKUP_FILE"
mariadb-dump {} --single-transaction --routines --events --triggers --databases {MANAGED_DATABASE_NAME} | gzip > "$target.partial"
mv "$target.partial" "$target"
ls -1 {BACKUP_DIR}/"$BACKUP_PREFIX"-*.sql.gz | sort -r | tail -n +"$((BACKUP_KEEP + 1))" | xargs -r rm -f --
echo "wrote $target"
"#,
        connect_options(inputs)
    )
}

/// The dump's file name: `<statefulset>-<UTC time>-<server version>.sql.gz`. `started_at` is
/// the version change's start (Unix seconds), so every attempt of one change names the same
/// file and a retried Job replaces a partial one.
pub(crate) fn backup_file(prefix: &str, started_at: i64, server_version: Option<&str>) -> String {
    let time = time::OffsetDateTime::from_unix_timestamp(started_at).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second()
    );
    let version: String = server_version
        .and_then(|v| v.split('-').next())
        .unwrap_or("unknown")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    format!("{prefix}-{stamp}-{version}.sql.gz")
}

/// The backup Job: `image` is the running server's, so the dump tool matches the server.
pub(crate) fn backup(inputs: &Inputs<'_>, name: &str, image: &str, file: &str, keep: i32) -> Job {
    let mut extra_env = vec![
        env("BACKUP_FILE", file),
        env("BACKUP_PREFIX", inputs.names.stateful_set()),
        env("BACKUP_KEEP", keep.max(1).to_string()),
    ];
    let volume = Volume {
        name: BACKUP_VOLUME.to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: inputs.names.backup_claim(),
            read_only: None,
        }),
        ..Default::default()
    };
    let script = backup_script(inputs);
    render(inputs, Kind::Backup, name, image, &script, &mut extra_env, vec![(volume, BACKUP_DIR)])
}

/// The `mariadb-upgrade` Job: `image` is the new server's.
pub(crate) fn upgrade(inputs: &Inputs<'_>, name: &str, image: &str) -> Job {
    render(inputs, Kind::Upgrade, name, image, &upgrade_script(inputs), &mut Vec::new(), Vec::new())
}

fn render(
    inputs: &Inputs<'_>,
    kind: Kind,
    name: &str,
    image: &str,
    script: &str,
    extra_env: &mut Vec<k8s_openapi::api::core::v1::EnvVar>,
    extra_volumes: Vec<(Volume, &str)>,
) -> Job {
    let names = inputs.names;
    // Not the StatefulSet's selector label: a Job's pod must never become a Service endpoint.
    let mut labels = names.owner_labels();
    labels.insert(JOB_LABEL.to_string(), kind.label().to_string());
    let user = match kind {
        Kind::Backup => secret_env("DB_USER", &names.maintenance(), USERNAME_KEY),
        // The account the new server's init file made for this Job; it shares the password.
        Kind::Upgrade => env("DB_USER", UPGRADE_USER),
    };
    let mut environment = vec![
        env("DB_HOST", inputs.host.clone()),
        env("DB_PORT", MARIADB_PORT.to_string()),
        user,
        secret_env("MYSQL_PWD", &names.maintenance(), PASSWORD_KEY),
    ];
    environment.append(extra_env);
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (volume, path) in extra_volumes {
        mounts.push(mount(&volume.name, path, false));
        volumes.push(volume);
    }
    if inputs.tls.is_some() {
        volumes.push(secret_volume(CA_VOLUME, &names.client_ca()));
        mounts.push(mount(CA_VOLUME, CLIENT_CA_DIR, true));
    }
    let container = Container {
        name: kind.label().to_string(),
        image: Some(image.to_string()),
        command: Some(vec!["bash".to_string(), "-c".to_string(), script.to_string()]),
        env: Some(environment),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        resources: inputs.managed.resources.clone(),
        security_context: Some(container_security()),
        // mariadb-upgrade and mariadb-dump write no termination message: the log's tail is
        // what the Degraded condition can quote.
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Default::default()
    };
    Job {
        metadata: inputs.meta(name.to_string(), labels.clone()),
        spec: Some(JobSpec {
            backoff_limit: Some(inputs.job_backoff_limit.max(0)),
            active_deadline_seconds: Some(inputs.job_deadline_seconds.max(60)),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..Default::default() }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    volumes: (!volumes.is_empty()).then_some(volumes),
                    restart_policy: Some("Never".to_string()),
                    security_context: Some(pod_security()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_files_sort_by_time_and_name_the_version() {
        // 2026-08-01T08:00:00Z
        let file = backup_file("ironic-mariadb", 1_785_571_200, Some("10.11.9-MariaDB-ubu2204"));
        assert_eq!(file, "ironic-mariadb-20260801T080000Z-10.11.9.sql.gz");
        assert_eq!(backup_file("db", 0, None), "db-19700101T000000Z-unknown.sql.gz");
        let later = backup_file("ironic-mariadb", 1_785_571_200 + 86_400, Some("10.11.9"));
        assert!(later > file, "names sort by time");
    }
}
