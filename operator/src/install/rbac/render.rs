//! Roles from the table: the rules of one reach and feature, and the ClusterRoles, Roles and
//! bindings that grant them to the operator's ServiceAccount.

use super::table::ALL;
use super::{Component, Feature, Reach, Verb};
use crds::ironic::IronicNamespaces;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

/// The rules `components` need in `reach` for `feature`: one rule per resource and name set,
/// with the union of the verbs, sorted by group and resource so the output is stable.
pub fn rules(components: &[&Component], reach: Reach, feature: Feature) -> Vec<PolicyRule> {
    rules_in(components, &[reach], feature)
}

/// The rules of every reach of `reaches`, merged as [`rules`] merges one reach's.
pub fn rules_in(components: &[&Component], reaches: &[Reach], feature: Feature) -> Vec<PolicyRule> {
    let mut merged: BTreeMap<(&str, String, Vec<&str>), BTreeSet<Verb>> = BTreeMap::new();
    for component in components {
        for access in component.access.iter().filter(|a| reaches.contains(&a.reach) && a.feature == feature) {
            let mut names: Vec<&str> = access.names.to_vec();
            names.sort_unstable();
            merged
                .entry((access.resource.group, access.resource.rule_name(), names))
                .or_default()
                .extend(access.verbs.iter().copied());
        }
    }
    merged
        .into_iter()
        .map(|((group, resource, names), verbs)| PolicyRule {
            api_groups: Some(vec![group.to_string()]),
            resources: Some(vec![resource]),
            resource_names: (!names.is_empty()).then(|| names.iter().map(|n| n.to_string()).collect()),
            verbs: verbs.iter().map(|v| v.as_str().to_string()).collect(),
            non_resource_urls: None,
        })
        .collect()
}

/// The rules of every component in `reach` for `feature`.
pub fn all_rules(reach: Reach, feature: Feature) -> Vec<PolicyRule> {
    rules(&ALL, reach, feature)
}

/// The rules of every namespaced reach, merged: the OLM bundle's `permissions` (OLM grants
/// them in the namespaces of the OperatorGroup, or cluster-wide for AllNamespaces).
pub fn namespaced_rules(feature: Feature) -> Vec<PolicyRule> {
    rules_in(&ALL, &[Reach::Watched, Reach::OperatorNamespace, Reach::IronicNamespaces], feature)
}

/// The name of the role granting `feature` in `reach`.
pub fn role_name(feature: Feature, reach: Reach) -> String {
    match (feature, reach) {
        (Feature::Always, Reach::Watched) => "ferrometal-manager".to_string(),
        (Feature::Always, Reach::OperatorNamespace) => "ferrometal-leader-election".to_string(),
        (Feature::Always, Reach::Cluster) => "ferrometal-cluster".to_string(),
        (Feature::Always, Reach::IronicNamespaces) => "ferrometal-ironic-workloads".to_string(),
        (Feature::WebhookSelfManaged, Reach::OperatorNamespace) => "ferrometal-webhook-certificate".to_string(),
        (Feature::WebhookSelfManaged, Reach::Cluster) => "ferrometal-webhook-configuration".to_string(),
        (feature, Reach::Cluster) => format!("ferrometal-{}-cluster", feature.slug()),
        (feature, _) => format!("ferrometal-{}", feature.slug()),
    }
}

/// Who the roles are granted to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grantee {
    /// The operator's namespace, where its ServiceAccount is.
    pub namespace: String,
    pub service_account: String,
    /// Watched namespaces; empty for the whole cluster (ClusterRoles for [`Reach::Watched`]).
    pub watch_namespaces: Vec<String>,
    /// Where an Ironic may run ([`Reach::IronicNamespaces`]): a Role in each listed namespace
    /// (the operator's own when none is listed), or what [`Reach::Watched`] gets for `*`.
    pub ironic_namespaces: IronicNamespaces,
    pub labels: BTreeMap<String, String>,
}

/// RBAC objects for one feature, as JSON objects in a fixed order: roles before bindings.
pub fn objects(grantee: &Grantee, feature: Feature) -> Vec<serde_json::Value> {
    let mut roles = Vec::new();
    let mut bindings = Vec::new();
    let ironic_namespaces = grantee.ironic_namespaces.clone().or_operator_namespace(Some(&grantee.namespace));
    for reach in [Reach::Watched, Reach::IronicNamespaces, Reach::OperatorNamespace, Reach::Cluster] {
        let rules = all_rules(reach, feature);
        if rules.is_empty() {
            continue;
        }
        let name = role_name(feature, reach);
        let like_watched =
            reach == Reach::Watched || (reach == Reach::IronicNamespaces && ironic_namespaces.listed().is_none());
        let cluster_wide = reach == Reach::Cluster || (like_watched && grantee.watch_namespaces.is_empty());
        if cluster_wide {
            roles.push(to_value(&ClusterRole {
                metadata: meta(&name, None, grantee),
                rules: Some(rules),
                aggregation_rule: None,
            }));
            bindings.push(to_value(&ClusterRoleBinding {
                metadata: meta(&name, None, grantee),
                role_ref: role_ref("ClusterRole", &name),
                subjects: Some(vec![subject(grantee)]),
            }));
            continue;
        }
        let namespaces = match (reach, ironic_namespaces.listed()) {
            (Reach::OperatorNamespace, _) => vec![grantee.namespace.clone()],
            (Reach::IronicNamespaces, Some(listed)) => listed.iter().cloned().collect(),
            _ => grantee.watch_namespaces.clone(),
        };
        for namespace in namespaces {
            roles
                .push(to_value(&Role { metadata: meta(&name, Some(&namespace), grantee), rules: Some(rules.clone()) }));
            bindings.push(to_value(&RoleBinding {
                metadata: meta(&name, Some(&namespace), grantee),
                role_ref: role_ref("Role", &name),
                subjects: Some(vec![subject(grantee)]),
            }));
        }
    }
    roles.extend(bindings);
    roles
}

fn meta(name: &str, namespace: Option<&str>, grantee: &Grantee) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(grantee.labels.clone()),
        ..Default::default()
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef { api_group: "rbac.authorization.k8s.io".to_string(), kind: kind.to_string(), name: name.to_string() }
}

fn subject(grantee: &Grantee) -> Subject {
    Subject {
        kind: "ServiceAccount".to_string(),
        name: grantee.service_account.clone(),
        namespace: Some(grantee.namespace.clone()),
        api_group: None,
    }
}

fn to_value<T: serde::Serialize>(object: &T) -> serde_json::Value {
    // The k8s-openapi types always serialize; `Null` would only mean a bug in them.
    serde_json::to_value(object).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grantee(watch: &[&str]) -> Grantee {
        Grantee {
            namespace: "ops".into(),
            service_account: "ferrometal".into(),
            watch_namespaces: watch.iter().map(|n| n.to_string()).collect(),
            ironic_namespaces: IronicNamespaces::default(),
            labels: BTreeMap::new(),
        }
    }

    fn kinds(objects: &[serde_json::Value]) -> Vec<(String, String, String)> {
        objects
            .iter()
            .map(|o| {
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                (text(&o["kind"]), text(&o["metadata"]["namespace"]), text(&o["metadata"]["name"]))
            })
            .collect()
    }

    #[test]
    fn cluster_wide_the_controllers_get_a_cluster_role_and_the_lease_a_role_in_the_operator_namespace() {
        let objects = objects(&grantee(&[]), Feature::Always);
        let kinds = kinds(&objects);
        assert!(kinds.contains(&("ClusterRole".into(), "".into(), "ferrometal-manager".into())));
        assert!(kinds.contains(&("Role".into(), "ops".into(), "ferrometal-leader-election".into())));
        assert!(kinds.contains(&("Role".into(), "ops".into(), "ferrometal-ironic-workloads".into())));
        assert_eq!(kinds.len(), 6, "{kinds:?}");
    }

    #[test]
    fn namespaced_every_watched_namespace_gets_a_role_and_nothing_is_cluster_wide() {
        let objects = objects(&grantee(&["a", "b"]), Feature::Always);
        let kinds = kinds(&objects);
        assert!(kinds.iter().all(|(kind, _, _)| kind == "Role" || kind == "RoleBinding"), "{kinds:?}");
        for ns in ["a", "b"] {
            assert!(kinds.contains(&("Role".into(), ns.into(), "ferrometal-manager".into())));
            assert!(kinds.contains(&("RoleBinding".into(), ns.into(), "ferrometal-manager".into())));
        }
    }

    #[test]
    fn ironic_workloads_are_granted_only_in_the_listed_namespaces_even_cluster_wide() {
        let listed = Grantee { ironic_namespaces: "metal3,edge".parse().expect("list"), ..grantee(&[]) };
        let kinds = kinds(&objects(&listed, Feature::Always));
        for ns in ["metal3", "edge"] {
            assert!(kinds.contains(&("Role".into(), ns.into(), "ferrometal-ironic-workloads".into())));
            assert!(kinds.contains(&("RoleBinding".into(), ns.into(), "ferrometal-ironic-workloads".into())));
        }
        assert!(!kinds.iter().any(|(_, ns, name)| ns == "ops" && name == "ferrometal-ironic-workloads"));
        // The cluster-wide role neither watches Ironic's objects nor creates a workload: both are
        // the listed namespaces' Role.
        let manager = all_rules(Reach::Watched, Feature::Always);
        let verbs = |rules: &[PolicyRule], plural: &str| {
            rules.iter().find(|r| r.resources.as_deref() == Some(&[plural.to_string()][..])).map(|r| r.verbs.clone())
        };
        for plural in ["deployments", "daemonsets", "statefulsets", "services", "ingresses", "persistentvolumeclaims"] {
            assert_eq!(verbs(&manager, plural), None, "{plural}");
        }
        let workloads = all_rules(Reach::IronicNamespaces, Feature::Always);
        let deployments = verbs(&workloads, "deployments").unwrap_or_default();
        assert!(["list", "watch", "create"].iter().all(|v| deployments.iter().any(|d| d == v)), "{deployments:?}");
        // `*` is the old cluster-wide grant, asked for explicitly.
        let any = Grantee { ironic_namespaces: IronicNamespaces::Any, ..grantee(&[]) };
        assert!(kinds_of(&any).contains(&("ClusterRole".into(), "".into(), "ferrometal-ironic-workloads".into())));
    }

    fn kinds_of(grantee: &Grantee) -> Vec<(String, String, String)> {
        kinds(&objects(grantee, Feature::Always))
    }

    #[test]
    fn rules_merge_the_verbs_of_every_component_per_resource() {
        let rules = all_rules(Reach::Watched, Feature::Always);
        let secrets = rules
            .iter()
            .find(|r| r.resources.as_deref() == Some(&["secrets".to_string()][..]))
            .expect("a Secrets rule");
        assert_eq!(secrets.verbs, ["get", "list", "watch", "create", "patch", "delete"]);
        let leases = all_rules(Reach::OperatorNamespace, Feature::Always);
        let named = leases.iter().find(|r| r.resource_names.is_some()).expect("a rule limited by name");
        assert_eq!(named.resource_names.as_deref(), Some(&["ferrometal-leader".to_string()][..]));
        // `runtime::leader` takes with a replace (update), renews and releases with patches.
        assert_eq!(named.verbs, ["get", "update", "patch"]);
    }

    #[test]
    fn optional_features_have_their_own_roles() {
        let objects = objects(&grantee(&[]), Feature::NodeAddresses);
        assert_eq!(
            kinds(&objects),
            [
                ("ClusterRole".to_string(), String::new(), "ferrometal-node-addresses-cluster".to_string()),
                ("ClusterRoleBinding".to_string(), String::new(), "ferrometal-node-addresses-cluster".to_string()),
            ]
        );
    }
}
