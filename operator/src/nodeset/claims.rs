//! Claims (pure): which BareMetalHost backs each host of a NodeSet.
//!
//! Existing claims are found first, by the labels and consumerRef on the BareMetalHosts (after
//! a crash, a restore or a recreated NodeSet, that is all there is), so a claim is never made
//! twice. Hosts without one get a free matching BareMetalHost: a maximum matching between hosts
//! and candidates (augmenting paths, hosts with the fewest candidates first, candidates by
//! name), so one greedy pick never starves a host with a narrow selector, and the same inputs
//! always give the same choice.

use super::select::{Matcher, Tally, candidate_with, explain, not_free, selector_matches};
use crds::baremetalhost::{BareMetalHost, HardwareDetails};
use crds::nodeset::{
    BaremetalSetTemplate, HOSTNAME_LABEL, HardwareReqs, NODESET_LABEL, NodeSection, NodeSet, NodeSetSpec,
};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{Resource, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The NodeSet as its BareMetalHosts name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Owner {
    pub namespace: String,
    pub name: String,
    /// The value of the nodeset label: the name, bounded to a label value's 63 characters.
    pub label: String,
}

impl Owner {
    pub(super) fn of(nodeset: &NodeSet) -> Self {
        let name = nodeset.name_any();
        let label = crate::kit::names::bounded(&name, crate::kit::names::MAX_LABEL_VALUE);
        Self { namespace: nodeset.namespace().unwrap_or_default(), name, label }
    }

    /// The consumerRef written on claimed BareMetalHosts. No uid: a NodeSet recreated under the
    /// same name is the same consumer, and adopts its machines.
    pub(super) fn consumer_ref(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(NodeSet::api_version(&()).into_owned()),
            kind: Some(NodeSet::kind(&()).into_owned()),
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            ..Default::default()
        }
    }

    /// True when `host`'s consumerRef names this NodeSet.
    pub(super) fn is_consumer(&self, host: &BareMetalHost) -> bool {
        let Some(consumer) = host.spec.consumer_ref.as_ref() else {
            return false;
        };
        // A consumerRef without a namespace means the host's own.
        let namespace = match consumer.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_string(),
            _ => host.namespace().unwrap_or_default(),
        };
        consumer.kind.as_deref() == Some("NodeSet")
            && consumer.name.as_deref() == Some(self.name.as_str())
            && namespace == self.namespace
    }

    /// The hostname `host` is claimed for by this NodeSet: our labels and our consumerRef.
    pub(super) fn hostname_of<'a>(&self, host: &'a BareMetalHost) -> Option<&'a str> {
        let labels = host.labels();
        (labels.get(NODESET_LABEL) == Some(&self.label) && self.is_consumer(host))
            .then(|| labels.get(HOSTNAME_LABEL).map(String::as_str))
            .flatten()
    }
}

/// Which BareMetalHost backs each host.
#[derive(Clone, Debug, Default)]
pub(super) struct ClaimPlan {
    /// Hosts already claimed, found by label.
    pub claimed: BTreeMap<String, Arc<BareMetalHost>>,
    /// Claims to write now.
    pub new: BTreeMap<String, Arc<BareMetalHost>>,
    /// Hosts without a BareMetalHost, and why.
    pub unmatched: BTreeMap<String, String>,
    /// Hosts with several BareMetalHosts carrying their labels: the others, by name.
    pub duplicates: BTreeMap<String, Vec<String>>,
    /// BareMetalHosts claimed for hostnames no longer in spec.nodes.
    pub removed: BTreeMap<String, Arc<BareMetalHost>>,
}

/// Plans the claims of `spec`'s hosts among `hosts` (the BareMetalHosts of bmhNamespace).
/// `preferred` names the BareMetalHost status last recorded per host (the tie-breaker when
/// labels were copied onto a second one); `lost` are BareMetalHosts a claim lost a race for
/// in this reconcile's view, never chosen again.
pub(super) fn plan_claims(
    owner: &Owner,
    spec: &NodeSetSpec,
    hosts: &[Arc<BareMetalHost>],
    hardware: &BTreeMap<String, HardwareDetails>,
    preferred: &BTreeMap<String, String>,
    lost: &BTreeSet<String>,
) -> ClaimPlan {
    let mut plan = ClaimPlan::default();
    let Some(template) = spec.baremetal_set_template.as_ref() else {
        return plan;
    };
    let nodes = spec.nodes.clone().unwrap_or_default();
    for (hostname, found) in labelled(owner, hosts, preferred) {
        plan.found(hostname, &found, nodes.get(hostname), template);
    }
    let unclaimed: Vec<(&String, &NodeSection)> = nodes
        .iter()
        .filter(|(hostname, _)| !plan.claimed.contains_key(*hostname) && !plan.unmatched.contains_key(*hostname))
        .collect();
    if !unclaimed.is_empty() {
        plan.choose(&unclaimed, template, hosts, hardware, lost);
    }
    plan
}

/// The BareMetalHosts that carry this NodeSet's claim, by hostname: the one status last
/// recorded for the host first, then by name.
fn labelled<'a>(
    owner: &Owner,
    hosts: &'a [Arc<BareMetalHost>],
    preferred: &BTreeMap<String, String>,
) -> BTreeMap<&'a str, Vec<&'a Arc<BareMetalHost>>> {
    let mut labelled: BTreeMap<&str, Vec<&Arc<BareMetalHost>>> = BTreeMap::new();
    for host in hosts {
        if let Some(hostname) = owner.hostname_of(host) {
            labelled.entry(hostname).or_default().push(host);
        }
    }
    for (hostname, found) in labelled.iter_mut() {
        found.sort_by_key(|h| (preferred.get(*hostname) != Some(&h.name_any()), h.name_any()));
    }
    labelled
}

impl ClaimPlan {
    /// Records the claim `found` carries for `hostname` (its first BareMetalHost; the others
    /// are duplicates): a host no longer in spec.nodes (`section`) was removed; a host whose
    /// machine no longer matches its selectors gets no other, since a second machine must not
    /// be claimed while the first still carries its labels.
    fn found(
        &mut self,
        hostname: &str,
        found: &[&Arc<BareMetalHost>],
        section: Option<&NodeSection>,
        template: &BaremetalSetTemplate,
    ) {
        let Some(first) = found.first() else { return };
        if found.len() > 1 {
            self.duplicates.insert(hostname.to_string(), found[1..].iter().map(|h| h.name_any()).collect());
        }
        let Some(section) = section else {
            self.removed.insert(hostname.to_string(), (*first).clone());
            return;
        };
        let selectors = [template.bmh_label_selector.as_ref(), section.bmh_label_selector.as_ref()];
        if selectors.iter().all(|s| selector_matches(*s, first.labels())) {
            self.claimed.insert(hostname.to_string(), (*first).clone());
        } else {
            self.unmatched.insert(
                hostname.to_string(),
                format!(
                    "BareMetalHost {} carries this host's labels but no longer matches its selectors; \
                     restore the selectors, or release {} (remove its ferrometal.io labels and consumerRef)",
                    first.name_any(),
                    first.name_any()
                ),
            );
        }
    }

    /// Chooses a free matching BareMetalHost for each host of `unclaimed`, or says why none.
    /// Candidates are worked out once per distinct host selector (usually one: the
    /// template's), not once per host, and each BareMetalHost's name and freedom once, so 1000
    /// hosts against 5000 BareMetalHosts cost one pass.
    fn choose(
        &mut self,
        unclaimed: &[(&String, &NodeSection)],
        template: &BaremetalSetTemplate,
        hosts: &[Arc<BareMetalHost>],
        hardware: &BTreeMap<String, HardwareDetails>,
        lost: &BTreeSet<String>,
    ) {
        let namespace = hosts.first().and_then(|h| h.namespace()).unwrap_or_default();
        let mut free: Vec<Free> = hosts
            .iter()
            .filter(|h| !lost.contains(&h.name_any()))
            .map(|h| Free { name: h.name_any(), host: h, busy: not_free(h) })
            .collect();
        free.sort_by(|a, b| a.name.cmp(&b.name));
        let mut groups: Vec<Group> = Vec::new();
        let mut wanting: Vec<(&String, usize)> = Vec::new();
        for (hostname, section) in unclaimed {
            let selector = section.bmh_label_selector.as_ref();
            let group = match groups.iter().position(|g| g.selector == selector) {
                Some(i) => i,
                None => {
                    let selectors = [template.bmh_label_selector.as_ref(), selector];
                    groups.push(Group::of(selector, &selectors, template.hardware_reqs.as_ref(), &free, hardware));
                    groups.len().saturating_sub(1)
                }
            };
            wanting.push((hostname, group));
        }
        // Most constrained first; names break ties, so the order is always the same.
        wanting
            .sort_by(|a, b| groups[a.1].candidates.len().cmp(&groups[b.1].candidates.len()).then_with(|| a.0.cmp(b.0)));
        let lefts: Vec<(&[usize], usize)> =
            wanting.iter().map(|(_, g)| (groups[*g].candidates.as_slice(), *g)).collect();
        let assignment = max_matching(&lefts, free.len());
        for (i, (hostname, group)) in wanting.iter().enumerate() {
            match assignment.get(i).copied().flatten() {
                Some(chosen) => {
                    self.new.insert((*hostname).clone(), free[chosen].host.clone());
                }
                None => {
                    let group = &groups[*group];
                    self.unmatched
                        .insert((*hostname).clone(), explain(&namespace, &group.tally, group.candidates.len()));
                }
            }
        }
    }
}

/// A BareMetalHost a claim may choose, with what is worked out once about it.
struct Free<'a> {
    name: String,
    host: &'a Arc<BareMetalHost>,
    /// Why it is not free, when it is not.
    busy: Option<String>,
}

/// The hosts of the NodeSet that share a host selector, and what they may claim.
struct Group<'a> {
    selector: Option<&'a LabelSelector>,
    /// Indexes into the free list.
    candidates: Vec<usize>,
    /// Why the others were rejected.
    tally: Tally,
}

impl<'a> Group<'a> {
    fn of(
        selector: Option<&'a LabelSelector>,
        selectors: &[Option<&LabelSelector>],
        reqs: Option<&HardwareReqs>,
        free: &[Free],
        hardware: &BTreeMap<String, HardwareDetails>,
    ) -> Self {
        let matcher = Matcher::new(selectors);
        let mut group = Group { selector, candidates: Vec::new(), tally: Tally::default() };
        for (i, f) in free.iter().enumerate() {
            match candidate_with(&matcher, f.host.labels(), f.busy.as_deref(), reqs, hardware.get(&f.name)) {
                Ok(()) => group.candidates.push(i),
                Err(rejection) => group.tally.add(rejection),
            }
        }
        group
    }
}

/// A maximum matching of left vertices (in order) to right vertices `0..right`, by augmenting
/// paths (Kuhn): `result[i]` is the right vertex of left vertex `i`. Each left vertex is its
/// candidates and its group (left vertices of one group have the same candidates). Once a
/// vertex finds no augmenting path it never will (Kuhn's lemma), and neither will another with
/// the same candidates: a group that failed once is not searched again, so hosts beyond the
/// machines there are cost nothing.
fn max_matching(lefts: &[(&[usize], usize)], right: usize) -> Vec<Option<usize>> {
    let edges: Vec<&[usize]> = lefts.iter().map(|(c, _)| *c).collect();
    let mut owner_of: Vec<Option<usize>> = vec![None; right];
    let mut failed: BTreeSet<usize> = BTreeSet::new();
    let mut visited = vec![false; right];
    for (left, (_, group)) in lefts.iter().enumerate() {
        if failed.contains(group) {
            continue;
        }
        visited.iter_mut().for_each(|v| *v = false);
        if !augment(left, &edges, &mut owner_of, &mut visited) {
            failed.insert(*group);
        }
    }
    let mut result = vec![None; lefts.len()];
    for (r, l) in owner_of.iter().enumerate() {
        if let Some(l) = l {
            result[*l] = Some(r);
        }
    }
    result
}

/// Finds `left` a right vertex: a free one if it has any (the first by name), else one taken
/// by another left vertex that can move to another.
fn augment(left: usize, edges: &[&[usize]], owner_of: &mut [Option<usize>], visited: &mut [bool]) -> bool {
    if let Some(&r) = edges[left].iter().find(|&&r| !visited[r] && owner_of[r].is_none()) {
        visited[r] = true;
        owner_of[r] = Some(left);
        return true;
    }
    for &r in edges[left].iter() {
        if visited[r] {
            continue;
        }
        visited[r] = true;
        if let Some(other) = owner_of[r]
            && augment(other, edges, owner_of, visited)
        {
            owner_of[r] = Some(left);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::{BareMetalHostStatus, ProvisionStatus, ProvisioningState};
    use serde_json::{Value, json};

    fn owner() -> Owner {
        Owner { namespace: "metal3".into(), name: "computes".into(), label: "computes".into() }
    }

    fn host(name: &str, labels: Value) -> Arc<BareMetalHost> {
        let mut host: BareMetalHost = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": name, "namespace": "metal3", "labels": labels},
            "spec": {"online": true}
        }))
        .expect("host");
        host.status = Some(BareMetalHostStatus {
            provisioning: ProvisionStatus { state: ProvisioningState::Available, ..Default::default() },
            ..Default::default()
        });
        Arc::new(host)
    }

    fn claimed_by(name: &str, hostname: &str, owner: &Owner) -> Arc<BareMetalHost> {
        let mut h = (*host(name, json!({NODESET_LABEL: owner.label, HOSTNAME_LABEL: hostname}))).clone();
        h.spec.consumer_ref = Some(owner.consumer_ref());
        h.status.as_mut().expect("status").provisioning.state = ProvisioningState::Provisioned;
        Arc::new(h)
    }

    fn spec(nodes: Value) -> NodeSetSpec {
        serde_json::from_value(json!({"baremetalSetTemplate": {"image": {"url": "http://i/os.qcow2"}}, "nodes": nodes}))
            .expect("spec")
    }

    fn plan(spec: &NodeSetSpec, hosts: &[Arc<BareMetalHost>]) -> ClaimPlan {
        plan_claims(&owner(), spec, hosts, &BTreeMap::new(), &BTreeMap::new(), &BTreeSet::new())
    }

    fn chosen(plan: &ClaimPlan) -> Vec<(String, String)> {
        plan.new.iter().map(|(h, b)| (h.clone(), b.name_any())).collect()
    }

    #[test]
    fn free_hosts_are_chosen_by_name_the_same_way_every_time() {
        let hosts = [host("server-c", json!({})), host("server-a", json!({})), host("server-b", json!({}))];
        let spec = spec(json!({"compute-0": {}, "compute-1": {}}));
        let first = plan(&spec, &hosts);
        assert_eq!(
            chosen(&first),
            [("compute-0".to_string(), "server-a".to_string()), ("compute-1".to_string(), "server-b".to_string())]
        );
        assert_eq!(chosen(&plan(&spec, &hosts)), chosen(&first));
    }

    #[test]
    fn existing_claims_are_found_by_label_and_never_made_twice() {
        let o = owner();
        let hosts = [claimed_by("server-z", "compute-0", &o), host("server-a", json!({}))];
        let plan = plan(&spec(json!({"compute-0": {}})), &hosts);
        assert!(plan.new.is_empty(), "compute-0 already has server-z");
        assert_eq!(plan.claimed["compute-0"].name_any(), "server-z");
    }

    #[test]
    fn labels_without_our_consumer_ref_are_not_a_claim() {
        let o = owner();
        let mut foreign = (*claimed_by("server-z", "compute-0", &o)).clone();
        foreign.spec.consumer_ref.as_mut().expect("ref").name = Some("someone-else".into());
        let plan = plan(&spec(json!({"compute-0": {}})), &[Arc::new(foreign), host("server-a", json!({}))]);
        assert_eq!(chosen(&plan), [("compute-0".to_string(), "server-a".to_string())]);
    }

    #[test]
    fn a_narrow_selector_is_not_starved_by_a_greedy_pick() {
        // compute-0 takes anything; compute-1 only server-a. Picking server-a for compute-0
        // first (it sorts first) would leave compute-1 without a host.
        let hosts = [host("server-a", json!({"serial": "A"})), host("server-b", json!({}))];
        let spec = spec(json!({"compute-0": {}, "compute-1": {"bmhLabelSelector": {"matchLabels": {"serial": "A"}}}}));
        assert_eq!(
            chosen(&plan(&spec, &hosts)),
            [("compute-0".to_string(), "server-b".to_string()), ("compute-1".to_string(), "server-a".to_string())]
        );
    }

    #[test]
    fn augmenting_paths_rearrange_earlier_picks() {
        // Equal candidate counts: h0 {0,1}, h1 {0,1}, h2 {1,2}: a greedy order would still work,
        // but h0 {0}, h1 {0,1}, h2 {1} needs h1 moved off 0.
        let own = |c: &'static [&'static [usize]]| c.iter().enumerate().map(|(g, c)| (*c, g)).collect::<Vec<_>>();
        assert_eq!(max_matching(&own(&[&[0], &[0, 1], &[1, 2]]), 3), [Some(0), Some(1), Some(2)]);
        assert_eq!(max_matching(&own(&[&[0, 1], &[0]]), 2), [Some(1), Some(0)]);
        assert_eq!(max_matching(&own(&[&[0], &[0]]), 1), [Some(0), None]);
    }

    #[test]
    fn hosts_of_a_group_beyond_its_machines_go_without_and_other_groups_still_match() {
        let shared: &[usize] = &[0, 1];
        let lefts = [(shared, 0), (shared, 0), (shared, 0), (&[1, 2][..], 1)];
        assert_eq!(max_matching(&lefts, 3), [Some(0), Some(1), None, Some(2)]);
    }

    proptest::proptest! {
        /// Skipping a group that failed once gives the same matching as searching every host
        /// (a failed search changes nothing, and another of the group would fail the same way).
        #[test]
        fn skipping_failed_groups_changes_no_match(
            groups in proptest::collection::vec(proptest::collection::btree_set(0usize..6, 0..4), 1..4),
            members in proptest::collection::vec(0usize..3, 0..10),
        ) {
            let groups: Vec<Vec<usize>> = groups.into_iter().map(|g| g.into_iter().collect()).collect();
            let lefts: Vec<(&[usize], usize)> =
                members.iter().map(|m| m % groups.len()).map(|g| (groups[g].as_slice(), g)).collect();
            let alone: Vec<(&[usize], usize)> = lefts.iter().enumerate().map(|(i, (c, _))| (*c, 100 + i)).collect();
            proptest::prop_assert_eq!(max_matching(&lefts, 6), max_matching(&alone, 6));
        }
    }

    #[test]
    fn a_host_without_a_match_says_why() {
        let spec = spec(json!({"compute-0": {}, "compute-1": {}}));
        let plan = plan(&spec, &[host("server-a", json!({}))]);
        assert_eq!(plan.new.len(), 1);
        assert_eq!(
            plan.unmatched["compute-1"],
            "1 BareMetalHosts match the selectors; the 1 available are claimed for other hosts of this NodeSet"
        );
    }

    #[test]
    fn hosts_lost_in_a_race_are_not_chosen_again() {
        let hosts = [host("server-a", json!({})), host("server-b", json!({}))];
        let lost = BTreeSet::from(["server-a".to_string()]);
        let plan =
            plan_claims(&owner(), &spec(json!({"compute-0": {}})), &hosts, &BTreeMap::new(), &BTreeMap::new(), &lost);
        assert_eq!(chosen(&plan), [("compute-0".to_string(), "server-b".to_string())]);
    }

    #[test]
    fn removed_hosts_and_duplicates_are_reported() {
        let o = owner();
        let hosts = [
            claimed_by("server-a", "compute-9", &o),
            claimed_by("x", "compute-0", &o),
            claimed_by("y", "compute-0", &o),
        ];
        let preferred = BTreeMap::from([("compute-0".to_string(), "y".to_string())]);
        let plan =
            plan_claims(&o, &spec(json!({"compute-0": {}})), &hosts, &BTreeMap::new(), &preferred, &BTreeSet::new());
        assert_eq!(plan.removed["compute-9"].name_any(), "server-a");
        assert_eq!(plan.claimed["compute-0"].name_any(), "y", "status' choice wins");
        assert_eq!(plan.duplicates["compute-0"], ["x"]);
    }

    #[test]
    fn an_adopted_host_must_still_match_the_selectors() {
        let o = owner();
        let hosts = [claimed_by("server-a", "compute-0", &o), host("server-b", json!({"rack": "r2"}))];
        let spec = spec(json!({"compute-0": {"bmhLabelSelector": {"matchLabels": {"rack": "r2"}}}}));
        let plan = plan(&spec, &hosts);
        assert!(plan.new.is_empty(), "no second machine is claimed for a host whose old one is still labelled");
        assert!(plan.unmatched["compute-0"].contains("server-a carries this host's labels"));
    }
}
