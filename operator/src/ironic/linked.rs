//! Linked resources: the user's Secrets and ConfigMaps an Ironic refers to, what each must
//! contain, and their content as the pods will see it. The database's Secrets are the
//! database module's: it reads and checks them, and hands their content back.

use super::names::Names;
pub(crate) use crate::kit::content::{Source, SourceKind};
use crds::ironic::{IronicSpec, ReferenceKind, TlsMode};

/// The spec fields that name linked resources, as users see them in messages.
pub(crate) mod fields {
    pub(crate) const API_CREDENTIALS: &str = "spec.apiCredentialsName";
    pub(crate) const TLS_CERTIFICATE: &str = "spec.tls.certificateName";
    pub(crate) const BMC_CA: &str = "spec.tls.bmcCA";
    pub(crate) const TRUSTED_CA: &str = "spec.tls.trustedCA";
    pub(crate) const SIGNER_CA: &str = "spec.tls.certificateSigningRequest.signerCA";
}

/// The kind a reference names; ConfigMap when it names none.
fn source_kind(kind: Option<ReferenceKind>) -> SourceKind {
    match kind {
        Some(ReferenceKind::Secret) => SourceKind::Secret,
        Some(ReferenceKind::ConfigMap) | None => SourceKind::ConfigMap,
    }
}

/// One linked resource the Ironic needs, and the keys it must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    /// Spec field naming it.
    pub field: &'static str,
    pub kind: SourceKind,
    pub name: String,
    /// Keys that must be present and non-empty; with none listed, at least one key must be.
    pub keys: Vec<String>,
}

/// A CA bundle reference after resolving the deprecated forms: which object and which key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CaReference {
    pub kind: SourceKind,
    pub name: String,
    /// Requested key; the object's first key when `None`.
    pub key: Option<String>,
}

/// A CA reference in its current form (`kind`, `name`, `key`), else in its deprecated form
/// (the name of an object of `deprecated_kind`).
fn ca_reference(
    current: Option<(Option<ReferenceKind>, Option<&String>, Option<&String>)>,
    deprecated: Option<&String>,
    deprecated_kind: SourceKind,
) -> Option<CaReference> {
    let nonempty = |v: Option<&String>| v.filter(|s| !s.is_empty()).cloned();
    match current {
        Some((kind, name, key)) => {
            Some(CaReference { kind: source_kind(kind), name: nonempty(name)?, key: nonempty(key) })
        }
        None => Some(CaReference { kind: deprecated_kind, name: nonempty(deprecated)?, key: None }),
    }
}

/// `tls.bmcCA`, or the deprecated `tls.bmcCAName` (a Secret, as ironic-standalone-operator
/// reads it).
pub(crate) fn bmc_ca(spec: &IronicSpec) -> Option<CaReference> {
    let tls = spec.tls.as_ref()?;
    ca_reference(
        tls.bmc_ca.as_ref().map(|r| (r.kind, r.name.as_ref(), None)),
        tls.bmc_ca_name.as_ref(),
        SourceKind::Secret,
    )
}

/// `tls.trustedCA`, or the deprecated `tls.trustedCAName`.
pub(crate) fn trusted_ca(spec: &IronicSpec) -> Option<CaReference> {
    let tls = spec.tls.as_ref()?;
    ca_reference(
        tls.trusted_ca.as_ref().map(|r| (r.kind, r.name.as_ref(), r.key.as_ref())),
        tls.trusted_ca_name.as_ref(),
        SourceKind::ConfigMap,
    )
}

/// Every linked resource of the user's the Ironic needs, with the keys each must hold.
pub(crate) fn references(spec: &IronicSpec) -> Vec<Reference> {
    let secret = |field, name: &str, keys: &[&str]| Reference {
        field,
        kind: SourceKind::Secret,
        name: name.to_string(),
        keys: keys.iter().map(|k| k.to_string()).collect(),
    };
    let mut out = Vec::new();
    if let Some(name) = spec.api_credentials_name.as_deref().filter(|n| !n.is_empty()) {
        out.push(secret(fields::API_CREDENTIALS, name, &["username", "password"]));
    }
    if let Some(tls) = &spec.tls
        && tls.effective_mode() == Some(TlsMode::Secret)
        && let Some(name) = tls.certificate_name.as_deref().filter(|n| !n.is_empty())
    {
        out.push(secret(fields::TLS_CERTIFICATE, name, &["tls.crt", "tls.key"]));
    }
    if let Some(ca) = bmc_ca(spec) {
        out.push(Reference { field: fields::BMC_CA, kind: ca.kind, name: ca.name, keys: Vec::new() });
    }
    if let Some(tls) = &spec.tls
        && tls.effective_mode() == Some(TlsMode::CertificateSigningRequest)
        && let Some(ca) = tls.certificate_signing_request.as_ref().and_then(|c| c.signer_ca.as_ref())
        && let Some(name) = ca.name.as_deref().filter(|n| !n.is_empty())
    {
        out.push(Reference {
            field: fields::SIGNER_CA,
            kind: source_kind(ca.kind),
            name: name.to_string(),
            keys: ca.key.iter().cloned().collect(),
        });
    }
    if let Some(ca) = trusted_ca(spec) {
        out.push(Reference {
            field: fields::TRUSTED_CA,
            kind: ca.kind,
            name: ca.name,
            keys: ca.key.into_iter().collect(),
        });
    }
    out
}

/// Names of Secrets and ConfigMaps whose changes concern the Ironic: its linked resources, an
/// external database's Secrets and the Secret cert-manager writes for it. The controller's
/// watches map these back to it (a managed database's Secrets are the Ironic's own).
pub(crate) fn watched(spec: &IronicSpec, names: &Names) -> Vec<(SourceKind, String)> {
    let mut out: Vec<(SourceKind, String)> = references(spec).into_iter().map(|r| (r.kind, r.name)).collect();
    if let Some(db) = spec.database.as_ref().filter(|db| !db.is_managed())
        && let Ok(connection) = crate::database::resolve_external(db)
    {
        out.push((SourceKind::Secret, connection.credentials_secret.clone()));
        out.extend(connection.ca_secret().map(|ca| (SourceKind::Secret, ca.to_string())));
    }
    if spec.tls_mode() == Some(TlsMode::CertManager) {
        out.push((SourceKind::Secret, names.cert_manager_certificate()));
    }
    out
}

/// What is wrong with a linked resource, if anything.
pub(crate) fn check(reference: &Reference, source: &Source) -> Option<String> {
    let describe = || format!("{} {} (from {})", reference.kind, reference.name, reference.field);
    if let Some(missing) = reference.keys.iter().find(|k| !source.has(k)) {
        return Some(format!("{} has no key {missing:?}", describe()));
    }
    if reference.keys.is_empty() && !source.data.values().any(|v| !v.is_empty()) {
        return Some(format!("{} is empty", describe()));
    }
    None
}

/// The linked resources as fetched, by spec field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Linked {
    pub sources: Vec<(&'static str, Source)>,
}

impl Linked {
    /// The resource named by `field`.
    pub(crate) fn get(&self, field: &str) -> Option<&Source> {
        self.sources.iter().find(|(f, _)| *f == field).map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::{ResourceReference, ResourceReferenceWithKey, Tls};

    fn source(pairs: &[(&str, &str)]) -> Source {
        Source {
            kind: SourceKind::Secret,
            name: "s".into(),
            data: pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect(),
        }
    }

    #[test]
    fn a_deprecated_bmc_ca_name_is_a_secret_a_trusted_ca_name_a_config_map_and_new_forms_win() {
        let spec = IronicSpec {
            tls: Some(Tls {
                bmc_ca_name: Some("old-bmc".into()),
                trusted_ca: Some(ResourceReferenceWithKey {
                    name: Some("trusted".into()),
                    kind: Some(ReferenceKind::Secret),
                    key: Some("bundle.pem".into()),
                }),
                trusted_ca_name: Some("trusted".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(bmc_ca(&spec), Some(CaReference { kind: SourceKind::Secret, name: "old-bmc".into(), key: None }));
        let deprecated_trusted = IronicSpec {
            tls: Some(Tls { trusted_ca_name: Some("old-trusted".into()), ..Default::default() }),
            ..Default::default()
        };
        assert_eq!(
            trusted_ca(&deprecated_trusted),
            Some(CaReference { kind: SourceKind::ConfigMap, name: "old-trusted".into(), key: None })
        );
        assert_eq!(
            trusted_ca(&spec),
            Some(CaReference { kind: SourceKind::Secret, name: "trusted".into(), key: Some("bundle.pem".into()) })
        );
        let spec = IronicSpec {
            tls: Some(Tls {
                bmc_ca: Some(ResourceReference { name: Some("bmc".into()), kind: Some(ReferenceKind::Secret) }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(bmc_ca(&spec).map(|c| c.kind), Some(SourceKind::Secret));
    }

    #[test]
    fn checks_name_the_missing_key_or_the_empty_object() {
        let reference = Reference {
            field: fields::API_CREDENTIALS,
            kind: SourceKind::Secret,
            name: "creds".into(),
            keys: vec!["username".into(), "password".into()],
        };
        assert_eq!(check(&reference, &source(&[("username", "u"), ("password", "p")])), None);
        assert_eq!(
            check(&reference, &source(&[("username", "u")])).as_deref(),
            Some("Secret creds (from spec.apiCredentialsName) has no key \"password\"")
        );
        let any = Reference { keys: Vec::new(), ..reference };
        assert!(check(&any, &source(&[])).is_some_and(|m| m.ends_with("is empty")));
    }

    #[test]
    fn watched_includes_the_cert_manager_secret() {
        let spec = IronicSpec {
            tls: Some(Tls { mode: Some(TlsMode::CertManager), ..Default::default() }),
            api_credentials_name: Some("creds".into()),
            ..Default::default()
        };
        let watched = watched(&spec, &Names::new("ironic"));
        assert!(watched.contains(&(SourceKind::Secret, "creds".into())));
        assert!(watched.contains(&(SourceKind::Secret, "ironic-tls".into())));
    }

    #[test]
    fn watched_includes_an_external_databases_secrets() {
        let spec = IronicSpec {
            database: Some(crds::ironic::Database {
                credentials_name: Some("db-creds".into()),
                host: Some("db:3306".into()),
                name: Some("ironic".into()),
                tls_certificate_name: Some("db-ca".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let watched = watched(&spec, &Names::new("ironic"));
        assert!(watched.contains(&(SourceKind::Secret, "db-creds".into())));
        assert!(watched.contains(&(SourceKind::Secret, "db-ca".into())));
    }
}
