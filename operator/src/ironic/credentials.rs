//! API credentials: the user's Secret, or one the operator generates, and the htpasswd line
//! Ironic and httpd check requests against.
//!
//! ironic-standalone-operator writes the generated Secret's name into spec; we record it in
//! status only. bcrypt salts every hash, so the htpasswd is kept (with a digest of the
//! credentials it was made from) and made again only when the credentials change; otherwise
//! every reconcile would change the htpasswd Secret.

use super::linked::{Linked, Source, SourceKind, fields};
use super::names::{Names, controlled_by};
use crate::pki::generate_password;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use sha2::{Digest, Sha256};

/// bcrypt cost of the htpasswd; what ironic-standalone-operator uses.
pub const BCRYPT_COST: u32 = 10;
/// Key of the htpasswd line in the htpasswd Secret (ironic-standalone-operator's key).
pub const HTPASSWD_KEY: &str = "htpasswd";
/// Key of the digest of the credentials the htpasswd was made from.
pub const DIGEST_KEY: &str = "credentials.sha256";

/// Why credentials could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "Secret {name} exists but is not managed by this Ironic; delete it, or name your own Secret in spec.apiCredentialsName"
    )]
    Conflict { name: String },
    #[error("key {key:?} of Secret {name} is not UTF-8 text")]
    NotText { name: String, key: &'static str },
    #[error("cannot read Secret {name}")]
    Kube {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot hash the API password")]
    Bcrypt(#[source] bcrypt::BcryptError),
    #[error("the password hashing task failed")]
    Join(#[source] tokio::task::JoinError),
}

/// The credentials in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiCredentials {
    /// Secret holding `username` and `password`.
    pub secret_name: String,
    pub username: String,
    pub password: String,
    /// The operator owns (and renders) the credentials Secret.
    pub generated: bool,
    /// The credentials were made during this reconcile.
    pub newly_generated: bool,
    /// `username:bcrypt-hash`.
    pub htpasswd: String,
    /// Digest of the credentials the htpasswd was made from.
    pub digest: String,
    /// The credentials Secret's content, for the content hash.
    pub source: Source,
}

/// Digest of a username and password, to notice when the htpasswd is stale.
pub fn digest(username: &str, password: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(username.as_bytes());
    hasher.update([0]);
    hasher.update(password.as_bytes());
    hex::encode(hasher.finalize())
}

/// `username:$2y$...`, the form `htpasswd -B` writes and both httpd and Ironic read.
pub fn htpasswd_line(username: &str, password: &str) -> Result<String, bcrypt::BcryptError> {
    let hash = bcrypt::hash_with_result(password, BCRYPT_COST)?;
    Ok(format!("{username}:{}", hash.format_for_version(bcrypt::Version::TwoY)))
}

/// The stored htpasswd, when it was made from the credentials with `digest`.
pub fn reusable_htpasswd(stored: Option<&Secret>, digest: &str) -> Option<String> {
    let source = Source::from_secret(stored?);
    (source.text(DIGEST_KEY) == Some(digest)).then(|| source.text(HTPASSWD_KEY).map(str::to_string)).flatten()
}

/// Resolves the credentials: the user's Secret (already fetched with the linked resources),
/// or the generated one, made now if it does not exist yet.
pub async fn resolve(
    secrets: &Api<Secret>,
    names: &Names,
    owner_uid: &str,
    user_secret: bool,
    linked: &Linked,
) -> Result<ApiCredentials, Error> {
    let (secret_name, username, password, generated, newly_generated) = if user_secret {
        let source = linked.get(fields::API_CREDENTIALS).cloned().unwrap_or_else(|| empty_source(""));
        let (username, password) = user_and_password(&source)?;
        (source.name.clone(), username, password, false, false)
    } else {
        let name = names.generated_credentials();
        let existing = secrets.get_opt(&name).await.map_err(|source| Error::Kube { name: name.clone(), source })?;
        if let Some(secret) = &existing
            && !controlled_by(&secret.metadata, owner_uid)
        {
            return Err(Error::Conflict { name });
        }
        match existing.as_ref().map(Source::from_secret).filter(|s| s.has("username") && s.has("password")) {
            Some(source) => {
                let (username, password) = user_and_password(&source)?;
                (name, username, password, true, false)
            }
            None => (name, names.ironic.clone(), generate_password(), true, true),
        }
    };
    let digest = digest(&username, &password);
    let stored =
        secrets.get_opt(&names.htpasswd()).await.map_err(|source| Error::Kube { name: names.htpasswd(), source })?;
    let htpasswd = match reusable_htpasswd(stored.as_ref(), &digest) {
        Some(line) => line,
        None => {
            let (user, pass) = (username.clone(), password.clone());
            // bcrypt is deliberately slow; keep it off the async workers.
            tokio::task::spawn_blocking(move || htpasswd_line(&user, &pass))
                .await
                .map_err(Error::Join)?
                .map_err(Error::Bcrypt)?
        }
    };
    let source = match linked.get(fields::API_CREDENTIALS) {
        Some(source) if user_secret => source.clone(),
        _ => generated_source(&secret_name, &username, &password),
    };
    Ok(ApiCredentials { secret_name, username, password, generated, newly_generated, htpasswd, digest, source })
}

/// The content of a generated credentials Secret.
pub fn generated_source(name: &str, username: &str, password: &str) -> Source {
    let mut source = empty_source(name);
    source.data.insert("username".into(), username.as_bytes().to_vec());
    source.data.insert("password".into(), password.as_bytes().to_vec());
    source
}

fn empty_source(name: &str) -> Source {
    Source { kind: SourceKind::Secret, name: name.to_string(), data: Default::default() }
}

fn user_and_password(source: &Source) -> Result<(String, String), Error> {
    let text = |key: &'static str| {
        source
            .text(key)
            .map(|v| v.trim_end_matches('\n').to_string())
            .ok_or(Error::NotText { name: source.name.clone(), key })
    };
    Ok((text("username")?, text("password")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    #[test]
    fn the_htpasswd_line_verifies_and_uses_the_2y_prefix() {
        let line = htpasswd_line("ironic", "s3cret").expect("hash");
        let (user, hash) = line.split_once(':').expect("user:hash");
        assert_eq!(user, "ironic");
        assert!(hash.starts_with("$2y$10$"), "{hash}");
        assert!(bcrypt::verify("s3cret", hash).expect("verify"));
    }

    #[test]
    fn the_htpasswd_is_reused_only_for_the_same_credentials() {
        let stored = Secret {
            metadata: ObjectMeta { name: Some("ironic-htpasswd".into()), ..Default::default() },
            data: Some(
                [
                    (HTPASSWD_KEY.to_string(), ByteString(b"ironic:$2y$10$abc".to_vec())),
                    (DIGEST_KEY.to_string(), ByteString(digest("ironic", "one").into_bytes())),
                ]
                .into(),
            ),
            ..Default::default()
        };
        assert_eq!(reusable_htpasswd(Some(&stored), &digest("ironic", "one")).as_deref(), Some("ironic:$2y$10$abc"));
        assert_eq!(reusable_htpasswd(Some(&stored), &digest("ironic", "two")), None);
        assert_eq!(reusable_htpasswd(None, &digest("ironic", "one")), None);
        assert_ne!(digest("a", "bc"), digest("ab", "c"));
    }
}
