//! Validation (pure): the rules the webhook runs, again (an object may have got in while the
//! webhook was down, or before its rules tightened), and what only the controller can see:
//! services that do not exist, and BareMetalHosts in a namespace this operator cannot see.

use crds::FieldError;
use crds::nodeset::{NodeSet, validate_nodeset};
use crds::validation::summarize;
use kube::ResourceExt;
use std::collections::BTreeSet;

/// What validation found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Violations of the NodeSet's own rules: nothing is claimed, provisioned or run.
    pub invalid: Vec<FieldError>,
    /// A reason the NodeSet cannot be served at all here.
    pub refused: Option<String>,
    /// Services listed that have no NodeSetService: nothing new runs.
    pub unknown_services: Vec<String>,
}

impl Findings {
    /// True when nothing may be claimed, provisioned or run.
    pub fn blocks(&self) -> bool {
        !self.invalid.is_empty() || self.refused.is_some()
    }

    /// The reason and message of the first problem, for Degraded.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if !self.invalid.is_empty() {
            return Some(("InvalidSpec", summarize(&self.invalid)));
        }
        if let Some(refused) = &self.refused {
            return Some(("NamespaceNotWatched", refused.clone()));
        }
        if !self.unknown_services.is_empty() {
            let names = self.unknown_services.join(", ");
            return Some((
                "ServiceNotFound",
                format!("no NodeSetService named {names} in this namespace; nothing new runs until it exists"),
            ));
        }
        None
    }
}

/// Validates `nodeset`. `existing` names the NodeSetServices of its namespace; `watched` the
/// namespaces this operator watches, one by one (empty: all of them).
pub fn check(nodeset: &NodeSet, existing: &BTreeSet<String>, watched: &[String]) -> Findings {
    let mut findings = Findings { invalid: validate_nodeset(nodeset, None), ..Findings::default() };
    let namespace = nodeset.namespace().unwrap_or_default();
    let bmh_namespace = bmh_namespace(nodeset);
    if !nodeset.spec.pre_provisioned() && !watched.is_empty() && bmh_namespace != namespace {
        findings.refused = Some(format!(
            "bmhNamespace {bmh_namespace}: this operator watches namespaces one by one ({}), so a NodeSet claims \
             BareMetalHosts of its own namespace only; move the NodeSet to {bmh_namespace}, or watch all namespaces",
            watched.join(", ")
        ));
    }
    findings.unknown_services =
        nodeset.spec.services.iter().flatten().filter(|s| !existing.contains(*s)).cloned().collect();
    findings
}

/// The namespace of a NodeSet's BareMetalHosts.
pub fn bmh_namespace(nodeset: &NodeSet) -> String {
    nodeset
        .spec
        .baremetal_set_template
        .as_ref()
        .and_then(|t| t.bmh_namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| nodeset.namespace().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nodeset(spec: serde_json::Value) -> NodeSet {
        serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "computes", "namespace": "metal3"}, "spec": spec}))
        .expect("nodeset")
    }

    fn template(extra: serde_json::Value) -> serde_json::Value {
        let mut t =
            json!({"image": {"url": "http://i/os.qcow2", "checksum": "a".repeat(64), "checksumType": "sha256"}});
        json_patch::merge(&mut t, &extra);
        t
    }

    #[test]
    fn a_valid_nodeset_with_its_services_passes() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({})), "nodes": {"c-0": {}}, "services": ["a"]}));
        assert_eq!(check(&n, &BTreeSet::from(["a".to_string()]), &[]), Findings::default());
    }

    #[test]
    fn an_unknown_service_is_a_finding_not_a_block() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({})), "services": ["a", "b"]}));
        let findings = check(&n, &BTreeSet::from(["a".to_string()]), &[]);
        assert_eq!(findings.unknown_services, ["b"]);
        assert!(!findings.blocks());
        assert_eq!(findings.problem().map(|p| p.0), Some("ServiceNotFound"));
    }

    #[test]
    fn the_webhooks_rules_are_checked_again() {
        let n = nodeset(json!({"nodes": {"c-0": {}}}));
        let findings = check(&n, &BTreeSet::new(), &[]);
        assert!(findings.blocks());
        assert!(findings.problem().is_some_and(|(_, m)| m.contains("spec.baremetalSetTemplate")));
    }

    #[test]
    fn a_secret_of_another_namespace_blocks_the_nodeset_even_without_the_webhook() {
        for spec in [
            json!({"baremetalSetTemplate": template(json!({"userData": {"name": "u", "namespace": "other"}}))}),
            json!({"baremetalSetTemplate": template(json!({})),
                   "nodes": {"c-0": {"networkData": {"name": "n", "namespace": "other"}}}}),
        ] {
            let findings = check(&nodeset(spec), &BTreeSet::new(), &[]);
            assert!(findings.blocks(), "nothing is claimed or written");
            assert!(findings.problem().is_some_and(|(_, m)| m.contains(".namespace")), "{findings:?}");
        }
        let same = json!({"baremetalSetTemplate": template(json!({"userData": {"name": "u", "namespace": "metal3"}}))});
        assert!(!check(&nodeset(same), &BTreeSet::new(), &[]).blocks());
    }

    #[test]
    fn another_bmh_namespace_is_refused_by_a_namespace_scoped_operator() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({"bmhNamespace": "hosts"}))}));
        assert!(check(&n, &BTreeSet::new(), &["metal3".to_string(), "hosts".to_string()]).refused.is_some());
        assert_eq!(check(&n, &BTreeSet::new(), &[]).refused, None, "a cluster-wide operator sees every namespace");
        assert_eq!(bmh_namespace(&n), "hosts");
    }
}
