//! Version changes. Without a database an upgrade (or a downgrade) is just new pods: SQLite
//! starts empty anyway. With one, the sequence is: the pre-upgrade Job upgrades the schema
//! while the old version keeps serving; the new pods roll; the post-upgrade Job runs the
//! online data migrations. A failed Job stops the sequence where it is and deletes nothing.
//! Going back to an older version is refused: Ironic's migrations only go forward.

use crate::database::SchemaPlan;
use crds::ironic::status::{UpgradePhase, UpgradeStatus};
use crds::ironic::versions::IronicVersion;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The versions an upgrade goes between, as they appear in Job names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UpgradeVersions {
    /// `None` for a first installation.
    pub from: Option<String>,
    pub to: String,
}

/// What to do about the version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VersionPlan {
    /// Deploy the requested version; with `jobs`, run the upgrade Jobs around the rollout.
    Deploy { jobs: Option<UpgradeVersions> },
    /// A database cannot go back to an older version; the installed one keeps running.
    DowngradeRefused { installed: String, requested: String },
}

/// Plans from the installed version (status), the requested one and whether a database
/// keeps Ironic's state.
pub(crate) fn plan(installed: Option<&str>, requested: IronicVersion, has_database: bool) -> VersionPlan {
    if !has_database {
        return VersionPlan::Deploy { jobs: None };
    }
    let to = requested.to_string();
    match installed.and_then(|v| v.parse::<IronicVersion>().ok()) {
        Some(current) if current == requested => VersionPlan::Deploy { jobs: None },
        Some(current) if current.is_downgrade_to(&requested) => {
            VersionPlan::DowngradeRefused { installed: current.to_string(), requested: to }
        }
        // A first installation runs the Jobs too: the schema is created by the pre Job,
        // since the serving pods never sync the database themselves.
        current => VersionPlan::Deploy { jobs: Some(UpgradeVersions { from: current.map(|c| c.to_string()), to }) },
    }
}

/// The upgrade Jobs once the database's schema is known. A database without an Ironic schema
/// (replaced, or restored empty) gets the schema Job even when the version did not change:
/// the serving pods never create the schema themselves.
pub(crate) fn with_schema(
    jobs: Option<UpgradeVersions>,
    schema: Option<&SchemaPlan>,
    installed: Option<&str>,
    requested: IronicVersion,
) -> Option<UpgradeVersions> {
    match (jobs, schema) {
        (Some(jobs), _) => Some(jobs),
        (None, Some(SchemaPlan::Create)) => {
            Some(UpgradeVersions { from: installed.map(str::to_string), to: requested.to_string() })
        }
        (None, _) => None,
    }
}

fn same_upgrade(previous: Option<&UpgradeStatus>, versions: &UpgradeVersions) -> Option<UpgradeStatus> {
    previous
        .filter(|p| p.from_version.as_deref().unwrap_or_default() == versions.from.as_deref().unwrap_or_default())
        .filter(|p| p.to_version.as_deref() == Some(versions.to.as_str()))
        .cloned()
}

/// True when status says the pre-upgrade Job of this upgrade succeeded.
pub(crate) fn pre_done(previous: Option<&UpgradeStatus>, versions: &UpgradeVersions) -> bool {
    same_upgrade(previous, versions).and_then(|p| p.phase).is_some_and(|phase| {
        matches!(phase, UpgradePhase::RollingOut | UpgradePhase::PostUpgrade | UpgradePhase::Completed)
    })
}

/// True when status says this upgrade completed.
pub(crate) fn post_done(previous: Option<&UpgradeStatus>, versions: &UpgradeVersions) -> bool {
    same_upgrade(previous, versions).and_then(|p| p.phase) == Some(UpgradePhase::Completed)
}

/// status.upgrade for `versions` in `phase`; the start time survives from an earlier report
/// of the same upgrade.
pub(crate) fn status(
    previous: Option<&UpgradeStatus>,
    versions: &UpgradeVersions,
    phase: UpgradePhase,
    message: Option<String>,
    job_names: (String, String),
    now: Time,
) -> UpgradeStatus {
    let started_at = same_upgrade(previous, versions).and_then(|p| p.started_at).unwrap_or(now);
    UpgradeStatus {
        from_version: Some(versions.from.clone().unwrap_or_default()),
        to_version: Some(versions.to.clone()),
        phase: Some(phase),
        message,
        pre_upgrade_job_name: Some(job_names.0),
        post_upgrade_job_name: Some(job_names.1),
        started_at: Some(started_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn v(text: &str) -> IronicVersion {
        text.parse().expect("version")
    }

    fn versions(from: Option<&str>, to: &str) -> UpgradeVersions {
        UpgradeVersions { from: from.map(str::to_string), to: to.to_string() }
    }

    #[test]
    fn without_a_database_every_change_is_just_a_rollout() {
        assert_eq!(plan(Some("38.0"), v("37.0"), false), VersionPlan::Deploy { jobs: None });
        assert_eq!(plan(None, v("38.0"), false), VersionPlan::Deploy { jobs: None });
    }

    #[test]
    fn with_a_database_installs_and_upgrades_run_jobs_and_downgrades_are_refused() {
        assert_eq!(plan(None, v("38.0"), true), VersionPlan::Deploy { jobs: Some(versions(None, "38.0")) });
        assert_eq!(
            plan(Some("37.0"), v("38.0"), true),
            VersionPlan::Deploy { jobs: Some(versions(Some("37.0"), "38.0")) }
        );
        assert_eq!(plan(Some("38.0"), v("38.0"), true), VersionPlan::Deploy { jobs: None });
        assert_eq!(
            plan(Some("38.0"), v("37.0"), true),
            VersionPlan::DowngradeRefused { installed: "38.0".into(), requested: "37.0".into() }
        );
        // latest is a moving target; pinning a release is not a downgrade.
        assert_eq!(
            plan(Some("latest"), v("38.0"), true),
            VersionPlan::Deploy { jobs: Some(versions(Some("latest"), "38.0")) }
        );
    }

    #[test]
    fn status_remembers_the_start_and_which_steps_are_done() {
        let upgrade = versions(Some("37.0"), "38.0");
        let t0 = Time(Timestamp::from_second(100).expect("time"));
        let t1 = Time(Timestamp::from_second(200).expect("time"));
        let names = ("pre".to_string(), "post".to_string());
        let first = status(None, &upgrade, UpgradePhase::PreUpgrade, None, names.clone(), t0.clone());
        assert!(!pre_done(Some(&first), &upgrade));
        let rolling = status(Some(&first), &upgrade, UpgradePhase::RollingOut, None, names.clone(), t1.clone());
        assert_eq!(rolling.started_at, Some(t0));
        assert!(pre_done(Some(&rolling), &upgrade));
        assert!(!post_done(Some(&rolling), &upgrade));
        assert!(!pre_done(Some(&rolling), &versions(Some("38.0"), "latest")), "another upgrade");
        let other = status(
            Some(&rolling),
            &versions(Some("38.0"), "latest"),
            UpgradePhase::PreUpgrade,
            None,
            names,
            t1.clone(),
        );
        assert_eq!(other.started_at, Some(t1));
    }

    #[test]
    fn a_database_without_a_schema_gets_the_schema_job_even_without_a_version_change() {
        let same = plan(Some("38.0"), v("38.0"), true);
        assert_eq!(same, VersionPlan::Deploy { jobs: None });
        let jobs = || match plan(Some("38.0"), v("38.0"), true) {
            VersionPlan::Deploy { jobs } => jobs,
            VersionPlan::DowngradeRefused { .. } => None,
        };
        assert_eq!(
            with_schema(jobs(), Some(&SchemaPlan::Create), Some("38.0"), v("38.0")),
            Some(versions(Some("38.0"), "38.0"))
        );
        let up_to_date = SchemaPlan::UpToDate { revision: "4dbec778866e".into() };
        assert_eq!(with_schema(jobs(), Some(&up_to_date), Some("38.0"), v("38.0")), None);
        assert_eq!(with_schema(jobs(), None, Some("38.0"), v("38.0")), None, "an unread schema changes nothing");
        let upgrade = Some(versions(Some("37.0"), "38.0"));
        assert_eq!(with_schema(upgrade.clone(), Some(&up_to_date), Some("37.0"), v("38.0")), upgrade);
    }
}
