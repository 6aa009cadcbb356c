//! Shards: which hosts this replica serves when several divide them (`--shards`,
//! `--serve-shards`).
//!
//! Every host belongs to one shard of the list, chosen from its namespace and name alone by
//! rendezvous hashing: every replica given the same list computes the same owner without
//! reading anything, the kinds beside a host (named after it, or naming it) find their shard
//! the same way, and a shard added to the list takes hosts only from the others in equal
//! parts (about 1/n of them), none moving between the shards that stay. The host's Ironic
//! node carries the shard in its `shard` field (API 1.82), so that a replica's polls list
//! its shards' nodes only.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The longest shard name: a DNS label, since names end up in Lease names.
const MAX_NAME: usize = 63;

/// The shard list and the shards of it this replica serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shards {
    all: Vec<String>,
    served: BTreeSet<String>,
}

/// Shard flags that cannot be used: the operator refuses to start rather than serve hosts
/// another replica serves too.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "shard name {0:?} must be a DNS label: 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'"
    )]
    Name(String),
    #[error("shard {0:?} is listed twice in --shards")]
    Repeated(String),
    #[error("--serve-shards names {0:?}, which --shards does not list")]
    Unknown(String),
    #[error("--serve-shards needs --shards, the list every replica divides the hosts by")]
    ServedWithoutList,
}

impl Shards {
    /// From `--shards` and `--serve-shards` (empty: every shard of the list); `None` when
    /// there are no shards at all: one replica serves every host and nodes carry no shard.
    pub fn parse(all: &[String], served: &[String]) -> Result<Option<Self>, Error> {
        let clean = |names: &[String]| -> Vec<String> {
            names.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect()
        };
        let (all, served) = (clean(all), clean(served));
        if all.is_empty() {
            return match served.is_empty() {
                true => Ok(None),
                false => Err(Error::ServedWithoutList),
            };
        }
        let mut seen = BTreeSet::new();
        for name in &all {
            if !valid(name) {
                return Err(Error::Name(name.clone()));
            }
            if !seen.insert(name.clone()) {
                return Err(Error::Repeated(name.clone()));
            }
        }
        if let Some(unknown) = served.iter().find(|s| !seen.contains(*s)) {
            return Err(Error::Unknown(unknown.clone()));
        }
        let served = if served.is_empty() { seen } else { served.into_iter().collect() };
        Ok(Some(Self { all, served }))
    }

    /// The shard of the host `namespace/name`: of every shard, the one whose hash with the
    /// host's is highest.
    pub fn shard_of(&self, namespace: &str, name: &str) -> &str {
        self.all
            .iter()
            .max_by_key(|shard| (score(shard, namespace, name), std::cmp::Reverse(shard.as_str())))
            .map_or("", String::as_str)
    }

    /// Whether this replica serves the host `namespace/name`.
    pub fn serves(&self, namespace: &str, name: &str) -> bool {
        self.served.contains(self.shard_of(namespace, name))
    }

    /// The same list, serving `served` (what this replica holds the Leases of; names the list
    /// does not have are dropped).
    pub(crate) fn serving(self, served: BTreeSet<String>) -> Self {
        let served = served.into_iter().filter(|s| self.all.contains(s)).collect();
        Self { served, ..self }
    }

    /// Every shard of the list.
    pub(crate) fn all(&self) -> &[String] {
        &self.all
    }

    /// Whether this replica serves only some of the shards (others serve the rest).
    pub fn partial(&self) -> bool {
        self.served.len() < self.all.len()
    }

    /// The shards this replica serves, in order.
    pub fn served(&self) -> Vec<String> {
        self.served.iter().cloned().collect()
    }

    /// This replica's part of a provisioning limit meant for every shard together: its
    /// shards' share, rounded down so that the replicas together never exceed `limit`, but at
    /// least one (a limit smaller than the number of replicas is exceeded: each needs a slot).
    pub fn share_of(&self, limit: usize) -> usize {
        let total = self.all.len().max(1);
        (limit.saturating_mul(self.served.len()) / total).max(1)
    }

    /// What tells apart the replicas of different served sets (the suffix of their leader
    /// Lease): the served shards joined by '.', or their hash when that is too long.
    pub fn group(&self) -> String {
        let joined = self.served().join(".");
        if joined.len() <= MAX_NAME {
            return joined;
        }
        let digest = Sha256::digest(joined.as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

/// A DNS label (RFC 1123).
fn valid(name: &str) -> bool {
    name.len() <= MAX_NAME
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The rendezvous weight of `shard` for the host `namespace/name`. The separator cannot
/// appear in a namespace, a shard name or the start of a name, so no two triples share one
/// input.
fn score(shard: &str, namespace: &str, name: &str) -> u64 {
    let digest = Sha256::digest(format!("{shard}/{namespace}/{name}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_string()).collect()
    }

    fn shards(all: &[&str], served: &[&str]) -> Shards {
        Shards::parse(&list(all), &list(served)).expect("valid").expect("sharded")
    }

    #[test]
    fn no_list_means_no_shards_and_a_served_set_without_a_list_is_refused() {
        assert_eq!(Shards::parse(&[], &[]), Ok(None));
        assert_eq!(Shards::parse(&list(&[" "]), &[]), Ok(None));
        assert_eq!(Shards::parse(&[], &list(&["a"])), Err(Error::ServedWithoutList));
    }

    #[test]
    fn names_must_be_dns_labels_listed_once_and_served_shards_listed() {
        assert_eq!(Shards::parse(&list(&["A"]), &[]), Err(Error::Name("A".into())));
        assert_eq!(Shards::parse(&list(&["-a"]), &[]), Err(Error::Name("-a".into())));
        assert_eq!(Shards::parse(&list(&[&"a".repeat(64)]), &[]), Err(Error::Name("a".repeat(64))));
        assert_eq!(Shards::parse(&list(&["a", "a"]), &[]), Err(Error::Repeated("a".into())));
        assert_eq!(Shards::parse(&list(&["a", "b"]), &list(&["c"])), Err(Error::Unknown("c".into())));
        assert_eq!(shards(&["a", "b"], &[]).served(), list(&["a", "b"]), "no served set: every shard");
        assert!(!shards(&["a", "b"], &["b", "a"]).partial() && shards(&["a", "b"], &["b"]).partial());
    }

    #[test]
    fn every_host_has_exactly_one_shard_and_every_replica_agrees_on_it() {
        let (left, right) = (shards(&["a", "b", "c", "d"], &["a", "b"]), shards(&["a", "b", "c", "d"], &["c", "d"]));
        for i in 0..1000 {
            let name = format!("host-{i}");
            assert_eq!(left.shard_of("ns", &name), right.shard_of("ns", &name));
            assert!(left.serves("ns", &name) != right.serves("ns", &name), "{name}: served by one replica");
        }
    }

    #[test]
    fn hosts_spread_over_the_shards_about_evenly() {
        let all = shards(&["a", "b", "c", "d"], &[]);
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for i in 0..10_000 {
            *counts.entry(all.shard_of("metal3", &format!("worker-{i}"))).or_default() += 1;
        }
        assert_eq!(counts.len(), 4);
        assert!(counts.values().all(|n| (2300..=2700).contains(n)), "{counts:?}");
    }

    #[test]
    fn a_shard_added_takes_hosts_from_the_others_and_moves_none_between_them() {
        let (three, four) = (shards(&["a", "b", "c"], &[]), shards(&["a", "b", "c", "d"], &[]));
        let mut moved = 0;
        for i in 0..3000 {
            let name = format!("h{i}");
            let (before, after) = (three.shard_of("ns", &name), four.shard_of("ns", &name));
            if before != after {
                assert_eq!(after, "d", "{name} moved from {before} to {after}");
                moved += 1;
            }
        }
        assert!((600..=900).contains(&moved), "about a quarter moved: {moved}");
    }

    #[test]
    fn the_same_name_in_another_namespace_may_land_elsewhere() {
        let all = shards(&["a", "b", "c", "d"], &[]);
        let differs = (0..100).any(|i| all.shard_of("x", &format!("h{i}")) != all.shard_of("y", &format!("h{i}")));
        assert!(differs);
    }

    #[test]
    fn a_replica_allows_its_shards_share_of_the_provisioning_limit() {
        assert_eq!(shards(&["a", "b", "c", "d"], &["a", "b"]).share_of(20), 10);
        assert_eq!(shards(&["a", "b", "c"], &["a"]).share_of(20), 6, "rounded down: three replicas allow 18");
        assert_eq!(shards(&["a", "b", "c", "d"], &["a"]).share_of(1), 1, "never none");
        assert_eq!(shards(&["a"], &[]).share_of(usize::MAX), usize::MAX, "saturates");
        assert_eq!(shards(&["a", "b", "c", "d"], &["a", "c"]).share_of(usize::MAX), usize::MAX / 4, "saturates");
    }

    #[test]
    fn replicas_of_different_served_sets_are_told_apart_in_a_lease_name() {
        assert_eq!(shards(&["a", "b", "c"], &["b", "a"]).group(), "a.b");
        let long: Vec<String> = (0..20).map(|i| format!("shard-{i:04}")).collect();
        let group = Shards::parse(&long, &[]).expect("valid").expect("sharded").group();
        assert!(group.len() <= MAX_NAME && !group.contains('.'), "{group}");
    }
}
