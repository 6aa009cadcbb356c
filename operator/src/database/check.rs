//! What the operator asks the database itself, with sqlx: can it be reached, does it take the
//! credentials, does TLS verify, how old is it, where is Ironic's schema; before a version
//! change, whether the next stop is the slow one (`innodb_fast_shutdown = 0`); after
//! `mariadb-upgrade`, the removal of the account that ran it.
//!
//! Every failure becomes a [`Error`] that says precisely what went wrong, for the
//! DatabaseReady condition. No message ever contains a password: the operator never builds a
//! connection URL, and whatever the server or the network says is scrubbed of the password
//! before it is kept.

use super::credentials::Credentials;
use super::schema::SchemaRevision;
use super::version::ServerVersion;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlDatabaseError, MySqlSslMode};
use sqlx::{ConnectOptions as _, Connection as _, Executor as _, Row as _};
use std::error::Error as StdError;
use std::time::Duration;

/// How the operator secures its connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tls {
    /// No TLS, as Ironic connects when it has no CA.
    Disabled,
    /// TLS verified against `ca_pem`; with `verify_hostname` the certificate must also name the
    /// host (off only when the operator connects through an address override).
    Verify { ca_pem: Vec<u8>, verify_hostname: bool },
}

/// A server to check, and as whom.
#[derive(Clone, Debug)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// The database to open; `None` for server-wide work.
    pub database: Option<String>,
    pub credentials: Credentials,
    pub tls: Tls,
    /// Limit for connecting and for each query.
    pub timeout: Duration,
}

impl Target {
    /// `host:port`, for messages.
    pub fn address(&self) -> String {
        super::connection::host_port(&self.host, self.port)
    }

    fn options(&self) -> MySqlConnectOptions {
        let options = self.plain_options();
        match &self.tls {
            Tls::Disabled => options.ssl_mode(MySqlSslMode::Disabled),
            Tls::Verify { ca_pem, verify_hostname } => options
                .ssl_mode(if *verify_hostname { MySqlSslMode::VerifyIdentity } else { MySqlSslMode::VerifyCa })
                .ssl_ca_from_pem(ca_pem.clone()),
        }
    }

    fn plain_options(&self) -> MySqlConnectOptions {
        let mut options = MySqlConnectOptions::new()
            .host(&self.host)
            .port(self.port)
            .username(&self.credentials.username)
            .password(self.credentials.password.expose());
        if let Some(database) = &self.database {
            options = options.database(database);
        }
        options
    }
}

/// Why a check failed. `Display` is the message users read in the DatabaseReady condition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("cannot reach the database server at {address}: {detail}")]
    Unreachable { address: String, detail: String },
    #[error("the database server at {address} refused the credentials of user {user:?}: {detail}")]
    AuthenticationFailed { address: String, user: String, detail: String },
    #[error("user {user:?} may not use {what} on the server at {address}: {detail}")]
    AccessDenied { address: String, user: String, what: String, detail: String },
    #[error("database {database:?} does not exist on the server at {address}")]
    UnknownDatabase { address: String, database: String },
    #[error("TLS with the database server at {address} failed: {detail}")]
    Tls { address: String, detail: String },
    #[error("the database server at {address} requires TLS: {detail}")]
    TlsRequired { address: String, detail: String },
    #[error("the database server at {address} runs {version}, older than the oldest supported {minimum}")]
    UnsupportedVersion { address: String, version: String, minimum: String },
    #[error(
        "innodb_fast_shutdown on the server at {address} reads {actual:?}, so its next stop would not be the slow \
         one a version change needs; the MariaDB pod starts with --innodb-fast-shutdown=0, so this server was \
         started from an older template or the flag was changed since: waiting for the pod of the current template"
    )]
    FastShutdown { address: String, actual: String },
    #[error("{what} on the server at {address} failed: {detail}")]
    Query { address: String, what: String, detail: String },
}

impl Error {
    /// The condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "DatabaseUnreachable",
            Self::AuthenticationFailed { .. } => "AuthenticationFailed",
            Self::AccessDenied { .. } => "AccessDenied",
            Self::UnknownDatabase { .. } => "DatabaseNotFound",
            Self::Tls { .. } => "TLSFailed",
            Self::TlsRequired { .. } => "TLSRequired",
            Self::UnsupportedVersion { .. } => "UnsupportedServerVersion",
            Self::FastShutdown { .. } => "SlowShutdownNotSet",
            Self::Query { .. } => "QueryFailed",
        }
    }

    /// True for failures that may pass by themselves (a server restarting, a network blip, a
    /// pod from an older template being replaced).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::FastShutdown { .. })
    }
}

// MariaDB and MySQL error numbers.
const ER_DBACCESS_DENIED: u16 = 1044;
const ER_ACCESS_DENIED: u16 = 1045;
const ER_BAD_DB: u16 = 1049;
const ER_CON_COUNT: u16 = 1040;
const ER_HOST_NOT_PRIVILEGED: u16 = 1130;
const ER_SPECIFIC_ACCESS_DENIED: u16 = 1227;
const ER_NO_SUCH_TABLE: u16 = 1146;
const ER_SERVER_SHUTDOWN: u16 = 1053;
/// MySQL's ER_SECURE_TRANSPORT_REQUIRED; MariaDB says the same in another number, so the
/// message is matched too.
const ER_SECURE_TRANSPORT_REQUIRED: u16 = 3159;

/// Replaces the password wherever it appears, in case a server or library ever echoes it.
fn scrub(text: &str, target: &Target) -> String {
    let password = target.credentials.password.expose();
    if password.len() >= 4 { text.replace(password, "<redacted>") } else { text.to_string() }
}

/// Classifies a server's error by number (and message, where servers disagree on numbers).
pub(crate) fn classify_server(number: Option<u16>, message: &str, what: &str, target: &Target) -> Error {
    let address = target.address();
    let user = target.credentials.username.clone();
    let detail = scrub(message, target);
    match number {
        _ if message.to_ascii_lowercase().contains("insecure transport") => Error::TlsRequired { address, detail },
        Some(ER_SECURE_TRANSPORT_REQUIRED) => Error::TlsRequired { address, detail },
        Some(ER_ACCESS_DENIED | ER_HOST_NOT_PRIVILEGED) => Error::AuthenticationFailed { address, user, detail },
        Some(ER_DBACCESS_DENIED) => Error::AccessDenied {
            address,
            user,
            what: format!("database {:?}", target.database.clone().unwrap_or_default()),
            detail,
        },
        Some(ER_SPECIFIC_ACCESS_DENIED) => Error::AccessDenied { address, user, what: what.to_string(), detail },
        Some(ER_BAD_DB) => Error::UnknownDatabase { address, database: target.database.clone().unwrap_or_default() },
        Some(ER_CON_COUNT | ER_SERVER_SHUTDOWN) => Error::Unreachable { address, detail },
        _ => Error::Query { address, what: what.to_string(), detail },
    }
}

/// True when a rustls error is somewhere in the chain: sqlx reports a failed handshake (an
/// unknown CA, a wrong name) as an I/O error wrapping it.
fn tls_cause(err: &(dyn StdError + 'static)) -> Option<String> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(tls) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(tls.to_string());
        }
        current = e.source();
    }
    None
}

/// Classifies what sqlx reports.
pub(crate) fn classify(err: &sqlx::Error, what: &str, target: &Target) -> Error {
    let address = target.address();
    match err {
        sqlx::Error::Database(db) => {
            let number = db.try_downcast_ref::<MySqlDatabaseError>().map(MySqlDatabaseError::number);
            classify_server(number, db.message(), what, target)
        }
        sqlx::Error::Tls(e) => Error::Tls { address, detail: scrub(&e.to_string(), target) },
        sqlx::Error::Io(e) => match tls_cause(e) {
            Some(detail) => Error::Tls { address, detail: scrub(&detail, target) },
            None => Error::Unreachable { address, detail: scrub(&e.to_string(), target) },
        },
        sqlx::Error::Configuration(e) if e.to_string().contains("RSA") => Error::TlsRequired {
            address,
            detail: "the server authenticates this user with caching_sha2_password or sha256_password, which \
                     needs an encrypted connection; give the database a CA (tlsCertificateName)"
                .to_string(),
        },
        other => Error::Query { address, what: what.to_string(), detail: scrub(&other.to_string(), target) },
    }
}

async fn timed<T>(target: &Target, what: &str, work: impl Future<Output = Result<T, sqlx::Error>>) -> Result<T, Error> {
    match tokio::time::timeout(target.timeout, work).await {
        Ok(result) => result.map_err(|e| classify(&e, what, target)),
        Err(_) => Err(Error::Unreachable {
            address: target.address(),
            detail: format!("{what}: no answer within {} s", target.timeout.as_secs()),
        }),
    }
}

/// Opens a connection.
///
/// MariaDB answers a connection without TLS to a server or user that requires TLS with the
/// same "Access denied" as a wrong password. So when a connection without TLS is refused, the
/// same credentials are tried once more over (unverified) TLS: if they pass there, the precise
/// answer is that TLS is required.
pub async fn connect(target: &Target) -> Result<MySqlConnection, Error> {
    match timed(target, "connecting", target.options().connect()).await {
        Err(refused @ Error::AuthenticationFailed { .. }) if target.tls == Tls::Disabled => {
            let encrypted = target.plain_options().ssl_mode(MySqlSslMode::Required);
            match timed(target, "connecting over TLS", encrypted.connect()).await {
                Ok(conn) => {
                    let _ = tokio::time::timeout(target.timeout, conn.close()).await;
                    Err(Error::TlsRequired {
                        address: target.address(),
                        detail: "it refuses these credentials without TLS and accepts them over TLS \
                                 (require_secure_transport or REQUIRE SSL); give the database a CA"
                            .to_string(),
                    })
                }
                Err(_) => Err(refused),
            }
        }
        other => other,
    }
}

/// `VERSION()`.
pub(crate) async fn server_version(conn: &mut MySqlConnection, target: &Target) -> Result<ServerVersion, Error> {
    let row = timed(target, "reading the server version", conn.fetch_one("SELECT VERSION()")).await?;
    let raw: String = row.try_get(0).map_err(|e| classify(&e, "reading the server version", target))?;
    ServerVersion::parse(&raw).ok_or_else(|| Error::Query {
        address: target.address(),
        what: "reading the server version".to_string(),
        detail: format!("the server reports {raw:?}, which is not a version"),
    })
}

/// Ironic's alembic revision in the connection's database.
pub(crate) async fn schema_revision(conn: &mut MySqlConnection, target: &Target) -> Result<SchemaRevision, Error> {
    let what = "reading Ironic's schema revision";
    match tokio::time::timeout(target.timeout, conn.fetch_all("SELECT version_num FROM alembic_version")).await {
        Ok(Ok(rows)) => {
            let revisions = rows
                .iter()
                .map(|row| row.try_get::<String, _>(0))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| classify(&e, what, target))?;
            Ok(SchemaRevision::from_rows(revisions))
        }
        Ok(Err(sqlx::Error::Database(db)))
            if db.try_downcast_ref::<MySqlDatabaseError>().map(MySqlDatabaseError::number)
                == Some(ER_NO_SUCH_TABLE) =>
        {
            Ok(SchemaRevision::Missing)
        }
        Ok(Err(e)) => Err(classify(&e, what, target)),
        Err(_) => Err(Error::Unreachable {
            address: target.address(),
            detail: format!("{what}: no answer within {} s", target.timeout.as_secs()),
        }),
    }
}

/// `@@GLOBAL.innodb_fast_shutdown`.
pub async fn fast_shutdown(conn: &mut MySqlConnection, target: &Target) -> Result<String, Error> {
    let what = "reading innodb_fast_shutdown";
    // As text: the variable's integer type differs between servers.
    let row = timed(target, what, conn.fetch_one("SELECT CAST(@@GLOBAL.innodb_fast_shutdown AS CHAR)")).await?;
    row.try_get::<String, _>(0).map_err(|e| classify(&e, what, target))
}

/// Reads `innodb_fast_shutdown` and requires `0`: the next stop of this server is the slow,
/// complete one. The server starts with `--innodb-fast-shutdown=0`, so reading it takes no
/// privilege (setting it would take `SUPER`, which no network account has).
pub(crate) async fn require_slow_shutdown(conn: &mut MySqlConnection, target: &Target) -> Result<(), Error> {
    let actual = fast_shutdown(conn, target).await?;
    if actual.trim() == "0" { Ok(()) } else { Err(Error::FastShutdown { address: target.address(), actual }) }
}

/// What a successful check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub version: ServerVersion,
    /// Ironic's schema, when asked for.
    pub schema: Option<SchemaRevision>,
}

/// Connectivity, authentication, TLS and the server's version; with `read_schema`, Ironic's
/// schema revision in the target's database.
pub async fn check(target: &Target, read_schema: bool) -> Result<Report, Error> {
    let mut conn = connect(target).await?;
    let result = async {
        let version = server_version(&mut conn, target).await?;
        if !version.is_supported() {
            let (major, minor) = version.minimum();
            return Err(Error::UnsupportedVersion {
                address: target.address(),
                version: version.raw.clone(),
                minimum: format!("{} {major}.{minor}", version.flavor),
            });
        }
        let schema = if read_schema { Some(schema_revision(&mut conn, target).await?) } else { None };
        Ok(Report { version, schema })
    }
    .await;
    let _ = tokio::time::timeout(target.timeout, conn.close()).await;
    result
}

/// Requires the slow shutdown and returns the server's version: the first step of a version
/// change, as the maintenance account.
pub async fn prepare_for_version_change(target: &Target) -> Result<ServerVersion, Error> {
    let mut conn = connect(target).await?;
    let result = async {
        require_slow_shutdown(&mut conn, target).await?;
        server_version(&mut conn, target).await
    }
    .await;
    let _ = tokio::time::timeout(target.timeout, conn.close()).await;
    result
}

/// The server's version, as the maintenance account: the last step of a version change.
pub async fn read_version(target: &Target) -> Result<ServerVersion, Error> {
    let mut conn = connect(target).await?;
    let result = server_version(&mut conn, target).await;
    let _ = tokio::time::timeout(target.timeout, conn.close()).await;
    result
}

/// Removes the upgrade account, connected as that account (it holds the privilege to), once
/// `mariadb-upgrade` ran. Refused credentials mean it is gone already (an earlier attempt
/// dropped it, or the server restarted and its init file did).
pub async fn drop_upgrade_account(target: &Target) -> Result<(), Error> {
    let mut conn = match connect(target).await {
        Ok(conn) => conn,
        Err(Error::AuthenticationFailed { .. }) => return Ok(()),
        Err(other) => return Err(other),
    };
    let statement = super::account::drop_upgrade_account();
    let result = timed(target, "dropping the upgrade account", conn.execute(sqlx::AssertSqlSafe(statement))).await;
    let _ = tokio::time::timeout(target.timeout, conn.close()).await;
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::credentials::Password;

    fn target() -> Target {
        Target {
            host: "db.example.com".into(),
            port: 3306,
            database: Some("ironic".into()),
            credentials: Credentials { username: "ironic".into(), password: Password::new("Sup3rS3cret") },
            tls: Tls::Disabled,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn server_errors_map_to_precise_reasons() {
        let t = target();
        let reason = |n: Option<u16>, m: &str| classify_server(n, m, "connecting", &t).reason();
        assert_eq!(
            reason(Some(1045), "Access denied for user 'ironic'@'10.0.0.1' (using password: YES)"),
            "AuthenticationFailed"
        );
        assert_eq!(reason(Some(1130), "Host '10.0.0.1' is not allowed to connect"), "AuthenticationFailed");
        assert_eq!(reason(Some(1044), "Access denied for user 'ironic'@'%' to database 'ironic'"), "AccessDenied");
        assert_eq!(reason(Some(1049), "Unknown database 'ironic'"), "DatabaseNotFound");
        assert_eq!(reason(Some(1227), "Access denied; you need the SUPER privilege"), "AccessDenied");
        assert_eq!(reason(Some(3159), "Connections using insecure transport are prohibited"), "TLSRequired");
        assert_eq!(
            reason(
                Some(4151),
                "Connections using insecure transport are prohibited while --require_secure_transport=ON."
            ),
            "TLSRequired"
        );
        assert_eq!(reason(Some(1040), "Too many connections"), "DatabaseUnreachable");
        assert_eq!(reason(Some(1064), "syntax"), "QueryFailed");
    }

    #[test]
    fn messages_name_the_address_and_user_but_never_the_password() {
        let t = target();
        let err = classify_server(Some(1045), "Access denied (password Sup3rS3cret)", "connecting", &t);
        let text = err.to_string();
        assert!(text.contains("db.example.com:3306") && text.contains("\"ironic\""), "{text}");
        assert!(!text.contains("Sup3rS3cret"), "{text}");
        let io = sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused Sup3rS3cret"));
        let err = classify(&io, "connecting", &t);
        assert_eq!(err.reason(), "DatabaseUnreachable");
        assert!(err.is_transient());
        assert!(!err.to_string().contains("Sup3rS3cret"));
        assert!(!format!("{t:?}").contains("Sup3rS3cret"), "targets print without the password");
    }

    #[test]
    fn handshake_failures_inside_io_errors_are_tls_failures() {
        let t = target();
        let handshake = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        let err = classify(&sqlx::Error::Io(handshake), "connecting", &t);
        assert_eq!(err.reason(), "TLSFailed");
        assert!(!err.is_transient());
        let rsa = sqlx::Error::Configuration("RSA auth backend disabled; enable feature".into());
        assert_eq!(classify(&rsa, "connecting", &t).reason(), "TLSRequired");
    }

    #[test]
    fn addresses_bracket_ipv6() {
        let t = Target { host: "2001:db8::5".into(), ..target() };
        assert_eq!(t.address(), "[2001:db8::5]:3306");
    }
}
