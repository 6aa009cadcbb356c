//! What every step of a plan reads (pure): who the NodeSet is to its BareMetalHosts, what status
//! said of each host, the services as they are, what ran, and what the rollout acknowledged.
//! Worked out once, before the steps, so that each step reads the same view.

use super::claims::Owner;
use super::facts::Facts;
use super::firmware;
use super::record;
use super::rollout::{self, Service};
use super::upgrade::Upgrade;
use crds::nodeset::{ApprovedService, HostStatus, NodeSet, NodeSetSpec, RolloutStatus, nodeset_config_hash_with};
use crds::nodesetservice::{missing_sources, run_hash};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// The inputs of a plan's steps.
pub(super) struct Basis<'a> {
    pub(super) nodeset: &'a NodeSet,
    pub(super) spec: &'a NodeSetSpec,
    pub(super) owner: Owner,
    /// Each host's status before this reconcile.
    pub(super) previous: BTreeMap<String, HostStatus>,
    /// `spec.services` in order (`listed_services`).
    pub(super) services: Vec<Option<Service>>,
    pub(super) upgrade: Upgrade,
    /// The NodeSet's record of what ran, its shards merged (`record`).
    pub(super) recorded: record::Completions,
    pub(super) acknowledged: Acknowledged,
}

impl<'a> Basis<'a> {
    /// Everything the steps read, worked out from `nodeset` and what the caches show.
    pub(super) fn of(nodeset: &'a NodeSet, facts: &Facts, now: &Time) -> Self {
        let owner = Owner::of(nodeset);
        let services = listed_services(&nodeset.spec, facts);
        let upgrade = Upgrade::of(facts);
        let acknowledged = acknowledged(nodeset, &services, &facts.sources, &upgrade, now);
        Basis {
            nodeset,
            spec: &nodeset.spec,
            previous: nodeset.status.as_ref().and_then(|s| s.hosts.clone()).unwrap_or_default(),
            recorded: record::merged(&facts.records, &owner),
            owner,
            services,
            upgrade,
            acknowledged,
        }
    }
}

/// What the rollout acknowledged in this reconcile (`rollout::acknowledge`).
pub(super) struct Acknowledged {
    /// The NodeSet's hash (the hosts' configurations, the service list and every listed
    /// service's spec): `status.configHash`.
    pub(super) config_hash: String,
    /// The rollout's record, with the services it approved.
    pub(super) status: RolloutStatus,
    /// Every host's configuration is approved as it is now.
    pub(super) approve_all: bool,
}

/// `spec.services` in order, `None` where no such NodeSetService exists or its Job needs a
/// Secret or ConfigMap that does not (it waits: nothing new runs). A service's hash counts the
/// content of what its Job reads (`run_hash`), so a content change reruns it like an edit.
fn listed_services(spec: &NodeSetSpec, facts: &Facts) -> Vec<Option<Service>> {
    spec.services
        .iter()
        .flatten()
        .map(|name| {
            facts.services.get(name).filter(|s| missing_sources(&s.spec, &facts.sources).is_empty()).map(|s| Service {
                name: name.clone(),
                run_once: s.spec.run_once.unwrap_or(false),
                hash: run_hash(&s.spec, &facts.sources),
            })
        })
        .collect()
}

/// The NodeSet's hash, the rollout's record with the services it approved, and whether every
/// host's configuration is approved as it is now (`rollout::acknowledge`).
fn acknowledged(
    nodeset: &NodeSet,
    services: &[Option<Service>],
    sources: &crds::nodeset::Sources,
    upgrade: &Upgrade,
    now: &Time,
) -> Acknowledged {
    let spec = &nodeset.spec;
    let config_hash = nodeset_config_hash_with(spec, sources);
    let listed: Vec<ApprovedService> = spec
        .services
        .iter()
        .flatten()
        .zip(services)
        .map(|(name, s)| ApprovedService { name: name.clone(), service_hash: s.as_ref().map(|s| s.hash.clone()) })
        .collect();
    let hashes: Vec<(String, Option<String>)> =
        listed.iter().map(|s| (s.name.clone(), s.service_hash.clone())).collect();
    let gated = with_firmware(rollout::gated_hash(&config_hash, &hashes), spec);
    let mut previous = migrated(nodeset, &config_hash, &gated);
    if let Some(approved) = previous.as_mut().and_then(|p| p.approved_services.as_mut()) {
        upgrade.approvals(approved);
    }
    let (status, approve_all) = rollout::acknowledge(spec.rollout.as_ref(), previous.as_ref(), &gated, &listed, now);
    Acknowledged { config_hash: gated, status, approve_all }
}

/// The NodeSet's hash with what its hosts want of their firmware: a firmware edit is a new
/// configuration to roll out like any other (`status.configHash` moves, a rollout starts and
/// completes); a NodeSet that wants none keeps the hash it had.
fn with_firmware(gated: String, spec: &NodeSetSpec) -> String {
    use sha2::{Digest, Sha256};
    let wanted: Vec<(&String, String)> =
        spec.nodes.iter().flatten().filter_map(|(h, _)| Some((h, firmware::parts::desired(spec, h)?))).collect();
    if wanted.is_empty() {
        return gated;
    }
    let mut digest = Sha256::new();
    digest.update(gated.as_bytes());
    for (host, hash) in wanted {
        for part in [host.as_str(), hash.as_str()] {
            digest.update([0]);
            digest.update(part.as_bytes());
        }
    }
    hex::encode(digest.finalize())
}

/// The rollout status as `acknowledge` reads it: one recorded by an operator that gated on the
/// config hash alone counts as having acknowledged the services as they are now, so an upgrade
/// of the operator neither starts a rollout nor holds a Manual NodeSet back.
fn migrated(nodeset: &NodeSet, config_hash: &str, gated: &str) -> Option<RolloutStatus> {
    let mut status = nodeset.status.as_ref()?.rollout.clone()?;
    if status.config_hash.as_deref() == Some(config_hash) {
        status.config_hash = Some(gated.to_string());
    }
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(nodes: serde_json::Value) -> NodeSetSpec {
        serde_json::from_value(serde_json::json!({"nodes": nodes})).expect("a spec")
    }

    #[test]
    fn a_firmware_edit_moves_the_nodesets_hash_and_a_nodeset_without_firmware_keeps_its_own() {
        let plain = spec(serde_json::json!({"a": {}, "b": {}}));
        assert_eq!(with_firmware("h".into(), &plain), "h");
        let turbo = spec(serde_json::json!({"a": {"firmwareSettings": {"ProcTurboMode": "Disabled"}}, "b": {}}));
        let other = spec(serde_json::json!({"a": {"firmwareSettings": {"ProcTurboMode": "Enabled"}}, "b": {}}));
        assert_ne!(with_firmware("h".into(), &turbo), "h");
        assert_ne!(with_firmware("h".into(), &turbo), with_firmware("h".into(), &other));
    }
}
