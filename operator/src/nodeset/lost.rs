//! Machines that dropped out of a NodeSet's view (pure).
//!
//! A host whose status recorded a claimed BareMetalHost, and which no BareMetalHost carries the
//! claim of any more (the BareMetalHost was deleted, detached and deleted, or someone removed
//! its claim labels or consumerRef), may still have a machine running with the host's static
//! addresses. Claiming another machine for it would bring up a second one with the same
//! addresses. So such a host is held: no new claim, its record kept, a condition and an Event
//! saying why, until the user asks for another machine with a new `reprovisionToken` (the one
//! explicit per-host request there is).

use super::claims::Owner;
use crds::baremetalhost::BareMetalHost;
use crds::nodeset::{HostStatus, NodeSetSpec};
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The hosts of `spec` held because their machine dropped out of view, and why.
pub(super) fn lost_claims(
    owner: &Owner,
    spec: &NodeSetSpec,
    previous: &BTreeMap<String, HostStatus>,
    hosts: &[Arc<BareMetalHost>],
) -> BTreeMap<String, String> {
    let mut lost = BTreeMap::new();
    // Indexed once: a NodeSet of 1000 hosts in a namespace of 5000 BareMetalHosts.
    let claimed: BTreeSet<&str> = hosts.iter().filter_map(|h| owner.hostname_of(h)).collect();
    let by_name: BTreeMap<String, &Arc<BareMetalHost>> = hosts.iter().map(|h| (h.name_any(), h)).collect();
    for (hostname, section) in spec.nodes.iter().flatten() {
        let Some(recorded) = previous.get(hostname) else { continue };
        let Some(reference) = recorded.bmh_ref.as_ref() else { continue };
        if claimed.contains(hostname.as_str()) {
            continue;
        }
        let wanted = section.reprovision_token.as_deref().filter(|t| !t.is_empty());
        if wanted.is_some_and(|w| Some(w) != recorded.reprovision_token.as_deref()) {
            // The user asked for another machine.
            continue;
        }
        let same = by_name.get(&reference.name);
        let what = match same {
            Some(h) if reference.uid.is_none() || h.uid() == reference.uid => {
                "no longer carries this NodeSet's claim (its labels or consumerRef were removed)"
            }
            Some(_) => "was deleted and another BareMetalHost of that name created",
            None => "was deleted",
        };
        lost.insert(
            hostname.clone(),
            format!(
                "BareMetalHost {} {what}; its machine may still run with this host's addresses, so no other \
                 machine is claimed for {hostname} until you set a new nodes.{hostname}.reprovisionToken \
                 (or restore the claim)",
                reference.name
            ),
        );
    }
    lost
}

/// `spec` without the hosts in `held`: what claims may be planned for.
pub(super) fn without(spec: &NodeSetSpec, held: &BTreeMap<String, String>) -> NodeSetSpec {
    let mut spec = spec.clone();
    if let Some(nodes) = spec.nodes.as_mut() {
        nodes.retain(|hostname, _| !held.contains_key(hostname));
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::nodeset::{BmhRef, HOSTNAME_LABEL, NODESET_LABEL};
    use serde_json::json;

    fn owner() -> Owner {
        Owner { namespace: "metal3".into(), name: "computes".into(), label: "computes".into() }
    }

    fn spec(token: Option<&str>) -> NodeSetSpec {
        serde_json::from_value(json!({"nodes": {"compute-0": {"reprovisionToken": token}, "compute-1": {}}}))
            .expect("spec")
    }

    fn recorded(token: &str) -> BTreeMap<String, HostStatus> {
        let entry = HostStatus {
            bmh_ref: Some(BmhRef { name: "server-0".into(), namespace: "metal3".into(), uid: Some("u0".into()) }),
            reprovision_token: Some(token.into()),
            ..HostStatus::default()
        };
        BTreeMap::from([("compute-0".to_string(), entry)])
    }

    fn bmh(name: &str, uid: &str, claimed: bool) -> Arc<BareMetalHost> {
        let mut host: BareMetalHost = serde_json::from_value(json!({
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
            "metadata": {"name": name, "namespace": "metal3", "uid": uid}, "spec": {"online": true}
        }))
        .expect("host");
        if claimed {
            host.metadata.labels = Some(
                [(NODESET_LABEL.to_string(), "computes".to_string()), (HOSTNAME_LABEL.to_string(), "compute-0".into())]
                    .into(),
            );
            host.spec.consumer_ref = Some(owner().consumer_ref());
        }
        Arc::new(host)
    }

    #[test]
    fn a_claimed_machine_that_is_still_claimed_is_not_lost() {
        assert!(lost_claims(&owner(), &spec(None), &recorded(""), &[bmh("server-0", "u0", true)]).is_empty());
    }

    #[test]
    fn a_deleted_or_unlabelled_machine_holds_its_host_and_says_why() {
        let deleted = lost_claims(&owner(), &spec(None), &recorded(""), &[]);
        assert!(deleted["compute-0"].contains("server-0 was deleted"), "{deleted:?}");
        assert!(deleted["compute-0"].contains("nodes.compute-0.reprovisionToken"));
        let unlabelled = lost_claims(&owner(), &spec(None), &recorded(""), &[bmh("server-0", "u0", false)]);
        assert!(unlabelled["compute-0"].contains("no longer carries this NodeSet's claim"), "{unlabelled:?}");
        let replaced = lost_claims(&owner(), &spec(None), &recorded(""), &[bmh("server-0", "u9", false)]);
        assert!(replaced["compute-0"].contains("another BareMetalHost of that name"), "{replaced:?}");
        assert!(!deleted.contains_key("compute-1"), "never claimed: nothing to lose");
    }

    #[test]
    fn a_new_reprovision_token_lets_the_host_claim_another_machine() {
        assert!(lost_claims(&owner(), &spec(Some("t2")), &recorded("t1"), &[]).is_empty());
        assert_eq!(
            lost_claims(&owner(), &spec(Some("t1")), &recorded("t1"), &[]).len(),
            1,
            "the same token asks nothing"
        );
        let held = lost_claims(&owner(), &spec(None), &recorded(""), &[]);
        assert_eq!(
            without(&spec(None), &held).nodes.map(|n| n.into_keys().collect::<Vec<_>>()),
            Some(vec!["compute-1".into()])
        );
    }
}
