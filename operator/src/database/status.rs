//! The DatabaseReady condition, the gate Ironic waits at, and how `status.database` is
//! written: a JSON merge patch of exactly what changed, so that the version change sequence can
//! record each step before it acts, whatever else the Ironic controller writes to status.

use crds::condition::{Condition, FALSE, TRUE};
use crds::ironic::status::{DATABASE_READY, DatabaseStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value, json};

/// Reasons of DatabaseReady (besides those of [`super::check::CheckError::reason`]).
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
}

/// Whether Ironic may go ahead: roll its pods and run its schema Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Ironic may proceed: no database (SQLite), or a ready database with no version change
    /// under way.
    Open,
    /// Not yet: the database starts, is checked again, or a version change runs. Progressing.
    Wait { reason: String, message: String },
    /// Stopped until the user acts: a failed step or a refused check. Degraded.
    Halted { reason: String, message: String },
}

impl Gate {
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Open)
    }

    pub fn wait(reason: &str, message: impl Into<String>) -> Self {
        Self::Wait { reason: reason.to_string(), message: message.into() }
    }

    pub fn halted(reason: &str, message: impl Into<String>) -> Self {
        Self::Halted { reason: reason.to_string(), message: message.into() }
    }
}

/// The DatabaseReady condition.
pub fn ready(status: bool, reason: &str, message: impl Into<String>, generation: Option<i64>) -> Condition {
    Condition {
        type_: DATABASE_READY.to_string(),
        status: if status { TRUE } else { FALSE }.to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
    }
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed members, `null` for
/// removed ones, nested objects recursively.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
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
pub fn database_patch(old: Option<&DatabaseStatus>, new: Option<&DatabaseStatus>) -> Option<Value> {
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

    #[test]
    fn the_condition_is_database_ready() {
        let c = ready(false, reasons::STARTING, "starting", Some(3));
        assert_eq!((c.type_.as_str(), c.status.as_str(), c.observed_generation), ("DatabaseReady", "False", Some(3)));
        assert!(Gate::Open.is_open());
        assert!(!Gate::wait("A", "b").is_open());
    }
}
