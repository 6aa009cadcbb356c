//! Credentials of a managed database: Ironic's user and `root`, generated once and kept.
//! MariaDB takes them when it initialises its data directory and never again, so a lost Secret
//! cannot be generated anew: the data would be locked behind the old passwords. The
//! maintenance account is the exception: the server sets its password from its init file at
//! every start ([`super::account`]), so a lost Secret is simply made anew.

use super::connection::{PASSWORD_KEY, USERNAME_KEY};
use crate::pki::generate_password;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use std::collections::BTreeMap;
use std::fmt;

/// Ironic's database user in a managed database.
pub(crate) const IRONIC_USER: &str = "ironic";
/// MariaDB's `root` in a managed database: the official image's, on the pod's socket only.
pub(crate) const ADMIN_USER: &str = "root";

/// A password that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn new(password: impl Into<String>) -> Self {
        Self(password.into())
    }

    /// The password itself, for a database connection and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// A username and password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: Password,
}

/// What is wrong with a credentials Secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("Secret {name} has no non-empty key {key:?}")]
    MissingKey { name: String, key: &'static str },
    #[error("Secret {name}: key {key:?} is not UTF-8 text")]
    NotText { name: String, key: &'static str },
    #[error(
        "Secret {name} with the managed database's credentials is gone, but the database's volume {claim} exists: \
         MariaDB only knows the old passwords. Restore the Secret (keys username and password) from a backup; \
         the operator does not generate new credentials for existing data"
    )]
    Lost { name: String, claim: String },
}

/// A non-empty text value of a Secret.
fn text(secret: &Secret, key: &'static str) -> Result<String, Error> {
    let name = || secret.metadata.name.clone().unwrap_or_default();
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| v.0.clone())
        .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(key)).map(|v| v.as_bytes().to_vec()))
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Error::MissingKey { name: name(), key })?;
    String::from_utf8(bytes).map_err(|_| Error::NotText { name: name(), key })
}

/// Reads `username` and `password` from a Secret.
pub fn from_secret(secret: &Secret) -> Result<Credentials, Error> {
    Ok(Credentials { username: text(secret, USERNAME_KEY)?, password: Password(text(secret, PASSWORD_KEY)?) })
}

/// The credentials to use and whether they were made just now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub credentials: Credentials,
    pub generated: bool,
}

/// Keeps the stored credentials, or generates them for a database that has no data yet.
/// `data_exists` is true when the data directory's claim exists.
pub(crate) fn resolve(
    name: &str,
    stored: Option<&Secret>,
    username: &str,
    data_exists: bool,
    claim: &str,
) -> Result<Resolved, Error> {
    match stored {
        Some(secret) => Ok(Resolved { credentials: from_secret(secret)?, generated: false }),
        None if data_exists => Err(Error::Lost { name: name.to_string(), claim: claim.to_string() }),
        None => Ok(Resolved {
            credentials: Credentials { username: username.to_string(), password: Password(generate_password()) },
            generated: true,
        }),
    }
}

/// The maintenance account's credentials: the stored password, or a new one when the Secret
/// does not exist (whether or not data does). The username is always
/// [`super::account::MAINTENANCE_USER`]: the account's name is the operator's, not the Secret's.
pub(crate) fn resolve_maintenance(stored: Option<&Secret>) -> Result<Resolved, Error> {
    let (password, generated) = match stored {
        Some(secret) => (Password(text(secret, PASSWORD_KEY)?), false),
        None => (Password(generate_password()), true),
    };
    let username = super::account::MAINTENANCE_USER.to_string();
    Ok(Resolved { credentials: Credentials { username, password }, generated })
}

/// The credentials Secret, applied whole so the operator keeps owning it.
pub(crate) fn render(name: &str, meta: ObjectMeta, credentials: &Credentials) -> Secret {
    let data: BTreeMap<String, ByteString> = [
        (USERNAME_KEY.to_string(), ByteString(credentials.username.as_bytes().to_vec())),
        (PASSWORD_KEY.to_string(), ByteString(credentials.password.expose().as_bytes().to_vec())),
    ]
    .into();
    Secret {
        metadata: ObjectMeta { name: Some(name.to_string()), ..meta },
        data: Some(data),
        type_: Some("Opaque".to_string()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(username: &str, password: &str) -> Secret {
        render(
            "creds",
            ObjectMeta::default(),
            &Credentials { username: username.into(), password: Password::new(password) },
        )
    }

    #[test]
    fn stored_credentials_are_kept() {
        let stored = secret("ironic", "s3cret");
        let resolved = resolve("creds", Some(&stored), IRONIC_USER, true, "data-0").expect("usable");
        assert!(!resolved.generated);
        assert_eq!(resolved.credentials.username, "ironic");
        assert_eq!(resolved.credentials.password.expose(), "s3cret");
    }

    #[test]
    fn new_databases_get_generated_credentials() {
        let resolved = resolve("creds", None, ADMIN_USER, false, "data-0").expect("generated");
        assert!(resolved.generated);
        assert_eq!(resolved.credentials.username, "root");
        assert_eq!(resolved.credentials.password.expose().len(), 32);
    }

    #[test]
    fn a_lost_secret_with_existing_data_is_not_regenerated() {
        let err = resolve("creds", None, IRONIC_USER, true, "data-ironic-mariadb-0").expect_err("lost");
        assert!(matches!(err, Error::Lost { .. }));
        assert!(err.to_string().contains("Restore the Secret"), "{err}");
    }

    #[test]
    fn incomplete_secrets_are_refused_by_key() {
        let mut stored = secret("ironic", "");
        assert_eq!(
            resolve("creds", Some(&stored), IRONIC_USER, true, "c"),
            Err(Error::MissingKey { name: "creds".into(), key: "password" })
        );
        stored.data = None;
        stored.string_data =
            Some([("username".to_string(), "u".to_string()), ("password".to_string(), "p".to_string())].into());
        assert!(from_secret(&stored).is_ok(), "stringData counts");
    }

    #[test]
    fn the_maintenance_account_is_made_anew_when_lost_and_keeps_its_name() {
        let made = resolve_maintenance(None).expect("generated even though data exists");
        assert!(made.generated);
        assert_eq!(made.credentials.username, "ferrometal-maintenance");
        let stored = secret("someone-else", "rotated-by-hand");
        let kept = resolve_maintenance(Some(&stored)).expect("kept");
        assert!(!kept.generated);
        assert_eq!(kept.credentials.username, "ferrometal-maintenance", "the account's name is the operator's");
        assert_eq!(kept.credentials.password.expose(), "rotated-by-hand");
        let broken = secret("ferrometal-maintenance", "");
        assert_eq!(
            resolve_maintenance(Some(&broken)),
            Err(Error::MissingKey { name: "creds".into(), key: "password" })
        );
    }

    #[test]
    fn passwords_never_print() {
        let credentials = Credentials { username: "root".into(), password: Password::new("hunter2") };
        assert!(!format!("{credentials:?}").contains("hunter2"));
    }
}
