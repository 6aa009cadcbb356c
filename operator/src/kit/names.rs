//! Names and labels every controller shares: the managed-by label, the owner test, and names
//! shortened to Kubernetes' limits the same way everywhere.

use kube::api::ObjectMeta;
use sha2::{Digest, Sha256};

/// Standard label naming the manager, on every object the operator writes.
pub(crate) const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub(crate) const MANAGED_BY: &str = "ferrometal";
/// Standard label naming the part of an application an object belongs to; ledgers scope their
/// prunes by it (an Ironic's own objects, its database's).
pub(crate) const COMPONENT_LABEL: &str = "app.kubernetes.io/component";

/// Kubernetes' limit for label values (and so for Job names, which become the `job-name`
/// label of their pods).
pub(crate) const MAX_LABEL_VALUE: usize = 63;

/// True when the object with `meta` is controlled by the object with `owner_uid`.
pub(crate) fn controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == owner_uid)
}

/// A reference to an object of another namespace than the referring object's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field}.namespace {named:?} is not this object's namespace {own:?}: references to Secrets and ConfigMaps of another namespace are refused"
)]
pub(crate) struct CrossNamespace {
    pub field: &'static str,
    pub named: String,
    pub own: String,
}

/// The namespace a reference at `field` resolves to: the referring object's own (`own`) when
/// it names none or that one; any other is refused. Every controller that follows a
/// user's reference to a Secret or ConfigMap goes through this (or takes a bare name, which
/// cannot leave the namespace): the webhook that checks the same is optional.
pub(crate) fn same_namespace<'a>(
    field: &'static str,
    own: &'a str,
    named: Option<&str>,
) -> Result<&'a str, CrossNamespace> {
    match named.map(str::trim).filter(|n| !n.is_empty()) {
        None => Ok(own),
        Some(named) if named == own => Ok(own),
        Some(named) => Err(CrossNamespace { field, named: named.to_string(), own: own.to_string() }),
    }
}

/// `name` itself when it fits in `max` bytes, else its first characters and a digest of the
/// whole: deterministic, so the same input always names the same object.
pub(crate) fn bounded(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let digest = hex::encode(Sha256::digest(name.as_bytes()));
    let keep = max.saturating_sub(11);
    let mut prefix = String::new();
    for c in name.chars() {
        if prefix.len() + c.len_utf8() > keep {
            break;
        }
        prefix.push(c);
    }
    while prefix.ends_with(['-', '.']) {
        prefix.pop();
    }
    format!("{prefix}-{}", &digest[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_to_the_own_namespace_only() {
        assert_eq!(same_namespace("spec.userData", "a", None), Ok("a"));
        assert_eq!(same_namespace("spec.userData", "a", Some("")), Ok("a"));
        assert_eq!(same_namespace("spec.userData", "a", Some("a")), Ok("a"));
        let err = same_namespace("spec.userData", "a", Some("kube-system")).unwrap_err();
        assert_eq!(err.named, "kube-system");
        assert!(err.to_string().contains("spec.userData.namespace"), "{err}");
    }

    #[test]
    fn short_names_are_kept_and_long_ones_shortened_deterministically() {
        assert_eq!(bounded("ironic-pre-37.0-to-38.0", MAX_LABEL_VALUE), "ironic-pre-37.0-to-38.0");
        let long = format!("{}-pre-37.0-to-38.0", "a".repeat(60));
        let shortened = bounded(&long, MAX_LABEL_VALUE);
        assert_eq!(shortened.len(), MAX_LABEL_VALUE);
        assert_eq!(shortened, bounded(&long, MAX_LABEL_VALUE));
        assert_ne!(shortened, bounded(&long.replace("pre", "post"), MAX_LABEL_VALUE));
    }

    #[test]
    fn a_shortened_name_never_ends_its_prefix_with_a_separator() {
        let name = format!("{}-{}", "a".repeat(51), "b".repeat(40));
        let shortened = bounded(&name, MAX_LABEL_VALUE);
        assert!(!shortened[..shortened.len() - 11].ends_with('-'), "{shortened}");
        assert!(bounded(&"é".repeat(100), 20).len() <= 20);
    }
}
