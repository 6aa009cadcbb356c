//! Only the nodes that changed since the last look, with a rare full list.
//!
//! A full status list costs Ironic work for every node, and a poller that
//! lists every few seconds while hosts move pays it at each poll. Ironic has
//! no "changed since" filter, but every write of a node sets its
//! `updated_at`, and the node list sorts by it. Ironic refuses `updated_at` in
//! `fields` (it is not among the columns a slim list may select), so the
//! times come from two single-node reads of the whole record:
//!
//! 1. the newest node (`detail`, sorted by `updated_at` descending, limit 1),
//!    read first: its time is where the next look starts;
//! 2. the slim status list in the same order, a page at a time, sized from
//!    the last look;
//! 3. the last node of each page, read whole: once it is older than where
//!    this look starts (or was never updated, which sorts last), every node
//!    changed since is in hand.
//!
//! At rest (the look starts after the newest time, whose nodes a look showed)
//! a newest node no later than that start means nothing was written since:
//! the look ends there, one request, and its next first page is the least.
//!
//! The result is a superset of the changed nodes (a page's tail may be
//! older); callers compare against what they hold. Deleted nodes and nodes
//! never updated since they were created do not show in a delta: a full
//! list, asked for by the caller or due every `full_every`, catches them.
//!
//! A look lists every node instead when its newest node is older than the
//! newest seen before (the node written last was deleted, or Ironic lost its
//! database), when there is no newest write to start from (none yet, or a
//! database that sorts never-written nodes first), when the newest write is
//! later than this machine's clock by more than the margin (a conductor's
//! clock ahead, or a time that does not parse), and when a delta grows past
//! what the last full list held.
//!
//! Writes can commit a little out of `updated_at` order, and conductors'
//! clocks differ, so each look starts [`MARGIN`] before the newest time seen,
//! until a look with the margin, started the margin or more after that time
//! was first seen (by this machine's clock), found it still the newest: then
//! it starts after the newest time itself, whose nodes that look showed, so
//! that a look at rest reads none of the last burst of writes again, even
//! when a whole fleet shares that time (a database that keeps whole seconds,
//! or nodes written by one statement).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use reqwest::Method;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{DEFAULT_PAGE_SIZE, Node, NodeListQuery, NodeStatusSummary, STATUS_FIELDS, SortDir};

/// How far before the newest change seen a look starts: conductors' clock
/// skew and writes committed out of order.
pub const MARGIN: Duration = Duration::from_secs(10);
/// How often a full list comes by default: rare, since it costs Ironic work
/// for every node.
pub const DEFAULT_FULL_EVERY: Duration = Duration::from_secs(300);
/// The coarsest time Ironic's databases keep (MariaDB's `DATETIME`: whole
/// seconds). Only a margin of at least this lets a look start after the
/// newest write: a write made after a look, in the same stored second, would
/// carry that very time.
pub const RESOLUTION: Duration = Duration::from_secs(1);
/// The smallest first page of a look.
const MIN_PAGE: u32 = 20;

/// Where the next look starts, and when the last full list was.
#[derive(Debug, Clone)]
pub struct ChangeCursor {
    full_every: Duration,
    margin: Duration,
    last_full: Option<Instant>,
    /// The newest `updated_at` seen; `None` before a full list, or while no
    /// node was ever updated.
    newest: Option<Timestamp>,
    /// The first page size of the next look.
    page: u32,
    /// How many nodes the last full list had: a delta that finds more lists every node.
    listed: usize,
    /// When (on this machine's clock) `newest` last changed.
    moved: Option<Instant>,
    /// When the last look that started a margin before `newest` started.
    margined: Option<Instant>,
    /// Whether a newest write ahead of this machine's clock was reported already.
    warned: bool,
    /// Only nodes of these shards are looked at; empty: every node.
    shards: Vec<String>,
}

/// Where a look starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Start {
    at: Timestamp,
    /// Whether every node written at `at` itself was shown already: the look
    /// needs only the nodes written later.
    shown: bool,
}

/// What one look returned.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusList {
    /// Every node: anything held and not here is gone.
    Full(Vec<NodeStatusSummary>),
    /// Every node changed since the last look, and maybe some others.
    Changed(Vec<NodeStatusSummary>),
}

impl StatusList {
    /// The nodes returned.
    pub fn nodes(&self) -> &[NodeStatusSummary] {
        match self {
            StatusList::Full(nodes) | StatusList::Changed(nodes) => nodes,
        }
    }

    /// The nodes returned, owned.
    pub fn into_nodes(self) -> Vec<NodeStatusSummary> {
        match self {
            StatusList::Full(nodes) | StatusList::Changed(nodes) => nodes,
        }
    }

    /// Whether this was a full list.
    pub fn is_full(&self) -> bool {
        matches!(self, StatusList::Full(_))
    }
}

impl ChangeCursor {
    /// A cursor whose first look is a full list, as is every look `full_every`
    /// after the last full one.
    pub fn new(full_every: Duration) -> Self {
        Self {
            full_every,
            margin: MARGIN,
            last_full: None,
            newest: None,
            page: MIN_PAGE,
            listed: 0,
            moved: None,
            margined: None,
            warned: false,
            shards: Vec::new(),
        }
    }

    /// Looks only at the nodes of `shards` (API 1.82): every list, the newest
    /// write's included, is of those nodes alone.
    #[must_use]
    pub fn with_shards(mut self, shards: Vec<String>) -> Self {
        self.shards = shards;
        self
    }

    /// Starts each look `margin` before the newest change seen instead of
    /// [`MARGIN`] (tests, and Ironics with one conductor on one clock). A
    /// margin under [`RESOLUTION`](crate::CHANGE_RESOLUTION) never lets a look
    /// start after the newest write: a later write in the same stored second
    /// would carry its time.
    #[must_use]
    pub fn with_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// Whether the cursor is at rest: its next look starts after the newest write
    /// (whose nodes a look with the margin showed) with the least first page, as a
    /// poller's is once nothing has moved for a while. Benchmarks wait for it.
    pub fn at_rest(&self) -> bool {
        self.since().is_some_and(|start| start.shown) && self.page == MIN_PAGE
    }

    /// Whether the next look must list every node.
    pub fn full_due(&self, now: Instant) -> bool {
        self.last_full.is_none_or(|at| now.saturating_duration_since(at) >= self.full_every)
    }

    /// Where a delta starts: `None` keeps every node ever updated.
    /// A newest write that a look with the margin, started at least the margin
    /// after that write was first seen, found unmoved starts the look after
    /// itself: whatever was committed late has landed by then and was shown by
    /// that look, and at rest a look would otherwise go over the last margin's
    /// writes, or every node sharing the newest time, again and again.
    fn since(&self) -> Option<Start> {
        let settled = match (self.moved, self.margined) {
            (Some(moved), Some(margined)) => {
                self.margin >= RESOLUTION && margined.saturating_duration_since(moved) >= self.margin
            }
            _ => false,
        };
        let margin = jiff::SignedDuration::try_from(self.margin).unwrap_or(jiff::SignedDuration::ZERO);
        self.newest.map(|t| {
            if settled {
                Start { at: t, shown: true }
            } else {
                Start { at: t.checked_sub(margin).unwrap_or(Timestamp::MIN), shown: false }
            }
        })
    }

    /// Records that a look starting at `since` started at `now`.
    fn looked(&mut self, since: Option<Start>, now: Instant) {
        if since.is_some_and(|start| !start.shown) {
            self.margined = Some(now);
        }
    }

    /// Whether Ironic's newest write is older than one seen before: the node
    /// written last was deleted, or Ironic lost its database (a restart with
    /// an in-memory one). Either way nodes are gone, which only a full list shows.
    fn went_back(&self, newest: Option<Timestamp>) -> bool {
        self.newest.is_some_and(|seen| newest.is_none_or(|now| now < seen))
    }

    /// Whether a look cannot start from `newest`, Ironic's newest write as read at
    /// `wall` (this machine's clock): there is none (no node written, or a
    /// database that sorts never-written nodes first), or it is later than
    /// `wall` by more than the margin (a conductor's clock ahead, or a time that
    /// does not parse), where a look would start after changes it must show.
    fn blind(&self, newest: Option<Timestamp>, wall: Timestamp) -> bool {
        let margin = jiff::SignedDuration::try_from(self.margin).unwrap_or(jiff::SignedDuration::ZERO);
        newest.is_none_or(|newest| newest > wall.checked_add(margin).unwrap_or(Timestamp::MAX))
    }

    /// Whether a look from `since` can end at Ironic's newest write, `newest`:
    /// it starts after a time whose nodes were all shown, and no node was
    /// written later. A node written since then would be newer than that time
    /// (the start settled a margin of at least the databases' resolution after
    /// it was first seen, so a new write cannot share its stored second).
    fn unmoved(since: Option<Start>, newest: Option<Timestamp>) -> bool {
        since.is_some_and(|start| start.shown && newest.is_some_and(|newest| newest <= start.at))
    }

    fn saw(&mut self, newest: Option<Timestamp>, now: Instant) {
        if newest > self.newest {
            self.newest = newest;
            self.moved = Some(now);
        }
    }

    /// The next first page. A look returns whole pages, so what it found says
    /// little of what changed; how many pages it took does. A look that took
    /// more than one page starts the next with as many nodes as it found; one
    /// whose first page sufficed starts the next with half of it.
    fn size_next(&mut self, pages: usize, found: usize) {
        let wanted = if pages > 1 { u32::try_from(found).unwrap_or(u32::MAX) } else { self.page / 2 };
        self.page = wanted.clamp(MIN_PAGE, DEFAULT_PAGE_SIZE);
    }
}

/// A node's `updated_at`; `None` when never updated. A time without an offset
/// is UTC, as Ironic keeps it; one that does not parse at all counts as new
/// ([`Timestamp::MAX`]), so a look never stops early on it.
fn updated_at(node: &Node) -> Option<Timestamp> {
    let at = node.updated_at.as_deref()?;
    let parsed = at.parse::<Timestamp>().ok().or_else(|| {
        let civil = at.parse::<jiff::civil::DateTime>().ok()?;
        civil.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp())
    });
    Some(parsed.unwrap_or(Timestamp::MAX))
}

/// Whether a node last written at `at` is behind what a look from `since`
/// must show: nodes never updated sort after every updated one, so they are
/// behind anything.
fn older(at: Option<Timestamp>, since: Option<Start>) -> bool {
    match (at, since) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(at), Some(since)) => at < since.at || (since.shown && at == since.at),
    }
}

fn by_update(limit: u32, shards: &[String]) -> NodeListQuery {
    NodeListQuery {
        sort_key: Some("updated_at".into()),
        sort_dir: Some(SortDir::Desc),
        limit: Some(limit),
        shards: shards.to_vec(),
        ..NodeListQuery::new()
    }
}

impl IronicClient {
    /// The nodes changed since `cursor`'s last look, or every node when
    /// `full` is asked for or due. Moves `cursor` on only when it succeeds.
    pub async fn node_status_changes(&self, cursor: &mut ChangeCursor, full: bool) -> Result<StatusList> {
        let started = Instant::now();
        // Read before the list, so a change made during it is seen again next time.
        let newest = self.newest_update(&cursor.shards).await?;
        let blind = cursor.blind(newest, Timestamp::now());
        if blind && newest.is_some() && !cursor.warned {
            cursor.warned = true;
            tracing::warn!(
                newest = ?newest,
                "Ironic's newest node write is ahead of this machine's clock by more than the margin: \
                 every look lists every node until the clocks agree"
            );
        }
        let full = full || cursor.full_due(started) || cursor.went_back(newest) || blind;
        if !full {
            let cap = cursor.listed.max(DEFAULT_PAGE_SIZE as usize);
            let since = cursor.since();
            if ChangeCursor::unmoved(since, newest) {
                // Whatever comes next starts from the least page and grows to what it finds.
                cursor.page = MIN_PAGE;
                return Ok(StatusList::Changed(Vec::new()));
            }
            if let Some((nodes, pages)) = self.changed_since(since, cursor.page, cap, &cursor.shards).await? {
                cursor.looked(since, started);
                cursor.size_next(pages, nodes.len());
                cursor.saw(newest, started);
                return Ok(StatusList::Changed(nodes));
            }
        }
        let filter = NodeListQuery { shards: cursor.shards.clone(), ..NodeListQuery::new() };
        let nodes = self.node_statuses_matching(&filter).await?;
        cursor.last_full = Some(started);
        cursor.listed = nodes.len();
        // After a loss the newest time starts again from what Ironic has now.
        if cursor.newest != newest {
            cursor.newest = newest;
            cursor.moved = Some(started);
        }
        Ok(StatusList::Full(nodes))
    }

    /// The `updated_at` of the node written last.
    async fn newest_update(&self, shards: &[String]) -> Result<Option<Timestamp>> {
        let query = by_update(1, shards).params();
        let (nodes, _) = self.fetch_page::<Node>(Operation::NodeChanges, "nodes", query).await?;
        Ok(nodes.first().and_then(updated_at))
    }

    /// The slim list sorted by `updated_at`, newest first, until a page ends
    /// with a node older than `since`; and how many pages that took. `None`
    /// once more than `cap` nodes are found: a full list costs no more. A
    /// marker met twice (a server answering the same page again) is an error,
    /// as in every listing.
    async fn changed_since(
        &self,
        since: Option<Start>,
        first_page: u32,
        cap: usize,
        shards: &[String],
    ) -> Result<Option<(Vec<NodeStatusSummary>, usize)>> {
        let mut found = Vec::new();
        let mut markers = std::collections::HashSet::new();
        let mut query = NodeListQuery {
            fields: STATUS_FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            ..by_update(first_page, shards)
        };
        for pages in 1..=crate::paging::MAX_PAGES {
            let (page, next) =
                self.fetch_page::<NodeStatusSummary>(Operation::NodeChanges, "nodes", query.params()).await?;
            let last = page.last().map(|n| n.uuid.clone());
            found.extend(page);
            let (Some(last), Some(next)) = (last, next) else {
                return Ok(Some((found, pages)));
            };
            if found.len() > cap {
                return Ok(None);
            }
            if !markers.insert(next.clone()) {
                return Err(crate::Error::Paging {
                    operation: Operation::NodeChanges,
                    fault: crate::PagingFault::RepeatedMarker { marker: next, page: pages },
                });
            }
            let boundary: Node =
                self.send_json(Request::new(Operation::NodeChanges, Method::GET, &["nodes", &last])).await?;
            if older(updated_at(&boundary), since) {
                return Ok(Some((found, pages)));
            }
            query.marker = Some(next);
            query.limit = Some(query.limit.unwrap_or(MIN_PAGE).saturating_mul(2).min(DEFAULT_PAGE_SIZE));
        }
        Err(crate::Error::Paging {
            operation: Operation::NodeChanges,
            fault: crate::PagingFault::TooManyPages { limit: crate::paging::MAX_PAGES },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Option<Timestamp> {
        s.parse().ok()
    }

    /// A start a margin before the newest write: its own time included.
    fn margined(s: &str) -> Option<Start> {
        at(s).map(|at| Start { at, shown: false })
    }

    /// A start at a newest write whose nodes were all shown: only later ones count.
    fn after(s: &str) -> Option<Start> {
        at(s).map(|at| Start { at, shown: true })
    }

    #[test]
    fn a_cursor_is_at_rest_once_its_start_settled_and_its_first_page_is_the_least() {
        let seen = Instant::now();
        let mut cursor = ChangeCursor::new(DEFAULT_FULL_EVERY);
        assert!(!cursor.at_rest(), "no newest write seen yet");
        cursor.saw(at("2026-01-01T00:00:00Z"), seen);
        cursor.looked(cursor.since(), seen + MARGIN / 2);
        assert!(!cursor.at_rest(), "its look with the margin came within the margin");
        cursor.looked(cursor.since(), seen + MARGIN);
        cursor.page = 2 * MIN_PAGE;
        assert!(!cursor.at_rest(), "settled, but its first page not yet the least");
        cursor.size_next(1, 5);
        assert!(cursor.at_rest());
    }

    #[test]
    fn never_updated_nodes_are_older_than_any_start() {
        assert!(older(None, None));
        assert!(older(None, margined("2026-01-01T00:00:00Z")));
        assert!(!older(at("2026-01-01T00:00:00Z"), None));
    }

    #[test]
    fn a_look_keeps_nodes_written_at_its_start_or_later() {
        let since = margined("2026-01-01T00:00:10Z");
        assert!(!older(at("2026-01-01T00:00:10+00:00"), since));
        assert!(!older(at("2026-01-01T00:00:10.5+00:00"), since));
        assert!(older(at("2026-01-01T00:00:09.999999+00:00"), since));
    }

    #[test]
    fn a_look_after_a_time_whose_nodes_were_shown_keeps_only_later_ones() {
        let since = after("2026-01-01T00:00:10Z");
        assert!(older(at("2026-01-01T00:00:10+00:00"), since), "a fleet sharing that second is not read again");
        assert!(!older(at("2026-01-01T00:00:10.000001+00:00"), since));
        assert!(older(at("2026-01-01T00:00:09Z"), since));
    }

    #[test]
    fn a_look_starts_a_margin_before_the_newest_change() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300));
        let now = Instant::now();
        assert_eq!(cursor.since(), None, "before anything is seen, every updated node counts");
        cursor.saw(at("2026-01-01T00:01:00Z"), now);
        cursor.saw(at("2026-01-01T00:00:30Z"), now);
        assert_eq!(cursor.since(), margined("2026-01-01T00:00:50Z"), "an older newest never moves the start back");
    }

    #[test]
    fn at_rest_a_look_starts_after_the_newest_write_once_a_look_with_the_margin_came_a_margin_later() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300));
        let now = Instant::now();
        cursor.saw(at("2026-01-01T00:01:00Z"), now);
        let with_margin = margined("2026-01-01T00:00:50Z");
        assert_eq!(cursor.since(), with_margin);
        cursor.looked(with_margin, now + Duration::from_secs(9));
        assert_eq!(cursor.since(), with_margin, "that look came too soon to show what committed late");
        cursor.looked(with_margin, now + Duration::from_secs(10));
        let settled = after("2026-01-01T00:01:00Z");
        assert_eq!(cursor.since(), settled, "a look with the margin, a margin later, showed it all");
        cursor.looked(settled, now + Duration::from_secs(20));
        assert_eq!(cursor.since(), settled, "looks after the newest write change nothing");
        cursor.saw(at("2026-01-01T00:01:30Z"), now + Duration::from_secs(40));
        assert_eq!(cursor.since(), margined("2026-01-01T00:01:20Z"), "moving again");
    }

    #[test]
    fn a_look_at_rest_ends_at_the_newest_write_unless_a_later_one_came() {
        let shown = after("2026-01-01T00:01:00Z");
        assert!(ChangeCursor::unmoved(shown, at("2026-01-01T00:01:00Z")), "nothing written after what was shown");
        assert!(!ChangeCursor::unmoved(shown, at("2026-01-01T00:01:00.5Z")), "a later write is looked for");
        let with_margin = margined("2026-01-01T00:00:50Z");
        assert!(!ChangeCursor::unmoved(with_margin, at("2026-01-01T00:00:50Z")), "not settled: the list is read");
        assert!(!ChangeCursor::unmoved(shown, None), "no newest write: nothing to compare");
        assert!(!ChangeCursor::unmoved(None, at("2026-01-01T00:01:00Z")), "no start: every node");
    }

    #[test]
    fn a_look_with_no_newest_write_never_counts_as_one_with_the_margin() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300)).with_margin(RESOLUTION);
        let now = Instant::now();
        cursor.saw(at("2026-01-01T00:01:00Z"), now);
        cursor.looked(None, now + Duration::from_secs(5));
        assert_eq!(cursor.since(), margined("2026-01-01T00:00:59Z"), "no look has shown that write's nodes yet");
    }

    #[test]
    fn a_margin_finer_than_the_databases_seconds_never_starts_after_the_newest_write() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300)).with_margin(Duration::from_millis(500));
        let now = Instant::now();
        cursor.saw(at("2026-01-01T00:01:00Z"), now);
        let start = cursor.since();
        cursor.looked(start, now + Duration::from_secs(5));
        assert_eq!(cursor.since().map(|s| s.shown), Some(false), "a write later in that second keeps its time");
    }

    #[test]
    fn a_newest_write_older_than_one_seen_means_nodes_are_gone() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300));
        assert!(!cursor.went_back(None), "nothing seen, nothing lost");
        cursor.saw(at("2026-01-01T00:01:00Z"), Instant::now());
        assert!(!cursor.went_back(at("2026-01-01T00:01:00Z")));
        assert!(!cursor.went_back(at("2026-01-01T00:02:00Z")));
        assert!(cursor.went_back(at("2026-01-01T00:00:59Z")), "the node written last was deleted");
        assert!(cursor.went_back(None), "Ironic has no node written any more: it lost them");
    }

    #[test]
    fn no_newest_write_or_one_in_the_future_leaves_a_look_blind() {
        let cursor = ChangeCursor::new(Duration::from_secs(300));
        let wall = at("2026-01-01T00:01:00Z").unwrap_or(Timestamp::UNIX_EPOCH);
        assert!(cursor.blind(None, wall), "no node written, or never-written nodes sorted first");
        assert!(!cursor.blind(at("2026-01-01T00:01:09Z"), wall), "a conductor a little ahead");
        assert!(cursor.blind(at("2026-01-01T00:01:11Z"), wall), "further ahead than the margin");
        assert!(cursor.blind(Some(Timestamp::MAX), wall), "a time that does not parse");
    }

    #[test]
    fn the_first_look_and_every_look_after_full_every_are_full() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300));
        let now = Instant::now();
        assert!(cursor.full_due(now));
        cursor.last_full = Some(now);
        assert!(!cursor.full_due(now + Duration::from_secs(299)));
        assert!(cursor.full_due(now + Duration::from_secs(300)));
    }

    #[test]
    fn the_first_page_grows_to_what_a_look_of_several_pages_found_and_halves_after_one() {
        let mut cursor = ChangeCursor::new(Duration::from_secs(300));
        cursor.size_next(1, 20);
        assert_eq!(cursor.page, MIN_PAGE, "never below the smallest page");
        cursor.size_next(3, 140);
        assert_eq!(cursor.page, 140);
        cursor.size_next(1, 140);
        assert_eq!(cursor.page, 70, "a whole first page says nothing of how much changed: it shrinks");
        cursor.size_next(2, usize::MAX);
        assert_eq!(cursor.page, DEFAULT_PAGE_SIZE);
    }

    #[test]
    fn ironic_times_parse_with_and_without_fractions() {
        assert!(
            updated_at(&Node { updated_at: Some("2026-12-05T16:18:36+00:00".into()), ..Node::default() }).is_some()
        );
        assert!(
            updated_at(&Node { updated_at: Some("2026-12-05T16:18:36.643434+00:00".into()), ..Node::default() })
                .is_some()
        );
        assert_eq!(
            updated_at(&Node { updated_at: Some("2026-12-05T16:18:36".into()), ..Node::default() }),
            at("2026-12-05T16:18:36Z"),
            "no offset is UTC"
        );
        assert_eq!(updated_at(&Node { updated_at: Some("yesterday".into()), ..Node::default() }), Some(Timestamp::MAX));
        assert_eq!(updated_at(&Node::default()), None);
    }
}
