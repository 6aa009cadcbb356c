//! The validate step: the same pure rules as the webhook (objects may predate it, or be
//! written while it was down), the version, and the linked resources: each must exist and
//! hold the keys the pods read.

use super::ImageDefaults;
use super::linked::{self, Linked, Reference, Source, SourceKind};
use super::version::{self, ResolvedVersion, UnsupportedVersion};
use crds::ironic::{IronicSpec, IronicValidationOptions};
use crds::validation::{FieldError, summarize};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::Api;

/// Why an Ironic cannot be deployed as it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}", summarize(.0))]
    InvalidSpec(Vec<FieldError>),
    #[error(transparent)]
    UnsupportedVersion(#[from] UnsupportedVersion),
    #[error("{kind} {name} (from {field}) does not exist")]
    Missing { field: &'static str, kind: SourceKind, name: String },
    #[error("{0}")]
    InvalidLinked(String),
    #[error("cannot read {kind} {name}")]
    Kube {
        kind: SourceKind,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// The pure rules, then the version.
pub fn spec(
    spec: &IronicSpec,
    options: &IronicValidationOptions,
    images: &ImageDefaults,
) -> Result<ResolvedVersion, Error> {
    let errors = crds::ironic::validate_ironic(spec, None, options);
    if !errors.is_empty() {
        return Err(Error::InvalidSpec(errors));
    }
    Ok(version::resolve(spec, images)?)
}

/// Fetches every linked resource and checks its keys.
pub async fn linked(client: &Client, namespace: &str, references: Vec<Reference>) -> Result<Linked, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut out = Linked::default();
    for reference in references {
        let kube_error = |source| Error::Kube { kind: reference.kind, name: reference.name.clone(), source };
        let source = match reference.kind {
            SourceKind::Secret => {
                secrets.get_opt(&reference.name).await.map_err(kube_error)?.map(|s| Source::from_secret(&s))
            }
            SourceKind::ConfigMap => {
                config_maps.get_opt(&reference.name).await.map_err(kube_error)?.map(|c| Source::from_config_map(&c))
            }
        };
        let Some(source) = source else {
            return Err(Error::Missing { field: reference.field, kind: reference.kind, name: reference.name });
        };
        if let Some(problem) = linked::check(&reference, &source) {
            return Err(Error::InvalidLinked(problem));
        }
        out.sources.push((reference.field, source));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::ironic::Networking;

    #[test]
    fn the_webhook_rules_run_again_with_their_field_paths() {
        let invalid = IronicSpec {
            networking: Some(Networking { ip_address: Some("not-an-ip".into()), ..Default::default() }),
            ..Default::default()
        };
        let err = spec(&invalid, &IronicValidationOptions::default(), &ImageDefaults::default()).expect_err("invalid");
        assert!(
            matches!(&err, Error::InvalidSpec(e) if e.iter().any(|e| e.path == "spec.networking.ipAddress")),
            "{err}"
        );
        let ok = spec(&IronicSpec::default(), &IronicValidationOptions::default(), &ImageDefaults::default());
        assert_eq!(ok.map(|v| v.version.to_string()).ok().as_deref(), Some("38.0"));
    }
}
