//! The record of what ran on a NodeSet's hosts (pure), kept where it outlives the NodeSet and
//! where its size is bounded.
//!
//! A host backed by a BareMetalHost keeps the services completed on it on the machine itself
//! (an annotation). A preProvisioned host has no such object, and an annotation can be
//! stripped; the NodeSet's status is no place for a copy either: 1000 hosts with 16 services
//! are about 4 MB of rows, past etcd's 1.5 MiB (issue 23, item 11), and status goes with a
//! recreated NodeSet. So every host's completions are kept in ConfigMaps of the NodeSet's
//! namespace that the NodeSet does not own (garbage collection leaves them), named after the
//! NodeSet and spread over [`SHARDS`] of them by hostname (at most 1000 hosts: the largest about
//! 310 KB at 16 services, measured, under a ConfigMap's 1 MiB). A NodeSet of that name reads them back as
//! it reads its machines. For a machine, an entry counts only for the same installation (its
//! uid and epoch, as status did); a host removed under `Retain` keeps its entry, so the machine
//! it leaves running is not brought up again when the host comes back. The deletion policy
//! decides their fate: `Retain` keeps them, as it keeps machines claimed; `Detach` and
//! `Deprovision` delete them with the NodeSet.

use super::claims::Owner;
use crate::kit::names::{COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, bounded};
use crds::nodeset::{CompletedService, NODESET_LABEL};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The component label of records: what the controller's ConfigMap watch selects.
pub(super) const COMPONENT: &str = "nodeset-record";
/// The key of the completions, by hostname, as JSON.
const KEY: &str = "servicesCompleted";
/// ConfigMaps a NodeSet's record is spread over.
pub(super) const SHARDS: u8 = 16;
/// Entries of hosts no longer in spec.nodes kept at most (retained machines).
pub(super) const REMOVED_KEPT: usize = 1000;

/// What ran on one host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Entry {
    /// The uid of the machine it ran on (none for a preProvisioned host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// That machine's installation (`machine::epoch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    pub completed: Vec<CompletedService>,
}

/// An entry as stored: a list alone is a record written before machines had entries (only
/// preProvisioned NodeSets had one).
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Entry(Entry),
    Completed(Vec<CompletedService>),
}

/// Completions by hostname.
pub(super) type Completions = BTreeMap<String, Entry>;

/// The name of the record of one NodeSet before it was spread over shards; still read.
pub(super) fn name(owner: &Owner) -> String {
    bounded(&format!("{}-nodeset-record", owner.name), 253)
}

/// The name of shard `shard` of the record: the NodeSet's, so a NodeSet recreated under that
/// name finds it.
pub(super) fn shard_name(owner: &Owner, shard: u8) -> String {
    bounded(&format!("{}-nodeset-record-{shard:x}", owner.name), 253)
}

/// Every name a NodeSet's record may have: the unsharded one, then the shards.
pub(super) fn names(owner: &Owner) -> Vec<String> {
    std::iter::once(name(owner)).chain((0..SHARDS).map(|k| shard_name(owner, k))).collect()
}

/// The shard a hostname's entry lives in.
pub(super) fn shard_of(hostname: &str) -> u8 {
    Sha256::digest(hostname.as_bytes())[0] % SHARDS
}

/// The labels of a record.
pub(super) fn labels(owner: &Owner) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
        (COMPONENT_LABEL.to_string(), COMPONENT.to_string()),
        (NODESET_LABEL.to_string(), owner.label.clone()),
    ])
}

/// The completions one record ConfigMap holds. Anyone with write access to ConfigMaps can edit
/// it: each host's entry is read on its own, so one that does not parse costs that host only
/// (and a record that is not JSON at all reads as empty).
pub(super) fn read(record: &ConfigMap) -> Completions {
    let text = record.data.as_ref().and_then(|d| d.get(KEY));
    let stored: BTreeMap<String, serde_json::Value> =
        text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
    stored
        .into_iter()
        .filter_map(|(hostname, entry)| match serde_json::from_value(entry).ok()? {
            Stored::Entry(entry) => Some((hostname, entry)),
            Stored::Completed(completed) => Some((hostname, Entry { completed, ..Entry::default() })),
        })
        .collect()
}

/// Every entry of a NodeSet's record ConfigMaps (by name): a shard's over the unsharded one's.
pub(super) fn merged(records: &BTreeMap<String, Completions>, owner: &Owner) -> Completions {
    let mut all = records.get(&name(owner)).cloned().unwrap_or_default();
    for k in 0..SHARDS {
        if let Some(shard) = records.get(&shard_name(owner, k)) {
            all.extend(shard.iter().map(|(h, e)| (h.clone(), e.clone())));
        }
    }
    all
}

/// The record ConfigMaps to apply so that they hold `completions`: only the shards whose
/// content differs from `current` (by name), an emptied shard included; then, once, the
/// unsharded record of an earlier operator emptied (its entries are in the shards by then, and
/// one left there would bring back a host's entry after its release).
pub(super) fn writes(
    owner: &Owner,
    completions: &Completions,
    current: &BTreeMap<String, Completions>,
) -> Vec<ConfigMap> {
    let mut shards: BTreeMap<u8, Completions> = BTreeMap::new();
    for (hostname, entry) in completions {
        shards.entry(shard_of(hostname)).or_default().insert(hostname.clone(), entry.clone());
    }
    (0..SHARDS)
        .filter_map(|k| {
            let name = shard_name(owner, k);
            let want = shards.remove(&k).unwrap_or_default();
            let have = current.get(&name);
            let same = match have {
                Some(have) => *have == want,
                None => want.is_empty(),
            };
            (!same).then(|| record(owner, &name, &want))
        })
        .chain(
            current
                .get(&name(owner))
                .filter(|old| !old.is_empty())
                .map(|_| record(owner, &name(owner), &Completions::new())),
        )
        .collect()
}

/// What a reconcile knows of one host's completions.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Known {
    /// They are these (an empty list: nothing ran on this installation).
    Ran(Entry),
    /// Nothing new: the recorded entry stays (a machine about to be reprovisioned, one out of
    /// view, a host waiting for a machine).
    Unknown,
}

/// The record after a reconcile: what it knows of each host of spec.nodes; of the others
/// (removed hosts), the entries `keep_removed` keeps, at most [`REMOVED_KEPT`].
pub(super) fn after(
    recorded: &Completions,
    known: BTreeMap<String, Known>,
    keep_removed: impl Fn(&str, &Entry) -> bool,
) -> Completions {
    let mut next: Completions = recorded
        .iter()
        .filter(|(hostname, entry)| !known.contains_key(*hostname) && keep_removed(hostname, entry))
        .take(REMOVED_KEPT)
        .map(|(h, e)| (h.clone(), e.clone()))
        .collect();
    for (hostname, known) in known {
        match known {
            Known::Ran(entry) if entry.completed.is_empty() => {}
            Known::Ran(entry) => {
                next.insert(hostname, entry);
            }
            Known::Unknown => {
                if let Some(entry) = recorded.get(&hostname) {
                    next.insert(hostname, entry.clone());
                }
            }
        }
    }
    next
}

/// One record ConfigMap holding `completions`, to apply.
fn record(owner: &Owner, name: &str, completions: &Completions) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(owner.namespace.clone()),
            labels: Some(labels(owner)),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(KEY.to_string(), serde_json::to_string(completions).unwrap_or_default())])),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner { namespace: "edge".into(), name: "computes".into(), label: "computes".into() }
    }

    fn entry(service: &str) -> Entry {
        let completed =
            vec![CompletedService { name: service.into(), config_hash: Some("c".into()), ..Default::default() }];
        Entry { machine: Some("uid-1".into()), epoch: Some("uid/1".into()), completed }
    }

    #[test]
    fn completions_round_trip_through_shards_named_after_the_nodeset() {
        let completions: Completions = (0..40).map(|i| (format!("edge-{i}"), entry("bootstrap"))).collect();
        let written = writes(&owner(), &completions, &BTreeMap::new());
        assert!(written.len() > 1 && written.len() <= usize::from(SHARDS), "spread: {}", written.len());
        for cm in &written {
            assert!(cm.metadata.name.as_deref().is_some_and(|n| n.starts_with("computes-nodeset-record-")));
            assert!(cm.metadata.owner_references.is_none(), "it outlives the NodeSet");
        }
        let current: BTreeMap<String, Completions> =
            written.iter().map(|cm| (cm.metadata.name.clone().unwrap_or_default(), read(cm))).collect();
        assert_eq!(merged(&current, &owner()), completions);
        assert!(writes(&owner(), &completions, &current).is_empty(), "nothing changed, nothing written");
        let mut fewer = completions.clone();
        fewer.remove("edge-0");
        let emptied = writes(&owner(), &fewer, &current);
        assert_eq!(emptied.len(), 1, "only the shard of edge-0 is written");
        assert_eq!(emptied[0].metadata.name, Some(shard_name(&owner(), shard_of("edge-0"))));
    }

    #[test]
    fn a_record_written_before_shards_and_epochs_is_still_read() {
        let old = ConfigMap {
            metadata: ObjectMeta { name: Some(name(&owner())), ..Default::default() },
            data: Some([(KEY.to_string(), r#"{"edge-0":[{"name":"bootstrap","configHash":"c"}]}"#.to_string())].into()),
            ..Default::default()
        };
        let read_back = read(&old);
        assert_eq!(read_back["edge-0"].completed[0].name, "bootstrap");
        assert_eq!(read_back["edge-0"].epoch, None);
        let mut records = BTreeMap::from([(name(&owner()), read_back)]);
        records
            .insert(shard_name(&owner(), shard_of("edge-0")), Completions::from([("edge-0".into(), entry("newer"))]));
        assert_eq!(merged(&records, &owner())["edge-0"].completed[0].name, "newer", "a shard's entry wins");
        let garbled = ConfigMap { data: Some([(KEY.to_string(), "{".to_string())].into()), ..Default::default() };
        assert!(read(&garbled).is_empty());
    }

    #[test]
    fn an_entry_that_does_not_parse_costs_that_host_only() {
        let text = r#"{"edge-0":{"completed":[{"name":"bootstrap","completedAt":"not a time"}]},"edge-1":{"completed":[{"name":"bootstrap"}]}}"#;
        let record = ConfigMap { data: Some([(KEY.to_string(), text.to_string())].into()), ..Default::default() };
        let read_back = read(&record);
        assert!(!read_back.contains_key("edge-0"), "{read_back:?}");
        assert_eq!(read_back["edge-1"].completed[0].name, "bootstrap");
    }

    #[test]
    fn the_unsharded_record_of_an_earlier_operator_is_emptied_once_its_entries_are_in_shards() {
        let old = Completions::from([(
            "edge-0".to_string(),
            Entry { completed: entry("bootstrap").completed, ..Entry::default() },
        )]);
        let current = BTreeMap::from([(name(&owner()), old.clone())]);
        let all = merged(&current, &owner());
        let written = writes(&owner(), &all, &current);
        assert_eq!(written.len(), 2, "the shard of edge-0, then the old record emptied");
        assert_eq!(written[1].metadata.name, Some(name(&owner())));
        assert!(read(&written[1]).is_empty());
        let after: BTreeMap<String, Completions> =
            written.iter().map(|cm| (cm.metadata.name.clone().unwrap_or_default(), read(cm))).collect();
        assert_eq!(merged(&after, &owner()), old, "nothing lost on the way");
        assert!(writes(&owner(), &old, &after).is_empty(), "and done once");
    }

    #[test]
    fn a_full_nodeset_fits_its_shards() {
        // 1000 hosts, 16 services with long names and full hashes: each shard under 1 MiB.
        let hash = "f".repeat(64);
        let completed: Vec<CompletedService> = (0..16)
            .map(|i| CompletedService {
                name: format!("a-rather-long-service-name-{i:02}"),
                config_hash: Some(hash.clone()),
                service_hash: Some(hash.clone()),
                completed_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                )),
            })
            .collect();
        let entry = Entry {
            machine: Some("0".repeat(36)),
            epoch: Some(format!("{}/{}", "0".repeat(8), "t".repeat(24))),
            completed,
        };
        let completions: Completions = (0..1000).map(|i| (format!("compute-{i:04}"), entry.clone())).collect();
        let largest = writes(&owner(), &completions, &BTreeMap::new())
            .iter()
            .map(|cm| cm.data.iter().flat_map(|d| d.values()).map(String::len).sum::<usize>())
            .max()
            .unwrap_or_default();
        assert!(largest < 1024 * 1024, "the largest shard holds {largest} bytes");
    }
}
