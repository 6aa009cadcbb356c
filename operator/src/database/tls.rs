//! TLS of a managed MariaDB: the user's certificate (`tls.certificateName`), or a CA and a
//! serving certificate made with rcgen, like the Ironic API's `Auto` mode and with the same
//! renewal at two thirds of the lifetime. Either way clients get the CA alone, in a Secret of
//! its own that Ironic's pods mount at `/certs/ca/mariadb` (key `tls.crt`).

use super::names::Names;
use crate::kit::content::Source;
use crate::pki::{self as auto, CA_CERT_KEY, CA_KEY_KEY, CertifiedPem, Decision, SubjectAltNames};
use crds::ironic::ManagedDatabase;
use crds::ironic::tls::{DEFAULT_AUTO_CA_VALIDITY_DAYS, DEFAULT_AUTO_CERTIFICATE_VALIDITY_DAYS};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The key of the CA in the Secret Ironic mounts at `/certs/ca/mariadb`: ironic-image reads
/// `/certs/ca/mariadb/tls.crt` and connects with TLS when that file exists.
pub(crate) const CA_KEY: &str = "tls.crt";

/// Keys of a serving certificate Secret.
pub(crate) const CERT_KEY: &str = "tls.crt";
pub(crate) const KEY_KEY: &str = "tls.key";

/// True when the managed database is to serve TLS (and require it over the network): unless
/// `tls.enabled` is false. Secure by default.
pub(crate) fn enabled(managed: &ManagedDatabase) -> bool {
    managed.tls_enabled()
}

/// The user's certificate Secret, when one is named.
pub(crate) fn user_secret(managed: &ManagedDatabase) -> Option<&str> {
    managed.tls.as_ref()?.certificate_name.as_deref().map(str::trim).filter(|n| !n.is_empty())
}

/// Names a serving certificate covers: the Service and the pod by every name the cluster
/// resolves, and loopback for clients inside the pod.
pub(crate) fn subject_alt_names(names: &Names, namespace: &str, cluster_domain: &str) -> SubjectAltNames {
    let service = names.service();
    let domain = cluster_domain.trim_end_matches('.');
    let mut dns = vec!["localhost".to_string()];
    for host in [service.clone(), format!("{}.{service}", names.pod())] {
        dns.push(format!("{host}.{namespace}.svc"));
        if !domain.is_empty() {
            dns.push(format!("{host}.{namespace}.svc.{domain}"));
        }
    }
    dns.push(service.clone());
    dns.push(format!("{service}.{namespace}"));
    dns.sort();
    dns.dedup();
    SubjectAltNames { dns, ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)] }
}

/// The material MariaDB serves and clients trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    /// Secret mounted into the MariaDB pod: `tls.crt`, `tls.key` and `ca.crt`.
    pub serving_secret: String,
    /// The CA clients verify the server with.
    pub ca_pem: String,
    /// Digest of the serving material: a change restarts MariaDB.
    pub digest: String,
    /// Made by the operator: the CA and serving certificate to store.
    pub generated: Option<Generated>,
}

/// Certificates the operator made (or keeps) for the managed database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub ca: CertifiedPem,
    pub serving: CertifiedPem,
    /// Why a certificate was made during this reconcile, if one was.
    pub issued: Option<&'static str>,
    /// When the serving certificate is renewed, Unix seconds.
    pub renew_at: Option<i64>,
}

/// Why TLS material is not usable.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("Secret {name} (spec.database.managed.tls.certificateName) does not exist")]
    Missing { name: String },
    #[error(
        "Secret {name} (spec.database.managed.tls.certificateName) has no key {key:?}; it needs tls.crt, tls.key and \
         ca.crt (the CA clients verify the server with)"
    )]
    MissingKey { name: String, key: &'static str },
    #[error("cannot make the managed database's certificates")]
    Generate(#[from] auto::certificate::Error),
}

fn digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(&hasher.finalize()[..16])
}

/// The material in the user's Secret.
pub(crate) fn from_user_secret(name: &str, secret: Option<&Secret>) -> Result<Material, Error> {
    let source = Source::from_secret(secret.ok_or_else(|| Error::Missing { name: name.to_string() })?);
    let text = |key: &'static str| {
        source
            .text(key)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| Error::MissingKey { name: name.to_string(), key })
    };
    let (cert, key, ca) = (text(CERT_KEY)?, text(KEY_KEY)?, text(CA_CERT_KEY)?);
    Ok(Material {
        serving_secret: name.to_string(),
        ca_pem: ca.to_string(),
        digest: digest(&[cert, key, ca]),
        generated: None,
    })
}

fn stored_pair(secret: Option<&Secret>, cert_key: &str, key_key: &str) -> Option<CertifiedPem> {
    let source = Source::from_secret(secret?);
    Some(CertifiedPem { cert: source.text(cert_key)?.to_string(), key: source.text(key_key)?.to_string() })
}

/// The operator's CA and serving certificate: kept while valid and covering `sans`, renewed
/// at two thirds of the lifetime, made anew when missing or unusable. `now` is Unix seconds.
pub(crate) fn generated(
    names: &Names,
    namespace: &str,
    stored_ca: Option<&Secret>,
    stored_serving: Option<&Secret>,
    sans: &SubjectAltNames,
    now: i64,
) -> Result<Material, Error> {
    let ca = stored_pair(stored_ca, CA_CERT_KEY, CA_KEY_KEY);
    let serving = stored_pair(stored_serving, CERT_KEY, KEY_KEY);
    let days = i64::from(DEFAULT_AUTO_CERTIFICATE_VALIDITY_DAYS);
    let (ca, serving, issued) = match (auto::decide(ca.as_ref(), serving.as_ref(), sans, now), ca, serving) {
        (Decision::Keep, Some(ca), Some(serving)) => (ca, serving, None),
        (Decision::IssueServing { reason }, Some(ca), _) => {
            let serving = auto::issue_serving(&ca, sans, days, now)?;
            (ca, serving, Some(reason))
        }
        (decision, _, _) => {
            let reason = match decision {
                Decision::NewCa { reason } | Decision::IssueServing { reason } => reason,
                Decision::Keep => "the stored certificates are incomplete",
            };
            let common_name = format!("{namespace}/{} MariaDB CA", names.ironic);
            let ca = auto::new_ca(&common_name, i64::from(DEFAULT_AUTO_CA_VALIDITY_DAYS), now)?;
            let serving = auto::issue_serving(&ca, sans, days, now)?;
            (ca, serving, Some(reason))
        }
    };
    let renew_at = auto::inspect(&serving.cert).map(|info| info.renewal_at());
    Ok(Material {
        serving_secret: names.tls_serving(),
        ca_pem: ca.cert.clone(),
        digest: digest(&[&serving.cert, &serving.key, &ca.cert]),
        generated: Some(Generated { ca, serving, issued, renew_at }),
    })
}

fn secret(name: String, meta: ObjectMeta, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta { name: Some(name), ..meta },
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
        type_: Some("Opaque".to_string()),
        ..Default::default()
    }
}

/// The operator's CA with its key; only the operator reads it.
pub(crate) fn render_ca(names: &Names, meta: ObjectMeta, generated: &Generated) -> Secret {
    secret(names.tls_ca(), meta, &[(CA_CERT_KEY, &generated.ca.cert), (CA_KEY_KEY, &generated.ca.key)])
}

/// The serving certificate MariaDB mounts.
pub(crate) fn render_serving(names: &Names, meta: ObjectMeta, generated: &Generated) -> Secret {
    let data =
        [(CERT_KEY, &*generated.serving.cert), (KEY_KEY, &*generated.serving.key), (CA_CERT_KEY, &*generated.ca.cert)];
    Secret { type_: Some("kubernetes.io/tls".to_string()), ..secret(names.tls_serving(), meta, &data) }
}

/// The CA clients trust, under `tls.crt` (where ironic-image reads it) and `ca.crt`.
pub(crate) fn render_client_ca(names: &Names, meta: ObjectMeta, material: &Material) -> Secret {
    secret(names.client_ca(), meta, &[(CA_CERT_KEY, &material.ca_pem), (CA_KEY, &material.ca_pem)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::ManagedDatabaseTls;

    const DAY: i64 = 86_400;

    fn now() -> i64 {
        time::OffsetDateTime::now_utc().unix_timestamp()
    }

    fn names() -> Names {
        Names::new("ironic")
    }

    #[test]
    fn tls_is_on_unless_explicitly_off() {
        let with = |tls: Option<ManagedDatabaseTls>| enabled(&ManagedDatabase { tls, ..Default::default() });
        assert!(with(None), "unset: on");
        assert!(with(Some(ManagedDatabaseTls::default())), "tls without enabled: on");
        assert!(with(Some(ManagedDatabaseTls { enabled: Some(true), ..Default::default() })));
        assert!(with(Some(ManagedDatabaseTls { certificate_name: Some("db-tls".into()), ..Default::default() })));
        assert!(!with(Some(ManagedDatabaseTls { enabled: Some(false), ..Default::default() })), "the opt-out");
        let blank = ManagedDatabaseTls { enabled: Some(false), certificate_name: Some(" ".into()) };
        assert!(!with(Some(blank)), "a blank certificate name is no certificate");
        // Refused at admission; should it get through, the user's certificate wins.
        let both = ManagedDatabaseTls { enabled: Some(false), certificate_name: Some("db-tls".into()) };
        assert!(with(Some(both.clone())));
        assert_eq!(user_secret(&ManagedDatabase { tls: Some(both), ..Default::default() }), Some("db-tls"));
    }

    #[test]
    fn the_certificate_covers_the_service_the_pod_and_loopback() {
        let sans = subject_alt_names(&names(), "metal3", "cluster.local");
        for name in [
            "ironic-mariadb",
            "ironic-mariadb.metal3",
            "ironic-mariadb.metal3.svc",
            "ironic-mariadb.metal3.svc.cluster.local",
            "ironic-mariadb-0.ironic-mariadb.metal3.svc.cluster.local",
            "localhost",
        ] {
            assert!(sans.dns.iter().any(|d| d == name), "{name} missing from {:?}", sans.dns);
        }
        assert_eq!(sans.ips.len(), 2);
    }

    fn secret_of(name: &str, data: &[(&str, &str)]) -> Secret {
        secret(name.to_string(), ObjectMeta::default(), data)
    }

    #[test]
    fn generated_material_is_made_once_then_kept_and_renewed_late_in_life() {
        let names = names();
        let sans = subject_alt_names(&names, "metal3", "cluster.local");
        let now = now();
        let first = generated(&names, "metal3", None, None, &sans, now).expect("made");
        let made = first.generated.clone().expect("generated");
        assert_eq!(made.issued, Some("there is no CA yet"));
        let ca = render_ca(&names, ObjectMeta::default(), &made);
        let serving = render_serving(&names, ObjectMeta::default(), &made);
        let again = generated(&names, "metal3", Some(&ca), Some(&serving), &sans, now + DAY).expect("kept");
        assert_eq!(again.generated.as_ref().and_then(|g| g.issued), None);
        assert_eq!(again.digest, first.digest);
        let late = generated(&names, "metal3", Some(&ca), Some(&serving), &sans, now + 300 * DAY).expect("renewed");
        let renewed = late.generated.expect("generated");
        assert!(renewed.issued.is_some());
        assert_eq!(renewed.ca, made.ca, "renewal keeps the CA clients trust");
        assert_ne!(late.digest, first.digest, "a renewal restarts MariaDB");
        assert!(made.renew_at.is_some_and(|at| at > now + 200 * DAY && at < now + 250 * DAY));
    }

    #[test]
    fn clients_get_the_ca_without_its_key() {
        let names = names();
        let sans = subject_alt_names(&names, "metal3", "");
        let material = generated(&names, "metal3", None, None, &sans, now()).expect("made");
        let client = render_client_ca(&names, ObjectMeta::default(), &material);
        let keys: Vec<&String> = client.data.iter().flat_map(|d| d.keys()).collect();
        assert_eq!(keys, ["ca.crt", "tls.crt"]);
        assert_eq!(client.metadata.name.as_deref(), Some("ironic-mariadb-ca"));
    }

    #[test]
    fn a_user_certificate_needs_its_ca() {
        assert!(matches!(from_user_secret("db-tls", None), Err(Error::Missing { .. })));
        let partial = secret_of("db-tls", &[("tls.crt", "C"), ("tls.key", "K")]);
        let err = from_user_secret("db-tls", Some(&partial)).expect_err("no ca.crt");
        assert!(err.to_string().contains("no key \"ca.crt\""), "{err}");
        let full = secret_of("db-tls", &[("tls.crt", "C"), ("tls.key", "K"), ("ca.crt", "A")]);
        let material = from_user_secret("db-tls", Some(&full)).expect("usable");
        assert_eq!((material.serving_secret.as_str(), material.ca_pem.as_str()), ("db-tls", "A"));
        assert!(material.generated.is_none());
    }
}
