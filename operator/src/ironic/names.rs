//! Names, labels and annotations of everything the controller creates. One place, so that the
//! builders, the ledger's scopes (and so its prunes) and the watches agree.

use crate::kit::names::{COMPONENT_LABEL, MAX_LABEL_VALUE, bounded};
use crds::ironic::Ironic;
// What clients of an Ironic (the host controller) find by name: one definition for both.
use crds::ironic::names as contract;
use kube::ResourceExt;
use std::collections::BTreeMap;

pub(crate) use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL};
pub(crate) use crds::ironic::IRONIC_LABEL;

/// The finalizer the controller puts on every `Ironic`.
pub const FINALIZER: &str = "ironic.ferrometal.io/finalizer";

/// Selector label of the Ironic pods (ironic-standalone-operator's key and value).
pub(crate) const APP_LABEL: &str = "ironic.metal3.io/app";
/// The Ironic version the object was rendered for.
pub const VERSION_LABEL: &str = "ironic.metal3.io/version";
/// `pre` or `post`, on upgrade Jobs.
pub const UPGRADE_PHASE_LABEL: &str = "ironic.ferrometal.io/upgrade-phase";
/// Pod-template annotation: a digest of the content of every Secret and ConfigMap the pods
/// use. A change of content changes the template and rolls the pods; metadata does not count.
pub const CONTENT_HASH_ANNOTATION: &str = "ironic.ferrometal.io/content-hash";
/// [`COMPONENT_LABEL`] of the Ironic's own objects.
pub(crate) const IRONIC_COMPONENT: &str = "ironic";
/// [`COMPONENT_LABEL`] of its database's objects.
pub(crate) const DATABASE_COMPONENT: &str = "database";

/// Names derived from one Ironic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Names {
    /// The Ironic's name.
    pub ironic: String,
}

impl Names {
    pub(crate) fn of(ironic: &Ironic) -> Self {
        Self { ironic: ironic.name_any() }
    }

    #[cfg(test)]
    pub(crate) fn new(ironic: impl Into<String>) -> Self {
        Self { ironic: ironic.into() }
    }

    /// The Deployment or DaemonSet (`<name>-service`, as ironic-standalone-operator names it).
    pub(crate) fn workload(&self) -> String {
        format!("{}-service", self.ironic)
    }

    /// The Service: the Ironic's own name, so clients find `<name>.<namespace>.svc`.
    pub(crate) fn service(&self) -> String {
        contract::service(&self.ironic)
    }

    /// The Ingress.
    pub(crate) fn ingress(&self) -> String {
        self.ironic.clone()
    }

    /// The Prometheus operator's ServiceMonitor of the exporter (ironic-standalone-operator's
    /// name).
    pub(crate) fn service_monitor(&self) -> String {
        format!("{}-metrics", self.ironic)
    }

    /// The TLS Secret the Ingress names (provided by the user or an ingress controller).
    pub(crate) fn ingress_tls(&self) -> String {
        format!("{}-ingress-tls", self.ironic)
    }

    /// Generated API credentials, when `apiCredentialsName` is empty.
    pub(crate) fn generated_credentials(&self) -> String {
        contract::generated_credentials(&self.ironic)
    }

    /// The htpasswd derived from the API credentials (user-provided or generated).
    pub(crate) fn htpasswd(&self) -> String {
        format!("{}-htpasswd", self.ironic)
    }

    /// The operator-managed CA (TLS mode Auto).
    pub(crate) fn auto_ca(&self) -> String {
        format!("{}-tls-ca", self.ironic)
    }

    /// The serving certificate signed by that CA (TLS mode Auto).
    pub(crate) fn auto_serving(&self) -> String {
        format!("{}-tls-auto", self.ironic)
    }

    /// The cert-manager Certificate and the Secret cert-manager writes (TLS mode CertManager).
    pub(crate) fn cert_manager_certificate(&self) -> String {
        format!("{}-tls", self.ironic)
    }

    /// The Secret the pods mount in TLS mode CertificateSigningRequest: the signed certificate
    /// and its key.
    pub(crate) fn csr_serving(&self) -> String {
        format!("{}-tls-csr", self.ironic)
    }

    /// The key of the CertificateSigningRequest in flight, until it is signed.
    pub(crate) fn csr_request_key(&self) -> String {
        format!("{}-tls-csr-request", self.ironic)
    }

    /// The ConfigMap publishing the CA that signs the serving certificate.
    pub(crate) fn ca_bundle(&self) -> String {
        contract::ca_bundle(&self.ironic)
    }

    /// An upgrade Job: `<name>-<pre|post>-<from|none>-to-<to>`, shortened with a digest when
    /// it would not fit a label value.
    pub(crate) fn upgrade_job(&self, phase: &str, from: Option<&str>, to: &str) -> String {
        bounded(&format!("{}-{phase}-{}-to-{to}", self.ironic, from.unwrap_or("none")), MAX_LABEL_VALUE)
    }

    /// The labels of the reconcile's ledger: every object made for this Ironic carries them.
    pub(crate) fn scope(&self) -> BTreeMap<String, String> {
        [(IRONIC_LABEL.to_string(), self.ironic.clone())].into()
    }
}

/// The ledger scope of the Ironic's own objects: its prunes never reach the database's.
pub(crate) fn ironic_scope() -> [(String, String); 1] {
    [(COMPONENT_LABEL.to_string(), IRONIC_COMPONENT.to_string())]
}

/// The ledger scope of the database's objects: the Ironic's prunes never select them, so its
/// credentials are never lost to a prune.
pub fn database_scope() -> [(String, String); 1] {
    [(COMPONENT_LABEL.to_string(), DATABASE_COMPONENT.to_string())]
}

/// Labels on every object the controller creates for `ironic`.
pub(crate) fn common_labels(ironic: &str, version: &str) -> BTreeMap<String, String> {
    [(IRONIC_LABEL, ironic), (VERSION_LABEL, version), (MANAGED_BY_LABEL, MANAGED_BY)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Labels without the version, for objects that do not depend on it (Secrets, ConfigMaps).
pub(crate) fn owner_labels(ironic: &str) -> BTreeMap<String, String> {
    [(IRONIC_LABEL, ironic), (MANAGED_BY_LABEL, MANAGED_BY)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The workload's selector, which never changes.
pub(crate) fn selector(names: &Names) -> BTreeMap<String, String> {
    [(APP_LABEL.to_string(), names.workload())].into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_ironic_standalone_operator_where_it_has_them() {
        let n = Names::new("ironic");
        assert_eq!(n.workload(), "ironic-service");
        assert_eq!(n.service(), "ironic");
        assert_eq!(n.ingress_tls(), "ironic-ingress-tls");
        assert_eq!(n.service_monitor(), "ironic-metrics");
        assert_eq!(n.upgrade_job("pre", Some("37.0"), "38.0"), "ironic-pre-37.0-to-38.0");
        assert_eq!(n.upgrade_job("post", None, "latest"), "ironic-post-none-to-latest");
    }

    #[test]
    fn the_ironics_objects_and_its_databases_are_in_scopes_that_never_overlap() {
        let (ironic, database) = (ironic_scope(), database_scope());
        assert_eq!(ironic[0].0, database[0].0, "one label tells them apart");
        assert_ne!(ironic[0].1, database[0].1);
        assert_eq!(Names::new("ironic").scope(), [(IRONIC_LABEL.to_string(), "ironic".to_string())].into());
    }

    #[test]
    fn long_job_names_are_shortened_deterministically() {
        let n = Names::new("a".repeat(60));
        let name = n.upgrade_job("pre", Some("37.0"), "38.0");
        assert_eq!(name.len(), MAX_LABEL_VALUE);
        assert_eq!(name, n.upgrade_job("pre", Some("37.0"), "38.0"));
        assert_ne!(name, n.upgrade_job("post", Some("37.0"), "38.0"));
    }
}
