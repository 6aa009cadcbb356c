//! The webhook server's certificate: loaded from files, or made and renewed
//! by the operator.

use super::{Certificates, Config, Error};
use crate::kube::ledger::apply_params;
use crate::kube::{KubeError, Verb};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PostParams};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// Name of the Secret holding operator-managed webhook certificates.
pub const SECRET_NAME: &str = "ferrometal-webhook-tls";
const CA_LIFETIME: time::Duration = time::Duration::days(3650);
const SERVING_LIFETIME: time::Duration = time::Duration::days(365);

/// Serves whatever certificate is current; renewal swaps it in place.
#[derive(Debug)]
pub struct Resolver {
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

/// A CA and a serving certificate, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bundle {
    ca_cert: String,
    ca_key: String,
    cert: String,
    key: String,
}

/// Loads (or makes) the certificate; returns the resolver and the CA to
/// publish in the caBundle, when known.
pub async fn load(client: &kube::Client, config: &Config) -> Result<(Arc<Resolver>, Option<String>), Error> {
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
                Some(_) => stored_bundle(client, secret_namespace, &names).await?,
                None => make_bundle(None, &names)?,
            };
            Ok((Resolver::new(certified_key(&bundle.cert, &bundle.key)?), Some(bundle.ca_cert)))
        }
    }
}

/// Keeps the certificate fresh: re-reads mounted files, or renews the
/// operator-managed serving certificate at two-thirds of its lifetime. When the
/// operator-managed CA itself changed (its Secret was deleted or replaced), the new CA is
/// published in the ValidatingWebhookConfiguration's caBundle at once: otherwise the
/// apiserver would refuse every certificate the webhook serves from then on.
pub fn spawn_renewal(
    client: kube::Client,
    config: Config,
    resolver: Arc<Resolver>,
    mut published_ca: Option<String>,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let period = match config.certificates {
            Certificates::Files { .. } => Duration::from_secs(30),
            Certificates::SelfManaged { .. } => Duration::from_secs(3600),
        };
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
                    match stored_bundle(&client, secret_namespace, &names).await {
                        Ok(bundle) => {
                            if published_ca.as_deref() != Some(bundle.ca_cert.as_str()) {
                                match super::registration::apply(&client, register, Some(&bundle.ca_cert)).await {
                                    Ok(()) => {
                                        tracing::info!("published the webhook's new CA in its caBundle");
                                        published_ca = Some(bundle.ca_cert.clone());
                                    }
                                    Err(err) => tracing::warn!(
                                        error = %crate::kube::error::chain(&err),
                                        "cannot publish the webhook's new CA; retrying"
                                    ),
                                }
                            }
                            certified_key(&bundle.cert, &bundle.key)
                        }
                        Err(err) => Err(err),
                    }
                }
            };
            match refreshed {
                Ok(key) => resolver.replace(key),
                Err(err) => {
                    tracing::warn!(error = %crate::kube::error::chain(&err), "cannot refresh the webhook certificate")
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

/// The bundle in the Secret, created or renewed as needed. The CA is kept
/// for its whole life so the published caBundle stays valid; only the
/// serving certificate is renewed.
async fn stored_bundle(client: &kube::Client, namespace: &str, names: &[String]) -> Result<Bundle, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let existing = secrets.get_opt(SECRET_NAME).await.map_err(KubeError::of::<Secret>(Verb::Get, SECRET_NAME))?;
    let stored = existing.as_ref().and_then(bundle_from_secret);
    if let Some(bundle) = &stored
        && !needs_renewal(&bundle.cert, names, SystemTime::now())
    {
        return Ok(bundle.clone());
    }
    let bundle = make_bundle(stored.as_ref().map(|b| (b.ca_cert.as_str(), b.ca_key.as_str())), names)?;
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
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let theirs = secrets.get(SECRET_NAME).await.map_err(KubeError::of::<Secret>(Verb::Get, SECRET_NAME))?;
                bundle_from_secret(&theirs).ok_or_else(|| Error::InvalidCertificate("incomplete webhook Secret".into()))
            }
            Err(err) => Err(KubeError::new(Verb::Create, "Secret", SECRET_NAME, err).into()),
        },
        Some(_) => {
            secrets
                .patch(SECRET_NAME, &apply_params(), &Patch::Apply(&secret))
                .await
                .map_err(KubeError::of::<Secret>(Verb::Apply, SECRET_NAME))?;
            Ok(bundle)
        }
    }
}

fn bundle_from_secret(secret: &Secret) -> Option<Bundle> {
    let data = secret.data.as_ref()?;
    let get = |k: &str| data.get(k).and_then(|v| String::from_utf8(v.0.clone()).ok());
    Some(Bundle { ca_cert: get("ca.crt")?, ca_key: get("ca.key")?, cert: get("tls.crt")?, key: get("tls.key")? })
}

fn bundle_secret(bundle: &Bundle, namespace: &str) -> Secret {
    let data: BTreeMap<String, ByteString> =
        [("ca.crt", &bundle.ca_cert), ("ca.key", &bundle.ca_key), ("tls.crt", &bundle.cert), ("tls.key", &bundle.key)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
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

/// True when the serving certificate is past two-thirds of its lifetime,
/// unreadable, or does not cover `names`.
fn needs_renewal(cert_pem: &str, names: &[String], now: SystemTime) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()) else { return true };
    let Ok(cert) = pem.parse_x509() else { return true };
    let validity = cert.validity();
    let (start, end) = (validity.not_before.timestamp(), validity.not_after.timestamp());
    let renew_at = start + (end - start) * 2 / 3;
    let now = now.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(i64::MAX);
    if now >= renew_at {
        return true;
    }
    let covered: Vec<String> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    x509_parser::extensions::GeneralName::IPAddress(ip) => ip_text(ip),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    !names.iter().all(|n| covered.contains(n))
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => Some(std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string()),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| std::net::Ipv6Addr::from(b).to_string()),
        _ => None,
    }
}

/// A serving certificate for `names`, signed by the given CA, or by a new
/// one when `ca` is `None` or unusable.
fn make_bundle(ca: Option<(&str, &str)>, names: &[String]) -> Result<Bundle, Error> {
    let now = OffsetDateTime::now_utc();
    let (ca_cert, ca_key, issuer) = match ca.and_then(|(cert, key)| load_issuer(cert, key)) {
        Some((issuer, cert, key)) => (cert, key, issuer),
        None => {
            let mut params = CertificateParams::default();
            params.distinguished_name.push(DnType::CommonName, "ferrometal-webhook-ca");
            params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            params.not_before = now - time::Duration::hours(1);
            params.not_after = now + CA_LIFETIME;
            let key = KeyPair::generate().map_err(Error::Generate)?;
            let cert = params.self_signed(&key).map_err(Error::Generate)?;
            let (cert_pem, key_pem) = (cert.pem(), key.serialize_pem());
            (cert_pem, key_pem, Issuer::new(params, key))
        }
    };
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, names.first().map(String::as_str).unwrap_or("ferrometal"));
    params.subject_alt_names = names
        .iter()
        .map(|n| match n.parse::<std::net::IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => n.clone().try_into().map(SanType::DnsName),
        })
        .collect::<Result<_, _>>()
        .map_err(Error::Generate)?;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + SERVING_LIFETIME;
    let key = KeyPair::generate().map_err(Error::Generate)?;
    let cert = params.signed_by(&key, &issuer).map_err(Error::Generate)?;
    Ok(Bundle { ca_cert, ca_key, cert: cert.pem(), key: key.serialize_pem() })
}

fn load_issuer(cert_pem: &str, key_pem: &str) -> Option<(Issuer<'static, KeyPair>, String, String)> {
    let key = KeyPair::from_pem(key_pem).ok()?;
    let issuer = Issuer::from_ca_cert_pem(cert_pem, key).ok()?;
    Some((issuer, cert_pem.to_string(), key_pem.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_certificate_covers_its_names_and_needs_no_renewal() {
        let names = vec!["fm.ops.svc".to_string(), "127.0.0.1".to_string()];
        let bundle = make_bundle(None, &names).expect("bundle");
        assert!(!needs_renewal(&bundle.cert, &names, SystemTime::now()));
        assert!(needs_renewal(&bundle.cert, &["other.svc".to_string()], SystemTime::now()));
        certified_key(&bundle.cert, &bundle.key).expect("rustls accepts it");
    }

    #[test]
    fn a_certificate_is_renewed_after_two_thirds_of_its_lifetime() {
        let names = vec!["fm.ops.svc".to_string()];
        let bundle = make_bundle(None, &names).expect("bundle");
        let day = Duration::from_secs(86400);
        assert!(!needs_renewal(&bundle.cert, &names, SystemTime::now() + 200 * day));
        assert!(needs_renewal(&bundle.cert, &names, SystemTime::now() + 250 * day));
    }

    #[test]
    fn renewal_keeps_the_ca() {
        let names = vec!["fm.ops.svc".to_string()];
        let first = make_bundle(None, &names).expect("bundle");
        let second = make_bundle(Some((&first.ca_cert, &first.ca_key)), &names).expect("renewed");
        assert_eq!(first.ca_cert, second.ca_cert);
        assert_ne!(first.cert, second.cert);
    }
}
