//! The reasons of DatabaseReady, and how `status.database` is written: a JSON merge patch of
//! exactly what changed, so that the version change sequence can record each step before it
//! acts, whatever else the Ironic controller writes to status.

use crds::ironic::status::DatabaseStatus;
use serde_json::{Map, Value, json};

/// Reasons of DatabaseReady (besides those of [`super::check::Error::reason`]).
pub mod reasons {
    /// Reachable, authenticated, verified and recent enough.
    pub const AVAILABLE: &str = "DatabaseAvailable";
    /// The managed MariaDB is starting.
    pub const STARTING: &str = "DatabaseStarting";
    /// A managed MariaDB version change is under way.
    pub const UPGRADING: &str = "DatabaseUpgrading";
    /// A step of a managed MariaDB version change failed.
    pub const UPGRADE_FAILED: &str = "DatabaseUpgradeFailed";
    /// spec.database is incomplete.
    pub const INVALID_SPEC: &str = "InvalidDatabaseSpec";
    /// A credentials Secret is missing or incomplete.
    pub const CREDENTIALS_INVALID: &str = "CredentialsInvalid";
    /// The managed database's credentials Secret is gone while its data exists.
    pub const CREDENTIALS_LOST: &str = "CredentialsLost";
    /// The CA or certificate Secret is missing or incomplete.
    pub const TLS_INVALID: &str = "TLSInvalid";
    /// The managed database's container cannot start; the kubelet keeps trying.
    pub const POD_FAILING: &str = "DatabasePodFailing";
    /// The new pod's check found that the old server had not stopped cleanly; the new version
    /// was not started (`super::super::clean_stop`).
    pub const NOT_CLEANLY_STOPPED: &str = "DatabaseNotCleanlyStopped";
    /// The managed database's certificates cannot be made.
    pub const CERTIFICATE_FAILED: &str = "CertificateFailed";
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed members, `null` for
/// removed ones, nested objects recursively.
pub(crate) fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_patch(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|k| !new.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// The body of a status patch from `old` to `new` `status.database`; `None` when equal.
pub(crate) fn database_patch(old: Option<&DatabaseStatus>, new: Option<&DatabaseStatus>) -> Option<Value> {
    if old == new {
        return None;
    }
    let to_value = |s: Option<&DatabaseStatus>| s.and_then(|s| serde_json::to_value(s).ok()).unwrap_or(Value::Null);
    let (old, new) = (to_value(old), to_value(new));
    let database = match (&old, &new) {
        (Value::Object(_), Value::Object(_)) => merge_patch(&old, &new),
        _ => new,
    };
    Some(json!({ "status": { "database": database } }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::status::{DatabaseMode, DatabaseUpgradeStatus, DatabaseUpgradeStep};

    #[test]
    fn merge_patches_carry_changes_and_nulls_only() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4});
        let new = json!({"a": 1, "b": {"c": 5}, "f": 6});
        assert_eq!(merge_patch(&old, &new), json!({"b": {"c": 5, "d": null}, "e": null, "f": 6}));
    }

    #[test]
    fn database_patches_touch_nothing_but_status_database() {
        let old = DatabaseStatus {
            mode: Some(DatabaseMode::Managed),
            upgrade: Some(DatabaseUpgradeStatus {
                step: Some(DatabaseUpgradeStep::Failed),
                message: Some("boom".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut new = old.clone();
        new.upgrade = Some(DatabaseUpgradeStatus { step: Some(DatabaseUpgradeStep::RollingOut), ..Default::default() });
        assert_eq!(
            database_patch(Some(&old), Some(&new)),
            Some(json!({"status": {"database": {"upgrade": {"step": "RollingOut", "message": null}}}}))
        );
        assert_eq!(database_patch(Some(&old), Some(&old)), None);
        assert_eq!(
            database_patch(None, Some(&old)).map(|p| p["status"]["database"]["mode"].clone()),
            Some(json!("Managed"))
        );
        assert_eq!(database_patch(Some(&old), None), Some(json!({"status": {"database": null}})));
    }
}
