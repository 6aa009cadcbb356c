//! The seam between the database and Ironic: where Ironic's pods find the database and how
//! they authenticate, for an external database and for a managed one alike. Ironic's builders
//! take a [`Connection`] (the CA key is always `tls.crt`, where ironic-image reads it).
//!
//! `spec.database` comes in two forms. The external form (ironic-standalone-operator's
//! `credentialsName`, `host`, `name`, `tlsCertificateName`) resolves in [`resolve_external`];
//! the managed form (a MariaDB the operator runs) to its Service and generated Secrets.

use super::names::Names;
use crds::ironic::{Database, Ironic};
use kube::ResourceExt;

/// MariaDB's port.
pub(crate) const MARIADB_PORT: u16 = 3306;
pub(crate) use super::tls::CA_KEY;
/// Where ironic-image reads the database credentials: `username` and `password` files.
pub(crate) const USERNAME_KEY: &str = "username";
pub(crate) const PASSWORD_KEY: &str = "password";

/// A key of a Secret in the Ironic's namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretKeyRef {
    pub name: String,
    pub key: String,
}

/// Where Ironic's database is and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// Host name or address of the server.
    pub host: String,
    pub port: u16,
    /// Database name.
    pub name: String,
    /// Secret with `username` and `password`, mounted into Ironic's pods at `/auth/mariadb`.
    pub credentials_secret: String,
    /// The CA that verifies the server; `None` connects without TLS.
    pub tls_ca: Option<SecretKeyRef>,
    /// True for the MariaDB the operator runs.
    pub managed: bool,
}

/// `host:port`, bracketing an IPv6 address.
pub(crate) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

impl Connection {
    /// `host:port`, for messages and status.
    pub fn address(&self) -> String {
        host_port(&self.host, self.port)
    }

    /// `MARIADB_HOST`, as Ironic's pods get it: the host, with the port when it is not
    /// MariaDB's.
    pub fn host_with_port(&self) -> String {
        if self.port == MARIADB_PORT { self.host.clone() } else { self.address() }
    }

    /// The Secret with the CA Ironic's pods mount at `/certs/ca/mariadb`; `None` without TLS.
    pub fn ca_secret(&self) -> Option<&str> {
        self.tls_ca.as_ref().map(|ca| ca.name.as_str())
    }
}

/// The database name of a managed database.
pub(crate) const MANAGED_DATABASE_NAME: &str = "ironic";

/// Why `spec.database` gives no connection.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Incomplete(pub String);

/// The connection `ironic` asks for: `None` without a database (SQLite), the external server,
/// or the managed MariaDB's Service. Pure: whether the database is ready is the driver's
/// business.
pub(crate) fn resolve(ironic: &Ironic, cluster_domain: &str) -> Result<Option<Connection>, Incomplete> {
    let Some(db) = &ironic.spec.database else {
        return Ok(None);
    };
    match &db.managed {
        Some(managed) => {
            let names = Names::of(ironic);
            let namespace = ironic.namespace().unwrap_or_default();
            let tls_ca =
                super::tls::enabled(managed).then(|| SecretKeyRef { name: names.client_ca(), key: CA_KEY.to_string() });
            Ok(Some(Connection {
                host: names.host(&namespace, cluster_domain),
                port: MARIADB_PORT,
                name: MANAGED_DATABASE_NAME.to_string(),
                credentials_secret: names.credentials(),
                tls_ca,
                managed: true,
            }))
        }
        None => resolve_external(db).map(Some),
    }
}

/// Resolves the external form to a connection. Validation guarantees the three required
/// fields; an empty one still yields an error (the message says what is missing) rather than a
/// broken pod.
pub(crate) fn resolve_external(db: &Database) -> Result<Connection, Incomplete> {
    let (Some(host), Some(name), Some(credentials)) =
        (nonempty(&db.host), nonempty(&db.name), nonempty(&db.credentials_name))
    else {
        return Err(Incomplete("spec.database needs credentialsName, host and name".to_string()));
    };
    let (host, port) = split_port(host);
    Ok(Connection {
        host,
        port: port.unwrap_or(MARIADB_PORT),
        name: name.to_string(),
        credentials_secret: credentials.to_string(),
        tls_ca: nonempty(&db.tls_certificate_name)
            .map(|name| SecretKeyRef { name: name.to_string(), key: CA_KEY.to_string() }),
        managed: false,
    })
}

fn nonempty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// `host:port` → (`host`, port); IPv6 literals need brackets to carry a port.
fn split_port(host: &str) -> (String, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[')
        && let Some((address, port)) = rest.split_once("]:")
        && let Ok(port) = port.parse()
    {
        return (address.to_string(), Some(port));
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => match port.parse() {
            Ok(port) => (name.to_string(), Some(port)),
            Err(_) => (host.to_string(), None),
        },
        _ => (host.trim_start_matches('[').trim_end_matches(']').to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{Database, IronicSpec, ManagedDatabase, ManagedDatabaseTls};
    use kube::api::ObjectMeta;

    fn ironic(database: Option<Database>) -> Ironic {
        Ironic {
            metadata: ObjectMeta {
                name: Some("ironic".into()),
                namespace: Some("metal3".into()),
                ..Default::default()
            },
            spec: IronicSpec { database, ..Default::default() },
            status: None,
        }
    }

    fn external(host: &str, ca: Option<&str>) -> Database {
        Database {
            credentials_name: Some("db-creds".into()),
            host: Some(host.into()),
            name: Some("ironicdb".into()),
            tls_certificate_name: ca.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn no_database_means_sqlite() {
        assert_eq!(resolve(&ironic(None), "cluster.local"), Ok(None));
    }

    #[test]
    fn the_external_form_keeps_host_port_name_credentials_and_ca() {
        let c = resolve(&ironic(Some(external("db.example.com:3307", Some("db-ca")))), "cluster.local")
            .expect("complete")
            .expect("a database");
        assert_eq!((c.host.as_str(), c.port, c.name.as_str()), ("db.example.com", 3307, "ironicdb"));
        assert_eq!(c.credentials_secret, "db-creds");
        assert_eq!(c.tls_ca, Some(SecretKeyRef { name: "db-ca".into(), key: "tls.crt".into() }));
        assert!(!c.managed);
        assert_eq!(c.address(), "db.example.com:3307");
    }

    #[test]
    fn an_incomplete_external_form_says_so() {
        let mut db = external("db", None);
        db.name = None;
        assert!(resolve(&ironic(Some(db)), "cluster.local").is_err());
    }

    #[test]
    fn the_managed_form_points_at_the_service_with_generated_secrets_and_tls_by_default() {
        let db = Database { managed: Some(ManagedDatabase::default()), ..Default::default() };
        let c = resolve(&ironic(Some(db)), "cluster.local").expect("complete").expect("a database");
        assert_eq!(c.host, "ironic-mariadb.metal3.svc.cluster.local");
        assert_eq!(c.port, 3306);
        assert_eq!(c.name, "ironic");
        assert_eq!(c.credentials_secret, "ironic-mariadb-credentials");
        assert_eq!(c.tls_ca, Some(SecretKeyRef { name: "ironic-mariadb-ca".into(), key: "tls.crt".into() }));
        assert!(c.managed);
        let opted_out = ManagedDatabase {
            tls: Some(ManagedDatabaseTls { enabled: Some(false), ..Default::default() }),
            ..Default::default()
        };
        let plain = Database { managed: Some(opted_out), ..Default::default() };
        let c = resolve(&ironic(Some(plain)), "cluster.local").expect("complete").expect("a database");
        assert_eq!(c.tls_ca, None, "enabled: false is the explicit opt-out");
    }

    #[test]
    fn the_ironic_builders_get_host_port_and_ca_as_the_pods_need_them() {
        let c = Connection {
            host: "2001:db8::5".into(),
            port: 3307,
            name: "ironic".into(),
            credentials_secret: "creds".into(),
            tls_ca: Some(SecretKeyRef { name: "ca".into(), key: CA_KEY.into() }),
            managed: false,
        };
        assert_eq!(c.host_with_port(), "[2001:db8::5]:3307");
        assert_eq!(c.ca_secret(), Some("ca"));
        assert_eq!(c.address(), "[2001:db8::5]:3307");
        let default_port = Connection { port: MARIADB_PORT, ..c };
        assert_eq!(default_port.host_with_port(), "2001:db8::5", "MariaDB's port goes without saying");
    }

    #[test]
    fn the_external_form_resolves_to_a_connection() {
        let connection = resolve_external(&external("mariadb.metal3.svc", Some("db-ca"))).expect("complete");
        assert_eq!(connection.host_with_port(), "mariadb.metal3.svc");
        assert_eq!(connection.credentials_secret, "db-creds");
        assert_eq!(connection.ca_secret(), Some("db-ca"));
        let incomplete = Database { host: None, ..external("x", None) };
        assert!(resolve_external(&incomplete).is_err_and(|e| e.to_string().contains("host")));
    }

    #[test]
    fn ports_survive_in_every_host_form() {
        let host = |h: &str| resolve_external(&external(h, None)).ok().map(|c| c.host_with_port());
        assert_eq!(host("db:3307"), Some("db:3307".into()));
        assert_eq!(host("192.0.2.5:3307"), Some("192.0.2.5:3307".into()));
        assert_eq!(host("[2001:db8::5]:3307"), Some("[2001:db8::5]:3307".into()));
        assert_eq!(host("2001:db8::5"), Some("2001:db8::5".into()));
    }
}
