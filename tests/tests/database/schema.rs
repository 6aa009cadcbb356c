//! Schema awareness against a real Ironic database: `ironic-dbsync` (Ironic 39 from the
//! virtualenv, the tool behind ironic-image's schema Job) creates the schema in the harness's
//! MariaDB, and the operator reads the same alembic revision `ironic-dbsync version` reports.

use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig};
use operator::testing::database::check::{self, Target, Tls};
use operator::testing::database::credentials::{Credentials, Password};
use operator::testing::database::schema::{self, SchemaPlan, SchemaRevision};
use std::time::Duration;

const PASSWORD: &str = "ironic-schema-password";

#[tokio::test]
async fn the_schema_revision_is_read_from_a_database_made_by_ironic_dbsync() -> anyhow::Result<()> {
    let server = MariaDb::start(MariaDbConfig::default()).await?;
    server.create_database("ironic", "ironic", PASSWORD).await?;
    let target = Target {
        host: "127.0.0.1".into(),
        port: server.port(),
        database: Some("ironic".into()),
        credentials: Credentials { username: "ironic".into(), password: Password::new(PASSWORD) },
        tls: Tls::Disabled,
        timeout: Duration::from_secs(10),
    };

    // Empty: the schema Job must create the schema, even for an installed Ironic.
    let empty = check::check(&target, true).await?.schema.expect("read");
    assert_eq!(empty, SchemaRevision::Missing);
    assert_eq!(schema::plan(&empty, Some("38.0"), "38.0"), SchemaPlan::Create);

    // The schema as Ironic makes it (`create_schema` builds the same tables as the `upgrade`
    // ironic-image's schema Job runs, in seconds instead of a minute of migrations).
    server.ironic_dbsync("ironic", "ironic", PASSWORD, "create_schema")?;
    let expected = server.ironic_dbsync("ironic", "ironic", PASSWORD, "version")?;
    assert!(!expected.is_empty() && expected != "None", "ironic-dbsync version: {expected:?}");

    let report = check::check(&target, true).await?;
    let revision = report.schema.expect("read");
    assert_eq!(revision, SchemaRevision::At(expected.clone()), "the same revision ironic-dbsync reports");
    assert_eq!(revision.for_status().as_deref(), Some(expected.as_str()));
    assert_eq!(schema::plan(&revision, Some("38.0"), "38.0"), SchemaPlan::UpToDate { revision: expected.clone() });
    assert_eq!(schema::plan(&revision, Some("37.0"), "38.0"), SchemaPlan::Upgrade { from_revision: expected });
    Ok(())
}
