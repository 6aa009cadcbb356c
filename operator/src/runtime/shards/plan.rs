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
//!
//! A replica holding nothing is seen by the others only through a request, so it keeps one
//! whenever a Lease carries no other replica's ([`be_seen`]), and while it has just started it
//! takes nothing: replicas that start together count each other before taking, instead of the
//! first taking every shard and handing half back.

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
/// could not be read still counts in the share); `starting` while it has just started.
pub(crate) fn plan(me: &str, seen: &[Seen], shards: usize, starting: bool) -> Moves {
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
    let mut moves = Moves { take, give_up, ask };
    if mine == 0 {
        be_seen(me, seen, starting, &mut moves);
    }
    moves
}

/// The moves of a replica holding nothing, which the others count only by its request. Just
/// started, it takes nothing yet and asks: replicas starting together see each other's
/// requests before their first take (each its own free shard, then up to the share of all).
/// Later, taking nothing and with nobody over its share to ask, it asks anyway, a Lease
/// nobody else asked for (its holder keeps it, being at its share), so that shards coming free
/// (an old pod of a rolling update releasing them) are shared with it rather than all taken by
/// the replicas that hold some.
fn be_seen(me: &str, seen: &[Seen], starting: bool, moves: &mut Moves) {
    if starting {
        moves.take.clear();
    }
    if !moves.take.is_empty() || moves.ask.is_some() {
        return;
    }
    let not_others = |lease: &&Seen| lease.wanted_by.as_deref().is_none_or(|by| by == me);
    let free: Vec<&Seen> = seen.iter().filter(|l| l.holder == Holder::Free).filter(not_others).collect();
    let asked_by_me = |lease: &&Seen| lease.wanted_by.as_deref() == Some(me);
    let pick = (free.iter().copied().find(asked_by_me))
        .or_else(|| free.get(spread(me, free.len())).copied())
        .or_else(|| seen.iter().find(asked_by_me))
        .or_else(|| seen.iter().find(not_others));
    moves.ask = pick.map(|l| l.shard.clone());
}

/// Where among `n` free Leases replica `me` asks first. Replicas reading the Leases at the
/// same moment would each ask for the first, and all but one lose the write; their names (a
/// Deployment's pods differ in a random suffix) spread them instead. FNV-1a, stable across
/// builds and runs unlike the standard library's hasher, then a final mix (MurmurHash3's), so
/// that a count of a power of two depends on every bit of the name, not its bytes' low bits.
fn spread(me: &str, n: usize) -> usize {
    let fnv = me.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let mixed = (fnv ^ (fnv >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let hash = mixed ^ (mixed >> 33);
    usize::try_from(hash % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
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
        assert_eq!(plan("me", &seen, 4, false), Moves { take: names(&["a", "b", "c", "d"]), ..Moves::default() });
    }

    #[test]
    fn a_replica_takes_free_shards_up_to_its_share_of_the_replicas_alive() {
        let seen = [lease("a", "other"), lease("b", ""), lease("c", ""), lease("d", "")];
        assert_eq!(plan("me", &seen, 4, false).take, names(&["b", "c"]), "two replicas alive: two each");
    }

    #[test]
    fn a_late_replica_asks_the_one_holding_everything_for_a_shard_and_keeps_asking_for_it() {
        let seen = [lease("a", "old"), lease("b", "old"), lease("c", "old"), lease("d", "old")];
        assert_eq!(plan("me", &seen, 4, false), Moves { ask: Some("a".into()), ..Moves::default() });
        let asked = [wanted(lease("a", "old"), "me"), lease("b", "old"), lease("c", "old"), lease("d", "old")];
        assert_eq!(plan("me", &asked, 4, false).ask, Some("a".into()));
    }

    #[test]
    fn a_replica_over_its_share_gives_up_what_others_asked_for_and_nothing_else() {
        let asked = [wanted(lease("a", "me"), "new"), lease("b", "me"), lease("c", "me"), lease("d", "me")];
        assert_eq!(plan("me", &asked, 4, false).give_up, names(&["a"]), "the asker counts as alive: two each");
        let unasked = [lease("a", "me"), lease("b", "me"), lease("c", "me"), lease("d", "me")];
        assert_eq!(plan("me", &unasked, 4, false), Moves::default(), "alone, all four are its share");
        let at_share = [wanted(lease("a", "me"), "new"), lease("b", "me"), lease("c", "x"), lease("d", "x")];
        assert!(plan("me", &at_share, 4, false).give_up.is_empty(), "at its share it keeps what it has");
    }

    #[test]
    fn a_shard_given_up_goes_to_the_replica_that_asked_for_it() {
        let given = [wanted(lease("a", ""), "new"), lease("b", "old"), lease("c", "old"), lease("d", "")];
        assert_eq!(plan("third", &given, 4, false).take, names(&["d"]), "not the one another asked for");
        assert_eq!(plan("new", &given, 4, false).take, names(&["a", "d"]), "its own first");
    }

    #[test]
    fn the_shards_of_a_dead_replica_are_taken_once_their_term_ends() {
        // The dead replica's Leases judged free (their term ended on our clock).
        let seen = [lease("a", "me"), lease("b", "me"), lease("c", ""), lease("d", "")];
        assert_eq!(plan("me", &seen, 4, false).take, names(&["c", "d"]));
    }

    #[test]
    fn a_holder_under_its_share_asks_nobody_at_theirs() {
        let seen = [lease("a", "x"), lease("b", "x"), lease("c", "y"), lease("d", "me")];
        assert_eq!(plan("me", &seen, 4, false).ask, None, "three alive, share two: x is at it");
    }

    #[test]
    fn a_replica_just_started_takes_nothing_and_asks_for_a_free_shard_nobody_else_asked_for() {
        let seen = [wanted(lease("a", ""), "other"), lease("b", ""), lease("c", ""), lease("d", "")];
        let asked = plan("me", &seen, 4, true);
        assert!(asked.take.is_empty() && asked.give_up.is_empty(), "{asked:?}");
        let Some(shard) = asked.ask.clone().filter(|s| s != "a") else { panic!("no free shard of its own: {asked:?}") };
        let after = seen.map(|l| if l.shard == shard { wanted(l, "me") } else { l });
        let take = plan("me", &after, 4, false).take;
        assert_eq!((take.len(), take.first()), (2, Some(&shard)), "its own first, up to two of four");
        assert_eq!(plan("me", &after, 4, true).ask, Some(shard), "it keeps asking for the one it asked for");
    }

    #[test]
    fn replicas_just_started_spread_their_requests_over_the_free_shards_by_name() {
        let free = [lease("a", ""), lease("b", ""), lease("c", ""), lease("d", "")];
        let pods = (0..40).map(|i| format!("ferrometal-hosts-6f7c9-{i:05x}"));
        let asked: BTreeSet<Option<String>> = pods.map(|pod| plan(&pod, &free, 4, true).ask).collect();
        assert_eq!(asked.len(), 4, "every free shard asked for by some name: {asked:?}");
        assert_eq!(plan("r1", &free, 4, true), plan("r1", &free, 4, true), "a name asks for the same one");
    }

    #[test]
    fn a_replica_holding_nothing_with_nobody_over_its_share_still_asks_to_be_counted() {
        let seen = [lease("a", "x"), lease("b", "x"), lease("c", "y"), lease("d", "y")];
        assert_eq!(plan("me", &seen, 4, false).ask, Some("a".into()));
        let asked = [lease("a", "x"), lease("b", "x"), wanted(lease("c", "y"), "me"), lease("d", "y")];
        assert_eq!(plan("me", &asked, 4, false).ask, Some("c".into()), "the same Lease again");
        assert_eq!(plan("x", &asked, 4, false), Moves::default(), "its holder, at its share, keeps it");
        let holding = [lease("a", "x"), lease("b", "me"), lease("c", "y"), lease("d", "y")];
        assert_eq!(plan("me", &holding, 4, false), Moves::default(), "a holder is counted already");
    }

    /// The table of Leases (holders named) as replica `me` sees it.
    fn view(leases: &[Seen], me: &str) -> Vec<Seen> {
        let mine = |l: &Seen| matches!(&l.holder, Holder::Other(h) if h == me);
        leases.iter().map(|l| if mine(l) { Seen { holder: Holder::Me, ..l.clone() } } else { l.clone() }).collect()
    }

    /// Replicas looking in `order` at `leases`, each look's moves applied before the next:
    /// every shard given up.
    fn run(leases: &mut [Seen], order: &[(&str, bool)]) -> Vec<String> {
        let mut given_up = Vec::new();
        for (me, starting) in order {
            let moves = plan(me, &view(leases, me), 4, *starting);
            write(leases, me, &moves, &mut BTreeSet::new(), &mut given_up);
        }
        given_up
    }

    /// Replicas reading `leases` at the same moment, then writing in `order`: a write to a
    /// Lease written since that read fails, as a replace with the resourceVersion read does.
    /// Returns the replicas a write of which failed.
    fn together(leases: &mut [Seen], order: &[&str], starting: bool, given_up: &mut Vec<String>) -> Vec<String> {
        let read = leases.to_vec();
        let mut written = BTreeSet::new();
        let moves: Vec<Moves> = order.iter().map(|me| plan(me, &view(&read, me), 4, starting)).collect();
        let refused = order.iter().zip(&moves).filter(|(me, moves)| !write(leases, me, moves, &mut written, given_up));
        refused.map(|(me, _)| me.to_string()).collect()
    }

    /// Applies `me`'s moves (a take clears the taker's request, a give-up frees the Lease),
    /// each Lease at most once in `written`'s round; returns whether every write landed.
    fn write(
        leases: &mut [Seen],
        me: &str,
        moves: &Moves,
        written: &mut BTreeSet<String>,
        given_up: &mut Vec<String>,
    ) -> bool {
        let mut landed = true;
        for lease in leases.iter_mut() {
            let touched = moves.take.contains(&lease.shard)
                || moves.give_up.contains(&lease.shard)
                || moves.ask.as_ref() == Some(&lease.shard);
            if touched && !written.insert(lease.shard.clone()) {
                landed = false;
            } else if moves.take.contains(&lease.shard) {
                lease.holder = Holder::Other(me.to_string());
                lease.wanted_by = None;
            } else if moves.give_up.contains(&lease.shard) {
                lease.holder = Holder::Free;
                given_up.push(lease.shard.clone());
            } else if moves.ask.as_ref() == Some(&lease.shard) {
                lease.wanted_by = Some(me.to_string());
            }
        }
        landed
    }

    fn held_by(leases: &[Seen], replica: &str) -> usize {
        leases.iter().filter(|l| l.holder == Holder::Other(replica.into())).count()
    }

    #[test]
    fn two_replicas_starting_together_take_two_shards_each_and_give_none_back() {
        let mut leases = [lease("a", ""), lease("b", ""), lease("c", ""), lease("d", "")];
        let given_up = run(&mut leases, &[("r1", true), ("r2", true), ("r1", false), ("r2", false)]);
        assert_eq!((held_by(&leases, "r1"), held_by(&leases, "r2")), (2, 2), "{leases:?}");
        assert!(given_up.is_empty(), "{given_up:?}");
        let mut alone = [lease("a", ""), lease("b", ""), lease("c", ""), lease("d", "")];
        run(&mut alone, &[("r1", true), ("r1", true), ("r1", false)]);
        assert_eq!(held_by(&alone, "r1"), 4, "alone, once started: every shard");
    }

    #[test]
    fn two_replicas_reading_at_once_and_asking_for_one_shard_still_end_two_each_giving_none_back() {
        let free = || [lease("a", ""), lease("b", ""), lease("c", ""), lease("d", "")];
        let pod = |i: u32| format!("ferrometal-hosts-6f7c9-{i:05x}");
        let first = pod(0);
        let asks = |name: &str| plan(name, &free(), 4, true).ask;
        let Some(second) = (1..100).map(pod).find(|p| asks(p) == asks(&first)) else { panic!("no pair") };
        let (mut leases, mut given_up) = (free(), Vec::new());
        let order = [first.as_str(), second.as_str()];
        assert_eq!(
            together(&mut leases, &order, true, &mut given_up),
            std::slice::from_ref(&second),
            "one request lost"
        );
        // The loser looks again at once, still starting, and asks for another.
        assert!(together(&mut leases, &[second.as_str()], true, &mut given_up).is_empty());
        assert_eq!(leases.iter().filter(|l| l.wanted_by.is_some()).count(), 2, "{leases:?}");
        // The starts end together: each takes its own and one more; a lost take is retaken.
        for _ in 0..3 {
            together(&mut leases, &order, false, &mut given_up);
        }
        assert_eq!((held_by(&leases, &first), held_by(&leases, &second)), (2, 2), "{leases:?}");
        assert!(given_up.is_empty(), "{given_up:?}");
    }

    #[test]
    fn in_a_rolling_update_the_new_pod_gets_the_shards_an_old_one_releases() {
        let mut leases = [lease("a", "old1"), lease("b", "old1"), lease("c", "old2"), lease("d", "old2")];
        // The new pod looks (and is counted from then on), then old1 stops and releases.
        run(&mut leases, &[("new", true)]);
        for lease in leases.iter_mut().filter(|l| l.holder == Holder::Other("old1".into())) {
            lease.holder = Holder::Free;
        }
        let given_up = run(&mut leases, &[("old2", false), ("new", false), ("old2", false)]);
        assert_eq!((held_by(&leases, "old2"), held_by(&leases, "new")), (2, 2), "{leases:?}");
        assert!(given_up.is_empty(), "old2 never took more than its share: {given_up:?}");
    }

    #[test]
    fn three_replicas_over_four_shards_settle_without_moving_more() {
        let seen = [lease("a", "x"), lease("b", "x"), lease("c", "me"), lease("d", "y")];
        assert_eq!(plan("me", &seen, 4, false), Moves::default());
        assert_eq!(
            plan("x", &[lease("a", "me"), lease("b", "me"), lease("c", "z"), lease("d", "y")], 4, false),
            Moves::default()
        );
    }
}
