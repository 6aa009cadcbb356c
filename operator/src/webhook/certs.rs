//! The webhook server's certificate: loaded from files, or made, renewed and
//! rotated by the operator (`rotation.rs` decides; this file reads, stores,
//! publishes and serves).

use super::rotation::{self, Bundle, Pair, Plan};
use super::{Certificates, Config, Error};
use crate::kit::ledger::apply_params;
use crate::kit::{KubeError, Verb};
use crate::pki::rotation as pki_rotation;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PostParams};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// Name of the Secret holding operator-managed webhook certificates.
pub(crate) const SECRET_NAME: &str = "ferrometal-webhook-tls";
/// Keys of the serving certificate in the Secret (the `kubernetes.io/tls` layout); the CAs'
/// are [`crate::pki::rotation::ca_data`]'s.
const TLS_CERT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";

/// Serves whatever certificate is current; renewal swaps it in place.
#[derive(Debug)]
pub(super) struct Resolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl Resolver {
    fn new(key: CertifiedKey) -> Arc<Self> {
        Arc::new(Self { current: RwLock::new(Arc::new(key)) })
    }

    fn replace(&self, key: CertifiedKey) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// Loads (or makes) the certificate; returns the resolver and the CA to
/// publish in the caBundle, when known.
pub(super) async fn load(client: &kube::Client, config: &Config) -> Result<(Arc<Resolver>, Option<String>), Error> {
    match &config.certificates {
        Certificates::Files { cert, key, ca } => {
            let key_pair = certified_key(&read(cert)?, &read(key)?)?;
            let ca = ca.as_ref().map(read).transpose()?;
            Ok((Resolver::new(key_pair), ca))
        }
        Certificates::SelfManaged { secret_namespace } => {
            let names = config.register.as_ref().map(|c| c.subject_alt_names()).unwrap_or_default();
            let names = if names.is_empty() { vec!["localhost".to_string()] } else { names };
            let bundle = match &config.register {
                Some(_) => {
                    let published = super::registration::published_ca_bundle(client).await;
                    stored_bundle(client, secret_namespace, &names, settle(config), published.as_deref()).await?
                }
                None => rotation::fresh(&names, SystemTime::now())?,
            };
            Ok((Resolver::new(certified_key(&bundle.serving.cert, &bundle.serving.key)?), Some(bundle.trusted())))
        }
    }
}

/// Keeps the certificate fresh, every refresh period: re-reads mounted files,
/// or renews and rotates the operator-managed certificates (`rotation.rs`).
/// Whenever the CAs to trust changed (a rotation step, or the Secret deleted
/// or replaced), they are published in the ValidatingWebhookConfiguration's
/// caBundle at once: otherwise the apiserver would refuse what the webhook serves.
pub(super) fn spawn_renewal(
    client: kube::Client,
    config: Config,
    resolver: Arc<Resolver>,
    mut published_ca: Option<String>,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let period = config.refresh;
        let mut last: Option<(String, String)> = None;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
            let refreshed = match &config.certificates {
                Certificates::Files { cert, key, .. } => match (read(cert), read(key)) {
                    (Ok(cert), Ok(key)) if last.as_ref() != Some(&(cert.clone(), key.clone())) => {
                        last = Some((cert.clone(), key.clone()));
                        certified_key(&cert, &key)
                    }
                    (Ok(_), Ok(_)) => continue,
                    (Err(err), _) | (_, Err(err)) => Err(err),
                },
                Certificates::SelfManaged { secret_namespace } => {
                    let names = config.register.as_ref().map(|c| c.subject_alt_names()).unwrap_or_default();
                    let Some(register) = &config.register else { continue };
                    let published = super::registration::published_ca_bundle(&client).await;
                    match stored_bundle(&client, secret_namespace, &names, settle(&config), published.as_deref()).await
                    {
                        Ok(bundle) => {
                            let trusted = bundle.trusted();
                            if published_ca.as_deref() != Some(trusted.as_str()) {
                                match super::registration::apply(&client, register, Some(&trusted)).await {
                                    Ok(()) => {
                                        tracing::info!(cas = ?bundle, "published the webhook's CAs in its caBundle");
                                        published_ca = Some(trusted);
                                    }
                                    Err(err) => tracing::warn!(
                                        error = %crate::kit::error::chain(&err),
                                        "cannot publish the webhook's new CA; retrying"
                                    ),
                                }
                            }
                            certified_key(&bundle.serving.cert, &bundle.serving.key)
                        }
                        Err(err) => Err(err),
                    }
                }
            };
            match refreshed {
                Ok(key) => resolver.replace(key),
                Err(err) => {
                    tracing::warn!(error = %crate::kit::error::chain(&err), "cannot refresh the webhook certificate")
                }
            }
        }
    });
}

fn read(path: &std::path::PathBuf) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::ReadFile { path: path.clone(), source })
}

fn certified_key(cert_pem: &str, key_pem: &str) -> Result<CertifiedKey, Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| Error::InvalidCertificate(e.to_string()))?;
    if certs.is_empty() {
        return Err(Error::InvalidCertificate("no certificate in PEM".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| Error::InvalidCertificate(e.to_string()))?;
    let signing_key =
        rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| Error::InvalidCertificate(e.to_string()))?;
    Ok(CertifiedKey::new(certs, signing_key))
}

/// How long a change to the Secret or the caBundle takes to reach every
/// replica (each re-reads the Secret every refresh period) and the apiserver.
fn settle(config: &Config) -> Duration {
    config.refresh.saturating_mul(2)
}

/// The bundle in the Secret, created, renewed or moved along its rotation as
/// `rotation::plan` decides. `published` is the caBundle the apiserver has.
async fn stored_bundle(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
    settle: Duration,
    published: Option<&str>,
) -> Result<Bundle, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let existing = secrets.get_opt(SECRET_NAME).await.map_err(KubeError::of::<Secret>(Verb::Get, SECRET_NAME))?;
    let stored = existing.as_ref().and_then(bundle_from_secret);
    let bundle = match rotation::plan(stored.as_ref(), names, SystemTime::now(), settle, published)? {
        Plan::Keep => return stored.ok_or_else(|| Error::InvalidCertificate("no webhook certificate".into())),
        Plan::Write(bundle) => bundle,
    };
    let secret = bundle_secret(&bundle, namespace);
    match existing {
        None => match secrets
            .create(
                &PostParams { field_manager: Some(crate::FIELD_MANAGER.to_string()), ..Default::default() },
                &secret,
            )
            .await
        {
            Ok(_) => Ok(bundle),
            // Another replica made one first: serve theirs, so every replica
            // presents a certificate from the CA that was published.
            Err(kube::Error::Api(status)) if status.code == 409 => theirs(&secrets).await,
            Err(err) => Err(KubeError::new(Verb::Create, "Secret", SECRET_NAME, err).into()),
        },
        // Only over the version it read: two replicas renewing at once must not each serve a
        // certificate the other overwrote; the one that loses serves the winner's.
        Some(current) => {
            match secrets.patch(SECRET_NAME, &apply_params(), &Patch::Apply(&over(secret, &current))).await {
                Ok(_) => Ok(bundle),
                Err(kube::Error::Api(status)) if status.code == 409 => theirs(&secrets).await,
                Err(err) => Err(KubeError::new(Verb::Apply, "Secret", SECRET_NAME, err).into()),
            }
        }
    }
}

/// `secret`, to be applied only over `current` (its resourceVersion).
fn over(mut secret: Secret, current: &Secret) -> Secret {
    secret.metadata.resource_version = current.metadata.resource_version.clone();
    secret
}

/// The bundle another replica wrote first.
async fn theirs(secrets: &Api<Secret>) -> Result<Bundle, Error> {
    let theirs = secrets.get(SECRET_NAME).await.map_err(KubeError::of::<Secret>(Verb::Get, SECRET_NAME))?;
    bundle_from_secret(&theirs).ok_or_else(|| Error::InvalidCertificate("incomplete webhook Secret".into()))
}

fn bundle_from_secret(secret: &Secret) -> Option<Bundle> {
    let data = secret.data.as_ref()?;
    let get = |k: &str| data.get(k).and_then(|v| String::from_utf8(v.0.clone()).ok()).filter(|v| !v.is_empty());
    let serving = Pair { cert: get(TLS_CERT)?, key: get(TLS_KEY)? };
    pki_rotation::from_data(get, serving)
}

fn bundle_secret(bundle: &Bundle, namespace: &str) -> Secret {
    let serving = [(TLS_CERT, bundle.serving.cert.clone()), (TLS_KEY, bundle.serving.key.clone())];
    let data: BTreeMap<String, ByteString> = pki_rotation::ca_data(bundle)
        .into_iter()
        .chain(serving)
        .map(|(k, v)| (k.to_string(), ByteString(v.into_bytes())))
        .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(SECRET_NAME.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some([("app.kubernetes.io/managed-by".to_string(), "ferrometal".to_string())].into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".to_string()),
        data: Some(data),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renewal_is_applied_only_over_the_secret_it_read() {
        let mut current = bundle_secret(&rotation::fresh(&["a".to_string()], SystemTime::now()).expect("old"), "ops");
        current.metadata.resource_version = Some("42".into());
        let renewed = rotation::fresh(&["a".to_string()], SystemTime::now()).expect("new");
        let applied = over(bundle_secret(&renewed, "ops"), &current);
        assert_eq!(applied.metadata.resource_version.as_deref(), Some("42"), "a conflict, not a silent overwrite");
    }

    #[test]
    fn rustls_serves_the_operator_made_certificate() {
        let bundle = rotation::fresh(&["fm.ops.svc".to_string()], SystemTime::now()).expect("bundle");
        certified_key(&bundle.serving.cert, &bundle.serving.key).expect("rustls accepts it");
    }

    #[test]
    fn the_secret_holds_the_rotation_and_reads_back_the_same() {
        let now = SystemTime::now();
        let names = vec!["fm.ops.svc".to_string()];
        let mut bundle = rotation::fresh(&names, now).expect("bundle");
        let secret = bundle_secret(&bundle, "ops");
        assert_eq!(bundle_from_secret(&secret), Some(bundle.clone()));
        let data = secret.data.as_ref().expect("data");
        for key in ["next-ca.crt", "next-ca.key", "retired-ca.crt"] {
            assert_eq!(data.get(key).map(|v| v.0.len()), Some(0), "{key} is written empty between rotations");
        }

        let other = rotation::fresh(&names, now).expect("another");
        bundle.next = Some(other.ca.clone());
        bundle.retired = Some(other.ca.cert);
        assert_eq!(bundle_from_secret(&bundle_secret(&bundle, "ops")), Some(bundle));
    }
}
