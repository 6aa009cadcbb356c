//! The validate step, pure: the same rules as the webhook (objects may predate it, or be
//! written while it was down), the version, and the linked resources as dereferenced: each
//! must exist and hold the keys the pods read. It also says, once per generation, what the
//! spec asks for that this operator does not deploy.

use super::config::{Config, ImageDefaults};
use super::dereference::Found;
use super::linked::{self, Linked, Reference, Source, SourceKind};
use super::unsupported;
use super::version::{self, ResolvedVersion, UnsupportedVersion};
use crate::kit::Notices;
use crds::ironic::{Ironic, IronicNamespaces, IronicSpec, IronicValidationOptions};
use crds::validation::{FieldError, summarize};

/// Why an Ironic cannot be deployed as it is.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("{}", summarize(.0))]
    InvalidSpec(Vec<FieldError>),
    #[error(transparent)]
    UnsupportedVersion(#[from] UnsupportedVersion),
    #[error("{kind} {name} (from {field}) does not exist")]
    Missing { field: &'static str, kind: SourceKind, name: String },
    #[error("{0}")]
    InvalidLinked(String),
    #[error("{0}")]
    NamespaceNotListed(String),
}

/// Said once per generation when the certificate should cover node addresses and cannot.
pub(crate) const NODE_ADDRESSES_NOT_COVERED: &str = "Ironic serves on its node's address (host networking without \
     networking.ipAddress), but the operator may not list nodes, so the serving certificate covers only the Service \
     names and the spec's addresses; install the optional NodeAddresses role (config/optional/node-addresses) or set \
     networking.ipAddress";

/// What validation vouches for.
#[derive(Clone, Debug)]
pub(crate) struct Valid {
    pub version: ResolvedVersion,
    /// Every linked resource, present with the keys the pods read.
    pub linked: Linked,
}

/// The first check, before anything of the namespace is read: an Ironic runs only where an
/// operator admin lists (`--ironic-namespaces`), since its workload needs rights the install
/// grants there alone.
pub(crate) fn namespace(ironic: &Ironic, allowed: &IronicNamespaces) -> Result<(), Error> {
    match allowed.check(ironic.metadata.namespace.as_deref().unwrap_or_default()) {
        Some(refusal) => Err(Error::NamespaceNotListed(refusal.message)),
        None => Ok(()),
    }
}

/// Validates `ironic` and what it refers to.
pub(crate) fn run(ironic: &Ironic, found: &Found, config: &Config, notices: &mut Notices) -> Result<Valid, Error> {
    let version = spec(&ironic.spec, &config.validation, &config.images)?;
    let observed = ironic.status.as_ref().and_then(|s| s.observed_generation);
    if observed != ironic.metadata.generation {
        for note in unsupported::notices(&ironic.spec) {
            notices.warning("NotSupported", note);
        }
        if found.node_ips_forbidden {
            notices.warning("NodeAddressesNotCovered", NODE_ADDRESSES_NOT_COVERED);
        }
    }
    Ok(Valid { version, linked: linked(&found.linked)? })
}

/// The pure rules, then the version.
pub(crate) fn spec(
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

/// Every linked resource exists and holds its keys, in the order the spec names them.
pub(crate) fn linked(found: &[(Reference, Option<Source>)]) -> Result<Linked, Error> {
    let mut out = Linked::default();
    for (reference, source) in found {
        let Some(source) = source else {
            return Err(Error::Missing { field: reference.field, kind: reference.kind, name: reference.name.clone() });
        };
        if let Some(problem) = linked::check(reference, source) {
            return Err(Error::InvalidLinked(problem));
        }
        out.sources.push((reference.field, source.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ironic::linked::fields;
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

    #[test]
    fn an_ironic_outside_the_listed_namespaces_is_refused_with_the_way_to_allow_it() {
        let mut ironic = Ironic::new("ironic", IronicSpec::default());
        ironic.metadata.namespace = Some("team-a".into());
        let listed: IronicNamespaces = "metal3".parse().expect("parses");
        let err = namespace(&ironic, &listed).expect_err("refused");
        let failed = super::super::error::Error::Validate(err).failure();
        let Some(crate::kit::Progress::Failed { reason, message }) = failed else { panic!("a failure") };
        assert_eq!(reason, "NamespaceNotListed");
        assert!(message.contains("--ironic-namespaces") && message.contains("metal3"), "{message}");
        ironic.metadata.namespace = Some("metal3".into());
        assert!(namespace(&ironic, &listed).is_ok());
    }

    fn reference() -> Reference {
        Reference {
            field: fields::API_CREDENTIALS,
            kind: SourceKind::Secret,
            name: "creds".into(),
            keys: vec!["username".into(), "password".into()],
        }
    }

    fn source(pairs: &[(&str, &str)]) -> Source {
        Source {
            kind: SourceKind::Secret,
            name: "creds".into(),
            data: pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect(),
        }
    }

    #[test]
    fn a_linked_resource_that_does_not_exist_is_named_with_its_field() {
        let err = linked(&[(reference(), None)]).expect_err("missing");
        assert_eq!(err.to_string(), "Secret creds (from spec.apiCredentialsName) does not exist");
    }

    #[test]
    fn a_linked_resource_without_its_keys_is_invalid_and_a_complete_one_is_kept_by_field() {
        let err = linked(&[(reference(), Some(source(&[("username", "u")])))]).expect_err("no password");
        assert!(matches!(err, Error::InvalidLinked(m) if m.contains("no key \"password\"")));
        let valid = linked(&[(reference(), Some(source(&[("username", "u"), ("password", "p")])))]).expect("valid");
        assert_eq!(valid.get(fields::API_CREDENTIALS).map(|s| s.name.as_str()), Some("creds"));
    }

    #[test]
    fn a_certificate_that_cannot_cover_node_addresses_is_said_once_per_generation() {
        let mut ironic = Ironic::new("ironic", IronicSpec::default());
        ironic.metadata.generation = Some(2);
        let found = Found {
            linked: Vec::new(),
            credentials: Default::default(),
            tls: Default::default(),
            node_ips: Vec::new(),
            node_ips_forbidden: true,
        };
        let mut notices = Notices::default();
        run(&ironic, &found, &Config::default(), &mut notices).expect("valid");
        assert_eq!(notices.reasons(), ["NodeAddressesNotCovered"]);
        ironic.status = Some(crds::ironic::status::IronicStatus { observed_generation: Some(2), ..Default::default() });
        let mut again = Notices::default();
        run(&ironic, &found, &Config::default(), &mut again).expect("valid");
        assert!(again.is_empty(), "a generation already observed was already told");
    }
}
