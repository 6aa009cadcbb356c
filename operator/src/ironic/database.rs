//! The database seam: what the Ironic builders need to know about the database, whoever
//! provides it.
//!
//! `spec.database` comes in two forms. The external form (ironic-standalone-operator's
//! `credentialsName`, `host`, `name`, `tlsCertificateName`) resolves here, purely. The managed
//! form (a MariaDB the operator runs) resolves in [`crate::database::connection`] to the
//! managed MariaDB's Service and generated Secrets. Either way the builders only ever see a
//! [`DatabaseConnection`], and only once [`crate::database::reconcile`] has checked it.

use crds::ironic::Database;

/// Where Ironic finds its database and how it authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseConnection {
    /// Host name or IP address of the server.
    pub host: String,
    /// Port, when not MariaDB's default (3306).
    pub port: Option<u16>,
    /// Database name.
    pub name: String,
    /// Secret with `username` and `password`, mounted at `/auth/mariadb`.
    pub credentials_secret: String,
    /// Secret with the CA (or certificate) that verifies the server, mounted at
    /// `/certs/ca/mariadb`; `None` connects without TLS.
    pub ca_secret: Option<String>,
}

impl DatabaseConnection {
    /// `MARIADB_HOST`: the host, with the port when it is not the default.
    pub fn host_with_port(&self) -> String {
        match self.port {
            Some(port) if self.host.contains(':') => format!("[{}]:{port}", self.host),
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }
}

/// Resolves the external form to a connection. Validation guarantees the three required
/// fields; an empty one still yields an error (the message says what is missing) rather than a
/// broken pod.
pub fn resolve_external(db: &Database) -> Result<DatabaseConnection, String> {
    let (Some(host), Some(name), Some(credentials)) =
        (nonempty(&db.host), nonempty(&db.name), nonempty(&db.credentials_name))
    else {
        return Err("spec.database needs credentialsName, host and name".to_string());
    };
    let (host, port) = split_port(host);
    Ok(DatabaseConnection {
        host,
        port,
        name: name.to_string(),
        credentials_secret: credentials.to_string(),
        ca_secret: nonempty(&db.tls_certificate_name).map(str::to_string),
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

    fn external(host: &str) -> Database {
        Database {
            credentials_name: Some("db-creds".into()),
            host: Some(host.into()),
            name: Some("ironic".into()),
            tls_certificate_name: Some("db-ca".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_external_form_resolves_to_a_connection() {
        let connection = resolve_external(&external("mariadb.metal3.svc")).expect("complete");
        assert_eq!(connection.host_with_port(), "mariadb.metal3.svc");
        assert_eq!(connection.credentials_secret, "db-creds");
        assert_eq!(connection.ca_secret.as_deref(), Some("db-ca"));
        let incomplete = Database { host: None, ..external("x") };
        assert!(resolve_external(&incomplete).is_err_and(|e| e.contains("host")));
    }

    #[test]
    fn ports_survive_in_every_host_form() {
        let host = |h: &str| resolve_external(&external(h)).ok().map(|c| c.host_with_port());
        assert_eq!(host("db:3307"), Some("db:3307".into()));
        assert_eq!(host("192.0.2.5:3307"), Some("192.0.2.5:3307".into()));
        assert_eq!(host("[2001:db8::5]:3307"), Some("[2001:db8::5]:3307".into()));
        assert_eq!(host("2001:db8::5"), Some("2001:db8::5".into()));
    }
}
