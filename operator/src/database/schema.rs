//! Ironic's schema, as alembic records it: the `alembic_version` table holds the revision the
//! schema is at. Reading it tells whether Ironic's schema Job has anything to do.

use std::fmt;

/// Where Ironic's schema stands in a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaRevision {
    /// No `alembic_version` table or no row in it: Ironic never created its schema here.
    Missing,
    /// The revision (several heads, were there ever any, joined by commas in sorted order).
    At(String),
}

impl SchemaRevision {
    /// From the rows of `alembic_version`.
    pub fn from_rows(mut rows: Vec<String>) -> Self {
        rows.retain(|r| !r.trim().is_empty());
        if rows.is_empty() {
            return Self::Missing;
        }
        rows.sort();
        Self::At(rows.join(","))
    }

    /// What `status.database.schemaRevision` says.
    pub fn for_status(&self) -> Option<String> {
        match self {
            Self::Missing => None,
            Self::At(revision) => Some(revision.clone()),
        }
    }
}

impl fmt::Display for SchemaRevision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("no Ironic schema yet"),
            Self::At(revision) => write!(f, "Ironic schema at revision {revision}"),
        }
    }
}

/// What Ironic's schema Job (`ironic-dbsync upgrade`, ironic-image's `rundatabase-upgrade`)
/// has to do before Ironic's pods roll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaPlan {
    /// The database has no Ironic schema: the Job creates it. Ironic's pods run with
    /// `IRONIC_SKIP_DBSYNC`, so without the Job they would find no tables.
    Create,
    /// The Ironic version changes: the Job upgrades the schema from this revision.
    Upgrade { from_revision: String },
    /// The installed Ironic version runs and the schema exists: no Job.
    UpToDate { revision: String },
}

impl SchemaPlan {
    /// True when the schema Job must run.
    pub fn needs_job(&self) -> bool {
        !matches!(self, Self::UpToDate { .. })
    }
}

/// Decides from the revision read from the database, the Ironic version installed (status)
/// and the one requested. A database that lost its schema (replaced, restored empty) gets it
/// back even without a version change.
pub fn plan(revision: &SchemaRevision, installed: Option<&str>, requested: &str) -> SchemaPlan {
    match revision {
        SchemaRevision::Missing => SchemaPlan::Create,
        SchemaRevision::At(revision) if installed == Some(requested) => {
            SchemaPlan::UpToDate { revision: revision.clone() }
        }
        SchemaRevision::At(revision) => SchemaPlan::Upgrade { from_revision: revision.clone() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_come_from_the_alembic_table() {
        assert_eq!(SchemaRevision::from_rows(vec![]), SchemaRevision::Missing);
        assert_eq!(SchemaRevision::from_rows(vec![" ".into()]), SchemaRevision::Missing);
        assert_eq!(SchemaRevision::from_rows(vec!["b2ad35726bb0".into()]), SchemaRevision::At("b2ad35726bb0".into()));
        assert_eq!(SchemaRevision::from_rows(vec!["b".into(), "a".into()]), SchemaRevision::At("a,b".into()));
        assert_eq!(SchemaRevision::Missing.for_status(), None);
    }

    #[test]
    fn the_schema_job_runs_for_a_new_schema_and_for_version_changes_only() {
        let at = SchemaRevision::At("4dbec778866e".into());
        assert_eq!(plan(&SchemaRevision::Missing, None, "38.0"), SchemaPlan::Create);
        assert_eq!(plan(&SchemaRevision::Missing, Some("38.0"), "38.0"), SchemaPlan::Create);
        assert_eq!(plan(&at, None, "38.0"), SchemaPlan::Upgrade { from_revision: "4dbec778866e".into() });
        assert_eq!(plan(&at, Some("37.0"), "38.0"), SchemaPlan::Upgrade { from_revision: "4dbec778866e".into() });
        let same = plan(&at, Some("38.0"), "38.0");
        assert_eq!(same, SchemaPlan::UpToDate { revision: "4dbec778866e".into() });
        assert!(!same.needs_job());
        assert!(SchemaPlan::Create.needs_job());
    }
}
