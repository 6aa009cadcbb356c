//! Which namespaces may run an `Ironic`: the ones an operator admin lists.
//!
//! An Ironic's workload is a host-network Deployment or DaemonSet with its Services, Secrets,
//! volumes and Jobs. Granting the operator those writes in every namespace made its account as
//! strong as cluster-admin (a Deployment in `kube-system` runs as any of its ServiceAccounts),
//! so the install grants them only where an admin lists (`--ironic-namespaces`, the operator's
//! own namespace by default), and the controller and the webhook refuse an Ironic anywhere else
//! whatever the roles say.

use crate::FieldError;
use crate::validation::is_dns1123_label;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// The admin's list of namespaces where an `Ironic` is deployed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IronicNamespaces {
    /// These namespaces; empty until [`IronicNamespaces::or_operator_namespace`] fills in the
    /// default.
    Listed(BTreeSet<String>),
    /// Every namespace the operator watches (`*`): the cluster-wide workload rights of old.
    Any,
}

impl Default for IronicNamespaces {
    fn default() -> Self {
        Self::Listed(BTreeSet::new())
    }
}

impl IronicNamespaces {
    /// The listed namespaces, `None` for [`IronicNamespaces::Any`].
    pub fn listed(&self) -> Option<&BTreeSet<String>> {
        match self {
            Self::Listed(namespaces) => Some(namespaces),
            Self::Any => None,
        }
    }

    /// The default, the operator's own namespace, when the admin listed none.
    pub fn or_operator_namespace(self, operator_namespace: Option<&str>) -> Self {
        match (self, operator_namespace) {
            (Self::Listed(listed), Some(own)) if listed.is_empty() => Self::Listed([own.to_string()].into()),
            (other, _) => other,
        }
    }

    /// True when an Ironic in `namespace` may be deployed.
    pub fn allows(&self, namespace: &str) -> bool {
        self.listed().is_none_or(|listed| listed.contains(namespace))
    }

    /// The refusal of an Ironic in `namespace`, `None` when allowed.
    pub fn check(&self, namespace: &str) -> Option<FieldError> {
        (!self.allows(namespace)).then(|| {
            let listed = match self.listed() {
                Some(listed) if !listed.is_empty() => listed.iter().cloned().collect::<Vec<_>>().join(", "),
                _ => "none".to_string(),
            };
            FieldError::new(
                "metadata.namespace",
                format!(
                    "an Ironic runs only in the namespaces an operator admin lists (now: {listed}); {namespace} is \
                     not one: the admin adds it with --ironic-namespaces and grants the operator's workload role \
                     there (design/install.md, \"Tenancy\")"
                ),
            )
        })
    }
}

impl FromStr for IronicNamespaces {
    type Err = String;

    /// Namespaces separated by commas, `*` for any, empty for the default.
    fn from_str(text: &str) -> Result<Self, String> {
        let items: Vec<&str> = text.split(',').map(str::trim).filter(|i| !i.is_empty()).collect();
        if items == ["*"] {
            return Ok(Self::Any);
        }
        let mut listed = BTreeSet::new();
        for item in items {
            if !is_dns1123_label(item) {
                return Err(format!("{item:?} is not a namespace name (list namespaces, or * alone for any)"));
            }
            listed.insert(item.to_string());
        }
        Ok(Self::Listed(listed))
    }
}

impl fmt::Display for IronicNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Listed(listed) => f.write_str(&listed.iter().cloned().collect::<Vec<_>>().join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_only_the_operator_namespace_runs_an_ironic() {
        let namespaces = IronicNamespaces::default().or_operator_namespace(Some("ferrometal-system"));
        assert!(namespaces.allows("ferrometal-system"));
        assert!(!namespaces.allows("kube-system"));
        let refusal = namespaces.check("team-a").expect("refused");
        assert_eq!(refusal.path, "metadata.namespace");
        assert!(refusal.message.contains("now: ferrometal-system"), "{}", refusal.message);
        assert!(refusal.message.contains("--ironic-namespaces"), "{}", refusal.message);
    }

    #[test]
    fn without_an_operator_namespace_and_a_list_nothing_is_allowed() {
        let namespaces = IronicNamespaces::default().or_operator_namespace(None);
        assert!(!namespaces.allows("default"));
        assert!(namespaces.check("default").expect("refused").message.contains("now: none"));
    }

    #[test]
    fn a_list_replaces_the_default_and_a_star_allows_any() {
        let listed: IronicNamespaces = " metal3 , edge".parse().expect("parses");
        let listed = listed.or_operator_namespace(Some("ferrometal-system"));
        assert!(listed.allows("metal3") && listed.allows("edge"));
        assert!(!listed.allows("ferrometal-system"), "a list replaces the default");
        assert_eq!(listed.to_string(), "edge,metal3");
        let any: IronicNamespaces = "*".parse().expect("parses");
        assert!(any.or_operator_namespace(Some("x")).allows("kube-system"));
    }

    #[test]
    fn names_that_are_not_namespaces_are_refused() {
        for bad in ["Team", "a,*", "a b", "-x"] {
            assert!(bad.parse::<IronicNamespaces>().is_err(), "{bad}");
        }
    }
}
