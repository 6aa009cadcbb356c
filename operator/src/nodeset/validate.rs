//! Validation (pure): the rules the webhook runs, again (an object may have got in while the
//! webhook was down, or before its rules tightened), and what only the controller can see:
//! services that do not exist, and BareMetalHosts in a namespace this operator cannot see.

use crds::FieldError;
use crds::nodeset::Sources;
use crds::nodeset::{
    HostPools, HostStatus, NodeSet, PRE_PROVISIONED_IMMUTABLE_MESSAGE, SELECTION_LOCKED_MESSAGE, validate_host_pool,
    validate_nodeset,
};
use crds::nodesetservice::{NodeSetService, missing_sources};
use crds::validation::summarize;
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What validation found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Findings {
    /// Violations of the NodeSet's own rules: nothing is claimed, provisioned or run.
    pub invalid: Vec<FieldError>,
    /// Why the NodeSet cannot be served at all here: a condition reason and its message.
    pub refused: Option<(&'static str, String)>,
    /// Services listed that have no NodeSetService: nothing new runs.
    pub unknown_services: Vec<String>,
    /// Services listed that break their own rules, and what is wrong: nothing new runs.
    pub invalid_services: Vec<String>,
    /// What `variablesFrom` names that cannot be read as variables (a source missing, a key
    /// that is no variable name): like an invalid spec, nothing is claimed, provisioned or run.
    pub variables: Vec<FieldError>,
    /// Services listed whose Job needs a Secret or ConfigMap that does not exist, and which:
    /// they wait (nothing new runs), as for an invalid service.
    pub waiting_services: Vec<String>,
}

impl Findings {
    /// True when nothing may be claimed, provisioned or run.
    pub(super) fn blocks(&self) -> bool {
        !self.invalid.is_empty() || self.refused.is_some() || !self.variables.is_empty()
    }

    /// Adds what the sources read show: `variablesFrom` problems, services waiting for one.
    pub(super) fn sources(
        &mut self,
        nodeset: &NodeSet,
        read: &Sources,
        services: &BTreeMap<String, Arc<NodeSetService>>,
    ) {
        self.variables = super::sources::check(&nodeset.spec, read);
        for name in nodeset.spec.services.iter().flatten() {
            let missing = services.get(name).map(|s| missing_sources(&s.spec, read)).unwrap_or_default();
            if !missing.is_empty() {
                self.waiting_services.push(format!("NodeSetService {name}: {}", summarize(&missing)));
            }
        }
    }

    /// The reason and message of the first problem, for Degraded.
    pub(super) fn problem(&self) -> Option<(&'static str, String)> {
        if !self.invalid.is_empty() {
            return Some(("InvalidSpec", summarize(&self.invalid)));
        }
        if let Some((reason, message)) = &self.refused {
            return Some((reason, message.clone()));
        }
        if !self.variables.is_empty() {
            return Some((
                "VariablesSourceInvalid",
                format!("{}; nothing is done until it is fixed", summarize(&self.variables)),
            ));
        }
        if !self.invalid_services.is_empty() {
            return Some((
                "InvalidService",
                format!("{}; nothing new runs until they are fixed", self.invalid_services.join("; ")),
            ));
        }
        if !self.waiting_services.is_empty() {
            return Some((
                "ServiceSourceNotFound",
                format!("{}; nothing new runs until it exists", self.waiting_services.join("; ")),
            ));
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

/// Where the operator may act for a NodeSet: the namespaces it watches one by one (empty: all of
/// them) and the host pools an admin opened to other namespaces.
#[derive(Clone, Debug, Default)]
pub(super) struct Reach {
    pub watched: Vec<String>,
    pub pools: HostPools,
}

/// Validates `nodeset`. `existing` holds the NodeSetServices of its namespace, by name, each
/// with its own violations.
pub(super) fn run(nodeset: &NodeSet, existing: &BTreeMap<String, Vec<FieldError>>, reach: &Reach) -> Findings {
    let mut invalid = validate_nodeset(nodeset, None);
    invalid.extend(locked_by_status(nodeset));
    let mut findings = Findings { invalid, refused: refusal(nodeset, reach), ..Findings::default() };
    for service in nodeset.spec.services.iter().flatten() {
        match existing.get(service) {
            None => findings.unknown_services.push(service.clone()),
            Some(errors) if !errors.is_empty() => {
                findings.invalid_services.push(format!("NodeSetService {service}: {}", summarize(errors)));
            }
            Some(_) => {}
        }
    }
    findings
}

/// Why the NodeSet's BareMetalHosts are out of its reach, if they are: another namespace that
/// no admin opened to it (checked here whether or not the webhook is installed), or one this
/// operator does not watch.
fn refusal(nodeset: &NodeSet, reach: &Reach) -> Option<(&'static str, String)> {
    if let Some(refused) = validate_host_pool(nodeset, &reach.pools) {
        return Some(("HostPoolNotOpened", refused.message));
    }
    let namespace = nodeset.namespace().unwrap_or_default();
    let bmh_namespace = bmh_namespace(nodeset);
    (!nodeset.spec.pre_provisioned() && !reach.watched.is_empty() && bmh_namespace != namespace).then(|| {
        let message = format!(
            "bmhNamespace {bmh_namespace}: this operator watches namespaces one by one ({}), so a NodeSet claims \
             BareMetalHosts of its own namespace only; move the NodeSet to {bmh_namespace}, or watch all namespaces",
            reach.watched.join(", ")
        );
        ("NamespaceNotWatched", message)
    })
}

/// The locked transitions, checked against what status recorded (the controller never sees the
/// old spec; the webhook, which does, may not be installed): a `bmhNamespace` other than the
/// one hosts were claimed in, and a `preProvisioned` switched after hosts were claimed or
/// configured. Either would double machines: claim new ones beside those that run.
fn locked_by_status(nodeset: &NodeSet) -> Vec<FieldError> {
    let hosts = nodeset.status.as_ref().and_then(|s| s.hosts.as_ref());
    let mut errors = Vec::new();
    let bmh_namespace = bmh_namespace(nodeset);
    let claimed_elsewhere = hosts
        .into_iter()
        .flatten()
        .filter_map(|(_, h)| h.bmh_ref.as_ref())
        .any(|r| !r.namespace.is_empty() && r.namespace != bmh_namespace);
    if !nodeset.spec.pre_provisioned() && claimed_elsewhere {
        errors.push(FieldError::new("spec.baremetalSetTemplate.bmhNamespace", SELECTION_LOCKED_MESSAGE));
    }
    let claimed = hosts.into_iter().flatten().any(|(_, h)| h.bmh_ref.is_some());
    // Hosts seen while status says the NodeSet was preProvisioned (as the webhook and CEL
    // have it: the field never changes), or, in a status written by an operator that kept
    // completions there, a host that ran something without a BareMetalHost: their machines
    // may run, so they are not hosts to claim BareMetalHosts for.
    let recorded_pre = nodeset.status.as_ref().and_then(|s| s.pre_provisioned) == Some(true);
    let ran_bare = |h: &HostStatus| h.bmh_ref.is_none() && h.services_completed.as_ref().is_some_and(|c| !c.is_empty());
    let configured_bare = hosts.into_iter().flatten().any(|(_, h)| recorded_pre || ran_bare(h));
    if (nodeset.spec.pre_provisioned() && claimed) || (!nodeset.spec.pre_provisioned() && configured_bare) {
        errors.push(FieldError::new("spec.preProvisioned", PRE_PROVISIONED_IMMUTABLE_MESSAGE));
    }
    errors
}

/// The namespace of a NodeSet's BareMetalHosts.
pub(super) fn bmh_namespace(nodeset: &NodeSet) -> String {
    nodeset.bmh_namespace()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn services(valid: &[&str]) -> BTreeMap<String, Vec<FieldError>> {
        valid.iter().map(|s| (s.to_string(), Vec::new())).collect()
    }

    #[test]
    fn an_invalid_service_runs_nothing_new_and_says_what_is_wrong() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({})), "services": ["a", "b"]}));
        let mut existing = services(&["a"]);
        existing.insert("b".into(), vec![FieldError::new("spec.job.image", "is required")]);
        let findings = run(&n, &existing, &Reach::default());
        assert!(!findings.blocks(), "hosts are still claimed and provisioned");
        let (reason, message) = findings.problem().expect("a problem");
        assert_eq!(reason, "InvalidService");
        assert!(message.contains("NodeSetService b: spec.job.image"), "{message}");
    }

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
        assert_eq!(run(&n, &services(&["a"]), &Reach::default()), Findings::default());
    }

    #[test]
    fn an_unknown_service_is_a_finding_not_a_block() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({})), "services": ["a", "b"]}));
        let findings = run(&n, &services(&["a"]), &Reach::default());
        assert_eq!(findings.unknown_services, ["b"]);
        assert!(!findings.blocks());
        assert_eq!(findings.problem().map(|p| p.0), Some("ServiceNotFound"));
    }

    #[test]
    fn the_webhooks_rules_are_checked_again() {
        let n = nodeset(json!({"nodes": {"c-0": {}}}));
        let findings = run(&n, &services(&[]), &Reach::default());
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
            let findings = run(&nodeset(spec), &services(&[]), &Reach::default());
            assert!(findings.blocks(), "nothing is claimed or written");
            assert!(findings.problem().is_some_and(|(_, m)| m.contains(".namespace")), "{findings:?}");
        }
        let same = json!({"baremetalSetTemplate": template(json!({"userData": {"name": "u", "namespace": "metal3"}}))});
        assert!(!run(&nodeset(same), &services(&[]), &Reach::default()).blocks());
    }

    #[test]
    fn another_bmh_namespace_is_refused_by_a_namespace_scoped_operator() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({"bmhNamespace": "hosts"}))}));
        let pools: HostPools = "metal3=hosts".parse().expect("pools");
        let scoped = Reach { watched: vec!["metal3".to_string(), "hosts".to_string()], pools: pools.clone() };
        let findings = run(&n, &services(&[]), &scoped);
        assert_eq!(findings.refused.map(|r| r.0), Some("NamespaceNotWatched"));
        let cluster = Reach { watched: vec![], pools };
        assert_eq!(run(&n, &services(&[]), &cluster).refused, None, "an opened pool, every namespace seen");
        assert_eq!(bmh_namespace(&n), "hosts");
    }

    #[test]
    fn another_bmh_namespace_is_refused_by_the_controller_unless_an_admin_opened_it_as_a_pool() {
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({"bmhNamespace": "team-b"}))}));
        let findings = run(&n, &services(&[]), &Reach::default());
        assert!(findings.blocks(), "nothing is read, claimed or written in team-b");
        let (reason, message) = findings.problem().expect("a problem");
        assert_eq!(reason, "HostPoolNotOpened");
        assert!(message.contains("--nodeset-host-pools metal3=team-b"), "{message}");
        let opened = Reach { pools: "metal3=team-b".parse().expect("pools"), ..Reach::default() };
        assert!(!run(&n, &services(&[]), &opened).blocks());
    }

    fn with_status(mut n: NodeSet, hosts: serde_json::Value) -> NodeSet {
        n.status = Some(serde_json::from_value(json!({"hosts": hosts})).expect("status"));
        n
    }

    #[test]
    fn a_bmh_namespace_edited_while_hosts_are_claimed_blocks_without_the_webhook() {
        let pools = Reach { pools: "metal3=team-b".parse().expect("pools"), ..Reach::default() };
        let moved = with_status(
            nodeset(json!({"baremetalSetTemplate": template(json!({"bmhNamespace": "team-b"})), "nodes": {"c-0": {}}})),
            json!({"c-0": {"bmhRef": {"name": "server-0", "namespace": "metal3"}}}),
        );
        let findings = run(&moved, &services(&[]), &pools);
        assert!(findings.blocks(), "claiming in team-b would double c-0's machine");
        assert!(findings.invalid.iter().any(|e| e.path == "spec.baremetalSetTemplate.bmhNamespace"), "{findings:?}");
    }

    #[test]
    fn pre_provisioned_switched_after_hosts_ran_blocks_without_the_webhook() {
        let completed = json!([{"name": "bootstrap"}]);
        let was_bare = with_status(
            nodeset(json!({"baremetalSetTemplate": template(json!({})), "nodes": {"c-0": {}}})),
            json!({"c-0": {"servicesCompleted": completed}}),
        );
        let findings = run(&was_bare, &services(&[]), &Reach::default());
        assert!(findings.invalid.iter().any(|e| e.path == "spec.preProvisioned"), "{findings:?}");
        // As status says it now: the NodeSet was preProvisioned and the host is configured.
        let mut configured = with_status(
            nodeset(json!({"baremetalSetTemplate": template(json!({})), "nodes": {"c-0": {}}})),
            json!({"c-0": {"deployedConfigHash": "77de"}}),
        );
        let findings = run(&configured, &services(&[]), &Reach::default());
        assert!(findings.invalid.is_empty(), "a host with nothing to run is configured before its claim: {findings:?}");
        configured.status.as_mut().expect("status").pre_provisioned = Some(true);
        let findings = run(&configured, &services(&[]), &Reach::default());
        assert!(findings.invalid.iter().any(|e| e.path == "spec.preProvisioned"), "{findings:?}");
        // Before anything ran on it, too: its machine may already run.
        let mut fresh = with_status(
            nodeset(json!({"baremetalSetTemplate": template(json!({})), "nodes": {"c-0": {}}})),
            json!({"c-0": {"desiredConfigHash": "77de"}}),
        );
        fresh.status.as_mut().expect("status").pre_provisioned = Some(true);
        let findings = run(&fresh, &services(&[]), &Reach::default());
        assert!(findings.invalid.iter().any(|e| e.path == "spec.preProvisioned"), "{findings:?}");
        let was_claimed = with_status(
            nodeset(json!({"preProvisioned": true, "nodes": {"c-0": {}}})),
            json!({"c-0": {"bmhRef": {"name": "server-0", "namespace": "metal3"}}}),
        );
        let findings = run(&was_claimed, &services(&[]), &Reach::default());
        assert!(findings.invalid.iter().any(|e| e.path == "spec.preProvisioned"), "{findings:?}");
    }

    #[test]
    fn a_missing_variables_source_blocks_and_a_services_missing_source_holds_it_named_never_quoted() {
        use crds::nodeset::{SourceData, SourceRef};
        let n = nodeset(json!({"baremetalSetTemplate": template(json!({})), "services": ["a"],
            "nodeTemplate": {"variablesFrom": [{"secretRef": {"name": "vars"}}]},
            "nodes": {"c-0": {"variablesFrom": [{"configMapRef": {"name": "opt"}, "optional": true}]}}}));
        let service: NodeSetService = serde_json::from_value(json!({"apiVersion": "ferrometal.io/v1alpha1",
            "kind": "NodeSetService", "metadata": {"name": "a", "namespace": "metal3"},
            "spec": {"job": {"image": "x", "envFrom": [{"secretRef": {"name": "db"}}]}}}))
        .expect("service");
        let listed = BTreeMap::from([("a".to_string(), Arc::new(service))]);
        let mut findings = run(&n, &services(&["a"]), &Reach::default());
        findings.sources(&n, &Sources::default(), &listed);
        assert!(findings.blocks(), "nothing is claimed, provisioned or run");
        let (reason, message) = findings.problem().expect("a problem");
        assert_eq!(reason, "VariablesSourceInvalid");
        assert!(message.contains("spec.nodeTemplate.variablesFrom[0]: Secret vars does not exist"), "{message}");
        assert!(!message.contains("ConfigMap opt"), "an optional source may be missing: {message}");

        let value = "sentinel-value-never-quoted";
        let vars = SourceData { data: BTreeMap::from([("ok".into(), value.into())]), binary: Vec::new() };
        let read = Sources(BTreeMap::from([(SourceRef::secret("vars"), vars)]));
        let mut findings = run(&n, &services(&["a"]), &Reach::default());
        findings.sources(&n, &read, &listed);
        assert!(!findings.blocks());
        let (reason, message) = findings.problem().expect("a problem");
        assert_eq!(reason, "ServiceSourceNotFound");
        assert!(
            message.contains("NodeSetService a: spec.job.envFrom[0].secretRef: Secret db does not exist"),
            "{message}"
        );
        assert!(!format!("{findings:?}").contains(value));
    }
}
