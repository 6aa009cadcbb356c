//! The accounts of a managed MariaDB, as the server itself applies them at every start from
//! its init file (`--init-file`, the Secret `<name>-mariadb-init`):
//! - `root` only on the pod's socket: every entry of `root` but `'root'@'localhost'` is
//!   dropped (`'root'@'%'`, which the official image creates for `MARIADB_ROOT_HOST=%`, as
//!   deployments before this account had it; any other a person added);
//! - the maintenance account, the network account of the operator's checks and the backup
//!   Job, with exactly [`MAINTENANCE_GRANTS`];
//! - the upgrade account, for the `mariadb-upgrade` Job, which only exists while a version
//!   change runs it ([`UpgradeAccount`]): `mariadb-upgrade` rewrites the system tables, which
//!   takes privileges equal to root's.
//!
//! Why an init file: the server applies it before it accepts a connection, on a fresh data
//! directory (the image's entrypoint passes the server's arguments to its temporary server)
//! and on an existing one alike, at every start, so a crash anywhere converges at the next
//! start and a new password only needs a restart. Every statement is idempotent and none can
//! fail on any state of the grant tables (MariaDB 10.11 stops reading the file at the first
//! error and starts anyway). The file carries the password's `mysql_native_password` hash, never
//! the password, so no quoting of a user's password can go wrong.

use super::credentials::Password;
use super::names::Names;
use crds::ironic::status::{DatabaseUpgradeStatus, DatabaseUpgradeStep as Step};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use sha1::Sha1;

/// The maintenance account: the operator's checks and the backup Job.
pub const MAINTENANCE_USER: &str = "ferrometal-maintenance";
/// The upgrade account: the `mariadb-upgrade` Job, during a version change only. It shares the
/// maintenance account's password (one Secret, one rotation).
pub const UPGRADE_USER: &str = "ferrometal-upgrade";
/// The key of the init file in its Secret.
pub const INIT_KEY: &str = "init.sql";

/// The privileges of the maintenance account, each with the reason it is needed (measured
/// against MariaDB 10.11; `tests/tests/database/account.rs` runs the Jobs' scripts and the
/// checks as the account):
/// - the checks read `VERSION()`, `@@GLOBAL.innodb_fast_shutdown` and Ironic's
///   `alembic_version` as Ironic's own user: none needs a privilege of this account;
/// - `mariadb-dump --single-transaction --routines --events --triggers --databases ironic`
///   needs `SELECT` (tables), `SHOW VIEW` (views), `TRIGGER` (without it triggers are left out
///   silently) and `EVENT` (`SHOW EVENTS`) on Ironic's database, and `SELECT` on `mysql.proc`
///   to write the bodies of stored routines (without it they are left out silently). One
///   consistent transaction takes no `LOCK TABLES`.
///
/// Not granted, and refused: any write, any other database (`mysql.user` and its password
/// hashes included), `SUPER` (`SET GLOBAL` of anything), account management.
pub(crate) const MAINTENANCE_GRANTS: [(&str, &str); 2] =
    [("SELECT, SHOW VIEW, TRIGGER, EVENT", "`ironic`.*"), ("SELECT", "`mysql`.`proc`")];

/// The privileges of the upgrade account: `mariadb-upgrade` alters and fills the system tables
/// (`mysql.*`, `sys`), checks every table, and flushes privileges. Nothing short of every
/// privilege on every database let it finish (10.11: `SUPER` and `SELECT` stop at the `sys`
/// schema), and write access to `mysql.*` is equal to root's anyway. No `GRANT OPTION`: the
/// upgrade does not need it.
pub(crate) const UPGRADE_GRANTS: (&str, &str) = ("ALL PRIVILEGES", "*.*");

/// Whether the upgrade account exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeAccount {
    /// Dropped at every start: no version change is running `mariadb-upgrade`.
    Absent,
    /// Created at start: the new server of a version change, until `mariadb-upgrade` ran.
    Present,
}

impl UpgradeAccount {
    /// From the version change as persisted: present from the roll (the new server starts
    /// with it) until `mariadb-upgrade` succeeded, and while the change is halted at one of
    /// those two steps (a retry needs it).
    pub fn during(upgrade: Option<&DatabaseUpgradeStatus>) -> Self {
        let window = |step: Option<Step>| matches!(step, Some(Step::RollingOut | Step::RunningMariadbUpgrade));
        match upgrade {
            Some(u) if window(u.step) || (u.step == Some(Step::Failed) && window(u.failed_step)) => Self::Present,
            _ => Self::Absent,
        }
    }
}

/// The `mysql_native_password` hash of `password`, as `PASSWORD()` computes it:
/// `*` and the upper-case hex of SHA1(SHA1(password)).
pub fn password_hash(password: &Password) -> String {
    use sha1::Digest as _;
    let stage = Sha1::digest(password.expose().as_bytes());
    format!("*{}", hex::encode_upper(Sha1::digest(stage)))
}

/// A digest of the password hash for the pod template: a new password restarts the server.
pub(crate) fn digest(hash: &str) -> String {
    crate::kit::digest::short(hash.as_bytes(), 16)
}

fn account(user: &str) -> String {
    format!("'{user}'@'%'")
}

/// Creates `user` if needed, sets its password and unlocks it, and leaves it exactly `grants`.
fn ensure(user: &str, hash: &str, grants: &[(&str, &str)]) -> Vec<String> {
    let who = account(user);
    let mut statements = vec![
        format!("CREATE USER IF NOT EXISTS {who} IDENTIFIED BY PASSWORD '{hash}';"),
        format!("ALTER USER {who} IDENTIFIED BY PASSWORD '{hash}' ACCOUNT UNLOCK;"),
        format!("REVOKE ALL PRIVILEGES, GRANT OPTION FROM {who};"),
    ];
    statements.extend(grants.iter().map(|(privileges, on)| format!("GRANT {privileges} ON {on} TO {who};")));
    statements
}

/// Drops every `root` but the socket's, whichever there are: `EXECUTE IMMEDIATE` takes no
/// subquery, so the statement is made in a variable first (`DO 0` when there is none).
pub(crate) const DROP_NETWORK_ROOT: [&str; 2] = [
    "SET @ferrometal_drop_root = (SELECT COALESCE(CONCAT('DROP USER IF EXISTS ', \
     GROUP_CONCAT(CONCAT(QUOTE(User), '@', QUOTE(Host)))), 'DO 0') FROM mysql.user \
     WHERE User = 'root' AND Host <> 'localhost');",
    "EXECUTE IMMEDIATE @ferrometal_drop_root;",
];

/// The init file: one statement a line, `root`'s network entries dropped first, so that an
/// error further down cannot leave them. `hash` is [`password_hash`] of the maintenance password.
pub fn init_sql(hash: &str, upgrade: UpgradeAccount) -> String {
    let mut statements: Vec<String> = DROP_NETWORK_ROOT.iter().map(|s| s.to_string()).collect();
    match upgrade {
        UpgradeAccount::Absent => statements.push(format!("DROP USER IF EXISTS {};", account(UPGRADE_USER))),
        UpgradeAccount::Present => statements.extend(ensure(UPGRADE_USER, hash, &[UPGRADE_GRANTS])),
    }
    statements.extend(ensure(MAINTENANCE_USER, hash, &MAINTENANCE_GRANTS));
    let mut sql = statements.join("\n");
    sql.push('\n');
    sql
}

/// The Secret the MariaDB pod mounts its init file from.
pub(crate) fn render_init(names: &Names, meta: ObjectMeta, sql: &str) -> Secret {
    Secret {
        metadata: ObjectMeta { name: Some(names.init()), ..meta },
        data: Some([(INIT_KEY.to_string(), ByteString(sql.as_bytes().to_vec()))].into()),
        type_: Some("Opaque".to_string()),
        ..Default::default()
    }
}

/// The statement with which the upgrade account removes itself once `mariadb-upgrade` ran; the
/// init file drops it at every later start too.
pub(crate) fn drop_upgrade_account() -> String {
    format!("DROP USER IF EXISTS {}", account(UPGRADE_USER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> String {
        password_hash(&Password::new("maint-pw"))
    }

    #[test]
    fn the_hash_is_what_mariadb_password_computes() {
        // SELECT PASSWORD('maint-pw') on MariaDB 10.11.
        assert_eq!(hash(), "*2E304E7C31EEA9C27BA14AD83E6B76003AAC14E4");
        assert_eq!(password_hash(&Password::new("it's \\ \"quoted\"\n")).len(), 41, "any password hashes");
    }

    #[test]
    fn the_init_file_restricts_root_first_and_grants_the_maintenance_account_exactly_its_privileges() {
        let sql = init_sql(&hash(), UpgradeAccount::Absent);
        let lines: Vec<&str> = sql.lines().collect();
        assert_eq!(
            lines,
            [
                "SET @ferrometal_drop_root = (SELECT COALESCE(CONCAT('DROP USER IF EXISTS ', \
                 GROUP_CONCAT(CONCAT(QUOTE(User), '@', QUOTE(Host)))), 'DO 0') FROM mysql.user WHERE User = 'root' \
                 AND Host <> 'localhost');",
                "EXECUTE IMMEDIATE @ferrometal_drop_root;",
                "DROP USER IF EXISTS 'ferrometal-upgrade'@'%';",
                "CREATE USER IF NOT EXISTS 'ferrometal-maintenance'@'%' IDENTIFIED BY PASSWORD \
                 '*2E304E7C31EEA9C27BA14AD83E6B76003AAC14E4';",
                "ALTER USER 'ferrometal-maintenance'@'%' IDENTIFIED BY PASSWORD \
                 '*2E304E7C31EEA9C27BA14AD83E6B76003AAC14E4' ACCOUNT UNLOCK;",
                "REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'ferrometal-maintenance'@'%';",
                "GRANT SELECT, SHOW VIEW, TRIGGER, EVENT ON `ironic`.* TO 'ferrometal-maintenance'@'%';",
                "GRANT SELECT ON `mysql`.`proc` TO 'ferrometal-maintenance'@'%';",
            ]
        );
        assert!(!sql.contains("maint-pw"), "the file holds the hash, never the password");
        for forbidden in ["SUPER", "*.*", "GRANT OPTION ON", "WITH GRANT OPTION", "mysql`.*", "mysql`.`user"] {
            assert!(!sql.contains(forbidden), "{forbidden} in {sql}");
        }
    }

    #[test]
    fn the_upgrade_account_exists_only_while_a_version_change_runs_mariadb_upgrade() {
        let sql = init_sql(&hash(), UpgradeAccount::Present);
        assert!(sql.contains("GRANT ALL PRIVILEGES ON *.* TO 'ferrometal-upgrade'@'%';"), "{sql}");
        assert!(!sql.contains("DROP USER IF EXISTS 'ferrometal-upgrade'"), "{sql}");
        assert!(!sql.contains("WITH GRANT OPTION"));
        assert!(sql.starts_with(DROP_NETWORK_ROOT[0]), "root's network entries go first: {sql}");
        let at = |step: Step, failed: Option<Step>| {
            let status = DatabaseUpgradeStatus { step: Some(step), failed_step: failed, ..Default::default() };
            UpgradeAccount::during(Some(&status))
        };
        assert_eq!(UpgradeAccount::during(None), UpgradeAccount::Absent);
        for step in [Step::Backup, Step::SlowShutdownEnabled, Step::VerifyingVersion, Step::Completed] {
            assert_eq!(at(step, None), UpgradeAccount::Absent, "{step:?}");
        }
        for step in [Step::RollingOut, Step::RunningMariadbUpgrade] {
            assert_eq!(at(step, None), UpgradeAccount::Present, "{step:?}");
            assert_eq!(at(Step::Failed, Some(step)), UpgradeAccount::Present, "failed at {step:?}: a retry needs it");
        }
        assert_eq!(at(Step::Failed, Some(Step::Backup)), UpgradeAccount::Absent);
        assert_eq!(at(Step::Failed, Some(Step::VerifyingVersion)), UpgradeAccount::Absent);
    }

    #[test]
    fn the_grants_name_the_managed_database() {
        let database = crate::database::connection::MANAGED_DATABASE_NAME;
        assert_eq!(MAINTENANCE_GRANTS[0].1, format!("`{database}`.*"));
        assert!(!database.contains(['_', '%']), "a wildcard in a database-level grant would widen it");
    }

    #[test]
    fn a_new_password_changes_the_digest_and_nothing_else_does() {
        let other = password_hash(&Password::new("rotated"));
        assert_ne!(digest(&hash()), digest(&other));
        assert_eq!(digest(&hash()), digest(&hash()));
        assert_eq!(drop_upgrade_account(), "DROP USER IF EXISTS 'ferrometal-upgrade'@'%'");
    }
}
