//! The operator's sqlx checks of a database, against the harness's real MariaDB 10.11: good
//! credentials pass, and a wrong password, an unreachable host, a missing database, TLS with
//! the wrong CA, a server without TLS and a server that requires TLS each give their own
//! precise error, never with the password in it.

use ferrometal_tests::mariadb::{MariaDb, MariaDbConfig, ServerOptions};
use ferrometal_tests::pki::{Authority, loopback};
use operator::testing::database::check::{self, Target, Tls};
use operator::testing::database::credentials::{Credentials, Password};
use operator::testing::database::schema::SchemaRevision;
use operator::testing::database::version::Flavor;
use sqlx::{Connection, Executor, MySqlConnection};
use std::time::Duration;

const PASSWORD: &str = "ironic-check-password";

fn target(server: &MariaDb, password: &str, tls: Tls) -> Target {
    Target {
        host: "127.0.0.1".into(),
        port: server.port(),
        database: Some("ironic".into()),
        credentials: Credentials { username: "ironic".into(), password: Password::new(password) },
        tls,
        timeout: Duration::from_secs(10),
    }
}

async fn server() -> anyhow::Result<MariaDb> {
    let server = MariaDb::start(MariaDbConfig::default()).await?;
    server.create_database("ironic", "ironic", PASSWORD).await?;
    Ok(server)
}

/// A server that serves TLS with a certificate from a fresh CA, and that CA.
///
/// The harness's own `MariaDbConfig { tls: true }` cannot start today: it closes its set-up
/// connection (root, over the unix socket, where sqlx negotiates TLS too) and that close fails
/// with a broken pipe. So the server is set up without TLS, stopped, given the certificate in
/// its configuration file, and started again on the same data directory.
async fn tls_server() -> anyhow::Result<(MariaDb, String)> {
    let mut server = server().await?;
    server.shutdown().await?;
    let ca = Authority::new("database-checks-ca")?;
    let cert = ca.server(&["localhost"], &[loopback()])?;
    let dir = server.dir().to_path_buf();
    std::fs::write(dir.join("tls-ca.crt"), ca.cert_pem())?;
    std::fs::write(dir.join("tls-server.crt"), &cert.cert_pem)?;
    std::fs::write(dir.join("tls-server.key"), &cert.key_pem)?;
    let mut cnf = std::fs::read_to_string(dir.join("my.cnf"))?;
    for (option, file) in [("ssl-ca", "tls-ca.crt"), ("ssl-cert", "tls-server.crt"), ("ssl-key", "tls-server.key")] {
        cnf.push_str(&format!("{option} = {}\n", dir.join(file).display()));
    }
    std::fs::write(dir.join("my.cnf"), cnf)?;
    server.restart().await?;
    Ok((server, ca.cert_pem().to_string()))
}

#[tokio::test]
async fn good_credentials_pass_and_report_the_server_version() -> anyhow::Result<()> {
    let server = server().await?;
    let report = check::check(&target(&server, PASSWORD, Tls::Disabled), true).await?;
    assert_eq!(report.version.flavor, Flavor::MariaDb);
    assert_eq!((report.version.major, report.version.minor), (10, 11), "{}", report.version.raw);
    assert!(report.version.is_supported());
    assert_eq!(report.schema, Some(SchemaRevision::Missing), "a fresh database has no Ironic schema");
    Ok(())
}

#[tokio::test]
async fn a_wrong_password_is_refused_with_a_clear_error_without_the_password() -> anyhow::Result<()> {
    let server = server().await?;
    let wrong = "not-the-Password-42";
    let err = check::check(&target(&server, wrong, Tls::Disabled), true).await.expect_err("refused");
    assert!(matches!(err, check::Error::AuthenticationFailed { .. }), "{err:?}");
    assert_eq!(err.reason(), "AuthenticationFailed");
    assert!(!err.is_transient());
    let message = err.to_string();
    let address = format!("127.0.0.1:{}", server.port());
    assert!(message.contains(&address) && message.contains("refused the credentials of user \"ironic\""), "{message}");
    assert!(message.contains("Access denied"), "the server's own words: {message}");
    assert!(!message.contains(wrong) && !format!("{err:?}").contains(wrong), "{message}");
    Ok(())
}

#[tokio::test]
async fn an_unreachable_host_is_reported_as_unreachable() -> anyhow::Result<()> {
    ferrometal_tests::init();
    // A reserved port nothing listens on.
    let port = ferrometal_tests::ports::free_port()?;
    let refused = Target {
        host: "127.0.0.1".into(),
        port,
        database: Some("ironic".into()),
        credentials: Credentials { username: "ironic".into(), password: Password::new(PASSWORD) },
        tls: Tls::Disabled,
        timeout: Duration::from_secs(5),
    };
    let err = check::check(&refused, true).await.expect_err("nothing listens");
    assert!(matches!(err, check::Error::Unreachable { .. }), "{err:?}");
    assert_eq!(err.reason(), "DatabaseUnreachable");
    assert!(err.is_transient(), "a server that is down may come back");
    assert!(err.to_string().contains(&format!("cannot reach the database server at 127.0.0.1:{port}")), "{err}");
    assert!(err.to_string().to_lowercase().contains("refused"), "{err}");

    let unknown = Target { host: "mariadb.ferrometal.invalid".into(), port: 3306, ..refused };
    let err = check::check(&unknown, true).await.expect_err("no such host");
    assert!(matches!(err, check::Error::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("mariadb.ferrometal.invalid:3306"), "{err}");
    Ok(())
}

#[tokio::test]
async fn a_missing_database_and_a_forbidden_one_are_told_apart() -> anyhow::Result<()> {
    let server = server().await?;
    let forbidden = Target { database: Some("other".into()), ..target(&server, PASSWORD, Tls::Disabled) };
    let err = check::check(&forbidden, true).await.expect_err("no grant");
    assert_eq!(err.reason(), "AccessDenied", "{err}");
    let admin = Target {
        credentials: Credentials {
            username: ferrometal_tests::mariadb::ADMIN_USER.into(),
            password: Password::new(ferrometal_tests::mariadb::ADMIN_PASSWORD),
        },
        ..forbidden
    };
    let err = check::check(&admin, true).await.expect_err("no such database");
    assert!(matches!(&err, check::Error::UnknownDatabase { database, .. } if database == "other"), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("database \"other\" does not exist on the server at 127.0.0.1:{}", server.port())
    );
    Ok(())
}

#[tokio::test]
async fn tls_with_the_right_ca_passes() -> anyhow::Result<()> {
    let (server, ca) = tls_server().await?;
    let tls = Tls::Verify { ca_pem: ca.into_bytes(), verify_hostname: true };
    let report = check::check(&target(&server, PASSWORD, tls.clone()), true).await?;
    assert_eq!(report.version.flavor, Flavor::MariaDb);
    // The session really is encrypted.
    let mut conn = check::connect(&target(&server, PASSWORD, tls)).await?;
    let row: (String, String) = sqlx::query_as("SHOW SESSION STATUS LIKE 'Ssl_version'").fetch_one(&mut conn).await?;
    assert!(row.1.starts_with("TLSv1."), "{row:?}");
    conn.close().await?;
    Ok(())
}

#[tokio::test]
async fn tls_with_another_ca_fails_as_tls() -> anyhow::Result<()> {
    let (server, _) = tls_server().await?;
    let other = Authority::new("some-other-ca")?;
    let tls = Tls::Verify { ca_pem: other.cert_pem().as_bytes().to_vec(), verify_hostname: true };
    let err = check::check(&target(&server, PASSWORD, tls), true).await.expect_err("untrusted");
    assert!(matches!(err, check::Error::Tls { .. }), "{err:?}");
    assert_eq!(err.reason(), "TLSFailed");
    assert!(!err.is_transient());
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("TLS with the database server at 127.0.0.1:{} failed", server.port())),
        "{message}"
    );
    assert!(message.contains("UnknownIssuer") || message.to_lowercase().contains("certificate"), "{message}");
    Ok(())
}

#[tokio::test]
async fn a_ca_for_a_server_without_tls_fails_as_tls() -> anyhow::Result<()> {
    let server = server().await?;
    let ca = Authority::new("unused-ca")?;
    let tls = Tls::Verify { ca_pem: ca.cert_pem().as_bytes().to_vec(), verify_hostname: true };
    let err = check::check(&target(&server, PASSWORD, tls), true).await.expect_err("no TLS on the server");
    assert_eq!(err.reason(), "TLSFailed", "{err}");
    Ok(())
}

#[tokio::test]
async fn a_server_that_requires_tls_refuses_a_plain_connection_clearly() -> anyhow::Result<()> {
    let (server, ca) = tls_server().await?;
    let mut admin = MySqlConnection::connect(&server.admin_url(None)).await?;
    admin.execute("SET GLOBAL require_secure_transport = ON").await?;
    let err = check::check(&target(&server, PASSWORD, Tls::Disabled), true).await.expect_err("plain refused");
    assert!(matches!(err, check::Error::TlsRequired { .. }), "{err:?}");
    assert_eq!(err.reason(), "TLSRequired");
    // The same user over verified TLS is fine.
    check::check(&target(&server, PASSWORD, Tls::Verify { ca_pem: ca.into_bytes(), verify_hostname: true }), true)
        .await?;
    Ok(())
}

#[tokio::test]
async fn the_slow_shutdown_flag_is_read_by_any_user_and_never_set() -> anyhow::Result<()> {
    // The managed database's server starts with --innodb-fast-shutdown=0: reading it takes no
    // privilege, so even Ironic's user passes; a server started without it is told apart.
    let options = ServerOptions { slow_shutdown: true, ..Default::default() };
    let slow = MariaDb::start(MariaDbConfig { options, ..Default::default() }).await?;
    slow.create_database("ironic", "ironic", PASSWORD).await?;
    let version = check::prepare_for_version_change(&target(&slow, PASSWORD, Tls::Disabled)).await?;
    assert_eq!(version.flavor, Flavor::MariaDb);
    let fast = server().await?;
    let err = check::prepare_for_version_change(&target(&fast, PASSWORD, Tls::Disabled)).await.expect_err("fast");
    assert_eq!(err.reason(), "SlowShutdownNotSet", "{err}");
    let mut conn = check::connect(&target(&fast, PASSWORD, Tls::Disabled)).await?;
    assert_eq!(check::fast_shutdown(&mut conn, &target(&fast, PASSWORD, Tls::Disabled)).await?, "1", "untouched");
    conn.close().await?;
    Ok(())
}

#[tokio::test]
async fn ironics_own_stack_given_a_ca_refuses_a_server_without_tls() -> anyhow::Result<()> {
    // Why a running server offers TLS before Ironic's pods get the CA (design/database.md, "TLS
    // by default"): ironic-dbsync (oslo.db, PyMySQL) with ironic-image's URL and a CA requires
    // TLS, so pods with the CA cannot talk to a server in clear text.
    let server = server().await?;
    let dir = tempfile::tempdir()?;
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, Authority::new("ironic-stack-ca")?.cert_pem())?;
    let with_ca = format!(
        "mysql+pymysql://ironic:{PASSWORD}@127.0.0.1:{}/ironic?charset=utf8&ssl=on&ssl_ca={}",
        server.port(),
        ca.display()
    );
    let refused = server.ironic_dbsync_at(&with_ca, "ironic", "version").expect_err("no TLS on the server");
    assert!(format!("{refused:#}").contains("SSL is required but the server doesn't support it"), "{refused:#}");
    let without = format!("mysql+pymysql://ironic:{PASSWORD}@127.0.0.1:{}/ironic?charset=utf8", server.port());
    server.ironic_dbsync_at(&without, "ironic", "version")?;
    Ok(())
}
