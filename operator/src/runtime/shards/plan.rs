//! Which shard Leases a replica takes, keeps, gives up and asks for, from one look at all of
//! them. Pure: the elector reads the Leases, judges each (`lease::Observer`), and writes what
//! this returns.
//!
//! Every replica aims at a fair share, `ceil(shards / replicas)`, where the replicas are those
//! seen alive: holders of a Lease still in its term, replicas whose request for a shard is
//! fresh, and this one. A replica under its share takes free Leases, but leaves one that
//! another replica asked for to that replica. With none free it asks for one (an annotation on
//! the Lease) of the replica holding the most, if that one holds more than its share; a
//! replica over its share gives up the Leases others asked for, down to its share, and never
//! one nobody asked for. So a replica that starts late gets its share within a few attempts,
//! and the Leases of one that died are free once their term ends and taken by the others.

use std::collections::{BTreeMap, BTreeSet};

/// One shard's Lease as this replica judged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub shard: String,
    pub holder: Holder,
    /// A replica that asked for this shard, its request still fresh.
    pub wanted_by: Option<String>,
}

/// Who holds a Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    Me,
    Free,
    Other(String),
}

/// What to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Moves {
    /// Free Leases to take.
    pub take: Vec<String>,
    /// Our Leases to give up (stop serving, then release).
    pub give_up: Vec<String>,
    /// The shard to ask for.
    pub ask: Option<String>,
}

/// The moves of replica `me` on `seen`, the Leases read of `shards` in all (a Lease that
/// could not be read still counts in the share).
pub(crate) fn plan(me: &str, seen: &[Seen], shards: usize) -> Moves {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut alive: BTreeSet<&str> = BTreeSet::from([me]);
    for lease in seen {
        match &lease.holder {
            Holder::Me => *counts.entry(me).or_default() += 1,
            Holder::Other(holder) => {
                *counts.entry(holder.as_str()).or_default() += 1;
                alive.insert(holder.as_str());
            }
            Holder::Free => {}
        }
        if let Some(wanter) = &lease.wanted_by {
            alive.insert(wanter.as_str());
        }
    }
    let fair = shards.max(seen.len()).div_ceil(alive.len());
    let mine = counts.get(me).copied().unwrap_or(0);
    let wanted_by_other = |lease: &Seen| lease.wanted_by.as_deref().is_some_and(|w| w != me);

    let give_up: Vec<String> = seen
        .iter()
        .filter(|lease| lease.holder == Holder::Me && wanted_by_other(lease))
        .take(mine.saturating_sub(fair))
        .map(|lease| lease.shard.clone())
        .collect();
    // Ours first among the free: a shard we asked for and its holder gave up.
    let mut free: Vec<&Seen> = seen.iter().filter(|l| l.holder == Holder::Free && !wanted_by_other(l)).collect();
    free.sort_by_key(|l| l.wanted_by.is_none());
    let take: Vec<String> = free.iter().take(fair.saturating_sub(mine)).map(|l| l.shard.clone()).collect();
    let short = mine + take.len() < fair;
    let ask = short.then(|| ask_for(me, seen, &counts, fair)).flatten();
    Moves { take, give_up, ask }
}

/// The shard to ask for: one we asked for already, if its holder still holds more than its
/// share; else the first of the replica holding the most, if that is more than its share.
fn ask_for(me: &str, seen: &[Seen], counts: &BTreeMap<&str, usize>, fair: usize) -> Option<String> {
    let over = |holder: &str| counts.get(holder).copied().unwrap_or(0) > fair;
    let held_by_over = |lease: &&Seen| matches!(&lease.holder, Holder::Other(h) if over(h));
    if let Some(asked) = seen.iter().filter(held_by_over).find(|l| l.wanted_by.as_deref() == Some(me)) {
        return Some(asked.shard.clone());
    }
    let richest = counts.iter().filter(|(holder, _)| **holder != me).max_by_key(|(_, n)| **n)?.0;
    seen.iter()
        .filter(held_by_over)
        .find(|l| matches!(&l.holder, Holder::Other(h) if h == richest) && l.wanted_by.is_none())
        .map(|l| l.shard.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(shard: &str, holder: &str) -> Seen {
        let holder = match holder {
            "" => Holder::Free,
            "me" => Holder::Me,
            other => Holder::Other(other.into()),
        };
        Seen { shard: shard.into(), holder, wanted_by: None }
    }

    fn wanted(mut seen: Seen, by: &str) -> Seen {
        seen.wanted_by = Some(by.into());
        seen
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn a_replica_alone_takes_every_free_shard() {
        let seen = [lease("a", ""), lease("b", ""), lease("c", ""), lease("d", "")];
        assert_eq!(plan("me", &seen, 4), Moves { take: names(&["a", "b", "c", "d"]), ..Moves::default() });
    }

    #[test]
    fn a_replica_takes_free_shards_up_to_its_share_of_the_replicas_alive() {
        let seen = [lease("a", "other"), lease("b", ""), lease("c", ""), lease("d", "")];
        assert_eq!(plan("me", &seen, 4).take, names(&["b", "c"]), "two replicas alive: two each");
    }

    #[test]
    fn a_late_replica_asks_the_one_holding_everything_for_a_shard_and_keeps_asking_for_it() {
        let seen = [lease("a", "old"), lease("b", "old"), lease("c", "old"), lease("d", "old")];
        assert_eq!(plan("me", &seen, 4), Moves { ask: Some("a".into()), ..Moves::default() });
        let asked = [wanted(lease("a", "old"), "me"), lease("b", "old"), lease("c", "old"), lease("d", "old")];
        assert_eq!(plan("me", &asked, 4).ask, Some("a".into()));
    }

    #[test]
    fn a_replica_over_its_share_gives_up_what_others_asked_for_and_nothing_else() {
        let asked = [wanted(lease("a", "me"), "new"), lease("b", "me"), lease("c", "me"), lease("d", "me")];
        assert_eq!(plan("me", &asked, 4).give_up, names(&["a"]), "the asker counts as alive: two each");
        let unasked = [lease("a", "me"), lease("b", "me"), lease("c", "me"), lease("d", "me")];
        assert_eq!(plan("me", &unasked, 4), Moves::default(), "alone, all four are its share");
        let at_share = [wanted(lease("a", "me"), "new"), lease("b", "me"), lease("c", "x"), lease("d", "x")];
        assert!(plan("me", &at_share, 4).give_up.is_empty(), "at its share it keeps what it has");
    }

    #[test]
    fn a_shard_given_up_goes_to_the_replica_that_asked_for_it() {
        let given = [wanted(lease("a", ""), "new"), lease("b", "old"), lease("c", "old"), lease("d", "")];
        assert_eq!(plan("third", &given, 4).take, names(&["d"]), "not the one another asked for");
        assert_eq!(plan("new", &given, 4).take, names(&["a", "d"]), "its own first");
    }

    #[test]
    fn the_shards_of_a_dead_replica_are_taken_once_their_term_ends() {
        // The dead replica's Leases judged free (their term ended on our clock).
        let seen = [lease("a", "me"), lease("b", "me"), lease("c", ""), lease("d", "")];
        assert_eq!(plan("me", &seen, 4).take, names(&["c", "d"]));
    }

    #[test]
    fn nobody_asks_a_replica_at_its_share() {
        let seen = [lease("a", "x"), lease("b", "x"), lease("c", "y"), lease("d", "y")];
        assert_eq!(plan("me", &seen, 4).ask, None, "three alive, share two: x and y are at it");
    }

    #[test]
    fn three_replicas_over_four_shards_settle_without_moving_more() {
        let seen = [lease("a", "x"), lease("b", "x"), lease("c", "me"), lease("d", "y")];
        assert_eq!(plan("me", &seen, 4), Moves::default());
        assert_eq!(
            plan("x", &[lease("a", "me"), lease("b", "me"), lease("c", "z"), lease("d", "y")], 4),
            Moves::default()
        );
    }
}
