//! API credentials: the user's Secret, or one the operator generates, and the htpasswd line
//! Ironic and httpd check requests against.
//!
//! ironic-standalone-operator writes the generated Secret's name into spec; we record it in
//! status only. bcrypt salts every hash, so the htpasswd is kept and made again only when the
//! credentials change (otherwise every reconcile would change the htpasswd Secret): a stored
//! line is kept when its user is the credentials' and its bcrypt hash verifies their password.
//! Nothing faster than bcrypt is ever stored: a fast digest of the credentials beside the hash
//! would let whoever reads the Secret guess the password at a fast hash's speed.

use super::linked::{Source, SourceKind};
use super::names::Names;
use crate::kit::names::controlled_by;
use crate::pki::generate_password;
use k8s_openapi::api::core::v1::Secret;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// bcrypt cost of the htpasswd; what ironic-standalone-operator uses.
pub(crate) const BCRYPT_COST: u32 = 10;
/// Key of the htpasswd line in the htpasswd Secret (ironic-standalone-operator's key).
pub(crate) const HTPASSWD_KEY: &str = "htpasswd";

/// Why credentials could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(
        "Secret {name} exists but is not managed by this Ironic; delete it, or name your own Secret in spec.apiCredentialsName"
    )]
    Conflict { name: String },
    #[error("key {key:?} of Secret {name} is not UTF-8 text")]
    NotText { name: String, key: &'static str },
    #[error("cannot hash the API password")]
    Bcrypt(#[source] bcrypt::BcryptError),
    #[error("the password hashing task failed")]
    Join(#[source] tokio::task::JoinError),
}

/// The credentials in force. Its `Debug` shows neither the password nor the htpasswd.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiCredentials {
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
    /// The credentials Secret's content, for the content hash.
    pub source: Source,
}

impl std::fmt::Debug for ApiCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiCredentials")
            .field("secret_name", &self.secret_name)
            .field("username", &self.username)
            .field("generated", &self.generated)
            .field("newly_generated", &self.newly_generated)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Stored htpasswd lines verified against credentials, for the life of the process: bcrypt is
/// slow by design and every reconcile asks. Each line maps to a digest of the credentials it
/// verified; neither ever leaves memory.
static VERIFIED: LazyLock<Mutex<HashMap<String, [u8; 32]>>> = LazyLock::new(Mutex::default);
/// Lines remembered at most (a few per Ironic); beyond, the memory starts again.
const VERIFIED_MAX: usize = 1024;

fn fingerprint(username: &str, password: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(username.as_bytes());
    hasher.update([0]);
    hasher.update(password.as_bytes());
    hasher.finalize().into()
}

fn remembered(line: &str) -> Option<[u8; 32]> {
    VERIFIED.lock().ok()?.get(line).copied()
}

fn remember(line: &str, print: [u8; 32]) {
    if let Ok(mut verified) = VERIFIED.lock() {
        if verified.len() >= VERIFIED_MAX {
            verified.clear();
        }
        verified.insert(line.to_string(), print);
    }
}

/// `username:$2y$...`, the form `htpasswd -B` writes and both httpd and Ironic read.
pub(crate) fn htpasswd_line(username: &str, password: &str) -> Result<String, bcrypt::BcryptError> {
    let hash = bcrypt::hash_with_result(password, BCRYPT_COST)?;
    Ok(format!("{username}:{}", hash.format_for_version(bcrypt::Version::TwoY)))
}

/// The stored htpasswd line, when it was made from these credentials: its user is `username`
/// and its bcrypt hash verifies `password` (on a blocking thread, once per process and line).
pub(crate) async fn reusable_htpasswd(stored: Option<&Secret>, username: &str, password: &str) -> Option<String> {
    let line = Source::from_secret(stored?).text(HTPASSWD_KEY)?.to_string();
    let (user, hash) = line.split_once(':')?;
    if user != username {
        return None;
    }
    let print = fingerprint(username, password);
    if remembered(&line) == Some(print) {
        return Some(line);
    }
    let (hash, guess) = (hash.to_string(), password.to_string());
    let verified = tokio::task::spawn_blocking(move || bcrypt::verify(guess, &hash)).await.ok()?.ok()?;
    verified.then(|| {
        remember(&line, print);
        line
    })
}

/// The Secrets of the credentials as they were read: the generated credentials (read only
/// when the user names none of their own) and the htpasswd.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stored {
    pub generated: Option<Secret>,
    pub htpasswd: Option<Secret>,
}

/// Resolves the credentials: the user's Secret (`user`, as the linked resources hold it), or
/// the generated one, made now if it does not exist yet. Pure but for the password it may
/// generate and the bcrypt hash, made off the async workers.
pub(crate) async fn resolve(
    names: &Names,
    owner_uid: &str,
    user: Option<&Source>,
    stored: &Stored,
) -> Result<ApiCredentials, Error> {
    let (secret_name, username, password, generated, newly_generated) = match user {
        Some(source) => {
            let (username, password) = user_and_password(source)?;
            (source.name.clone(), username, password, false, false)
        }
        None => {
            let name = names.generated_credentials();
            if let Some(secret) = &stored.generated
                && !controlled_by(&secret.metadata, owner_uid)
            {
                return Err(Error::Conflict { name });
            }
            match stored.generated.as_ref().map(Source::from_secret).filter(|s| s.has("username") && s.has("password"))
            {
                Some(source) => {
                    let (username, password) = user_and_password(&source)?;
                    (name, username, password, true, false)
                }
                None => (name, names.ironic.clone(), generate_password(), true, true),
            }
        }
    };
    let htpasswd = match reusable_htpasswd(stored.htpasswd.as_ref(), &username, &password).await {
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
    let source = match user {
        Some(source) => source.clone(),
        None => generated_source(&secret_name, &username, &password),
    };
    Ok(ApiCredentials { secret_name, username, password, generated, newly_generated, htpasswd, source })
}

/// The content of a generated credentials Secret.
pub(crate) fn generated_source(name: &str, username: &str, password: &str) -> Source {
    let mut source = Source { kind: SourceKind::Secret, name: name.to_string(), data: Default::default() };
    source.data.insert("username".into(), username.as_bytes().to_vec());
    source.data.insert("password".into(), password.as_bytes().to_vec());
    source
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

    #[test]
    fn debug_shows_no_password_nor_htpasswd() {
        let credentials = ApiCredentials {
            secret_name: "s".into(),
            username: "ironic".into(),
            password: "sentinel-password".into(),
            generated: true,
            newly_generated: false,
            htpasswd: "ironic:sentinel-hash".into(),
            source: Source::from_secret(&k8s_openapi::api::core::v1::Secret::default()),
        };
        let shown = format!("{credentials:?}");
        assert!(shown.contains("ironic"), "{shown}");
        for sentinel in ["sentinel-password", "sentinel-hash"] {
            assert!(!shown.contains(sentinel), "{shown}");
        }
    }
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

    fn generated_secret(owner_uid: &str, password: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("ironic-api-credentials".into()),
                owner_references: Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    uid: owner_uid.into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            data: Some(
                [
                    ("username".to_string(), ByteString(b"ironic".to_vec())),
                    ("password".to_string(), ByteString(password.as_bytes().to_vec())),
                ]
                .into(),
            ),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn stored_generated_credentials_are_kept_and_someone_elses_secret_is_a_conflict() {
        let names = Names::new("ironic");
        let stored = Stored { generated: Some(generated_secret("uid-1", "kept")), htpasswd: None };
        let credentials = resolve(&names, "uid-1", None, &stored).await.expect("resolves");
        assert_eq!((credentials.password.as_str(), credentials.generated), ("kept", true));
        assert!(!credentials.newly_generated);
        let conflict = resolve(&names, "uid-2", None, &stored).await.expect_err("not ours");
        assert!(matches!(conflict, Error::Conflict { name } if name == "ironic-api-credentials"));
        let fresh = resolve(&names, "uid-1", None, &Stored::default()).await.expect("generated");
        assert!(fresh.newly_generated && fresh.password.len() == 32);
    }

    #[tokio::test]
    async fn the_htpasswd_is_reused_only_for_the_same_credentials() {
        // bcrypt's cost travels in the hash: a cheap one keeps the test fast.
        let hash = bcrypt::hash_with_result("one", 4).expect("hash").format_for_version(bcrypt::Version::TwoY);
        let line = format!("ironic:{hash}");
        let stored = Secret {
            metadata: ObjectMeta { name: Some("ironic-htpasswd".into()), ..Default::default() },
            data: Some([(HTPASSWD_KEY.to_string(), ByteString(line.clone().into_bytes()))].into()),
            ..Default::default()
        };
        assert_eq!(reusable_htpasswd(Some(&stored), "ironic", "one").await, Some(line.clone()));
        assert_eq!(reusable_htpasswd(Some(&stored), "ironic", "one").await, Some(line), "remembered");
        assert_eq!(reusable_htpasswd(Some(&stored), "ironic", "two").await, None);
        assert_eq!(reusable_htpasswd(Some(&stored), "other", "one").await, None);
        assert_eq!(reusable_htpasswd(None, "ironic", "one").await, None);
        assert_ne!(fingerprint("a", "bc"), fingerprint("ab", "c"));
    }
}
